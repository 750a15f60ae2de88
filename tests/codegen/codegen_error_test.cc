// Every user-facing error of the code generator and of generated kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

ir::PrimFunc WithCall(const std::string& op, DType dtype, size_t nargs) {
  auto f = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  ir::Var i = ir::MakeVar("i");
  ir::Buffer c = f->buffer_map[2].second;
  std::vector<ir::PrimExpr> args(nargs, ir::Cast(dtype, ir::Load(c, {ir::PrimExpr(i)})));
  ir::PrimExpr call(std::make_shared<ir::CallNode>(dtype, op, args));
  f->body = std::make_shared<ir::ForNode>(i, 0, ir::PrimExpr(f->buffer_map[0].second->shape[0]), ir::ForKind::kSerial,
                                          ir::Store(c, ir::Cast(DType::Float32(), call), {ir::PrimExpr(i)}));
  return f;
}

TEST(CodegenErrorTest, UnknownIntrinsic) {
  auto r = codegen::BuildNativeLibrary({WithCall("frobnicate", DType::Float32(), 1)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_CONTAINS(r.status().message(), "PrimFunc add: unsupported intrinsic 'frobnicate' (supported: if_then_else");
}

TEST(CodegenErrorTest, IntrinsicArityAndDtype) {
  auto r = codegen::EmitLLVMIR({WithCall("exp", DType::Float32(), 2)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "PrimFunc add: intrinsic 'exp' takes 1 argument(s), got 2");
  r = codegen::EmitLLVMIR({WithCall("tir.pow", DType::Float32(), 1)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "intrinsic 'pow' takes 2 argument(s), got 1");
  r = codegen::EmitLLVMIR({WithCall("if_then_else", DType::Float32(), 2)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "intrinsic 'if_then_else' takes 3 argument(s), got 2");
  r = codegen::EmitLLVMIR({WithCall("isnan", DType::Float32(), 3)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "intrinsic 'isnan' takes 1 argument(s), got 3");
  r = codegen::EmitLLVMIR({WithCall("abs", DType::Int32(), 2)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "intrinsic 'abs' takes 1 argument(s), got 2");
  r = codegen::EmitLLVMIR({WithCall("exp", DType::Int32(), 1)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "PrimFunc add: intrinsic 'exp' needs a float dtype, got int32");
  // The "tir." prefix of TVM's T.call_intrin names is accepted.
  r = codegen::EmitLLVMIR({WithCall("tir.exp", DType::Float32(), 1)}, {});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST(CodegenErrorTest, PrefetchTakesABufferLoad) {
  // prefetch(B[i]) is a hint with no value: llvm.prefetch of the element's
  // address. Its argument must be a buffer load (an address).
  auto f = std::make_shared<ir::PrimFuncNode>(*MakeAdd());
  ir::Var i = ir::MakeVar("i");
  ir::Buffer a = f->buffer_map[0].second, c = f->buffer_map[2].second;
  ir::PrimExpr hint(std::make_shared<ir::CallNode>(DType::Int32(), "prefetch",
                                                   std::vector<ir::PrimExpr>{ir::Load(a, {ir::PrimExpr(i)})}));
  f->body = std::make_shared<ir::ForNode>(
      i, 0, ir::PrimExpr(a->shape[0]), ir::ForKind::kSerial,
      ir::Seq({std::make_shared<ir::EvaluateNode>(hint), ir::Store(c, ir::FloatImm(DType::Float32(), 0), {ir::PrimExpr(i)})}));
  auto ok = codegen::EmitLLVMIR({f}, {});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_CONTAINS(*ok, "@llvm.prefetch");
  auto r = codegen::EmitLLVMIR({WithCall("prefetch", DType::Int32(), 1)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "PrimFunc add: intrinsic 'prefetch' takes a buffer load");
  r = codegen::EmitLLVMIR({WithCall("prefetch", DType::Int32(), 2)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "intrinsic 'prefetch' takes 1 argument(s), got 2");
}

TEST(CodegenErrorTest, Transpose16TakesBufferLoads) {
  // transpose16's source and destination are addresses (buffer loads);
  // its numbers are codegen_run_test's.
  auto r = codegen::EmitLLVMIR({WithCall("transpose16", DType::Int32(), 19)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(),
                  "PrimFunc add: intrinsic 'transpose16' takes buffer loads as its source and destination");
  r = codegen::EmitLLVMIR({WithCall("transpose16", DType::Int32(), 3)}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.status().message(), "intrinsic 'transpose16' takes 19 argument(s), got 3");
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
TEST(CodegenErrorTest, BaselineX86NeedsNoLibm) {
  // Baseline x86-64 has no SSE4.1 rounding instructions: llvm.floor would be
  // a call to floorf, which `-z defs` refuses. The emitter uses arithmetic
  // there instead, and the math functions never call libm, so the library
  // links and computes the same numbers as with the host's features.
  std::vector<ElementwiseKernel> ks;
  for (std::string f : {"floor", "ceil", "trunc", "round", "exp", "log", "tanh", "erf", "sigmoid", "sin"}) {
    ks.push_back({f + "32", "T." + f + "(A[i])", "float32", "float32"});
    ks.push_back({f + "64", "T." + f + "(A[i])", "float64", "float64"});
  }
  ks.push_back({"fmod32", "T.floormod(A[i], T.float32(0.75))", "float32", "float32"});
  codegen::CodegenOptions baseline;
  baseline.cpu = "x86-64";
  auto base = BuildText(ElementwiseModule(ks), baseline);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  auto host = BuildText(ElementwiseModule(ks), {});
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  std::vector<float> xs = {-2.5f, -1.5f, -0.5f, -0.0f, 0.0f, 0.5f, 1.5f, 2.5f, 3.7f, -3.7f, 8388607.5f, -8388609.0f,
                           1e30f, -1e30f, INFINITY, -INFINITY, NAN, 0.49999997f, -0.49999997f, 1e-40f};
  std::vector<double> xd(xs.begin(), xs.end());
  xd.push_back(4503599627370495.5);
  xd.push_back(-4503599627370497.0);
  for (const auto& k : ks) {
    bool f64 = k.in_dtype == "float64";
    int64_t n = static_cast<int64_t>(f64 ? xd.size() : xs.size());
    DType dt = f64 ? DType::Float64() : DType::Float32();
    Tensor a = MakeTensor({n}, dt), c1 = MakeTensor({n}, dt), c2 = MakeTensor({n}, dt);
    std::memcpy(a.raw_data(), f64 ? static_cast<const void*>(xd.data()) : xs.data(), a.NumBytes());
    ASSERT_EQ(RunKernel(**base, k.name, {a, c1}), 0);
    ASSERT_EQ(RunKernel(**host, k.name, {a, c2}), 0);
    for (int64_t i = 0; i < n; ++i) {
      double x = f64 ? xd[i] : xs[i];
      double got = f64 ? c1.data<double>()[i] : c1.data<float>()[i];
      double host_got = f64 ? c2.data<double>()[i] : c2.data<float>()[i];
      // The math may differ in the last bits (fused multiply-adds on the host).
      if (std::isnan(host_got) || std::isinf(host_got)) {
        EXPECT_TRUE(std::isnan(got) == std::isnan(host_got) && (std::isnan(got) || got == host_got)) << k.name;
      } else {
        EXPECT_LE(std::fabs(got - host_got), std::fabs(host_got) * (f64 ? 1e-15 : 3e-7) + 1e-300) << k.name << "(" << x << ")";
      }
      double want = k.name.compare(0, 5, "floor") == 0 ? std::floor(x)
                    : k.name.compare(0, 4, "ceil") == 0  ? std::ceil(x)
                    : k.name.compare(0, 5, "trunc") == 0 ? std::trunc(x)
                    : k.name.compare(0, 5, "round") == 0 ? std::nearbyint(x)
                                                         : got;
      if (k.name == "fmod32") want = x - std::floor(static_cast<float>(x) / 0.75f) * 0.75f;
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << k.name << "(" << x << ")";
      } else {
        EXPECT_EQ(got, want) << k.name << "(" << x << ")";
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << k.name << "(" << x << ")";
      }
    }
  }
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
