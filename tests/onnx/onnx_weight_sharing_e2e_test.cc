// A weight used at many places is stored once in the .vmfb. Exporters unroll
// recurrent layers into steps that each use the same initializers through
// Gemm(transB=1) (captcha_crnn: 20 steps x 2 directions); the transposes fold
// at compile time, and equal folds must share one tensor, or the file grows
// by a copy per use (264 MB from a 19 MB model before the fix).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "compiler/writer/vmfb_program.h"
#include "compiler/writer/vmfb_writer.h"
#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

constexpr int64_t kIn = 16, kHidden = 32, kSteps = 4;

// Bytes of the tensor constants a compiled program stores (its weights segment).
size_t WeightBytes(const compiler::VmfbProgram& p) {
  size_t n = 0;
  for (const auto& c : p.constants)
    if (c.kind == compiler::ConstantKind::kTensor) n += c.tensor.NumBytes();
  return n;
}

// h_{t+1} = tanh(x_t W' + b + h_t R'), unrolled over kSteps inputs x0..x3
// (n, kIn) as torch's exporter writes a recurrent cell: every step's two
// Gemms read the same W and R with transB=1.
B UnrolledCell(std::vector<float>* w, std::vector<float>* r, std::vector<float>* b) {
  B m(17);
  for (int t = 0; t < kSteps; ++t) m.Input("x" + std::to_string(t), TensorProto::FLOAT, {"n", kIn});
  m.Input("h0", TensorProto::FLOAT, {"n", kHidden});
  *w = Ramp(kHidden * kIn, -0.4f, 0.4f, 3);
  *r = Ramp(kHidden * kHidden, -0.3f, 0.3f, 4);
  *b = Ramp(kHidden, -0.2f, 0.2f, 5);
  m.Initializer("W", {kHidden, kIn}, *w);
  m.Initializer("R", {kHidden, kHidden}, *r);
  m.Initializer("B", {kHidden}, *b);
  std::string h = "h0";
  for (int t = 0; t < kSteps; ++t) {
    std::string s = std::to_string(t);
    B::AttrInt(m.Node("Gemm", {"x" + s, "W", "B"}, {"xw" + s}), "transB", 1);
    B::AttrInt(m.Node("Gemm", {h, "R"}, {"hr" + s}), "transB", 1);
    m.Node("Add", {"xw" + s, "hr" + s}, {"pre" + s});
    m.Node("Tanh", {"pre" + s}, {"h" + std::to_string(t + 1)});
    h = "h" + std::to_string(t + 1);
  }
  m.Output(h);
  return m;
}

TEST(OnnxWeightSharing, UnrolledCellStoresEachWeightOnce) {
  std::vector<float> w, r, b;
  B m = UnrolledCell(&w, &r, &b);
  std::string bytes = m.Serialize();
  Result<ir::IRModule> mod = ImportBuffer(bytes.data(), bytes.size(), ".", ImportOptions{});
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  Result<compiler::VmfbProgram> program = driver::CompileModule(*mod, {});
  ASSERT_TRUE(program.ok()) << program.status().message();
  size_t initializers = (w.size() + r.size() + b.size()) * sizeof(float);
  // One copy per use would be kSteps times the transposed W and R.
  EXPECT_LE(WeightBytes(*program), initializers * 11 / 10)
      << "initializers " << initializers << " bytes; the .vmfb stores a weight more than once";

  // And the shared constants compute the recurrence.
  Result<std::vector<uint8_t>> vmfb = compiler::SerializeVmfb(*program);
  ASSERT_TRUE(vmfb.ok()) << vmfb.status().message();
  Result<std::shared_ptr<const vm::Module>> loaded = LoadVmfb(*vmfb);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const int64_t n = 2;
  std::vector<Tensor> args;
  std::vector<std::vector<float>> xs;
  for (int t = 0; t < kSteps; ++t) {
    xs.push_back(Ramp(n * kIn, -1.0f, 1.0f, 20 + t));
    args.push_back(F32({n, kIn}, xs.back()));
  }
  std::vector<float> h = Ramp(n * kHidden, -0.5f, 0.5f, 30);
  args.push_back(F32({n, kHidden}, h));
  Result<std::vector<Tensor>> out = RunMain(*loaded, args);
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (int t = 0; t < kSteps; ++t) {
    std::vector<float> next(n * kHidden);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < kHidden; ++j) {
        double acc = b[j];
        for (int64_t k = 0; k < kIn; ++k) acc += double(xs[t][i * kIn + k]) * w[j * kIn + k];
        for (int64_t k = 0; k < kHidden; ++k) acc += double(h[i * kHidden + k]) * r[j * kHidden + k];
        next[i * kHidden + j] = static_cast<float>(std::tanh(acc));
      }
    h = next;
  }
  std::vector<float> got = Values((*out)[0]);
  ASSERT_EQ(got.size(), h.size());
  for (size_t i = 0; i < h.size(); ++i) EXPECT_NEAR(got[i], h[i], 1e-5) << i;
}

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
