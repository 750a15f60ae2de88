// CallKernel's workspace cache: a kernel that holds several workspaces at
// once (a fused kernel's intermediates) gets the same blocks back on its
// next call, the smallest cached block that fits each request.
#include "runtime/kernel_call.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace kiln {
namespace {

// Sizes of the blocks a kernel holds at once: small ones first, so that a
// first-fit cache would hand the large blocks to the small requests.
const uint64_t kSizes[] = {4096, 8192, 16384, 65536, 2400000, 2400000, 2400000};
constexpr int kBlocks = sizeof(kSizes) / sizeof(kSizes[0]);

std::vector<void*> g_got;

int32_t HoldSeven(const kiln_kernel_env* env, const kiln_kernel_arg*, int32_t) {
  void* held[kBlocks];
  for (int i = 0; i < kBlocks; ++i) {
    held[i] = env->workspace_alloc(env->ctx, kSizes[i], 64);
    if (held[i] == nullptr) return 1;
    g_got.push_back(held[i]);
  }
  for (int i = kBlocks - 1; i >= 0; --i) env->workspace_free(env->ctx, held[i]);
  return 0;
}

TEST(KernelCallTest, SeveralWorkspacesComeBackFromTheCache) {
  g_got.clear();
  ASSERT_TRUE(CallKernel(HoldSeven, "hold", nullptr, 0, nullptr).ok());
  std::vector<void*> first = g_got;
  for (int call = 0; call < 3; ++call) {
    g_got.clear();
    ASSERT_TRUE(CallKernel(HoldSeven, "hold", nullptr, 0, nullptr).ok());
    // The same blocks, each request of a small size given a small block.
    EXPECT_EQ(std::set<void*>(g_got.begin(), g_got.end()), std::set<void*>(first.begin(), first.end()));
    for (int i = 0; i < 4; ++i) {
      bool small = false;
      for (int j = 0; j < 4; ++j) small |= g_got[i] == first[j];
      EXPECT_TRUE(small) << "request " << i << " of " << kSizes[i] << " bytes took a large block";
    }
  }
}

}  // namespace
}  // namespace kiln
