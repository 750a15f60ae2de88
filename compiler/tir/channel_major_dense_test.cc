// ScheduleChannelMajorDense: Keras' TimeDistributed(Dense) after a Conv1D
// (squeeze -> bias -> relu -> transpose -> reshape -> matmul -> bias, as in
// DeepCut) compiled through the driver: the kernel's structure, the cases it
// declines, and its numbers against a double reference for static and
// symbolic batches, odd position counts and widths.
#include "compiler/tir/channel_major_dense.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using test_util::CompileAndLoad;
using test_util::CountTiles;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::LowerPrimFunc;
using test_util::RandomFloats;
using test_util::TileCensus;

struct DenseCase {
  int64_t c, l, j;  // channels, positions, dense width
};

std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[N, C, 1, L], b[1, C, 1], w[C, J], d[J]) =
//   reshape(transpose(relu(squeeze(x) + b)), [N * L, C]) @ w + d,
// N the symbolic "n" when `batch` is 0.
std::string Module(const DenseCase& k, int64_t batch) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string n = batch > 0 ? s(batch) : "n";
  std::string rows = batch > 0 ? s(batch * k.l) : "n * " + s(k.l);
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " +
                    T((batch > 0 ? n : "\"n\"") + ", " + s(k.c) + ", 1, " + s(k.l)) + ", b: " + T("1, " + s(k.c) + ", 1") +
                    ", w: " + T(s(k.c) + ", " + s(k.j)) + ", d: " + T(s(k.j) + ",") +
                    ") -> R.Tensor(dtype=\"float32\", ndim=2):\n";
  if (batch == 0) src += "        n = T.int64()\n";
  src += "        with R.dataflow():\n";
  src += "            s = R.squeeze(x, axis=[2])\n";
  src += "            a = R.add(s, b)\n";
  src += "            r = R.nn.relu(a)\n";
  src += "            t = R.permute_dims(r, axes=[0, 2, 1])\n";
  src += "            y = R.reshape(t, R.shape([" + rows + ", " + s(k.c) + "]))\n";
  src += "            m = R.matmul(y, w)\n";
  src += "            gv = R.add(m, d)\n";
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

PrimFunc LowerDense(const DenseCase& k, int64_t batch, int threads) {
  return LowerPrimFunc(Module(k, batch), test_util::ThreadsOptions(threads), "matmul");
}

TEST(ChannelMajorDenseTest, DeepCutLayerVectorizesPositions) {
  // DeepCut's 200 -> 5 at 14 positions: the FMAs run over the positions (one
  // vector of 14 per output), not over the 5 outputs; no transposed copy.
  for (int64_t batch : {64, 0}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE("batch " + std::to_string(batch) + " threads " + std::to_string(threads));
      PrimFunc f = LowerDense({200, 14, 5}, batch, threads);
      ASSERT_NE(f, nullptr);
      TileCensus c = CountTiles(f);
      ASSERT_FALSE(c.fma_widths.empty()) << testing::Print(f);
      for (int64_t w : c.fma_widths) EXPECT_EQ(w, 14) << testing::Print(f);
      EXPECT_EQ(c.global_updates, 0);
      EXPECT_EQ(c.parallel, threads >= 2 ? 1 : 0) << testing::Print(f);
      EXPECT_EQ(testing::CountStmts(f).allocates, 1) << testing::Print(f);  // the accumulators only
    }
  }
}

TEST(ChannelMajorDenseTest, TooManyAccumulatorsKeepTheMatmulSchedule) {
  // 40 outputs x 1 vector of 13 positions: more than kMaxDenseAccVectors.
  PrimFunc f = LowerDense({16, 13, 40}, 0, 1);
  ASSERT_NE(f, nullptr);
  TileCensus c = CountTiles(f);
  ASSERT_FALSE(c.fma_widths.empty());
  EXPECT_EQ(std::count(c.fma_widths.begin(), c.fma_widths.end(), 13), 0) << testing::Print(f);
  // And the rule alone declines the lowered function too.
  EXPECT_EQ(ScheduleChannelMajorDense(f, 1).get(), f.get());
}

// T[i0, i1] read again after the matmul (its value is an output too): the
// transposed operand has to exist, so the nests are left alone.
const char* kOperandReadTwice = R"(
@T.prim_func
def dense(x: T.Buffer((3, 4, 1, 5), "float32"), w: T.Buffer((4, 2), "float32"), out: T.Buffer((15, 2), "float32"), out2: T.Buffer((15, 4), "float32")):
    t = T.decl_buffer((15, 4), "float32")
    for i0, i1 in T.grid(T.int64(15), T.int64(4)):
        t[i0, i1] = x[i0 // T.int64(5), i1, T.int64(0), i0 % T.int64(5)]
    for i, j, k in T.grid(T.int64(15), T.int64(2), T.int64(4)):
        if k == T.int64(0):
            out[i, j] = T.float32(0)
        out[i, j] = out[i, j] + t[i, k] * w[k, j]
    for i, j in T.grid(T.int64(15), T.int64(4)):
        out2[i, j] = t[i, j]
)";

