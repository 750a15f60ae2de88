// The TVMScript modules of the seed notes (../shared/seeds/), exactly as the
// notes print them (tests/data/seeds/*.relax, see the README there), compile
// and run: the MLC course's MyModule, the main with two dataflow blocks,
// MyModuleWithExternCall, MyModuleMixture (lesson 3 with symbolic shapes,
// lesson 4 with T.Buffer parameters), the module after BindParams with its
// metadata[...] constants, the module BlockBuilder printed, and the modules of
// T.prim_funcs alone (the scheduling lessons, the TVM tour). Numbers are
// checked against plain C++ loops.
//
// env.linear / env.relu are registered here in C++ (as TVM's register_func in
// the lesson); tests/plugins runs the same modules through kiln-run --plugin.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/text/text.h"
#include "runtime/registry.h"
#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

std::string SeedPath(const std::string& name) { return "tests/data/seeds/" + name; }

// x @ w^T + b, optionally relu'd: the reference for env.linear and the MLP.
Tensor LinearRef(const Tensor& x, const Tensor& w, const Tensor& b, bool relu) {
  int64_t n = x.shape()[0], k = x.shape()[1], m = w.shape()[0];
  Tensor y = Tensor::Empty({n, m}, DType::Float32()).value();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float acc = b.data<float>()[j];
      for (int64_t t = 0; t < k; ++t) acc += x.data<float>()[i * k + t] * w.data<float>()[j * k + t];
      y.data<float>()[i * m + j] = relu && acc < 0 ? 0 : acc;
    }
  return y;
}

Status EnvLinear(Span<const Any> args, Any*) {
  if (args.size() != 4) return InvalidArgument("env.linear takes 4 tensors");
  KILN_ASSIGN_OR_RETURN(Tensor x, args[0].AsTensor());
  KILN_ASSIGN_OR_RETURN(Tensor w, args[1].AsTensor());
  KILN_ASSIGN_OR_RETURN(Tensor b, args[2].AsTensor());
  KILN_ASSIGN_OR_RETURN(Tensor out, args[3].AsTensor());
  Tensor y = LinearRef(x, w, b, false);
  if (y.shape() != out.shape()) return InvalidArgument("env.linear: out has the wrong shape");
  std::copy(y.data<float>(), y.data<float>() + y.NumElements(), out.data<float>());
  return Status::Ok();
}

Status EnvRelu(Span<const Any> args, Any*) {
  if (args.size() != 2) return InvalidArgument("env.relu takes 2 tensors");
  KILN_ASSIGN_OR_RETURN(Tensor x, args[0].AsTensor());
  KILN_ASSIGN_OR_RETURN(Tensor out, args[1].AsTensor());
  if (x.NumElements() != out.NumElements()) return InvalidArgument("env.relu: out has the wrong size");
  for (int64_t i = 0; i < x.NumElements(); ++i) out.data<float>()[i] = std::max(x.data<float>()[i], 0.0f);
  return Status::Ok();
}

// The MLP's sizes: x (1, m), w0 (n, m), w1 (k, n).
struct Sizes {
  int64_t m, n, k;
};
const Sizes kLesson{784, 128, 10};
const Sizes kSmall{20, 16, 5};

class MlcSeeds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(RegisterGlobalFunction("env.linear", EnvLinear, /*allow_override=*/true).ok());
    ASSERT_TRUE(RegisterGlobalFunction("env.relu", EnvRelu, /*allow_override=*/true).ok());
  }

  // Runs main(x, w0, b0, w1, b1) of `module` at `sizes` against the reference.
  static void ExpectMlp(const std::shared_ptr<const vm::Module>& module, Sizes s, const std::string& what) {
    Tensor x = RandomTensor({1, s.m}, 11), w0 = RandomTensor({s.n, s.m}, 2), b0 = RandomTensor({s.n}, 3);
    Tensor w1 = RandomTensor({s.k, s.n}, 4), b1 = RandomTensor({s.k}, 5);
    auto ctx = module->CreateContext();
    Any result;
    std::vector<Any> args = {x, w0, b0, w1, b1};
    Status st = ctx->Invoke("main", args, &result);
    ASSERT_TRUE(st.ok()) << what << ": " << st.ToString();
    ASSERT_TRUE(result.is_tensor()) << what;
    EXPECT_LE(MaxAbsDiff(result.tensor(), ReferenceMlp(x, w0, b0, w1, b1)), 1e-4f) << what << " m=" << s.m;
  }

  static std::shared_ptr<const vm::Module> Load(const std::string& name) {
    std::string path = SeedPath(name);
    std::string src = ReadFile(path);
    EXPECT_FALSE(src.empty()) << path;
    auto module = CompileAndLoad(src, path);
    EXPECT_TRUE(module.ok()) << module.status().ToString();
    return module.ok() ? *module : nullptr;
  }
};

