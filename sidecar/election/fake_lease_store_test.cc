#include "sidecar/election/fake_lease_store.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace baton {
namespace {

using Verb = FakeLeaseStore::Verb;

LeaseRecord Held(const std::string& holder) {
  LeaseRecord r;
  r.holder_identity = holder;
  r.lease_duration_seconds = 15;
  r.acquire_time = r.renew_time = absl::FromUnixSeconds(1'790'000'000);
  return r;
}

TEST(FakeLeaseStoreTest, GetOfMissingLeaseIsNotFound) {
  FakeLeaseStore store;
  EXPECT_TRUE(absl::IsNotFound(store.Get().status()));
}

TEST(FakeLeaseStoreTest, CreateAssignsResourceVersionAndUid) {
  FakeLeaseStore store;
  absl::StatusOr<LeaseRecord> created = store.Create(Held("a"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->resource_version.empty());
  EXPECT_FALSE(created->uid.empty());
  EXPECT_EQ(created->holder_identity, "a");
  EXPECT_EQ(*store.Get(), *created);
}

TEST(FakeLeaseStoreTest, DuplicateCreateIsAlreadyExists) {
  FakeLeaseStore store;
  ASSERT_TRUE(store.Create(Held("a")).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(store.Create(Held("b")).status()));
  EXPECT_EQ(store.Current()->holder_identity, "a");
}

TEST(FakeLeaseStoreTest, UpdateWithCurrentVersionSucceedsAndBumpsIt) {
  FakeLeaseStore store;
  LeaseRecord r = *store.Create(Held("a"));
  r.holder_identity = "b";
  absl::StatusOr<LeaseRecord> updated = store.Update(r);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_NE(updated->resource_version, r.resource_version);
  EXPECT_EQ(updated->uid, r.uid);
  EXPECT_EQ(updated->holder_identity, "b");
}

TEST(FakeLeaseStoreTest, UpdateWithStaleVersionIsAbortedAndChangesNothing) {
  FakeLeaseStore store;
  const LeaseRecord first = *store.Create(Held("a"));
  LeaseRecord second = first;
  second.renew_time = *first.renew_time + absl::Seconds(1);
  ASSERT_TRUE(store.Update(second).ok());
  const LeaseRecord current = *store.Current();
  LeaseRecord stale = first;
  stale.holder_identity = "b";
  EXPECT_TRUE(absl::IsAborted(store.Update(stale).status()));
  EXPECT_EQ(*store.Current(), current);
}

TEST(FakeLeaseStoreTest, UpdateOfMissingLeaseIsNotFound) {
  FakeLeaseStore store;
  const LeaseRecord r = *store.Create(Held("a"));
  store.Delete();
  EXPECT_TRUE(absl::IsNotFound(store.Update(r).status()));
}

TEST(FakeLeaseStoreTest, RecreatedLeaseHasNewUidAndHigherVersion) {
  FakeLeaseStore store;
  const LeaseRecord before = *store.Create(Held("a"));
  store.Delete();
  const LeaseRecord after = *store.Create(Held("b"));
  EXPECT_NE(after.uid, before.uid);
  EXPECT_GT(std::stoll(after.resource_version), std::stoll(before.resource_version));
}

TEST(FakeLeaseStoreTest, FailNextCallsFailsWithoutEffectThenRecovers) {
  FakeLeaseStore store;
  store.FailNextCalls(2, absl::UnavailableError("down"));
  EXPECT_TRUE(absl::IsUnavailable(store.Create(Held("a")).status()));
  EXPECT_TRUE(absl::IsUnavailable(store.Get().status()));
  EXPECT_FALSE(store.Current().has_value());
  EXPECT_TRUE(store.Create(Held("a")).ok());
}

TEST(FakeLeaseStoreTest, LandNextWriteButFailAppliesTheWrite) {
  FakeLeaseStore store;
  LeaseRecord r = *store.Create(Held("a"));
  store.LandNextWriteButFail(absl::DeadlineExceededError("lost answer"));
  r.holder_identity = "b";
  EXPECT_TRUE(absl::IsDeadlineExceeded(store.Update(r).status()));
  EXPECT_EQ(store.Current()->holder_identity, "b");
  // Only the next write is affected.
  LeaseRecord again = *store.Current();
  again.holder_identity = "c";
  EXPECT_TRUE(store.Update(again).ok());
}

TEST(FakeLeaseStoreTest, SetActsAsAnotherWriter) {
  FakeLeaseStore store;
  const LeaseRecord mine = *store.Create(Held("a"));
  const LeaseRecord theirs = store.Set(Held("b"));
  EXPECT_EQ(theirs.uid, mine.uid);
  EXPECT_NE(theirs.resource_version, mine.resource_version);
  EXPECT_TRUE(absl::IsAborted(store.Update(mine).status()));
}

TEST(FakeLeaseStoreTest, CountsCallsPerVerb) {
  FakeLeaseStore store;
  store.FailNextCalls(1, absl::UnavailableError("down"));
  (void)store.Get();
  (void)store.Get();
  LeaseRecord r = *store.Create(Held("a"));
  (void)store.Update(r);
  store.Set(Held("b"));  // not through the interface
  EXPECT_EQ(store.Calls(Verb::kGet), 2);
  EXPECT_EQ(store.Calls(Verb::kCreate), 1);
  EXPECT_EQ(store.Calls(Verb::kUpdate), 1);
  EXPECT_EQ(store.TotalCalls(), 4);
}

TEST(FakeLeaseStoreTest, WatcherSeesEveryChangeInOrder) {
  FakeLeaseStore store;
  std::vector<std::string> seen;
  store.SetWatcher([&](const LeaseEvent& e) {
    seen.push_back(
        absl::StrCat(e.record ? e.record->holder_identity : "deleted", "@", e.resource_version));
  });
  LeaseRecord r = *store.Create(Held("a"));
  r.holder_identity = "b";
  ASSERT_TRUE(store.Update(r).ok());
  store.Set(Held("c"));
  store.Delete();
  (void)store.Get();
  EXPECT_EQ(seen, (std::vector<std::string>{"a@1", "b@2", "c@3", "deleted@4"}));
}

}  // namespace
}  // namespace baton
