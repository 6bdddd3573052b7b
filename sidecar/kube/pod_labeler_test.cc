// ValidateLabelKey: what --leader-label accepts.
#include "sidecar/kube/pod_labeler.h"

#include "gtest/gtest.h"

namespace baton::kube {
namespace {

TEST(LabelKeyTest, KubernetesLabelKeys) {
  for (const char* key : {"leader", "baton.dev/leader", "example.com/is_Leader.1", "a"}) {
    EXPECT_TRUE(ValidateLabelKey(key).ok()) << key;
  }
  for (const char* key : {"", "/leader", "baton.dev/", "Baton.dev/leader", "-leader", "leader-",
                          "a/b/c", "baton..dev/leader", "lead er",
                          "0123456789012345678901234567890123456789012345678901234567890123"}) {
    EXPECT_FALSE(ValidateLabelKey(key).ok()) << key;
  }
}

}  // namespace
}  // namespace baton::kube
