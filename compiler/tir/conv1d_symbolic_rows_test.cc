// ShortRows (conv1d_symbolic_rows.cc): padded stride-1 1-D convolutions of a
// symbolic length whose rows hold at most 48 columns at run time take one
// tile of 16 (or 12, 8) output channels x 8 or 16 columns, or half as many
// channels x 24 to 48 columns, from a zero-extended padded row. Structure of
// the lowered TIR, the cases it declines, and numbers at every length around
// the tile widths against a double-precision reference (driver + VM).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::LowerPrimFunc;
using test_util::RandomFloats;

using namespace ir;  // NOLINT

struct Case {
  int64_t c, o, k, dil, pad_lo, pad_hi;
  int64_t stride = 1;
  int64_t Lo(int64_t l) const { return (l + pad_lo + pad_hi - dil * (k - 1) - 1) / stride + 1; }
  std::string Name() const {
    auto s = [](int64_t v) { return std::to_string(v); };
    return "c" + s(c) + " o" + s(o) + " k" + s(k) + " d" + s(dil) + " p" + s(pad_lo) + "," + s(pad_hi) + " s" +
           s(stride);
  }
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[1, C, L], w[O, C, K], b[O, 1]) = conv1d(x, w) + b; L the symbolic
// "l" unless `length` > 0.
std::string Module(const Case& k, int64_t length) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string l = length > 0 ? s(length) : "\"l\"";
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("1, " + s(k.c) + ", " + l) +
         ", w: " + T(s(k.o) + ", " + s(k.c) + ", " + s(k.k)) + ", b: " + T(s(k.o) + ", 1") +
         ") -> R.Tensor(dtype=\"float32\", ndim=3):\n        with R.dataflow():\n"
         "            c = R.nn.conv1d(x, w, strides=[" + s(k.stride) + "], padding=[" + s(k.pad_lo) + ", " +
         s(k.pad_hi) + "], dilation=[" + s(k.dil) + "])\n"
         "            gv = R.add(c, b)\n            R.output(gv)\n        return gv\n";
}

// The short-row tiles of a lowered kernel: the shapes of its "acc" buffers
// allocated next to a "*_short_row" copy.
struct ShortRowCensus : StmtExprVisitor {
  bool copy = false;
  std::vector<std::vector<int64_t>> tiles;
  int depth = 0;  // inside a short-row copy's allocation
  void VisitStmt(const Stmt& s) override {
    if (const auto* a = As<AllocateNode>(s)) {
      const std::string& name = a->buffer->name;
      const bool short_row = name.size() > 10 && name.compare(name.size() - 10, 10, "_short_row") == 0;
      if (short_row) {
        copy = true;
        ++depth;
      }
      if (depth > 0 && name == "acc") {
        std::vector<int64_t> shape;
        for (const PrimExpr& e : a->buffer->shape) {
          const auto* v = e.as<IntImmNode>();
          shape.push_back(v != nullptr ? v->value : -1);
        }
        tiles.push_back(shape);
      }
      StmtExprVisitor::VisitStmt(s);
      if (short_row) --depth;
      return;
    }
    StmtExprVisitor::VisitStmt(s);
  }
};

ShortRowCensus Census(const Case& k, int64_t length) {
  ShortRowCensus c;
  PrimFunc f = LowerPrimFunc(Module(k, length), test_util::ThreadsOptions(2), "conv1d");
  EXPECT_NE(f, nullptr);
  if (f != nullptr) c.VisitStmt(f->body);
  return c;
}

