// Links only kiln_kernels_all and references no kernel symbol: every kernel is
// reached through the global registry, as a loaded program reaches it. If the
// whole-archive linking broke, the registrations would be dropped and these
// lookups would fail.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/registry.h"
#include "runtime/tensor.h"

namespace kiln {
namespace {

TEST(KernelRegistry, ReferenceKernelsAreRegistered) {
  for (const char* name : {"kiln.ref.matmul", "kiln.ref.add", "kiln.ref.relu", "kiln.ref.permute_dims"}) {
    EXPECT_TRUE(LookupGlobalFunction(name).ok()) << name;
  }
}

#ifdef KILN_HAVE_DNNL_KERNELS
TEST(KernelRegistry, DnnlKernelsAreRegistered) { EXPECT_TRUE(LookupGlobalFunction("kiln.dnnl.matmul").ok()); }
#endif

TEST(KernelRegistry, CallThroughTheRegistry) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, out[4] = {0, 0, 0, 0};
  std::vector<int64_t> shape = {2, 2};
  std::vector<const char*> names = {"kiln.ref.matmul"};
#ifdef KILN_HAVE_DNNL_KERNELS
  names.push_back("kiln.dnnl.matmul");
#endif
  for (const char* name : names) {
    Result<PackedFunc> fn = LookupGlobalFunction(name);
    ASSERT_TRUE(fn.ok()) << name;
    std::memset(out, 0, sizeof(out));
    std::vector<Any> args = {Tensor::Borrow(a, shape, DType::Float32()), Tensor::Borrow(b, shape, DType::Float32()),
                             Tensor::Borrow(out, shape, DType::Float32())};
    Any ret;
    Status s = (*fn)(Span<const Any>(args.data(), args.size()), &ret);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(ret.is_none());
    EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{1, 2, 3, 4})) << name;
  }
}

}  // namespace
}  // namespace kiln
