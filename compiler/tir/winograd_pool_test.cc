// A static F(4x4) Winograd convolution whose output transform fuses its
// bias + ReLU, a concatenation and a max pool (SqueezeNet's fire modules
// before a pool; MTCNN ONet's pools without the concatenation), through the
// whole driver and the VM against a double-precision reference; and the
// output transform's copy-out loops (winograd_output_tile_major.h, step 2)
// and the pool's reads of the concatenated sources (concat_slice_reads.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/tir/compiled_test_util.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

struct PoolCase {
  int64_t c, o, h, w;  // conv input channels, output channels, plane (padding 1: same size out)
  int64_t s;           // channels concatenated before the conv's (0: no concatenation)
  int64_t pool, stride;
};

std::string T(const std::vector<int64_t>& d) {
  std::string s = "R.Tensor((";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "), dtype=\"float32\")";
}

std::string Module(const PoolCase& k) {
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T({1, k.c, k.h, k.w}) +
                    ", w: " + T({k.o, k.c, 3, 3}) + ", b: " + T({1, k.o, 1, 1});
  if (k.s > 0) src += ", s: " + T({1, k.s, k.h, k.w});
  src += ") -> R.Tensor(dtype=\"float32\", ndim=4):\n        with R.dataflow():\n";
  src += "            y = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])\n";
  src += "            z = R.add(y, b)\n            r = R.nn.relu(z)\n";
  std::string in = "r";
  if (k.s > 0) {
    src += "            cat = R.concat((s, r), axis=1)\n";
    in = "cat";
  }
  const std::string p = std::to_string(k.pool), st = std::to_string(k.stride);
  src += "            gv = R.nn.max_pool2d(" + in + ", pool_size=[" + p + ", " + p + "], strides=[" + st + ", " + st +
         "])\n            R.output(gv)\n        return gv\n";
  return src;
}

// max_pool2d(concat(s, relu(conv3x3(x, w) + b))) in double.
std::vector<double> Reference(const PoolCase& k, const std::vector<float>& x, const std::vector<float>& wt,
                              const std::vector<float>& b, const std::vector<float>& s) {
  const int64_t ch = k.s + k.o, hw = k.h * k.w;
  std::vector<double> cat(ch * hw);
  for (int64_t i = 0; i < k.s * hw; ++i) cat[i] = s[i];
  for (int64_t o = 0; o < k.o; ++o)
    for (int64_t i = 0; i < k.h; ++i)
      for (int64_t j = 0; j < k.w; ++j) {
        double acc = b[o];
        for (int64_t c = 0; c < k.c; ++c)
          for (int64_t a = 0; a < 3; ++a)
            for (int64_t e = 0; e < 3; ++e) {
              const int64_t r = i + a - 1, col = j + e - 1;
              if (r < 0 || r >= k.h || col < 0 || col >= k.w) continue;
              acc += double(x[(c * k.h + r) * k.w + col]) * wt[((o * k.c + c) * 3 + a) * 3 + e];
            }
        cat[(k.s + o) * hw + i * k.w + j] = std::max(acc, 0.0);
      }
  const int64_t ph = (k.h - k.pool) / k.stride + 1, pw = (k.w - k.pool) / k.stride + 1;
  std::vector<double> y(ch * ph * pw, -std::numeric_limits<double>::infinity());
  for (int64_t c = 0; c < ch; ++c)
    for (int64_t i = 0; i < ph; ++i)
      for (int64_t j = 0; j < pw; ++j)
        for (int64_t a = 0; a < k.pool; ++a)
          for (int64_t e = 0; e < k.pool; ++e) {
            double& d = y[(c * ph + i) * pw + j];
            d = std::max(d, cat[c * hw + (i * k.stride + a) * k.w + j * k.stride + e]);
          }
  return y;
}

driver::CompileOptions Options(const PoolCase& k, const std::vector<float>& wt, int threads) {
  driver::CompileOptions options = test_util::ThreadsOptions(threads);
  options.params = {{"w", FloatTensor({k.o, k.c, 3, 3}, wt)}};
  return options;
}

