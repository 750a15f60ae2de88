// Every user-facing error of the code generator and of generated kernels.
#include <gtest/gtest.h>

#include <memory>

#include "compiler/codegen/native_codegen.h"
#include "compiler/tir/lower_blocks.h"
#include "tests/codegen/test_kernels.h"

namespace kiln {
namespace codegen_test {
namespace {

// gmock is not linked; a substring check with the full message on failure.
#define EXPECT_CONTAINS(text, sub) EXPECT_NE(std::string(text).find(sub), std::string::npos) << (text)

class KernelArgumentErrorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto built = codegen::BuildNativeLibrary(Prepare({MakeAdd(), MakeLinear0(false), MakeWorkspaceUser()}, 2), {});
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    auto lib = LoadedLibrary::Load(built->shared_object);
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    lib_ = lib->release();
  }
  static void TearDownTestSuite() {
    delete lib_;
    lib_ = nullptr;
  }
  // Calls `kernel` and returns what it reported (rc must be 1).
  std::string Fail(const std::string& kernel, kiln_kernel_arg* args, int32_t n) {
    CapturingEnv env(&pool_);
    EXPECT_EQ(lib_->Find(kernel)(env.env(), args, n), 1);
    return env.last_error();
  }
  static LoadedLibrary* lib_;
  ThreadPool pool_{2};
};
LoadedLibrary* KernelArgumentErrorTest::lib_ = nullptr;

TEST_F(KernelArgumentErrorTest, ConstantDimensionMismatch) {
  Tensor x = MakeTensor({1, 100}), w = MakeTensor({128, 784}), b = MakeTensor({128}), z = MakeTensor({1, 128});
  kiln_kernel_arg args[] = {TensorArg(x), TensorArg(w), TensorArg(b), TensorArg(z)};
  EXPECT_EQ(Fail("linear0", args, 4), "linear0: argument X, dimension 1: expected 784, got 100");
}

TEST_F(KernelArgumentErrorTest, SymbolicDimensionMismatch) {
  Tensor a = MakeTensor({5}), b = MakeTensor({6}), c = MakeTensor({5});
  kiln_kernel_arg args[] = {TensorArg(a), TensorArg(b), TensorArg(c)};
  EXPECT_EQ(Fail("add", args, 3), "add: argument B, dimension 0: expected 5 (n), got 6");
}

TEST_F(KernelArgumentErrorTest, WrongArgumentCount) {
  Tensor a = MakeTensor({5});
  kiln_kernel_arg args[] = {TensorArg(a), TensorArg(a)};
  EXPECT_EQ(Fail("add", args, 2), "add: expected 3 arguments, got 2");
}

TEST_F(KernelArgumentErrorTest, WrongRankDtypeStridesAlignmentNull) {
  Tensor good = MakeTensor({8});
  Tensor rank2 = MakeTensor({2, 4});
  kiln_kernel_arg args[] = {TensorArg(rank2), TensorArg(good), TensorArg(good)};
  EXPECT_EQ(Fail("add", args, 3), "add: argument A: expected ndim 1, got 2");

  Tensor f64 = MakeTensor({8}, DType::Float64());
  args[0] = TensorArg(f64);
  EXPECT_EQ(Fail("add", args, 3), "add: argument A: expected dtype float32, got code 2 bits 64 lanes 1");

  Tensor strided = MakeTensor({8});
  int64_t strides[] = {1};
  strided.dl()->strides = strides;
  args[0] = TensorArg(strided);
  EXPECT_EQ(Fail("add", args, 3), "add: argument A: strides must be NULL (only compact row-major tensors are supported)");
  strided.dl()->strides = nullptr;

  Tensor shifted = MakeTensor({16});
  shifted.dl()->byte_offset = 4;
  shifted.object()->shape[0] = 8;
  args[0] = TensorArg(shifted);
  EXPECT_EQ(Fail("add", args, 3), "add: argument A: data is not 64-byte aligned");

  args[0].tensor = nullptr;
  EXPECT_EQ(Fail("add", args, 3), "add: argument A is a null tensor");
}

TEST_F(KernelArgumentErrorTest, WorkspaceAllocationFailure) {
  Tensor a = MakeTensor({20000}), c = MakeTensor({20000});
  kiln_kernel_arg args[] = {TensorArg(a), TensorArg(c)};
  CapturingEnv env(&pool_);
  env.set_fail_allocations(true);
  EXPECT_EQ(lib_->Find("big_tmp")(env.env(), args, 2), 1);
  EXPECT_EQ(env.last_error(), "big_tmp: workspace allocation of 80000 bytes for buffer T failed");
}

TEST(CodegenErrorTest, UnloweredBlocksAreRejected) {
  auto r = codegen::BuildNativeLibrary({MakeLinear0(false)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_CONTAINS(r.status().message(), "PrimFunc linear0");
  EXPECT_CONTAINS(r.status().message(), "run tir::LowerBlocks");
}

TEST(CodegenErrorTest, UnknownIntrinsic) {
  auto f = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  ir::Var i = ir::MakeVar("i");
  ir::Buffer c = f->buffer_map[2].second;
  ir::PrimExpr call(std::make_shared<ir::CallNode>(DType::Float32(), "exp",
                                                   std::vector<ir::PrimExpr>{ir::Load(c, {ir::PrimExpr(i)})}));
  f->body = std::make_shared<ir::ForNode>(i, 0, ir::PrimExpr(f->buffer_map[0].second->shape[0]), ir::ForKind::kSerial,
                                          ir::Store(c, call, {ir::PrimExpr(i)}));
  auto r = codegen::BuildNativeLibrary({f}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_CONTAINS(r.status().message(), "PrimFunc add: unsupported intrinsic 'exp'");
}

TEST(CodegenErrorTest, UndefinedVariableAndBuffer) {
  auto f = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  ir::Buffer c = f->buffer_map[2].second;
  ir::Var stray = ir::MakeVar("stray");
  f->body = ir::Store(c, ir::FloatImm(DType::Float32(), 1), {ir::PrimExpr(stray)});
  auto r = codegen::EmitLLVMIR({f}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "variable 'stray' is used outside its definition");

  ir::Buffer orphan = ir::MakeBuffer("orphan", {ir::PrimExpr(4)}, DType::Float32());
  f->body = ir::Store(orphan, ir::FloatImm(DType::Float32(), 1), {ir::PrimExpr(0)});
  r = codegen::EmitLLVMIR({f}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "buffer orphan is used but is neither a parameter nor allocated");
}

TEST(CodegenErrorTest, StridedBufferAndVectorDtype) {
  auto f = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  auto strided = std::make_shared<ir::BufferNode>(*f->buffer_map[2].second);
  strided->strides = {ir::PrimExpr(2)};
  f->buffer_map[2].second = strided;
  f->body = ir::Store(strided, ir::FloatImm(DType::Float32(), 1), {ir::PrimExpr(0)});
  auto r = codegen::EmitLLVMIR({f}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "buffer C has explicit strides");

  auto g = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  auto vec = std::make_shared<ir::BufferNode>(*g->buffer_map[0].second);
  vec->dtype = DType{kDLFloat, 32, 4};
  g->buffer_map[0].second = vec;
  r = codegen::EmitLLVMIR({g}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "buffer A has unsupported dtype float32x4");
}

TEST(CodegenErrorTest, BadNamesAndOptions) {
  auto r = codegen::BuildNativeLibrary(Prepare({MakeAdd(), MakeAdd()}, 1), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(r.status().message(), "two PrimFuncs are named 'add'");

  auto q = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  q->name = "kiln_kernel_query";
  r = codegen::BuildNativeLibrary({q}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "'kiln_kernel_query' is reserved");

  auto unnamed = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  unnamed->name = "";
  r = codegen::BuildNativeLibrary({unnamed}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "a PrimFunc has no name");

  codegen::CodegenOptions bad_triple;
  bad_triple.triple = "nonsense-cpu-none";
  r = codegen::BuildNativeLibrary(Prepare({MakeAdd()}, 1), bad_triple);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(r.status().message(), "unknown target triple");

  codegen::CodegenOptions bad_level;
  bad_level.opt_level = 7;
  r = codegen::BuildNativeLibrary(Prepare({MakeAdd()}, 1), bad_level);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "opt_level must be 0..3, got 7");
}

#if defined(__x86_64__)
TEST(CodegenErrorTest, LibmCallFailsTheLink) {
  // Baseline x86-64 has no SSE4.1 round instructions, so llvm.floor becomes a
  // call to floorf, which `-z defs` refuses: no kernel may need libm.
  auto f = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  ir::Var i = ir::MakeVar("i");
  ir::Buffer c = f->buffer_map[2].second;
  ir::PrimExpr call(std::make_shared<ir::CallNode>(DType::Float32(), "floor",
                                                   std::vector<ir::PrimExpr>{ir::Load(c, {ir::PrimExpr(i)})}));
  f->body = std::make_shared<ir::ForNode>(i, 0, ir::PrimExpr(f->buffer_map[0].second->shape[0]), ir::ForKind::kSerial,
                                          ir::Store(c, call, {ir::PrimExpr(i)}));
  codegen::CodegenOptions baseline;
  baseline.cpu = "x86-64";
  auto r = codegen::BuildNativeLibrary({f}, baseline);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_CONTAINS(r.status().message(), "undefined symbol: floorf");
  // With SSE4.1 the same kernel needs no library.
  baseline.features = "+sse4.1";
  auto ok = codegen::BuildNativeLibrary({f}, baseline);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}
#endif

TEST(CodegenErrorTest, DimensionThatIsNeitherConstantNorBoundVariable) {
  // A: f32[n * 2] with n bound nowhere before: cannot be bound from a dim.
  auto f = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  auto odd = std::make_shared<ir::BufferNode>(*f->buffer_map[0].second);
  odd->shape = {ir::PrimExpr(ir::MakeVar("q")) * 2};
  f->buffer_map[0].second = odd;
  auto r = codegen::EmitLLVMIR({f}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "buffer A, dimension 0: the shape must be a constant");
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln
