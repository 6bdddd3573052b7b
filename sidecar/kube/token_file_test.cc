#include "sidecar/kube/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>

#include "gtest/gtest.h"
#include "sidecar/common/fake_clock.h"
#include "sidecar/kube/testing/test_files.h"

namespace baton::kube {
namespace {

using testing::NewTempDir;
using testing::ReplaceFile;
using testing::WriteFile;

class TokenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = NewTempDir() + "/token";
    WriteFile(path_, "first\n");
  }
  std::string path_;
};

TEST_F(TokenFileTest, ReadsAndTrims) {
  TokenFile token(path_);
  EXPECT_EQ(*token.Current(), "first");
}

TEST_F(TokenFileTest, PicksUpARotationByRename) {
  TokenFile token(path_);
  ASSERT_EQ(*token.Current(), "first");
  ReplaceFile(path_, "second");
  EXPECT_EQ(*token.Current(), "second");
}

TEST_F(TokenFileTest, PicksUpAnInPlaceRewriteOfADifferentSize) {
  TokenFile token(path_);
  ASSERT_EQ(*token.Current(), "first");
  WriteFile(path_, "a-longer-token");
  EXPECT_EQ(*token.Current(), "a-longer-token");
}

TEST_F(TokenFileTest, KeepsTheLastGoodTokenWhileTheFileIsMissingOrEmpty) {
  TokenFile token(path_);
  ASSERT_EQ(*token.Current(), "first");
  std::remove(path_.c_str());
  EXPECT_EQ(*token.Current(), "first");
  WriteFile(path_, "");
  EXPECT_EQ(*token.Current(), "first");
  ReplaceFile(path_, "third");
  EXPECT_EQ(*token.Current(), "third");
}

TEST_F(TokenFileTest, RereadsAnUnchangedLookingFileOnceTheTokenAgesOut) {
  FakeClock clock;
  TokenFile token(path_, &clock);
  ASSERT_EQ(*token.Current(), "first");
  // Rewritten in place, same size, its mtime put back: stat sees no change.
  struct stat before {};
  ASSERT_EQ(::stat(path_.c_str(), &before), 0);
  WriteFile(path_, "other\n");
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path_.c_str(), times, 0), 0);

  clock.Advance(TokenFile::kMaxTokenAge - absl::Milliseconds(1));
  EXPECT_EQ(*token.Current(), "first");
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(*token.Current(), "other");
}

TEST_F(TokenFileTest, ErrorOnlyWhenNeverRead) {
  TokenFile token(path_ + ".absent");
  const absl::StatusOr<std::string> t = token.Current();
  EXPECT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(".absent"), absl::string_view::npos);
}

}  // namespace
}  // namespace baton::kube
