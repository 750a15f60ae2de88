// Fused modules run: the MLP of examples/mlp.relax and a reduction with a
// prologue compile with and without annotate-op-pattern + fuse-ops +
// fuse-tir, give fewer kernels when fused, and the same numbers (also against
// plain C++ references), for several values of the symbolic dimension.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/fusion/annotate_op_pattern.h"
#include "compiler/fusion/fuse_ops.h"
#include "compiler/fusion/fuse_tir.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace {

Result<ir::IRModule> Fuse(const ir::IRModule& parsed) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, relax::InferStructInfo(parsed));
  KILN_ASSIGN_OR_RETURN(mod, relax::LegalizeOps(mod, relax::LegalizeOptions{}));
  mod = fusion::AnnotateOpPattern(mod);
  KILN_ASSIGN_OR_RETURN(mod, fusion::FuseOps(mod));
  return fusion::FuseTIR(mod);
}

size_t KernelCount(const compiler::VmfbProgram& p) {
  size_t n = 0;
  for (const auto& lib : p.native_libraries) n += lib.kernel_names.size();
  return n;
}

Result<std::shared_ptr<const vm::Module>> Load(const compiler::VmfbProgram& program) {
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, compiler::SerializeVmfb(program));
  auto* owned = new std::vector<uint8_t>(std::move(bytes));
  return vm::Module::LoadOwnedBuffer(
      owned->data(), owned->size(),
      [](const void*, void* user) { delete static_cast<std::vector<uint8_t>*>(user); }, owned);
}

struct Compiled {
  size_t kernels = 0;
  std::shared_ptr<const vm::Module> module;
};

// Compiles `path` as it is (fused = false) or after fusion.
void CompileFile(const std::string& path, bool fused, Compiled* out) {
  Result<ir::IRModule> parsed = text::ParseModuleFile(path);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ir::IRModule mod = *parsed;
  if (fused) {
    Result<ir::IRModule> f = Fuse(mod);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    mod = *f;
  }
  // The driver fuses by default; the fused module here comes from the passes
  // called directly, and the plain one must stay unfused.
  driver::CompileOptions options;
  options.fuse = false;
  Result<compiler::VmfbProgram> program = driver::CompileModule(mod, options);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  out->kernels = KernelCount(*program);
  Result<std::shared_ptr<const vm::Module>> module = Load(*program);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  out->module = *module;
}

Tensor RunMain(const std::shared_ptr<const vm::Module>& module, std::vector<Any> args) {
  auto ctx = module->CreateContext();
  Any result;
  Status s = ctx->Invoke("main", args, &result);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(result.is_tensor()) << result.Describe();
  return result.is_tensor() ? result.tensor() : Tensor();
}

TEST(FusionE2E, MlpRunsInTwoKernelsWithTheSameResults) {
  Compiled plain, fused;
  ASSERT_NO_FATAL_FAILURE(CompileFile("examples/mlp.relax", false, &plain));
  ASSERT_NO_FATAL_FAILURE(CompileFile("examples/mlp.relax", true, &fused));
  // permute + matmul + add + relu, permute + matmul + add.
  EXPECT_EQ(fused.kernels, 2u);
  EXPECT_GE(plain.kernels, 5u);

  Tensor w0 = e2e::RandomTensor({128, 784}, 2), b0 = e2e::RandomTensor({128}, 3);
  Tensor w1 = e2e::RandomTensor({10, 128}, 4), b1 = e2e::RandomTensor({10}, 5);
  for (int64_t n : {1, 7, 64}) {
    Tensor x = e2e::RandomTensor({n, 784}, 100 + n);
    std::vector<Any> args = {x, w0, b0, w1, b1};
    Tensor a = RunMain(plain.module, args);
    Tensor b = RunMain(fused.module, args);
    EXPECT_LE(e2e::MaxAbsDiff(a, b), 1e-5f) << "n = " << n;
    EXPECT_LE(e2e::MaxAbsDiff(b, e2e::ReferenceMlp(x, w0, b0, w1, b1)), 1e-4f) << "n = " << n;
  }
}

TEST(FusionE2E, ReductionWithPrologueAndDiamondMatchesReference) {
  const std::string path = std::string(KILN_SOURCE_DIR) + "/tests/fusion/fuse_ops_prologue.before.relax";
  Compiled plain, fused;
  ASSERT_NO_FATAL_FAILURE(CompileFile(path, false, &plain));
  ASSERT_NO_FATAL_FAILURE(CompileFile(path, true, &fused));
  EXPECT_EQ(plain.kernels, 5u);  // transpose, exp, row_sum, scale, add
  EXPECT_EQ(fused.kernels, 2u);
  for (int64_t n : {1, 17, 128}) {
    Tensor x = e2e::RandomTensor({n, 4}, 7 + n);
    // gv[i] = (s * 0.5 + s * 0.5) + s with s[i] = sum_j exp(x[j, i]).
    Tensor expected = Tensor::Empty({4}, DType::Float32()).value();
    for (int64_t i = 0; i < 4; ++i) {
      float s = 0;
      for (int64_t j = 0; j < n; ++j) s += std::exp(x.data<float>()[j * 4 + i]);
      expected.data<float>()[i] = (s * 0.5f + s * 0.5f) + s;
    }
    Tensor a = RunMain(plain.module, {x});
    Tensor b = RunMain(fused.module, {x});
    EXPECT_EQ(e2e::MaxAbsDiff(a, b), 0.0f) << "n = " << n;  // same operations in the same order
    EXPECT_LE(e2e::MaxAbsDiff(b, expected), 1e-3f) << "n = " << n;
  }
}

