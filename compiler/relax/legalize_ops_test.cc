// LegalizeOps and the TE builder: the errors users can reach (operators whose
// shapes are unknown, symbolic variables a kernel cannot bind) and what the
// pass leaves alone. The before/after text of whole modules is checked in
// tests/passes/.
#include "compiler/relax/legalize_ops.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/te_compute.h"
#include "compiler/text/text.h"

namespace kiln {
namespace relax {
namespace {

Result<ir::IRModule> NormalizeAndLegalize(const std::string& src) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(src, "t.relax"));
  KILN_ASSIGN_OR_RETURN(mod, InferStructInfo(mod));
  return LegalizeOps(mod, LegalizeOptions{});
}

// main(u, z, w) { [before;] r = <value>; return r }: the value's call is at
// 6:13 when there is no `before` line.
std::string Module(const std::string& value, const std::string& before = "") {
  return R"(@I.ir_module
class Module:
    @R.function
    def main(u: R.Tensor(ndim=2, dtype="float32"), z: R.Tensor(ndim=1, dtype="float32"), w: R.Tensor((3, 4), dtype="float32")):
        n = T.int64()
)" + (before.empty() ? "" : "        " + before + "\n") +
         "        r = " + value + "\n        return r\n";
}

struct LegalizeErrorCase {
  const char* value;
  StatusCode code;
  const char* message;  // after "t.relax:6:13: " (the call's position)
};

class LegalizeErrorTest : public ::testing::TestWithParam<LegalizeErrorCase> {};

TEST_P(LegalizeErrorTest, FiresWithLocation) {
  const LegalizeErrorCase& c = GetParam();
  Result<ir::IRModule> r = NormalizeAndLegalize(Module(c.value));
  ASSERT_FALSE(r.ok()) << c.value;
  EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), std::string("t.relax:6:13: ") + c.message);
}

const LegalizeErrorCase kLegalizeErrors[] = {
    {"R.matmul(u, w)", StatusCode::kUnimplemented, "R.matmul: legalization needs known shapes"},
    {"R.permute_dims(u)", StatusCode::kUnimplemented, "R.permute_dims: legalization needs known shapes"},
    {"R.add(u, u)", StatusCode::kUnimplemented, "R.add: legalization needs known shapes"},
    {"R.subtract(u, w)", StatusCode::kUnimplemented, "R.subtract: legalization needs known shapes"},
    {"R.multiply(z, z)", StatusCode::kUnimplemented, "R.multiply: legalization needs known shapes"},
    {"R.divide(w, u)", StatusCode::kUnimplemented, "R.divide: legalization needs known shapes"},
    {"R.nn.relu(u)", StatusCode::kUnimplemented, "R.nn.relu: legalization needs a known shape"},
};

INSTANTIATE_TEST_SUITE_P(Messages, LegalizeErrorTest, ::testing::ValuesIn(kLegalizeErrors));