// Lesson 3's MyModule: symbolic m, n, k declared with
// `m, n, k = T.int64(), T.int64(), T.int64()`, TIR kernels called by name
// through R.call_dps_packed; linear0 serves both layers.
TEST_F(MlcSeeds, MyModule) {
  auto module = Load("mlc_mymodule.relax");
  ASSERT_TRUE(module);
  ExpectMlp(module, kLesson, "MyModule");
  ExpectMlp(module, kSmall, "MyModule");
}

// The main with two dataflow blocks, printed on its own in the lesson: a
// module of one function. Its kernels are MyModule's, so it replaces
// MyModule's main, as the lesson means it.
TEST_F(MlcSeeds, TwoDataflowBlocks) {
  Result<ir::IRModule> variant = text::ParseModuleFile(SeedPath("mlc_mymodule_two_dataflow_blocks.relax"));
  ASSERT_TRUE(variant.ok()) << variant.status().message();
  ir::Function main = variant->FindRelax("main");
  ASSERT_TRUE(main);
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(main->body);
  ASSERT_TRUE(seq);
  int dataflow_blocks = 0;
  for (const auto& b : seq->blocks) dataflow_blocks += b.is_dataflow ? 1 : 0;
  EXPECT_EQ(dataflow_blocks, 2);

  Result<ir::IRModule> mod = text::ParseModuleFile(SeedPath("mlc_mymodule.relax"));
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  mod->Add("main", main);
  auto module = CompileAndLoad(*mod);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  ExpectMlp(*module, kLesson, "two dataflow blocks");
  ExpectMlp(*module, kSmall, "two dataflow blocks");
}

TEST_F(MlcSeeds, MyModuleWithExternCall) {
  auto module = Load("mlc_mymodule_with_extern_call.relax");
  ASSERT_TRUE(module);
  ExpectMlp(module, kLesson, "MyModuleWithExternCall");
  ExpectMlp(module, kSmall, "MyModuleWithExternCall");
}

TEST_F(MlcSeeds, MyModuleMixture) {
  auto module = Load("mlc_mymodule_mixture.relax");
  ASSERT_TRUE(module);
  ExpectMlp(module, kLesson, "MyModuleMixture");
  ExpectMlp(module, kSmall, "MyModuleMixture");
}

// Lesson 4's MyModuleMixture: T.Buffer parameters, T.func_attr, static shapes.
TEST_F(MlcSeeds, MyModuleMixtureWithBufferParams) {
  auto module = Load("mlc_mymodule_mixture_tuned.relax");
  ASSERT_TRUE(module);
  ExpectMlp(module, kLesson, "lesson 4 MyModuleMixture");
}

// The module after BindParams, as TVM prints it ("Metadata omitted"): the
// weights are metadata["relax.expr.Constant"][0..3], given as the constant
// table; main takes x only.
TEST_F(MlcSeeds, MyModuleWithParamsFromConstantTable) {
  Tensor x = RandomTensor({1, 784}, 11), w0 = RandomTensor({128, 784}, 2), b0 = RandomTensor({128}, 3);
  Tensor w1 = RandomTensor({10, 128}, 4), b1 = RandomTensor({10}, 5);
  std::vector<ir::Expr> table;
  for (const Tensor& t : {w0, b0, w1, b1}) table.push_back(std::make_shared<ir::ConstantExpr>(t));
  std::string path = SeedPath("mlc_mymodule_with_params.relax");
  bool uses = false;
  Result<ir::IRModule> mod = text::ParseModule(ReadFile(path), path, table, &uses);
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  EXPECT_TRUE(uses);
  auto module = CompileAndLoad(*mod);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = (*module)->CreateContext();
  Any result;
  std::vector<Any> args = {x};
  Status st = ctx->Invoke("main", args, &result);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_LE(MaxAbsDiff(result.tensor(), ReferenceMlp(x, w0, b0, w1, b1)), 1e-4f);

  // Without the table the text does not parse, and says where the weights come from.
  Result<ir::IRModule> bare = text::ParseModuleFile(path);
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("bind weights with --params"), std::string::npos) << bare.status().message();
}