// The fused kernels go through lower-tir: alloc_buffers become allocations
// and the default schedule still parallelizes / vectorizes their loop nests.
TEST(FusionE2E, FusedMlpKernelsAreLoweredAndScheduled) {
  Result<ir::IRModule> parsed = text::ParseModuleFile("examples/mlp.relax");
  ASSERT_TRUE(parsed.ok());
  Result<ir::IRModule> fused = Fuse(*parsed);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  driver::CompileOptions options;
  options.num_threads_hint = 4;
  Result<std::string> tir = driver::EmitText(*fused, driver::EmitKind::kTir, options);
  ASSERT_TRUE(tir.ok()) << tir.status().ToString();
  EXPECT_NE(tir->find("def fused_transpose_matmul_add_relu("), std::string::npos) << *tir;
  EXPECT_NE(tir->find("T.decl_buffer("), std::string::npos) << *tir;
  EXPECT_NE(tir->find("T.parallel("), std::string::npos) << *tir;
  EXPECT_EQ(tir->find("T.block("), std::string::npos) << *tir;
}

// PP-OCRv4 rec's classifier (issue 20): x (n, 120, 1, t) squeezed and
// transposed to (n, t, 120), times W (120, 6625), plus a bias of 6625. The
// whole chain is one kernel and the bias is added where the matmul stores its
// accumulators (no second pass over the 6625-column result); numbers against
// a C++ reference for several t (8-row blocks, their remainders, one row).
TEST(FusionE2E, ClassifierMatmulTakesItsBiasInItsStores) {
  const std::string src = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 120, 1, "t"), dtype="float32"), w: R.Tensor((120, 6625), dtype="float32"), b: R.Tensor((6625,), dtype="float32")) -> R.Tensor(("n", "t", 6625), dtype="float32"):
        n = T.int64()
        t = T.int64()
        with R.dataflow():
            lv0 = R.squeeze(x, axis=[2])
            lv1 = R.permute_dims(lv0, axes=[0, 2, 1])
            lv2 = R.matmul(lv1, w, out_dtype="void")
            gv = R.add(lv2, b)
            R.output(gv)
        return gv
)";
  Result<ir::IRModule> parsed = text::ParseModule(src, "classifier.relax");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  driver::CompileOptions options;
  Result<std::string> tir = driver::EmitText(*parsed, driver::EmitKind::kTir, options);
  ASSERT_TRUE(tir.ok()) << tir.status().ToString();
  // One kernel (the driver fuses by default), whose output stores read the
  // bias: "gv[...] = acc[...] + b[...]".
  EXPECT_NE(tir->find("def fused_squeeze_transpose_matmul_add("), std::string::npos) << *tir;
  EXPECT_EQ(tir->find("def add("), std::string::npos) << *tir;
  EXPECT_NE(tir->find("] + b["), std::string::npos) << *tir;

  Result<compiler::VmfbProgram> program = driver::CompileModule(*parsed, options);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_EQ(KernelCount(*program), 1u);
  Result<std::shared_ptr<const vm::Module>> module = Load(*program);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Tensor w = e2e::RandomTensor({120, 6625}, 11), b = e2e::RandomTensor({6625}, 12);
  for (int64_t t : {40, 13, 1}) {
    Tensor x = e2e::RandomTensor({1, 120, 1, t}, 20 + t);
    Tensor y = RunMain(*module, {x, w, b});
    ASSERT_EQ(y.NumElements(), t * 6625) << "t = " << t;
    float worst = 0;
    for (int64_t r = 0; r < t; ++r) {
      for (int64_t c = 0; c < 6625; ++c) {
        double ref = b.data<float>()[c];
        for (int64_t k = 0; k < 120; ++k) ref += double{x.data<float>()[k * t + r]} * w.data<float>()[k * 6625 + c];
        worst = std::max(worst, std::fabs(static_cast<float>(ref) - y.data<float>()[r * 6625 + c]));
      }
    }
    EXPECT_LE(worst, 1e-3f) << "t = " << t;
  }
}

