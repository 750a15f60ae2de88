// What the tests of the copy-free symbolic depthwise kernels
// (depthwise_strided_symbolic_test.cc, depthwise_inplace_symbolic_test.cc)
// share: the case, its Relax module (a depthwise conv2d with n, h and w
// symbolic and an optional epilogue), structure checks on the printed kernel,
// and the numbers check through the driver and the VM against the
// double-precision reference.
#ifndef KILN_COMPILER_TIR_DEPTHWISE_SYMBOLIC_TEST_UTIL_H_
#define KILN_COMPILER_TIR_DEPTHWISE_SYMBOLIC_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/depthwise_reference_test_util.h"

namespace kiln {
namespace tir {
namespace dw_test {

struct DwCase {
  int64_t c, k, sh, sw, pad;
  std::string epilogue = "none";  // none | bn_relu | hardswish
  int64_t Ho(int64_t h) const { return (h + 2 * pad - k) / sh + 1; }
  int64_t Wo(int64_t w) const { return (w + 2 * pad - k) / sw + 1; }
  std::string Name() const {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "c%ld k%ld s%ld,%ld p%ld %s", long(c), long(k), long(sh), long(sw), long(pad),
                  epilogue.c_str());
    return buf;
  }
};

inline std::string T(const std::string& dims) { return "R.Tensor((" + dims + "), dtype=\"float32\")"; }

// main(x[n, c, h, w], w, scale, shift): a depthwise conv2d (groups = c) and
// its epilogue; n, h and w symbolic.
inline std::string DwModule(const DwCase& k) {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string p = s(k.pad);
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T("\"n\", " + s(k.c) +
                    ", \"h\", \"w\"") + ", w: " + T(s(k.c) + ", 1, " + s(k.k) + ", " + s(k.k)) + ", scale: " +
                    T(s(k.c) + ", 1, 1") + ", shift: " + T(s(k.c) + ", 1, 1") +
                    ") -> R.Tensor(dtype=\"float32\", ndim=4):\n";
  src += "        with R.dataflow():\n";
  src += "            c = R.nn.conv2d(x, w, strides=[" + s(k.sh) + ", " + s(k.sw) + "], padding=[" + p + ", " + p + ", " +
         p + ", " + p + "], groups=" + s(k.c) + ")\n";
  if (k.epilogue == "none") {
    src += "            gv = c\n";
  } else if (k.epilogue == "hardswish") {
    src += "            e = R.add(c, shift)\n            gv = R.nn.hardswish(e)\n";
  } else {
    src += "            d = R.multiply(c, scale)\n            e = R.add(d, shift)\n            gv = R.nn.relu(e)\n";
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

inline driver::CompileOptions Options(int threads) { return test_util::ThreadsOptions(threads, /*winograd=*/false); }

inline bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Whether the kernel declares an accumulator PREFIX_acc of `rows` x `lanes`
// (the printer numbers buffers of the same name: dwd_acc_1, ...).
inline bool HasTile(const std::string& text, const std::string& prefix, int rows, int lanes) {
  std::regex re(prefix + "_acc(_[0-9]+)? = T\\.decl_buffer\\(\\(" + std::to_string(rows) + ", " +
                std::to_string(lanes) + "\\)");
  return std::regex_search(text, re);
}

// Compiles the case's module once and checks every (h, w) of `sizes` at
// batch n against the reference.
inline void CheckNumbers(const DwCase& k, int threads, const std::vector<std::pair<int64_t, int64_t>>& sizes,
                         int64_t n) {
  using namespace test_util;  // NOLINT
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads) + " n " + std::to_string(n));
  auto mod = CompileAndLoad(DwModule(k), Options(threads), threads);
  ASSERT_NE(mod, nullptr);
  std::vector<float> w = RandomFloats(k.c * k.k * k.k, 2), scale = RandomFloats(k.c, 3), shift = RandomFloats(k.c, 4);
  for (const auto& hw : sizes) {
    int64_t h = hw.first, wd = hw.second, ho = k.Ho(h), wo = k.Wo(wd);
    SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(wd));
    std::vector<float> x = RandomFloats(n * k.c * h * wd, 1 + h * 100 + wd);
    std::vector<Any> args = {FloatTensor({n, k.c, h, wd}, x), FloatTensor({k.c, 1, k.k, k.k}, w),
                             FloatTensor({k.c, 1, 1}, scale), FloatTensor({k.c, 1, 1}, shift)};
    Result<Tensor> out = InvokeMain(*mod, args);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->shape(), (std::vector<int64_t>{n, k.c, ho, wo}));
    ExpectDepthwise({k.c, k.k, k.sh, k.sw, k.pad, k.epilogue}, out->data<float>(), x, w, scale, shift, n, h, wd);
  }
}

}  // namespace dw_test
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_DEPTHWISE_SYMBOLIC_TEST_UTIL_H_