TEST(LegalizeOps, LeavesLibraryCallsAlone) {
  // A call the dispatch-library pass sent to oneDNN needs no kernel.
  Result<ir::IRModule> r = NormalizeAndLegalize(
      Module("R.call_dps_packed(\"kiln.dnnl.matmul\", (u, w), out_sinfo=R.Tensor(ndim=2, dtype=\"float32\"))"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->entries.size(), 1u);
}

TEST(LegalizeOps, SymbolicVariableThatNoBufferDimensionBindsIsAScalar) {
  // (n * 2,) + (n * 2,): the kernel's buffers only have the dimension n * 2,
  // so n is a scalar parameter after the buffers and the call passes it.
  Result<ir::IRModule> r =
      NormalizeAndLegalize(Module("R.add(a, a)", "a = R.match_cast(z, R.Tensor((n * 2,), dtype=\"float32\"))"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string text = text::PrintModule(*r);
  EXPECT_NE(text.find("def add(A_handle: T.handle, B_handle: T.handle, T_add_handle: T.handle, n: T.int64):"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("R.call_tir(cls.add, (a, a), out_sinfo=R.Tensor((n * 2,), dtype=\"float32\"), tir_vars=R.shape([n]))"),
            std::string::npos)
      << text;
}

TEST(LegalizeOps, LinearResizeByAWholeWidthFactorStoresPhases) {
  // 3 x 4 -> 6 x 8 (half_pixel): per input column j the two output columns
  // j * 2 + 0 and j * 2 + 1, an interior loop over j in [1, 3) with
  // unclamped loads and clamped border columns; no per-output floor of the
  // column coordinate. A width that is no whole multiple keeps the Compute
  // form.
  auto resize = [](int64_t ow) {
    return R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 3, 4), dtype="float32")):
        r = R.image.resize2d(x, R.shape([6, )" +
           std::to_string(ow) + R"(]), method="linear")
        return r
)";
  };
  Result<ir::IRModule> r = NormalizeAndLegalize(resize(8));
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string text = text::PrintModule(*r);
  EXPECT_NE(text.find("j * 2 + 1]"), std::string::npos) << text;
  EXPECT_NE(text.find("for j in range(T.int64(1), T.int64(3)):"), std::string::npos) << text;
  EXPECT_NE(text.find("data[n, c, T.min(T.max("), std::string::npos) << text;
  EXPECT_EQ(text.find("T.Cast(\"float32\", j"), std::string::npos) << text;
  Result<ir::IRModule> odd = NormalizeAndLegalize(resize(7));
  ASSERT_TRUE(odd.ok()) << odd.status().message();
  EXPECT_EQ(text::PrintModule(*odd).find("j * 2 + 1]"), std::string::npos);
}

TEST(LegalizeOps, NearestResizeByAPowerOfTwoReadsIntegerIndices) {
  // 5 x 7 -> 10 x 14 nearest (asymmetric, floor): rows and columns by 2
  // read data at v_i2 // 2 and v_i3 // 2, no float coordinate. Columns by 3
  // (10 x 21) take the separable kernel: the row still y // 2, the columns
  // by phase (output j * 3 + r reads input column j * 1 + 0).
  auto resize = [](int64_t ow) {
    return R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 5, 7), dtype="float32")):
        r = R.image.resize2d(x, R.shape([10, )" +
           std::to_string(ow) + R"(]), method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor")
        return r
)";
  };
  Result<ir::IRModule> r = NormalizeAndLegalize(resize(14));
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string text = text::PrintModule(*r);
  EXPECT_NE(text.find("data[v_i0, v_i1, v_i2 // 2, v_i3 // 2]"), std::string::npos) << text;
  EXPECT_EQ(text.find("T.Cast(\"float32\""), std::string::npos) << text;
  Result<ir::IRModule> by3 = NormalizeAndLegalize(resize(21));
  ASSERT_TRUE(by3.ok()) << by3.status().message();
  text = text::PrintModule(*by3);
  EXPECT_NE(text.find("ylo: T.int64 = y // 2"), std::string::npos) << text;
  EXPECT_NE(text.find("resize[n, c, y, j * 3 + 2] = data[n, c, ylo, j * 1 + 0]"), std::string::npos) << text;
  EXPECT_EQ(text.find("T.Cast(\"float32\""), std::string::npos) << text;
}