// PP-OCRv4 det's feature pyramid: a 2x nearest upsampling added to a map
// whose size the importer could not prove equal, with a run-time check
// (match_cast) between them. fuse-ops moves the check before the upsampling
// (hoist_shape_checks.h): one kernel, the right numbers when the sizes agree,
// and the check's message when they do not (h = 5: 3 columns upsampled to 6).
TEST(FusionE2E, UpsamplingFusesIntoItsAddAcrossTheShapeCheck) {
  const std::string src = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((1, 2, 2, "h"), dtype="float32"), b: R.Tensor((1, 2, 1, "(h + 1) // 2"), dtype="float32")) -> R.Tensor((1, 2, 2, "h"), dtype="float32"):
        h = T.int64()
        with R.dataflow():
            c = R.image.resize2d(b, R.shape([2, (h + 1) // 2 * 2]), layout="NCHW", method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor")
            d: R.Tensor((1, 2, 2, h), dtype="float32") = R.match_cast(c, R.Tensor((1, 2, 2, h), dtype="float32"), messages=["", "", "", "upsampled width {got}, expected {expected}"])
            gv = R.add(a, d)
            R.output(gv)
        return gv
)";
  Result<ir::IRModule> parsed = text::ParseModule(src, "upsample_add.relax");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  driver::CompileOptions options;
  Result<compiler::VmfbProgram> program = driver::CompileModule(*parsed, options);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_EQ(KernelCount(*program), 1u);
  Result<std::shared_ptr<const vm::Module>> module = Load(*program);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t h : {2, 8, 34}) {
    Tensor a = e2e::RandomTensor({1, 2, 2, h}, 30 + h), b = e2e::RandomTensor({1, 2, 1, (h + 1) / 2}, 40 + h);
    Tensor y = RunMain(*module, {a, b});
    ASSERT_EQ(y.NumElements(), 4 * h) << "h = " << h;
    float worst = 0;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t x = 0; x < h; ++x) {
          float ref = a.data<float>()[(c * 2 + r) * h + x] + b.data<float>()[c * ((h + 1) / 2) + x / 2];
          worst = std::max(worst, std::fabs(ref - y.data<float>()[(c * 2 + r) * h + x]));
        }
    EXPECT_EQ(worst, 0.0f) << "h = " << h;
  }
  auto ctx = (*module)->CreateContext();
  Any result;
  Status s = ctx->Invoke("main", {e2e::RandomTensor({1, 2, 2, 5}, 1), e2e::RandomTensor({1, 2, 1, 3}, 2)}, &result);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("upsampled width 6, expected 5"), std::string::npos) << s.ToString();
}

// The same check before a channel concatenation (PP-OCRv4 det's feature
// pyramid): the upsampling, the relu and the concatenation are one kernel,
// in which each source writes its slice of the output (split_concat.h), for
// any batch and width.
TEST(FusionE2E, UpsamplingFusesIntoItsConcatenationAcrossTheShapeCheck) {
  const std::string src = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("n", 3, 2, "h"), dtype="float32"), b: R.Tensor(("n", 2, 1, "(h + 1) // 2"), dtype="float32")) -> R.Tensor(("n", 5, 2, "h"), dtype="float32"):
        n = T.int64()
        h = T.int64()
        with R.dataflow():
            c = R.image.resize2d(b, R.shape([2, (h + 1) // 2 * 2]), layout="NCHW", method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor")
            d: R.Tensor((n, 2, 2, h), dtype="float32") = R.match_cast(c, R.Tensor((n, 2, 2, h), dtype="float32"), messages=["", "", "", "upsampled width {got}, expected {expected}"])
            e = R.nn.relu(a)
            gv = R.concat((e, d), axis=1)
            R.output(gv)
        return gv
)";
  Result<ir::IRModule> parsed = text::ParseModule(src, "upsample_concat.relax");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  driver::CompileOptions options;
  Result<compiler::VmfbProgram> program = driver::CompileModule(*parsed, options);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_EQ(KernelCount(*program), 1u);
  Result<std::shared_ptr<const vm::Module>> module = Load(*program);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t n : {1, 2}) {
    for (int64_t h : {2, 8, 34}) {
      const int64_t hb = (h + 1) / 2;
      Tensor a = e2e::RandomTensor({n, 3, 2, h}, 30 + h + n), b = e2e::RandomTensor({n, 2, 1, hb}, 40 + h + n);
      Tensor y = RunMain(*module, {a, b});
      ASSERT_EQ(y.NumElements(), n * 5 * 2 * h) << "n = " << n << ", h = " << h;
      float worst = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < 5; ++c)
          for (int64_t r = 0; r < 2; ++r)
            for (int64_t x = 0; x < h; ++x) {
              float ref = c < 3 ? std::max(a.data<float>()[((i * 3 + c) * 2 + r) * h + x], 0.0f)
                                : b.data<float>()[(i * 2 + c - 3) * hb + x / 2];
              worst = std::max(worst, std::fabs(ref - y.data<float>()[((i * 5 + c) * 2 + r) * h + x]));
            }
      EXPECT_EQ(worst, 0.0f) << "n = " << n << ", h = " << h;
    }
  }
  auto ctx = (*module)->CreateContext();
  Any result;
  Status s = ctx->Invoke("main", {e2e::RandomTensor({1, 3, 2, 5}, 1), e2e::RandomTensor({1, 2, 1, 3}, 2)}, &result);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("upsampled width 6, expected 5"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace kiln
