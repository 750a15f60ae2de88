// FlattenElementwiseRows (flatten_elementwise.h): elementwise rows of a
// symbolic width over rows (c + k) of their buffers become one flat loop;
// accesses that are not whole rows, static widths and functions with a
// reduction stay. Numbers: an STFT magnitude over a symbolic batch and
// width through the driver and the VM, at widths 1 to 40.
#include "compiler/tir/flatten_elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/schedule/schedule_test_util.h"
#include "compiler/tir/stmt_functor.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT
using testing::CountStmts;
using testing::ParseFunc;
using testing::Print;

// As legalize + fusion write Silero VAD's STFT magnitude: the real and
// imaginary halves are rows c and c + 3 of one buffer.
const char* kMagnitude = R"(
@T.prim_func
def mag(a_handle: T.handle, o_handle: T.handle):
    n = T.int64()
    w = T.int64()
    A = T.match_buffer(a_handle, (n, 6, w), "float32")
    O = T.match_buffer(o_handle, (n, 3, w), "float32")
    for i0, i1, i2 in T.grid(n, T.int64(3), w):
        O[i0, i1, i2] = T.sqrt(A[i0, i1, i2] * A[i0, i1, i2] + A[i0, i1 + T.int64(3), i2] * A[i0, i1 + T.int64(3), i2])
)";

TEST(FlattenElementwiseTest, RowsOfASymbolicWidthBecomeOneLoop) {
  PrimFunc f = ParseFunc(kMagnitude, "mag");
  PrimFunc flat = FlattenElementwiseRows(f);
  ASSERT_NE(flat, f);
  std::string text = Print(flat);
  EXPECT_EQ(CountStmts(flat).loops, 2) << text;  // i0, j
  EXPECT_NE(text.find("T.sqrt(A_1[i0, j] * A_1[i0, j] + A_1[i0, 3 * w + j]"), std::string::npos) << text;
}

TEST(FlattenElementwiseTest, OtherNestsStay) {
  const std::pair<std::string, std::string> edits[] = {
      // A row read transposed (x as the row, c as the column).
      {"A[i0, i1 + T.int64(3), i2] * A[i0, i1 + T.int64(3), i2]", "A[i0, i2, i1] * A[i0, i1 + T.int64(3), i2]"},
      // A row behind the current one (c - 1).
      {"A[i0, i1 + T.int64(3), i2] * A[i0, i1 + T.int64(3), i2]", "A[i0, i1 + T.int64(3), i2] * A[i0, i1 - T.int64(1), i2]"},
      // An output whose rows are more than the loop's (a slice of them).
      {"O = T.match_buffer(o_handle, (n, 3, w)", "O = T.match_buffer(o_handle, (n, 4, w)"},
      // The column index used in the value.
      {"T.sqrt(A[i0, i1, i2]", "T.sqrt(T.Cast(\"float32\", i2) + A[i0, i1, i2]"},
  };
  for (const auto& [from, to] : edits) {
    std::string src = kMagnitude;
    ASSERT_NE(src.find(from), std::string::npos) << from;
    src.replace(src.find(from), from.size(), to);
    PrimFunc f = ParseFunc(src, "mag");
    EXPECT_EQ(FlattenElementwiseRows(f), f) << src;
  }
  // Rows alone (no loop outside them: the flat loop would be the parallel
  // one), and a symbolic row count.
  std::string alone = kMagnitude;
  alone.replace(alone.find("for i0, i1, i2 in T.grid(n, "), std::string("for i0, i1, i2 in T.grid(n, ").size(),
                "for i0, i1, i2 in T.grid(T.int64(1), ");
  PrimFunc a = ParseFunc(alone, "mag");
  EXPECT_EQ(FlattenElementwiseRows(a), a) << alone;
  std::string rows = kMagnitude;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"    w = T.int64()\n", "    w = T.int64()\n    m = T.int64()\n"},
                                 {"(n, 6, w)", "(n, m + 3, w)"}, {"(n, 3, w)", "(n, m, w)"},
                                 {"T.int64(3), w)", "m, w)"}}) {
    ASSERT_NE(rows.find(from), std::string::npos) << from;
    rows.replace(rows.find(from), from.size(), to);
  }
  PrimFunc r = ParseFunc(rows, "mag");
  EXPECT_EQ(FlattenElementwiseRows(r), r) << rows;
  // A static width: a loop LLVM vectorizes as it stands.
  std::string fixed = kMagnitude;
  for (const std::string& from : {std::string("(n, 6, w)"), std::string("(n, 3, w)"), std::string("T.int64(3), w)")}) {
    std::string to = from;
    to.replace(to.rfind('w'), 1, "T.int64(4)");
    fixed.replace(fixed.find(from), from.size(), to);
  }
  PrimFunc s = ParseFunc(fixed, "mag");
  EXPECT_EQ(FlattenElementwiseRows(s), s) << fixed;
  // A row of the function's own buffer (not a parameter): it stays.
  std::string own = kMagnitude;
  const std::string decl = "    for i0, i1, i2";
  own.replace(own.find(decl), 0, "    T0 = T.decl_buffer((n, 3, w), \"float32\")\n");
  const std::string read = "T.sqrt(A[i0, i1, i2] * A[i0, i1, i2]";
  own.replace(own.find(read), read.size(), "T.sqrt(T0[i0, i1, i2] * A[i0, i1, i2]");
  PrimFunc t = ParseFunc(own, "mag");
  EXPECT_EQ(FlattenElementwiseRows(t), t) << own;
  // A function with a reduction (a conv's, whose epilogue rows its schedule
  // reads as they are): left alone, elementwise rows and all.
  PrimFunc g = ParseFunc(R"(
@T.prim_func
def g(a_handle: T.handle, o_handle: T.handle):
    w = T.int64()
    A = T.match_buffer(a_handle, (3, w), "float32")
    O = T.match_buffer(o_handle, (3, w), "float32")
    s = T.decl_buffer((3,), "float32")
    for c, x in T.grid(T.int64(3), w):
        if x == T.int64(0):
            s[c] = T.float32(0)
        s[c] = s[c] + A[c, x]
    for c, x in T.grid(T.int64(3), w):
        O[c, x] = A[c, x] - s[c]
)",
                         "g");
  EXPECT_EQ(FlattenElementwiseRows(g), g);
}

