// BuildRowBlockInputTransform's kernel shape and its refusal (the
// winograd-conv2d pass builds valid specs: the refusal fires only on a
// caller's bug). The kernel's numbers are checked through the driver in
// compiler/tir/winograd_symbolic_test.cc (SymbolicHeightAndWidth,
// InputAndOutputTransformColumnBlocks, InputTransformRowBlocksAndPadding);
// the rewrite that calls it in winograd_conv2d_test.cc
// (SymbolicHeightAndWidthBeforeAfter).
#include "compiler/transform/winograd_input_rows.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/arith/simplify.h"
#include "compiler/ir/module.h"
#include "compiler/text/text.h"

namespace kiln {
namespace {

ir::PrimExpr I(int64_t v) { return ir::IntImm(DType::Int64(), v); }

transform::RowBlockInputSpec Spec() {
  transform::RowBlockInputSpec s;
  s.m = 4, s.alpha = 6;
  s.bt = {{4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
          {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
  s.c = 32;
  ir::PrimExpr h(ir::MakeVar("h", DType::Int64())), w(ir::MakeVar("w", DType::Int64()));
  s.n = I(1), s.h = h, s.w = w;
  s.th = arith::Simplify(ir::MakeBinary(ir::TirKind::kFloorDiv, h + I(3), I(4)));
  s.tw = arith::Simplify(ir::MakeBinary(ir::TirKind::kFloorDiv, w + I(3), I(4)));
  s.pad_top = s.pad_left = 1;
  return s;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(WinogradInputRows, ReadsTheUnpaddedInputInBlocksOfSixteenTiles) {
  Result<transform::RowBlockInputKernel> k = transform::BuildRowBlockInputTransform("wino_in", Spec());
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  // X (1, 32, h, w) binds h and w; V; nothing passed as a scalar.
  EXPECT_EQ(k->f->params.size(), 2u);
  EXPECT_TRUE(k->tir_vars.empty());
  ir::IRModule mod;
  mod.Add("wino_in", k->f);
  std::string text = text::PrintModule(mod);
  // Blocks of 16 tiles: each of the 6 passes' rows' 66 columns as 2 phases
  // of 33, inside X loaded 2 apart; at the edges a plain row of 66 split
  // into them.
  for (const char* part : {"row_ph = T.decl_buffer((6, 2, 33)", "row = T.decl_buffer((66,)", "T.vectorized(T.int64(33))",
                           "T.vectorized(T.int64(66))", "T.vectorized(T.int64(16))", "X[n, c, ty * 4 + -1, c0 + (q + 0) * 2 + 1]"})
    EXPECT_TRUE(Contains(text, part)) << part << "\n" << text;
  // Stored straight to V unless the block's 16 lanes pass V's end.
  EXPECT_TRUE(Contains(text, "if (n * th + ty) * tw + xb * 16 + 16 <= t_all:")) << text;
  // In the plain row, rows outside X are left out by a test (no clamped or
  // selected loads there).
  EXPECT_TRUE(Contains(text, "if 0 <= ty * 4 + -1 and ty * 4 + -1 < h:")) << text;
}

size_t Count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

TEST(WinogradInputRows, OneNestDoesEveryPassOfABlock) {
  Result<transform::RowBlockInputKernel> k = transform::BuildRowBlockInputTransform("wino_in", Spec());
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ir::IRModule mod;
  mod.Add("wino_in", k->f);
  std::string text = text::PrintModule(mod);
  // One loop over images, tile rows and blocks (rows of more than
  // kNarrowBlockTiles tiles); its block stores all 36 streams (the 6
  // passes' 6 each).
  EXPECT_EQ(Count(text, "for n, ty, xb in T.grid("), 1u) << text;
  EXPECT_TRUE(Contains(text, "V[i * 6 + 0, c, (n * th + ty) * tw + xb * 16 + l]")) << text;
  EXPECT_TRUE(Contains(text, "V[i * 6 + 5, c, (n * th + ty) * tw + xb * 16 + l]")) << text;
  EXPECT_TRUE(Contains(text, "for i in T.unroll(T.int64(6)):")) << text;
  // Blocks whose loads stay inside X's memory but reach past a row's ends
  // (the first and last of a row): the columns outside [0, w) selected to
  // zero, and the rows outside [0, h) (first and last tile rows) selected
  // from a load of a clamped row, in the same static loop; the plain row
  // only where the loads would leave X. The column test compares floats
  // (the column from a buffer filled once a channel), so that the loop is
  // one the code generator takes for explicit vectors.
  EXPECT_TRUE(Contains(text, "T.Select(T.Cast(\"float32\", 0 - c0) <= colf[T.int64(0), T.int64(1), q] and "
                             "colf[T.int64(0), T.int64(1), q] < T.Cast(\"float32\", w - c0),")) << text;
  EXPECT_TRUE(Contains(text, "colf[f, p, k] = T.Cast(\"float32\", (k + f) * 2 + p)")) << text;
  EXPECT_FALSE(Contains(text, "0 <= c0 + (q + 0) * 2 + 1 and")) << text;
  EXPECT_TRUE(Contains(text, "X[n, c, T.max(0, T.min(ty * 4 - 1 + 0, h - 1)), c0 + (q + 0) * 2 + 0]")) << text;
  EXPECT_TRUE(Contains(text, "* w + c0 + 66 <= T.int64(1) * T.int64(32) * h * w:")) << text;
}

TEST(WinogradInputRows, FTwoByTwoRowsInTwoPhasesStoredByOverlappingLoops) {
  // F(2x2): the block's 34 columns as 2 phases of 17, so that the column
  // pass loads ph[p][l] and ph[p][l + 1] (1 apart); each phase filled by
  // two overlapping loops of 16 columns, from 0 and from 1, so that each
  // of those loads reads what one vector store wrote.
  transform::RowBlockInputSpec s = Spec();
  s.m = 2, s.alpha = 4;
  s.bt = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  ir::PrimExpr h = s.h, w = s.w;
  s.th = arith::Simplify(ir::MakeBinary(ir::TirKind::kFloorDiv, h + I(1), I(2)));
  s.tw = arith::Simplify(ir::MakeBinary(ir::TirKind::kFloorDiv, w + I(1), I(2)));
  Result<transform::RowBlockInputKernel> k = transform::BuildRowBlockInputTransform("wino_in", s);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ir::IRModule mod;
  mod.Add("wino_in", k->f);
  std::string text = text::PrintModule(mod);
  for (const char* part : {"row_ph = T.decl_buffer((4, 2, 17)", "row = T.decl_buffer((34,)",
                           "row_ph[T.int64(0), T.int64(0), q + 0] = X[n, c, ty * 2 + -1, c0 + (q + 0) * 2 + 0]",
                           "row_ph[T.int64(0), T.int64(1), q + 1] = X[n, c, ty * 2 + -1, c0 + (q + 1) * 2 + 1]",
                           "V[i * 4 + 3, c, (n * th + ty) * tw + xb * 16 + l] = row_ph[i, T.int64(1), l * 1 + 0] - "
                           "row_ph[i, T.int64(1), l * 1 + 1]",
                           "vt[i * 4 + 3, l] = row_ph[i, T.int64(1), l * 1 + 0] - row_ph[i, T.int64(1), l * 1 + 1]",
                           "V[T.int64(15), c,"})
    EXPECT_TRUE(Contains(text, part)) << part << "\n" << text;
  EXPECT_FALSE(Contains(text, "T.vectorized(T.int64(17))")) << text;
  EXPECT_EQ(Count(text, "for n, ty, xb in T.grid("), 1u) << text;
}

TEST(WinogradInputRows, FTwoByTwoNarrowBlocksFillEachPhaseInOneLoop) {
  // F(2x2), rows of at most 8 tiles: each phase of the block (8 or 4 lanes)
  // filled by one loop of twice the lanes (16 or 8 columns), whose one
  // vector store holds both of the column pass's loads (from 0 and from
  // 1); blocks of 16 keep the two overlapping loops of 16.
  transform::RowBlockInputSpec s = Spec();
  s.m = 2, s.alpha = 4;
  s.bt = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  ir::PrimExpr h = s.h, w = s.w;
  s.th = arith::Simplify(ir::MakeBinary(ir::TirKind::kFloorDiv, h + I(1), I(2)));
  s.tw = arith::Simplify(ir::MakeBinary(ir::TirKind::kFloorDiv, w + I(1), I(2)));
  Result<transform::RowBlockInputKernel> k = transform::BuildRowBlockInputTransform("wino_in", s);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ir::IRModule mod;
  mod.Add("wino_in", k->f);
  std::string text = text::PrintModule(mod);
  const size_t four = text.find("if tw <= 4:"), eight = text.find("if tw <= 8:"), sixteen = text.find("for n, ty, xb in T.grid(");
  ASSERT_NE(four, std::string::npos) << text;
  ASSERT_NE(eight, std::string::npos) << text;
  ASSERT_NE(sixteen, std::string::npos) << text;
  const std::string narrow4 = text.substr(four, eight - four), narrow8 = text.substr(eight, sixteen - eight),
                    wide = text.substr(sixteen);
  for (const char* part : {"row_ph = T.decl_buffer((4, 2, 8)", "colf = T.decl_buffer((2, 2, 8)", "for q in T.vectorized(T.int64(8)):",
                           "V[i * 4 + 1, c, (n * th + ty) * tw + 0 + l] = row_ph[i, T.int64(1), l * 1 + 0] + "
                           "row_ph[i, T.int64(0), l * 1 + 1]"})
    EXPECT_TRUE(Contains(narrow4, part)) << part << "\n" << narrow4;
  for (const char* part : {"row_ph = T.decl_buffer((4, 2, 16)", "colf = T.decl_buffer((2, 2, 16)", "for q in T.vectorized(T.int64(16)):"})
    EXPECT_TRUE(Contains(narrow8, part)) << part << "\n" << narrow8;
  for (const std::string* t : {&narrow4, &narrow8}) EXPECT_FALSE(Contains(*t, "q + 1]")) << *t;
  EXPECT_TRUE(Contains(wide, "row_ph[T.int64(0), T.int64(1), q + 1] =")) << wide;
  EXPECT_TRUE(Contains(wide, "for q in T.vectorized(T.int64(16)):")) << wide;
}

TEST(WinogradInputRows, ShortRowsTakeOneNarrowBlockARow) {
  // Rows of at most 4 tiles: one block of 4 lanes a row (F(4x4): 18
  // columns, 2 phases of 9); of at most kNarrowBlockTiles (8): one block of
  // 8 (34 columns, 2 phases of 17); longer rows blocks of 16 (66 columns).
  Result<transform::RowBlockInputKernel> k = transform::BuildRowBlockInputTransform("wino_in", Spec());
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ir::IRModule mod;
  mod.Add("wino_in", k->f);
  std::string text = text::PrintModule(mod);
  const size_t four = text.find("if tw <= 4:"), eight = text.find("if tw <= 8:"), sixteen = text.find("for n, ty, xb in T.grid(");
  ASSERT_NE(four, std::string::npos) << text;
  ASSERT_NE(eight, std::string::npos) << text;
  ASSERT_NE(sixteen, std::string::npos) << text;
  EXPECT_LT(four, eight);
  EXPECT_LT(eight, sixteen);
  const std::string narrow4 = text.substr(four, eight - four), narrow8 = text.substr(eight, sixteen - eight);
  for (const char* part : {"row_ph = T.decl_buffer((6, 2, 9)", "row = T.decl_buffer((18,)", "T.vectorized(T.int64(4))",
                           "V[T.int64(35), c, (n * th + ty) * tw + 0 + l]", "if (n * th + ty) * tw + 0 + 4 <= t_all:"})
    EXPECT_TRUE(Contains(narrow4, part)) << part << "\n" << narrow4;
  for (const char* part : {"row_ph = T.decl_buffer((6, 2, 17)", "row = T.decl_buffer((34,)", "T.vectorized(T.int64(8))",
                           "if (n * th + ty) * tw + 0 + 8 <= t_all:"})
    EXPECT_TRUE(Contains(narrow8, part)) << part << "\n" << narrow8;
  // The narrow blocks loop over no block index.
  EXPECT_FALSE(Contains(narrow4, "xb")) << narrow4;
  EXPECT_FALSE(Contains(narrow8, "xb")) << narrow8;
}

TEST(WinogradInputRows, OneFillLoopStoresEveryPassPhases) {
  // Inside X, the block's input columns are loaded once for the 6 passes:
  // one loop of 33 columns stores all 6 passes' 2 phases (12 stores), not
  // a loop a pass. The plain row at the edges still goes pass by pass.
  Result<transform::RowBlockInputKernel> k = transform::BuildRowBlockInputTransform("wino_in", Spec());
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ir::IRModule mod;
  mod.Add("wino_in", k->f);
  std::string text = text::PrintModule(mod);
  // The inside loop, the two masked ones, and the 6 passes' splits of the
  // plain row.
  EXPECT_EQ(Count(text, "T.vectorized(T.int64(33))"), 3u + 6u) << text;
  for (const char* part : {"row_ph[T.int64(0), T.int64(0), q + 0] = T.float32(4) * X[",
                           "row_ph[T.int64(5), T.int64(1), q + 0] = T.float32(4) * X["})
    EXPECT_TRUE(Contains(text, part)) << part << "\n" << text;
}

TEST(WinogradInputRows, RefusesAnInconsistentSpec) {
  transform::RowBlockInputSpec s = Spec();
  s.alpha = 4;  // B^T is 6 x 6
  Result<transform::RowBlockInputKernel> k = transform::BuildRowBlockInputTransform("wino_in", s);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(k.status().message(), "needs m even, alpha = m + 2, B^T alpha x alpha, pads >= 0")) << k.status().message();
  s = Spec();
  s.pad_left = -1;
  EXPECT_FALSE(transform::BuildRowBlockInputTransform("wino_in", s).ok());
}

}  // namespace
}  // namespace kiln