// The same without the second reader, and with positions that are not X's
// last index (x[i0 % 5, i1, 0, i0 // 5]: not contiguous).
const char* kOperandOnce = R"(
@T.prim_func
def dense(x: T.Buffer((3, 4, 1, 5), "float32"), w: T.Buffer((4, 2), "float32"), out: T.Buffer((15, 2), "float32")):
    t = T.decl_buffer((15, 4), "float32")
    for i0, i1 in T.grid(T.int64(15), T.int64(4)):
        t[i0, i1] = x[i0 // T.int64(5), i1, T.int64(0), i0 % T.int64(5)]
    for i, j, k in T.grid(T.int64(15), T.int64(2), T.int64(4)):
        if k == T.int64(0):
            out[i, j] = T.float32(0)
        out[i, j] = out[i, j] + t[i, k] * w[k, j]
)";

const char* kPositionsNotLast = R"(
@T.prim_func
def dense(x: T.Buffer((5, 4, 1, 3), "float32"), w: T.Buffer((4, 2), "float32"), out: T.Buffer((15, 2), "float32")):
    t = T.decl_buffer((15, 4), "float32")
    for i0, i1 in T.grid(T.int64(15), T.int64(4)):
        t[i0, i1] = x[i0 % T.int64(5), i1, T.int64(0), i0 // T.int64(5)]
    for i, j, k in T.grid(T.int64(15), T.int64(2), T.int64(4)):
        if k == T.int64(0):
            out[i, j] = T.float32(0)
        out[i, j] = out[i, j] + t[i, k] * w[k, j]
)";

TEST(ChannelMajorDenseTest, MatchesOnlyAPrivateContiguousOperand) {
  PrimFunc once = testing::ParseFunc(kOperandOnce, "dense");
  ASSERT_NE(once, nullptr);
  PrimFunc done = ScheduleChannelMajorDense(once, 2);
  ASSERT_NE(done.get(), once.get());
  EXPECT_EQ(testing::CountStmts(done).allocates, 1) << testing::Print(done);
  Status same = testing::SameNumbers(once, done);
  EXPECT_TRUE(same.ok()) << same.ToString() << "\n" << testing::Print(done);

  PrimFunc twice = testing::ParseFunc(kOperandReadTwice, "dense");
  ASSERT_NE(twice, nullptr);
  EXPECT_EQ(ScheduleChannelMajorDense(twice, 2).get(), twice.get());
  PrimFunc strided = testing::ParseFunc(kPositionsNotLast, "dense");
  ASSERT_NE(strided, nullptr);
  EXPECT_EQ(ScheduleChannelMajorDense(strided, 2).get(), strided.get());
}

// Numbers against a double reference for each batch (static, or the
// symbolic module run at each).
void CheckNumbers(const DenseCase& k, bool symbolic, const std::vector<int64_t>& batches, int threads) {
  SCOPED_TRACE("c " + std::to_string(k.c) + " l " + std::to_string(k.l) + " j " + std::to_string(k.j) +
               (symbolic ? " symbolic" : " static") + " threads " + std::to_string(threads));
  std::shared_ptr<const vm::Module> sym;
  if (symbolic) sym = CompileAndLoad(Module(k, 0), test_util::ThreadsOptions(threads), threads);
  std::vector<float> b = RandomFloats(k.c, 2), w = RandomFloats(k.c * k.j, 3), d = RandomFloats(k.j, 4);
  for (int64_t batch : batches) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    auto mod = symbolic ? sym : CompileAndLoad(Module(k, batch), test_util::ThreadsOptions(threads), threads);
    ASSERT_NE(mod, nullptr);
    std::vector<float> x = RandomFloats(batch * k.c * k.l, 10 + batch);
    Result<Tensor> out = InvokeMain(*mod, {FloatTensor({batch, k.c, 1, k.l}, x), FloatTensor({1, k.c, 1}, b),
                                           FloatTensor({k.c, k.j}, w), FloatTensor({k.j}, d)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{batch * k.l, k.j}));
    const float* got = out->data<float>();
    int bad = 0;
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t p = 0; p < k.l; ++p) {
        for (int64_t j = 0; j < k.j; ++j) {
          double ref = d[j];
          for (int64_t c = 0; c < k.c; ++c)
            ref += std::max(0.0, static_cast<double>(x[(n * k.c + c) * k.l + p]) + b[c]) * w[c * k.j + j];
          double v = got[(n * k.l + p) * k.j + j];
          if (std::fabs(v - ref) > 1e-4 * (1.0 + std::fabs(ref)) && ++bad <= 5)
            ADD_FAILURE() << "n " << n << " position " << p << " j " << j << ": " << v << " vs " << ref;
        }
      }
    }
  }
}

TEST(ChannelMajorDenseNumbersTest, StaticBatch) {
  CheckNumbers({200, 21, 5}, false, {64}, 1);
  CheckNumbers({150, 11, 5}, false, {3}, 2);
  CheckNumbers({7, 1, 3}, false, {5}, 2);  // one position: a dense layer per image
}

TEST(ChannelMajorDenseNumbersTest, SymbolicBatch) {
  // Odd positions (one vector and a tail, three vectors and a tail), widths
  // 1 to 16, batches 1 to 67.
  CheckNumbers({200, 14, 5}, true, {1, 3, 64}, 2);
  CheckNumbers({33, 21, 1}, true, {1, 67}, 1);
  CheckNumbers({9, 50, 5}, true, {2, 5}, 2);
  CheckNumbers({12, 13, 16}, true, {7}, 1);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
