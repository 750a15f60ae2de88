// BlockTransposedReads: which nests take blocks of the outer loop (a read
// down a column, independent stores), the structure they get, the same
// numbers as the lowered nest, and nests it must leave alone.
#include "compiler/tir/transposed_reads.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::ParseFunc;
using testing::SameNumbers;

// A layer norm's output written transposed, as magika's lowers:
// out[0, c, p, 0] = (x[0, p, c] - m[c]) * (r[c] * g[p]) + b[p], the column
// loop (`c`, extent C) outside the position loop (P) and a unit loop inside.
// `read`: how x is indexed; `kind`: the column loop's kind.
std::string Norm(int64_t c, int64_t p, const std::string& read = "x[0, i2, i1]", const std::string& kind = "T.parallel") {
  std::string C = std::to_string(c), P = std::to_string(p);
  return "@T.prim_func\ndef norm(x: T.Buffer((1, " + P + ", " + C + "), \"float32\"), m: T.Buffer((" + C +
         ",), \"float32\"), r: T.Buffer((" + C + ",), \"float32\"), g: T.Buffer((" + P +
         ",), \"float32\"), b: T.Buffer((" + P + ",), \"float32\"), out: T.Buffer((1, " + C + ", " + P +
         ", 1), \"float32\")):\n    for i0 in range(T.int64(1)):\n        for i1 in " + kind + "(T.int64(" + C +
         ")):\n            for i2, i3 in T.grid(T.int64(" + P + "), T.int64(1)):\n                out[i0, i1, i2, i3] = (" +
         read + " - m[i1]) * (r[i1] * g[i2]) + b[i2]\n";
}

struct Loops : StmtExprVisitor {
  std::vector<std::pair<std::string, int64_t>> seen;  // name, extent, outermost first
  void VisitStmt(const Stmt& s) override {
    if (const auto* f = As<ForNode>(s)) {
      const auto* e = f->extent.as<IntImmNode>();
      seen.push_back({f->loop_var->name, e ? e->value : -1});
    }
    StmtExprVisitor::VisitStmt(s);
  }
};

TEST(TransposedReadsTest, ColumnReadsRunInBlocksOfALine) {
  for (const char* kind : {"T.parallel", "range"}) {
    PrimFunc f = ParseFunc(Norm(64, 48, "x[0, i2, i1]", kind), "norm");
    PrimFunc out = BlockTransposedReads(f);
    ASSERT_NE(out, f) << kind;
    Loops l;
    l.VisitStmt(out->body);
    // i0 (unit), i1_o (64 / 16), i2 (48), i1_i (16), i3 (unit).
    ASSERT_EQ(l.seen.size(), 5u) << testing::Print(out);
    EXPECT_EQ(l.seen[1], std::make_pair(std::string("i1_o"), int64_t{4}));
    EXPECT_EQ(l.seen[2], std::make_pair(std::string("i2"), int64_t{48}));
    EXPECT_EQ(l.seen[3], std::make_pair(std::string("i1_i"), kTransposeBlock));
    Status s = SameNumbers(f, out);
    EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << testing::Print(out);
  }
}

TEST(TransposedReadsTest, OtherNestsAreLeftAlone) {
  // Rows read along the row (no column read), a column count that is not a
  // multiple of the block, and a nest that reads what it stores.
  PrimFunc rows = ParseFunc(Norm(64, 48, "x[0, i1 % 48, i2 % 64]"), "norm");
  EXPECT_EQ(BlockTransposedReads(rows), rows);
  PrimFunc odd = ParseFunc(Norm(40, 48), "norm");
  EXPECT_EQ(BlockTransposedReads(odd), odd);
  PrimFunc self = ParseFunc(R"(@T.prim_func
def self(x: T.Buffer((64, 64), "float32")):
    for i in T.parallel(T.int64(64)):
        for j in range(T.int64(64)):
            x[i, j] = x[j, i] + T.float32(1)
)",
                            "self");
  EXPECT_EQ(BlockTransposedReads(self), self);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