// The same module with the weights as kiln-compile --params gives them: the
// i-th tensor of the file is metadata constant i, and nothing is bound to
// main's parameters again.
TEST_F(MlcSeeds, MyModuleWithParamsFromParamsOption) {
  Tensor x = RandomTensor({1, 784}, 11), w0 = RandomTensor({128, 784}, 2), b0 = RandomTensor({128}, 3);
  Tensor w1 = RandomTensor({10, 128}, 4), b1 = RandomTensor({10}, 5);
  driver::CompileOptions options;
  options.params = {{"w0", w0}, {"b0", b0}, {"w1", w1}, {"b1", b1}};
  driver::CompileOptions effective;
  Result<ir::IRModule> mod = driver::LoadModuleFile(SeedPath("mlc_mymodule_with_params.relax"), options, &effective);
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  EXPECT_TRUE(effective.params.empty());
  auto module = CompileAndLoad(*mod, effective);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = (*module)->CreateContext();
  Any result;
  std::vector<Any> args = {x};
  Status st = ctx->Invoke("main", args, &result);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_LE(MaxAbsDiff(result.tensor(), ReferenceMlp(x, w0, b0, w1, b1)), 1e-4f);

  // Too few weights: the message names the index and the table's size.
  options.params.pop_back();
  mod = driver::LoadModuleFile(SeedPath("mlc_mymodule_with_params.relax"), options, &effective);
  ASSERT_FALSE(mod.ok());
  EXPECT_NE(mod.status().message().find("metadata constant 3 is out of range: the constant table has 3 entries"),
            std::string::npos)
      << mod.status().message();

  // A module without metadata binds --params to main's parameters as before.
  driver::CompileOptions bind;
  bind.params = {{"w0", w0}};
  mod = driver::LoadModuleFile(SeedPath("mlc_mymodule_mixture_tuned.relax"), bind, &effective);
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  EXPECT_EQ(effective.params.size(), 1u);
}

// Lesson 5: the module BlockBuilder built from TE (te_matmul, te_relu, called
// with R.call_tir and cls.), T.int64 shapes and T.Buffer parameters.
TEST_F(MlcSeeds, BlockBuilderModule) {
  auto module = Load("mlc_blockbuilder_module.relax");
  ASSERT_TRUE(module);
  Tensor a = RandomTensor({128, 128}, 7), b = RandomTensor({128, 128}, 8);
  Tensor want = Tensor::Empty({128, 128}, DType::Float32()).value();
  for (int64_t i = 0; i < 128; ++i)
    for (int64_t j = 0; j < 128; ++j) {
      float acc = 0;
      for (int64_t t = 0; t < 128; ++t) acc += a.data<float>()[i * 128 + t] * b.data<float>()[t * 128 + j];
      want.data<float>()[i * 128 + j] = std::max(acc, 0.0f);
    }
  auto ctx = module->CreateContext();
  Any result;
  std::vector<Any> args = {a, b};
  Status st = ctx->Invoke("main", args, &result);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_LE(MaxAbsDiff(result.tensor(), want), 1e-4f);
}

// Modules of T.prim_funcs alone, as the scheduling lessons and the TVM tour
// write them (TVM builds them into kernels called as main(A, B, C)): Kiln
// calls each exported PrimFunc as a function of its inputs that returns its
// outputs (the trailing parameters it writes; wrap-tir-module).
Any CallPrimOnly(const std::string& name, const std::string& function, std::vector<Any> args) {
  std::string path = SeedPath(name);
  auto module = CompileAndLoad(ReadFile(path), path);
  EXPECT_TRUE(module.ok()) << path << ": " << module.status().ToString();
  if (!module.ok()) return Any();
  auto ctx = (*module)->CreateContext();
  Any result;
  Status st = ctx->Invoke(function, args, &result);
  EXPECT_TRUE(st.ok()) << path << ": " << st.ToString();
  return result;
}

