// ReadsPerElement and OpsPerElement (compiler/fusion/prologue_cost.h) on the
// legalized kernels of tests/fusion/fuse_ops_prologue_cost.before.relax
// (symbolic n / h / w) and on hand-written static ones.
#include <gtest/gtest.h>

#include <string>

#include "compiler/fusion/prologue_cost.h"
#include "compiler/text/text.h"

namespace kiln {
namespace fusion {
namespace {

ir::IRModule Parse(const std::string& src) {
  Result<ir::IRModule> m = text::ParseModule(src, "test.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : ir::IRModule();
}

ir::IRModule Golden() {
  Result<ir::IRModule> m =
      text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/tests/fusion/fuse_ops_prologue_cost.before.relax");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : ir::IRModule();
}

TEST(PrologueCost, ConvolutionReadsEachInputPerTapAndTileOfOutputs) {
  ir::IRModule m = Golden();
  // 3x3, 32 outputs, symbolic h / w: 3 * 3 taps, 32 / kAnchorTile tiles.
  EXPECT_DOUBLE_EQ(ReadsPerElement(m.FindPrim("conv2d"), 0), 3 * 3 * 32 / kAnchorTile);
  // The resize's output (h2 * 2 rows) feeds the same convolution shape.
  EXPECT_DOUBLE_EQ(ReadsPerElement(m.FindPrim("conv2d1"), 0), 3 * 3 * 32 / kAnchorTile);
  // 1x1 with 8 outputs: one tile, one tap.
  EXPECT_DOUBLE_EQ(ReadsPerElement(m.FindPrim("conv2d3"), 0), 1.0);
  // 3x3 / 2 pooling: 1.5 windows per element along each axis.
  EXPECT_DOUBLE_EQ(ReadsPerElement(m.FindPrim("max_pool2d"), 0), 1.5 * 1.5);
}

TEST(PrologueCost, ProducerCostsCountArithmeticIndexingAndExtraLoads) {
  ir::IRModule m = Golden();
  EXPECT_DOUBLE_EQ(OpsPerElement(m.FindPrim("multiply")), 2.0);  // one multiply, a second load
  EXPECT_DOUBLE_EQ(OpsPerElement(m.FindPrim("exp")), kTranscendentalCost);
  // The channel test of a concatenation is on the iteration point only: an
  // inlining consumer splits its loop there, and each element loads once.
  EXPECT_DOUBLE_EQ(OpsPerElement(m.FindPrim("concatenate")), 0.0);
  // Nearest resize: casts, floor, scale, clamps in both indices.
  EXPECT_GT(OpsPerElement(m.FindPrim("resize2d")), 8.0);
}

TEST(PrologueCost, StaticStridedConvolutionTransposeAndMatmul) {
  ir::IRModule m = Parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def conv_s2(data: T.Buffer((1, 4, 16, 16), "float32"), weight: T.Buffer((64, 4, 3, 3), "float32"), out: T.Buffer((1, 64, 8, 8), "float32")):
        for i0, i1, i2, i3, k0, k1, k2 in T.grid(1, 64, 8, 8, 4, 3, 3):
            with T.block("conv"):
                n, o, y, x, c, ky, kx = T.axis.remap("SSSSRRR", [i0, i1, i2, i3, k0, k1, k2])
                with T.init():
                    out[n, o, y, x] = T.float32(0)
                out[n, o, y, x] = out[n, o, y, x] + T.if_then_else(y * 2 + ky - 1 >= 0 and x * 2 + kx - 1 >= 0, data[n, c, y * 2 + ky - 1, x * 2 + kx - 1], T.float32(0)) * weight[o, c, ky, kx]

    @T.prim_func
    def matmul(A_handle: T.handle, B: T.Buffer((32, 64), "float32"), C_handle: T.handle):
        m = T.int64()
        A = T.match_buffer(A_handle, (m, 32), "float32")
        C = T.match_buffer(C_handle, (m, 64), "float32")
        for i, j, k in T.grid(m, 64, 32):
            with T.block("mm"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def transpose(A: T.Buffer((8, 4), "float32"), B: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            with T.block("T"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj, vi]
)");
  // 3 taps / stride 2 per axis, 64 / 8 output tiles; the weight is read at
  // every output position (8 * 8 / 8).
  EXPECT_DOUBLE_EQ(ReadsPerElement(m.FindPrim("conv_s2"), 0), 1.5 * 1.5 * 64 / kAnchorTile);
  EXPECT_DOUBLE_EQ(ReadsPerElement(m.FindPrim("conv_s2"), 1), 8.0);
  // A: once per tile of 8 of the 64 columns; B: once per tile of the
  // (symbolic, assumed kAssumedSymbolicExtent) rows.
  EXPECT_DOUBLE_EQ(ReadsPerElement(m.FindPrim("matmul"), 0), 64 / kAnchorTile);
  EXPECT_DOUBLE_EQ(ReadsPerElement(m.FindPrim("matmul"), 1), kAssumedSymbolicExtent / kAnchorTile);
  // A transpose reads each element once and only moves data.
  EXPECT_DOUBLE_EQ(ReadsPerElement(m.FindPrim("transpose"), 0), 1.0);
  EXPECT_DOUBLE_EQ(OpsPerElement(m.FindPrim("transpose")), 0.0);
  EXPECT_TRUE(StoresAtLoopPoint(m.FindPrim("transpose")));
}

TEST(PrologueCost, KernelsStoringElsewhereThanTheLoopPointCannotBeInlined) {
  ir::IRModule m = Parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def pairs(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(4):
            B[i * 2] = A[i * 2] + A[i * 2 + 1]
            B[i * 2 + 1] = A[i * 2] - A[i * 2 + 1]

    @T.prim_func
    def where(C: T.Buffer((8,), "float32"), A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.serial(8):
            with T.block("W"):
                vi = T.axis.spatial(8, i)
                B[vi] = T.if_then_else(C[vi] > T.float32(0), A[vi], T.float32(0))
)");
  EXPECT_FALSE(StoresAtLoopPoint(m.FindPrim("pairs")));
  // A choice on data costs its test and select, and loads both operands.
  EXPECT_DOUBLE_EQ(OpsPerElement(m.FindPrim("where")), 3.0);
  EXPECT_TRUE(StoresAtLoopPoint(m.FindPrim("where")));
}

TEST(PrologueCost, RefusesOnlyWhenRecomputingCostsMoreThanMaterializing) {
  EXPECT_FALSE(PrologueTooCostly(1.0, 1000.0));  // read once: never recomputed
  EXPECT_FALSE(PrologueTooCostly(1000.0, 0.0));  // costs nothing to recompute
  EXPECT_FALSE(PrologueTooCostly(5.0, kMaterializeCost / 4));
  EXPECT_TRUE(PrologueTooCostly(36.0, 4.0));
}

}  // namespace
}  // namespace fusion
}  // namespace kiln