TEST(LegalizeOps, NearestResizeByAPowerOfTwoOfSymbolicExtents) {
  // h x w -> h * 2 x w * 4, half_pixel, round_prefer_ceil: the phases of
  // one period round to 0, so any o maps to o // k, written here (no float
  // coordinate, no clamp). "round" (ties to even) keeps the float form.
  auto resize = [](const char* rounding) {
    return std::string(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, "h", "w"), dtype="float32")):
        h = T.int64()
        w = T.int64()
        r = R.image.resize2d(x, R.shape([h * 2, w * 4]), method="nearest_neighbor", rounding_method=")") +
           rounding + R"(")
        return r
)";
  };
  Result<ir::IRModule> r = NormalizeAndLegalize(resize("round_prefer_ceil"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string text = text::PrintModule(*r);
  EXPECT_NE(text.find("data[v_i0, v_i1, v_i2 // 2, v_i3 // 4]"), std::string::npos) << text;
  EXPECT_EQ(text.find("T.Cast(\"float32\""), std::string::npos) << text;
  Result<ir::IRModule> round = NormalizeAndLegalize(resize("round"));
  ASSERT_TRUE(round.ok()) << round.status().message();
  EXPECT_NE(text::PrintModule(*round).find("T.round("), std::string::npos) << text::PrintModule(*round);
}

TEST(LegalizeOps, ResizeOfNonWholeWidthsSeparatesTheAxes) {
  // Linear 3 x 4 -> 5 x 6 (half_pixel, widths 3 : 2): per plane a table of
  // the 6 column weights; per output row the two source rows blended once
  // into a row of 4, then per j the 3 output columns j * 3 + r from row
  // columns j * 2 + d[r] (clamped here: no column of 4 is interior for every
  // phase). align_corners 3 x 4 -> 5 x 7 has no small period: per-column
  // tables of source columns. No per-output floor of a column coordinate in
  // either: those happen in the table loops, once per plane.
  auto resize = [](int64_t ow, const char* mode) {
    return R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 3, 4), dtype="float32")):
        r = R.image.resize2d(x, R.shape([5, )" +
           std::to_string(ow) + R"(]), method="linear", coordinate_transformation_mode=")" + mode + R"(")
        return r
)";
  };
  Result<ir::IRModule> r = NormalizeAndLegalize(resize(6, "half_pixel"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string text = text::PrintModule(*r);
  EXPECT_NE(text.find("resize_row[i] = data[n, c, ylo, i] * (T.float32(1) - fy) + data[n, c, yhi, i] * fy"),
            std::string::npos) << text;
  EXPECT_NE(text.find("resize[n, c, y, j * 3 + 2] = resize_row[T.min(T.max(j * 2 + 1, 0)"), std::string::npos) << text;
  EXPECT_NE(text.find("resize_col_w[j * 3 + 2]"), std::string::npos) << text;
  Result<ir::IRModule> align = NormalizeAndLegalize(resize(7, "align_corners"));
  ASSERT_TRUE(align.ok()) << align.status().message();
  text = text::PrintModule(*align);
  EXPECT_NE(text.find("resize[n, c, y, j] = resize_row[T.Cast(\"int64\", resize_col_lo[j])]"), std::string::npos) << text;
  EXPECT_NE(text.find("resize_row[T.Cast(\"int64\", resize_col_hi[j])] * resize_col_w[j]"), std::string::npos) << text;
}

TEST(LegalizeOps, ModuleWithoutOperatorsIsReturnedUnchanged) {
  Result<ir::IRModule> r = NormalizeAndLegalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        r = R.call_dps_packed("p", (x,), out_sinfo=R.Tensor((2, 3), dtype="float32"))
        return r
)");
  ASSERT_TRUE(r.ok()) << r.status().message();
  Result<ir::IRModule> again = LegalizeOps(*r, LegalizeOptions{});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->entries.size(), 1u);
  // Nothing to rewrite: the very same function node comes back.
  EXPECT_EQ(again->entries[0].relax, r->entries[0].relax);
}

TEST(LegalizeOps, NewKernelNamesAvoidExistingFunctions) {
  Result<ir::IRModule> r = NormalizeAndLegalize(R"(@I.ir_module
class Module:
    @T.prim_func
    def add(A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32")):
        for i in range(2):
            B[i] = A[i]

    @R.function
    def main(x: R.Tensor((2,), dtype="float32")):
        r = R.add(x, x)
        return r
)");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_NE(r->FindPrim("add1"), nullptr);
  EXPECT_NE(text::PrintModule(*r).find("R.call_tir(cls.add1, (x, x)"), std::string::npos) << text::PrintModule(*r);
}

TEST(TeCompute, VariableThatIsNoPlainBufferDimensionIsAScalarParameter) {
  ir::Var n = ir::MakeVar("n");
  te::ComputeSpec spec;
  spec.func_name = "k";
  spec.block_name = "k";
  spec.inputs = {{"A", {ir::PrimExpr(n) + ir::PrimExpr(int64_t{1})}, DType::Float32()}};
  spec.output = {"B", {ir::PrimExpr(n) * ir::PrimExpr(int64_t{2})}, DType::Float32()};
  spec.fcompute = [](const std::vector<ir::Buffer>& in, const std::vector<ir::PrimExpr>& sp,
                     const std::vector<ir::PrimExpr>&) { return ir::Load(in[0], sp); };
  Result<ir::PrimFunc> f = te::BuildComputePrimFunc(spec);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ((*f)->params.size(), 3u);
  EXPECT_EQ((*f)->BufferOf((*f)->params[2]), nullptr);
  EXPECT_EQ((*f)->params[2]->name, "n");
  EXPECT_NE((*f)->params[2].get(), n.get());  // a local variable, not the caller's
  // With n itself as a dimension of the input, the kernel takes buffers only.
  spec.inputs[0].shape = {ir::PrimExpr(n)};
  Result<ir::PrimFunc> g = te::BuildComputePrimFunc(spec);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->params.size(), 2u);
}

}  // namespace
}  // namespace relax
}  // namespace kiln
