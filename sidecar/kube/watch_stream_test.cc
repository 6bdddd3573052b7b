#include "sidecar/kube/watch_stream.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton::kube {
namespace {

using ::testing::ElementsAre;

// Feeds `chunks` to a framer and collects the lines.
std::vector<std::string> Lines(const std::vector<std::string>& chunks, size_t max = 1024,
                               absl::Status* status = nullptr) {
  WatchLineFramer framer(max);
  std::vector<std::string> lines;
  for (const std::string& chunk : chunks) {
    absl::Status s = framer.Append(chunk, [&](absl::string_view line) {
      lines.emplace_back(line);
      return absl::OkStatus();
    });
    if (status != nullptr) *status = s;
    if (!s.ok()) break;
  }
  return lines;
}

TEST(WatchLineFramerTest, LinesDoNotDependOnChunkBoundaries) {
  EXPECT_THAT(Lines({"{\"a\":1}\n{\"b\"", ":2}\n", "{\"c\":3}"}),
              ElementsAre("{\"a\":1}", "{\"b\":2}"));
  EXPECT_THAT(Lines({"x", "\n", "y\nz", "\n"}), ElementsAre("x", "y", "z"));
}

TEST(WatchLineFramerTest, BlankLinesAreSkippedAndCarriageReturnsKept) {
  EXPECT_THAT(Lines({"\n \r\t\n{}\r\n"}), ElementsAre("{}\r"));
}

TEST(WatchLineFramerTest, AnUnfinishedLineBeyondTheLimitFailsTheStream) {
  absl::Status status;
  EXPECT_THAT(Lines({std::string(10, 'x') + "\n" + std::string(8, 'y')}, 8, &status),
              ElementsAre(std::string(10, 'x')));
  EXPECT_TRUE(status.ok());
  Lines({std::string(9, 'y')}, 8, &status);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
}

TEST(WatchLineFramerTest, TheFirstLineErrorStopsAtOnce) {
  WatchLineFramer framer(1024);
  int calls = 0;
  absl::Status s = framer.Append("a\nb\n", [&](absl::string_view) {
    ++calls;
    return absl::UnavailableError("stop");
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls, 1);
}

TEST(DecodeWatchEventTest, ModifiedCarriesTheLease) {
  absl::StatusOr<WatchEvent> e =
      DecodeWatchEvent(R"({"type":"MODIFIED","object":{"metadata":{"resourceVersion":"42",)"
                       R"("name":"app","namespace":"team"},)"
                       R"("spec":{"holderIdentity":"a","leaseTransitions":3}}})");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->type, WatchEvent::Type::kModified);
  EXPECT_EQ(e->resource_version, "42");
  EXPECT_EQ(e->name, "app");
  EXPECT_EQ(e->namespace_name, "team");
  ASSERT_TRUE(e->record.has_value());
  EXPECT_EQ(e->record->holder_identity, "a");
  EXPECT_EQ(e->record->lease_transitions, 3);
}

TEST(DecodeWatchEventTest, BookmarkDeletedAndUnknownCarryOnlyTheVersion) {
  absl::StatusOr<WatchEvent> bookmark =
      DecodeWatchEvent(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})");
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(bookmark->resource_version, "7");
  EXPECT_FALSE(bookmark->record.has_value());
  absl::StatusOr<WatchEvent> other = DecodeWatchEvent(R"({"type":"NEW","object":{}})");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->type, WatchEvent::Type::kUnknown);
  EXPECT_EQ(other->type_name, "NEW");
}

TEST(DecodeWatchEventTest, ErrorEventsBecomeTheirStatus) {
  absl::StatusOr<WatchEvent> gone = DecodeWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})");
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(DecodeWatchEventTest, AnErrorEventIsAnErrorWhateverCodeItClaims) {
  absl::StatusOr<WatchEvent> e =
      DecodeWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","code":200}})");
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInternal);
}

TEST(DecodeWatchEventTest, MalformedEventsAreInternal) {
  for (const char* line : {"not json", "[]", R"({"type":1})", R"({"type":"ADDED"})",
                           R"({"type":"ADDED","object":{"spec":{"leaseTransitions":"x"}}})"}) {
    EXPECT_EQ(DecodeWatchEvent(line).status().code(), absl::StatusCode::kInternal) << line;
  }
}

}  // namespace
}  // namespace baton::kube
