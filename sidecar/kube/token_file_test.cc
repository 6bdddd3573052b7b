#include "sidecar/kube/token_file.h"

#include <cstdio>

#include "gtest/gtest.h"
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

TEST_F(TokenFileTest, ErrorOnlyWhenNeverRead) {
  TokenFile token(path_ + ".absent");
  const absl::StatusOr<std::string> t = token.Current();
  EXPECT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(".absent"), absl::string_view::npos);
}

}  // namespace
}  // namespace baton::kube