const char* kMagnitudeModule = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 10, "w"), dtype="float32")) -> R.Tensor(dtype="float32", ndim=3):
        with R.dataflow():
            re = R.strided_slice(x, R.shape([1]), R.shape([0]), R.shape([5]), R.shape([1]))
            im = R.strided_slice(x, R.shape([1]), R.shape([5]), R.shape([10]), R.shape([1]))
            a = R.multiply(re, re)
            b = R.multiply(im, im)
            c = R.add(a, b)
            gv = R.sqrt(c)
            R.output(gv)
        return gv
)";

TEST(FlattenElementwiseTest, MagnitudeNumbers) {
  for (int threads : {1, 2}) {
    driver::CompileOptions options = test_util::ThreadsOptions(threads);
    PrimFunc f = test_util::LowerPrimFunc(kMagnitudeModule, options, "sqrt");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(Print(f).find("i2"), std::string::npos) << "the row loop is still there\n" << Print(f);
    auto mod = test_util::CompileAndLoad(kMagnitudeModule, options, threads);
    ASSERT_NE(mod, nullptr);
    for (int64_t n : {1, 3}) {
      for (int64_t w : {1, 3, 17, 40}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " n " + std::to_string(n) + " w " + std::to_string(w));
        std::vector<float> x = test_util::RandomFloats(n * 10 * w, 7 + n * w);
        Result<Tensor> out = test_util::InvokeMain(*mod, {test_util::FloatTensor({n, 10, w}, x)});
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, 5, w}));
        int bad = 0;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t c = 0; c < 5; ++c)
            for (int64_t k = 0; k < w; ++k) {
              double re = x[(i * 10 + c) * w + k], im = x[(i * 10 + c + 5) * w + k];
              double want = std::sqrt(re * re + im * im);
              float got = out->data<float>()[(i * 5 + c) * w + k];
              if (!(std::fabs(got - want) <= 1e-5 * (1 + want)) && bad++ < 5)
                ADD_FAILURE() << "i " << i << " c " << c << " k " << k << ": got " << got << ", want " << want;
            }
        EXPECT_EQ(bad, 0);
      }
    }
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
