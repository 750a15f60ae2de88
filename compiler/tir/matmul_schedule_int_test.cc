// ScheduleMatmuls on int32 products (what ONNX MatMulInteger and
// QLinearMatMul import to: operands widened to int32, zero points
// subtracted): the tiled kernel, compiled and run, equals an exact integer
// reference at odd, static and symbolic shapes, with and without the packed
// weight panels and a fused float epilogue.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/matmul_schedule.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using namespace ir;  // NOLINT

std::string Dims(const std::string& m, int64_t k) { return "(" + m + ", " + std::to_string(k) + ")"; }

// main(a: (M, K) int32, b: (K, N) int32) -> a @ b (int32), or with
// `scaled`, astype(a @ b, float32) * s (MatMulInteger -> Cast -> Mul).
std::string Module(const std::string& m, int64_t k, int64_t n, bool scaled) {
  bool sym = m == "m";
  std::string out = "R.Tensor(" + Dims(sym ? "\"m\"" : m, n) + ", dtype=\"" + (scaled ? "float32" : "int32") + "\")";
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(a: R.Tensor(" +
                    Dims(sym ? "\"m\"" : m, k) + ", dtype=\"int32\"), b: R.Tensor(" + Dims(std::to_string(k), n) +
                    ", dtype=\"int32\"), s: R.Tensor((), dtype=\"float32\")) -> " + out + ":\n";
  if (sym) src += "        m = T.int64()\n";
  src += "        with R.dataflow():\n            c = R.matmul(a, b, out_dtype=\"void\")\n";
  if (scaled) {
    src += "            f = R.astype(c, dtype=\"float32\")\n            gv = R.multiply(f, s)\n";
  } else {
    src += "            gv = c\n";
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

Tensor Ints(const std::vector<int64_t>& shape, int lo, int hi, uint32_t seed) {
  Result<Tensor> t = Tensor::Empty(shape, DType::Int32());
  EXPECT_TRUE(t.ok());
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t->NumElements(); ++i) t->data<int32_t>()[i] = d(rng);
  return std::move(*t);
}

// Runs `mod` on u8-minus-zero-point rows ([-255, 255]) and s8 weights and
// compares every element with the integer product (exactly; the scaled form
// with the float32 product of the exact sum and the scale).
void Check(const vm::Module& mod, int64_t m, int64_t k, int64_t n, bool scaled) {
  Tensor a = Ints({m, k}, -255, 255, 1), b = Ints({k, n}, -128, 127, 2);
  Result<Tensor> s = Tensor::Empty({}, DType::Float32());
  ASSERT_TRUE(s.ok());
  const float scale = 0.0123f;
  s->data<float>()[0] = scale;
  std::vector<Any> args = {a, b, *s};
  Result<Tensor> out = test_util::InvokeMain(mod, args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->shape(), (std::vector<int64_t>{m, n}));
  int bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t want = 0;
      for (int64_t t = 0; t < k; ++t) want += int64_t{a.data<int32_t>()[i * k + t]} * b.data<int32_t>()[t * n + j];
      bool ok = scaled ? out->data<float>()[i * n + j] == static_cast<float>(want) * scale
                       : out->data<int32_t>()[i * n + j] == want;
      if (!ok && bad++ < 5) ADD_FAILURE() << "row " << i << " col " << j << " (m=" << m << " k=" << k << " n=" << n << ")";
    }
  }
  EXPECT_EQ(bad, 0);
}

std::shared_ptr<const vm::Module> Compile(const std::string& source, int threads) {
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  return CompileAndLoad(source, options, 0);
}

TEST(MatmulScheduleIntTest, Int32NestBecomesTheTiledKernel) {
  Buffer a = MakeBuffer("A", {PrimExpr(64), PrimExpr(384)}, DType::Int32());
  Buffer b = MakeBuffer("B", {PrimExpr(384), PrimExpr(128)}, DType::Int32());
  Buffer c = MakeBuffer("C", {PrimExpr(64), PrimExpr(128)}, DType::Int32());
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  std::vector<PrimExpr> ij = {PrimExpr(i), PrimExpr(j)};
  auto loop = [](const Var& v, int64_t n, Stmt body) {
    return std::make_shared<ForNode>(v, PrimExpr(0), PrimExpr(n), ForKind::kSerial, std::move(body));
  };
  Stmt init = std::make_shared<IfThenElseNode>(MakeBinary(TirKind::kEQ, PrimExpr(k), PrimExpr(0)),
                                               Store(c, IntImm(DType::Int32(), 0), ij), nullptr);
  Stmt upd = Store(c, Load(c, ij) + Load(a, {PrimExpr(i), PrimExpr(k)}) * Load(b, {PrimExpr(k), PrimExpr(j)}), ij);
  auto fn = std::make_shared<PrimFuncNode>();
  fn->name = "mm";
  for (const Buffer& buf : {a, b, c}) {
    Var h = MakeVar(buf->name + "_handle", HandleType());
    fn->params.push_back(h);
    fn->buffer_map.push_back({h, buf});
  }
  fn->body = loop(i, 64, loop(j, 128, loop(k, 384, Seq({init, upd}))));
  PrimFunc f = fn;
  PrimFunc out = ScheduleMatmuls(f, 2);
  ASSERT_NE(out, f);
  EXPECT_EQ(As<ForNode>(out->body)->for_kind, ForKind::kParallel);
}

TEST(MatmulScheduleIntTest, StaticShapesAreExact) {
  struct Case {
    int64_t m, k, n;
  };
  // Odd rows, columns and depths; 300 x 260 x 256 packs the weight panels.
  int variant = 0;
  for (const Case& c : {Case{1, 37, 10}, Case{7, 5, 10}, Case{17, 64, 128}, Case{33, 19, 1000}, Case{300, 260, 256}}) {
    for (bool scaled : {false, true}) {
      auto mod = Compile(Module(std::to_string(c.m), c.k, c.n, scaled), (variant++ % 2) ? 2 : 1);
      ASSERT_NE(mod, nullptr);
      Check(*mod, c.m, c.k, c.n, scaled);
    }
  }
}

TEST(MatmulScheduleIntTest, SymbolicRowsAreExact) {
  for (int threads : {1, 2}) {
    auto mod = Compile(Module("m", 384, 100, true), threads);
    ASSERT_NE(mod, nullptr);
    for (int64_t m : {1, 7, 8, 17, 256}) Check(*mod, m, 384, 100, true);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