// C = A @ B (transposed_b: A @ B^T) of 1024 x 1024 matrices, checked at 64
// entries (the whole reference would take longer than the kernels).
void ExpectMatmul(const std::string& name, bool transposed_b) {
  const int64_t n = 1024;
  Tensor a = RandomTensor({n, n}, 21), b = RandomTensor({n, n}, 22);
  Any result = CallPrimOnly(name, "main", {a, b});
  ASSERT_TRUE(result.is_tensor()) << name;
  const Tensor& c = result.tensor();
  ASSERT_EQ(c.shape(), (std::vector<int64_t>{n, n})) << name;
  for (int64_t t = 0; t < 64; ++t) {
    int64_t i = (t * 389) % n, j = (t * 631 + 17) % n;
    double want = 0;
    for (int64_t k = 0; k < n; ++k)
      want += static_cast<double>(a.data<float>()[i * n + k]) *
              (transposed_b ? b.data<float>()[j * n + k] : b.data<float>()[k * n + j]);
    EXPECT_NEAR(c.data<float>()[i * n + j], want, 1e-3) << name << " C[" << i << ", " << j << "]";
  }
}

TEST(MlcSeedsTirOnly, Matmuls) {
  ExpectMatmul("mlc_matmul.relax", false);  // MyModuleMatmul: C = 0.0 in T.init, B[vk, vj]
  for (const char* name : {"mlc_matmul_module.relax",               // C[vi, vj] += ...
                           "mlc_matmul_block_module.relax",         // 16 x 16 blocks, a line continuation
                           "mlc_matmul_block_module_printed.relax",  // T.reads of slices, T.reads()
                           "mlc_matmul_split_printed.relax",         // T.axis.spatial over split loops
                           "mlc_matmul_blockized_printed.relax"})    // blockize's output
    ExpectMatmul(name, true);
}

TEST(MlcSeedsTirOnly, WindowSum) {
  Tensor a = RandomTensor({1027}, 23);
  Any result = CallPrimOnly("mlc_window_sum.relax", "main", {a});
  ASSERT_TRUE(result.is_tensor());
  ASSERT_EQ(result.tensor().shape(), (std::vector<int64_t>{1024}));
  for (int64_t i = 0; i < 1024; ++i) {
    const float* p = a.data<float>();
    EXPECT_NEAR(result.tensor().data<float>()[i], p[i] + p[i + 1] + p[i + 2], 1e-5) << i;
  }
}

TEST(MlcSeedsTirOnly, TvmTourMmRelu) {
  Tensor a = RandomTensor({128, 128}, 24), b = RandomTensor({128, 128}, 25);
  Any result = CallPrimOnly("tvm_tour_mm_relu.relax", "mm_relu", {a, b});
  ASSERT_TRUE(result.is_tensor());
  Tensor want = Tensor::Empty({128, 128}, DType::Float32()).value();
  for (int64_t i = 0; i < 128; ++i)
    for (int64_t j = 0; j < 128; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < 128; ++k) acc += a.data<float>()[i * 128 + k] * b.data<float>()[k * 128 + j];
      want.data<float>()[i * 128 + j] = std::max(acc, 0.0f);
    }
  EXPECT_LE(MaxAbsDiff(result.tensor(), want), 1e-4f);
}

TEST(MlcSeedsTirOnly, TvmTourVectorAdd) {
  Tensor a = RandomTensor({8}, 26);
  for (const char* name : {"tvm_tour_vector_add.relax", "tvm_tour_vector_add_printed.relax"}) {
    Any result = CallPrimOnly(name, "main", {a});
    ASSERT_TRUE(result.is_tensor()) << name;
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(result.tensor().data<float>()[i], a.data<float>()[i] + 1.0f) << name;
  }
}

}  // namespace
}  // namespace e2e
}  // namespace kiln
