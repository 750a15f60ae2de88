// dispatch-int8-matmul: which R.matmul_integer calls go to which 8-bit
// kernel (the module after the pass), the packed constant B's layout, and the
// numbers of all three ways to run the operator (packed kernel, run-time-B
// kernel, the legalized generic int32 kernel the GPU path uses) through the
// driver and the VM against a reference computed here.
#include "compiler/transform/dispatch_int8_matmul.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/text/text.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/transform/bind_params.h"

namespace kiln {
namespace {

// a uint8 [rows, 8], b int8 [8, cols], zero points a scalar and per column.
std::string Module(const std::string& rows, int cols) {
  const std::string n = std::to_string(cols);
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(a: R.Tensor((" + rows +
         ", 8), dtype=\"uint8\"), b: R.Tensor((8, " + n + "), dtype=\"int8\"), za: R.Tensor((), dtype=\"uint8\"), "
         "zb: R.Tensor((" + n + ",), dtype=\"int8\")):\n" +
         (rows == "\"m\"" ? "        m = T.int64()\n" : "") +
         "        with R.dataflow():\n"
         "            y = R.matmul_integer(a, b, za, zb)\n"
         "            R.output(y)\n"
         "        return y\n";
}

Tensor Filled(const std::vector<int64_t>& shape, DType t, const std::vector<int>& values) {
  Result<Tensor> r = Tensor::Empty(shape, t);
  EXPECT_TRUE(r.ok());
  Tensor x = std::move(r).value();
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    int v = values[static_cast<size_t>(i) % values.size()];
    if (t == DType::UInt8()) x.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    else x.data<int8_t>()[i] = static_cast<int8_t>(v);
  }
  return x;
}

ir::IRModule Parse(const std::string& src) {
  Result<ir::IRModule> m = text::ParseModule(src, "t.relax");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  Result<ir::IRModule> n = relax::InferStructInfo(*m);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return n.ok() ? *n : ir::IRModule();
}

// A constant B and zero point (quantize_dynamic's weights) are packed once:
// int8 [ceil(N/16), ceil(K/4), 64] (here [1, 2, 64]) and the int32 [2, 16]
// column terms; no int8 B remains in the module.
TEST(DispatchInt8Matmul, ConstantWeightIsPacked) {
  ir::IRModule m = Parse(Module("3", 4));
  params::ParamList weights = {{"b", Filled({8, 4}, DType::Int8(), {-7})},
                               {"zb", Filled({4}, DType::Int8(), {1, 2, 3, 4})}};
  Result<ir::IRModule> bound = transform::BindParams(m, weights);
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  Result<ir::IRModule> out = transform::DispatchInt8Matmul(*bound);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<ir::Expr> constants;
  std::string text = text::PrintModule(*out, &constants);
  EXPECT_NE(text.find("R.call_dps_packed(\"kiln.int8.matmul_integer_packed\", (a, metadata[\"relax.expr.Constant\"][0], "
                      "metadata[\"relax.expr.Constant\"][1], za), out_sinfo=R.Tensor((3, 4), dtype=\"int32\"))"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("R.matmul_integer"), std::string::npos) << text;
  ASSERT_EQ(constants.size(), 2u) << text;
  const Tensor& bp = ir::ExprAs<ir::ConstantExpr>(constants[0])->data;
  const Tensor& terms = ir::ExprAs<ir::ConstantExpr>(constants[1])->data;
  ASSERT_EQ(bp.shape(), (std::vector<int64_t>{1, 2, 64}));
  ASSERT_EQ(bp.dtype(), DType::Int8());
  ASSERT_EQ(terms.shape(), (std::vector<int64_t>{2, 16}));
  ASSERT_EQ(terms.dtype(), DType::Int32());
  // Lane n of group g holds b[4g..4g+3, n]: -7 in columns 0..3, 0 in the padding.
  for (int64_t i = 0; i < 128; ++i) EXPECT_EQ(bp.data<int8_t>()[i], (i % 64) / 4 < 4 ? -7 : 0) << i;
  for (int64_t n = 0; n < 16; ++n) {
    EXPECT_EQ(terms.data<int32_t>()[n], n < 4 ? -56 : 0) << n;          // column sums
    EXPECT_EQ(terms.data<int32_t>()[16 + n], n < 4 ? n + 1 : 0) << n;  // zero points
  }
}

// A run-time B goes to the kernel that packs it on every call, with a
// symbolic row count kept in the result.
TEST(DispatchInt8Matmul, RunTimeWeightIsPackedPerCall) {
  Result<ir::IRModule> out = transform::DispatchInt8Matmul(Parse(Module("\"m\"", 20)));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::string text = text::PrintModule(*out);
  EXPECT_NE(text.find("R.call_dps_packed(\"kiln.int8.matmul_integer\", (a, b, za, zb), "
                      "out_sinfo=R.Tensor((m, 20), dtype=\"int32\"))"),
            std::string::npos)
      << text;
}

// The reference: sum_k (a - za) * (b - zb[n]) in int64.
std::vector<int32_t> Reference(const Tensor& a, const Tensor& b, int za, const std::vector<int>& zb) {
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  std::vector<int32_t> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      for (int64_t l = 0; l < k; ++l)
        s += (int64_t{a.data<uint8_t>()[i * k + l]} - za) * (int64_t{b.data<int8_t>()[l * n + j]} - zb[j % zb.size()]);
      y[static_cast<size_t>(i * n + j)] = static_cast<int32_t>(s);
    }
  return y;
}

void ExpectMatches(const vm::Module& mod, const std::vector<Any>& args, const std::vector<int32_t>& want,
                   const char* what) {
  Result<Tensor> y = tir::test_util::InvokeMain(mod, args);
  ASSERT_TRUE(y.ok()) << what << ": " << y.status().ToString();
  ASSERT_EQ(y->NumElements(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(y->data<int32_t>()[i], want[i]) << what << " at " << i;
}

// The three ways compute the same int32 numbers, at 5 rows and 20 columns
// (a partial 16-column block), operands spanning the 8-bit ranges.
TEST(DispatchInt8Matmul, EveryPathComputesMatMulInteger) {
  const std::vector<int> zb_values = {-3, 0, 7, 127, -128};
  Tensor a = Filled({5, 8}, DType::UInt8(), {0, 255, 17, 128, 3, 254, 99});
  Tensor b = Filled({8, 20}, DType::Int8(), {-128, 127, -1, 0, 64, -77, 5, 13, 101});
  Tensor za = Filled({}, DType::UInt8(), {129});
  Tensor zb = Filled({20}, DType::Int8(), zb_values);
  const std::vector<int32_t> want = Reference(a, b, 129, zb_values);
  const std::string src = Module("5", 20);
  driver::CompileOptions options;

  // A run-time B: kiln.int8.matmul_integer.
  auto runtime_b = tir::test_util::CompileAndLoad(src, options, 1);
  ASSERT_TRUE(runtime_b);
  ExpectMatches(*runtime_b, {a, b, za, zb}, want, "run-time B");

  // B and zb bound as constants: kiln.int8.matmul_integer_packed.
  driver::CompileOptions bound = options;
  bound.params = {{"b", b}, {"zb", zb}};
  auto packed = tir::test_util::CompileAndLoad(src, bound, 1);
  ASSERT_TRUE(packed);
  ExpectMatches(*packed, {a, za}, want, "packed B");

  // Legalized before the pass runs (as on a GPU target): the generic kernel.
  Result<ir::IRModule> legal = relax::LegalizeOps(Parse(src), relax::LegalizeOptions());
  ASSERT_TRUE(legal.ok()) << legal.status().ToString();
  std::string legal_text = text::PrintModule(*legal);
  ASSERT_NE(legal_text.find("R.call_tir"), std::string::npos) << legal_text;
  auto generic = tir::test_util::CompileAndLoad(legal_text, options, 1);
  ASSERT_TRUE(generic);
  ExpectMatches(*generic, {a, b, za, zb}, want, "generic kernel");
}

}  // namespace
}  // namespace kiln