// The lowered module's fused output transform, printed.
std::string FusedOutputTransform(const PoolCase& k, const std::vector<float>& wt) {
  Result<ir::IRModule> mod = text::ParseModule(Module(k), "wino_pool.relax");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return "";
  Result<ir::IRModule> lowered = driver::LowerModule(*mod, Options(k, wt, 1));
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  if (!lowered.ok()) return "";
  for (const ir::ModuleEntry& e : lowered->entries) {
    if (!e.prim || e.name.find("winograd_output_f4x3") == std::string::npos) continue;
    EXPECT_NE(e.name.find("max_pool2d"), std::string::npos) << e.name << ": the pool did not fuse";
    ir::IRModule one;
    one.Add(e.name, e.prim);
    return text::PrintModule(one);
  }
  ADD_FAILURE() << "no winograd_output_f4x3 kernel";
  return "";
}

void CheckNumbers(const PoolCase& k) {
  const std::vector<float> wt = RandomFloats(k.o * k.c * 9, 7, 0.5f), b = RandomFloats(k.o, 11);
  const std::vector<float> x = RandomFloats(k.c * k.h * k.w, 3), s = RandomFloats(k.s * k.h * k.w, 5);
  const std::vector<double> ref = Reference(k, x, wt, b, s);
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    std::shared_ptr<const vm::Module> m = CompileAndLoad(Module(k), Options(k, wt, threads), threads);
    ASSERT_NE(m, nullptr);
    std::vector<Any> args = {Any(FloatTensor({1, k.c, k.h, k.w}, x)), Any(FloatTensor({1, k.o, 1, 1}, b))};
    if (k.s > 0) args.push_back(Any(FloatTensor({1, k.s, k.h, k.w}, s)));
    Result<Tensor> y = InvokeMain(*m, args);
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    ASSERT_EQ(y->NumElements(), static_cast<int64_t>(ref.size()));
    double worst = 0, scale = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const double d = std::fabs(double(y->data<float>()[i]) - ref[i]);  // NaN: nothing stored there
      worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(worst, d);
      scale = std::max(scale, std::fabs(ref[i]));
    }
    EXPECT_LE(worst, 1e-4 * std::max(scale, 1.0));
  }
}

// 31 columns = 7 whole tiles of 4 and 3 columns of an eighth (8 tiles a
// row: the channel-major product), 30 rows = 7 tile rows and 2 rows.
const PoolCase kFire{16, 32, 30, 31, 8, 3, 2};
const PoolCase kPoolOnly{16, 32, 30, 31, 0, 2, 2};

TEST(WinogradPoolTest, ConcatAndMaxPoolFusedIntoTheOutputTransform) { CheckNumbers(kFire); }

TEST(WinogradPoolTest, MaxPoolFusedIntoTheOutputTransform) { CheckNumbers(kPoolOnly); }

TEST(WinogradPoolTest, OutputRowsCopyWholeTilesInOneVectorLoop) {
  // Step 2 of the tile-major output transform: per output row one
  // vectorized loop over the 7 whole tiles storing their 4 columns (m
  // apart, which LLVM interleaves from contiguous loads), then the last
  // tile's 3 columns; no per-column gather (col % 4, col // 4).
  const std::string f = FusedOutputTransform(kFire, RandomFloats(32 * 16 * 9, 7, 0.5f));
  auto count = [&](const std::string& part) {
    int n = 0;
    for (size_t at = f.find(part); at != std::string::npos; at = f.find(part, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("for t in T.vectorized(T.int64(64)):"), 1) << f;
  // 4 rows of the whole tile rows, 2 of the last.
  EXPECT_EQ(count("for tx in T.vectorized(T.int64(7)):"), 6) << f;
  EXPECT_EQ(count("col % 4"), 0) << f;
  EXPECT_NE(f.find(", tx * 4 + 3] = "), std::string::npos) << f;
  EXPECT_NE(f.find(", T.int64(30)] = "), std::string::npos) << f;  // the partial tile's last column
}

TEST(WinogradPoolTest, PoolReadsTheConcatenatedSourcesInPlace) {
  // concat_slice_reads.h: no per-channel staging copy selecting between s
  // and the transform's output; the pool's loads read each where it lies.
  const std::string f = FusedOutputTransform(kFire, RandomFloats(32 * 16 * 9, 7, 0.5f));
  EXPECT_EQ(f.find("T.if_then_else("), std::string::npos) << f;
  EXPECT_NE(f.find("_even[j] = s["), std::string::npos) << f;
  EXPECT_NE(f.find("_even[j] = r["), std::string::npos) << f;
}

}  // namespace
}  // namespace tir
}  // namespace kiln