TEST(Conv1dSymbolicRowsTest, ShortSymbolicRowsTakeChannelWideTiles) {
  // AttaCut's layer: 48 -> 64 channels, kernel 9, dilation 2, same padding:
  // 16 channels x 8 columns (rows of up to 8), 16 x 16 (up to 16), then
  // 8 x 24, ..., 8 x 48.
  ShortRowCensus c = Census(Case{48, 64, 9, 2, 8, 8}, 0);
  EXPECT_TRUE(c.copy);
  EXPECT_EQ(c.tiles, (std::vector<std::vector<int64_t>>{{16, 8}, {16, 16}, {8, 24}, {8, 32}, {8, 40}, {8, 48}}));
  // 24 output channels: tiles of 12, then 6.
  ShortRowCensus c24 = Census(Case{5, 24, 5, 1, 2, 2}, 0);
  EXPECT_EQ(c24.tiles, (std::vector<std::vector<int64_t>>{{12, 8}, {12, 16}, {6, 24}, {6, 32}, {6, 40}, {6, 48}}));
}

TEST(Conv1dSymbolicRowsTest, DeclinedCases) {
  // A static length is ScheduleConvs' (the pinned schedule).
  EXPECT_FALSE(Census(Case{48, 64, 9, 2, 8, 8}, 12).copy);
  // Output channels no multiple of 8, 12 or 16: the flat planes keep it.
  EXPECT_FALSE(Census(Case{8, 10, 3, 1, 1, 1}, 0).copy);
  // Strided: the phase planes keep it.
  EXPECT_FALSE(Census(Case{8, 16, 3, 1, 1, 1, 2}, 0).copy);
}

void CheckNumbers(const Case& k, int threads, const std::vector<int64_t>& lengths) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads));
  std::shared_ptr<const vm::Module> mod = CompileAndLoad(Module(k, 0), test_util::ThreadsOptions(threads), threads);
  ASSERT_NE(mod, nullptr);
  std::vector<float> w = RandomFloats(k.o * k.c * k.k, 2), bias = RandomFloats(k.o, 3);
  for (int64_t l : lengths) {
    SCOPED_TRACE("length " + std::to_string(l));
    const int64_t lo = k.Lo(l);
    std::vector<float> x = RandomFloats(k.c * l, 1 + l);
    Result<Tensor> out = InvokeMain(
        *mod, {FloatTensor({1, k.c, l}, x), FloatTensor({k.o, k.c, k.k}, w), FloatTensor({k.o, 1}, bias)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{1, k.o, lo}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t o = 0; o < k.o; ++o) {
      for (int64_t xo = 0; xo < lo; ++xo) {
        double acc = bias[o];
        for (int64_t c = 0; c < k.c; ++c)
          for (int64_t kx = 0; kx < k.k; ++kx) {
            const int64_t ix = xo * k.stride + kx * k.dil - k.pad_lo;
            if (ix >= 0 && ix < l) acc += double(x[c * l + ix]) * w[(o * k.c + c) * k.k + kx];
          }
        const double tol = 1e-5 * double(k.c * k.k) + 1e-5;
        if (!(std::fabs(got[o * lo + xo] - acc) <= tol) && bad++ < 5)
          ADD_FAILURE() << "o " << o << " x " << xo << ": got " << got[o * lo + xo] << ", want " << acc;
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

// Every length from 1 to 50 (every tile width, the switch to the flat
// planes after 48), and a longer one.
std::vector<int64_t> Lengths() {
  std::vector<int64_t> l;
  for (int64_t v = 1; v <= 50; ++v) l.push_back(v);
  l.push_back(70);
  return l;
}

TEST(Conv1dSymbolicRowsTest, Numbers) {
  CheckNumbers(Case{48, 64, 9, 2, 8, 8}, 1, Lengths());
  CheckNumbers(Case{48, 64, 9, 2, 8, 8}, 2, Lengths());
  CheckNumbers(Case{5, 24, 5, 1, 2, 2}, 1, Lengths());
  // Asymmetric padding: only on the right, and more on the left than the
  // reach (output longer than the input).
  CheckNumbers(Case{6, 16, 3, 2, 0, 4}, 2, Lengths());
  CheckNumbers(Case{3, 8, 3, 1, 3, 1}, 1, Lengths());
}

}  // namespace
}  // namespace tir
}  // namespace kiln
