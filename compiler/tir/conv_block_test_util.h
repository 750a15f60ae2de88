// Helpers of the tests of the static conv schedules that start from block
// form (conv_im2col_schedule_test.cc, conv_border_split_schedule_test.cc): a
// conv case, the PrimFunc legalization writes for it (with a bias + ReLU stage
// when asked), and lowering with the default schedules and knobs as
// tune/lower.h does.
#ifndef KILN_COMPILER_TIR_CONV_BLOCK_TEST_UTIL_H_
#define KILN_COMPILER_TIR_CONV_BLOCK_TEST_UTIL_H_

#include <cstdint>
#include <string>

#include "compiler/tir/default_schedule.h"
#include "compiler/tir/inline_elementwise.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/schedule/schedule_test_util.h"

namespace kiln {
namespace tir {
namespace conv_block_test {

struct Case {
  int64_t n, c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr;
  bool bias_relu = false;
  int64_t groups = 1;
  bool packed = false;  // weight [O/b, I, KH, KW, b]
  int64_t block = 8;    // b
  int64_t Ho() const { return (h + pt + pb - kh) / sh + 1; }
  int64_t Wo() const { return (w + pl + pr - kw) / sw + 1; }
  std::string Name() const {
    return "n" + std::to_string(n) + " c" + std::to_string(c) + " " + std::to_string(h) + "x" + std::to_string(w) +
           " o" + std::to_string(o) + " k" + std::to_string(kh) + "x" + std::to_string(kw) + " s" +
           std::to_string(sh) + "," + std::to_string(sw) + (bias_relu ? " bias+relu" : "") + (packed ? " packed" + std::to_string(block) : "");
  }
};

// conv2d as legalization writes it (the function is named "conv"), with a
// bias + ReLU stage when asked; packed weights as pack-constant-weights
// leaves them.
inline std::string Func(const Case& k) {
  const auto I = &testing::Int64Text;
  const auto Shape = &testing::ShapeText;
  int64_t cpg = k.c / k.groups;
  std::string out = Shape({k.n, k.o, k.Ho(), k.Wo()});
  std::string s = "@T.prim_func\ndef conv(data: T.Buffer(" + Shape({k.n, k.c, k.h, k.w}) +
                  ", \"float32\"), weight: T.Buffer(" +
                  (k.packed ? Shape({k.o / k.block, cpg, k.kh, k.kw, k.block}) : Shape({k.o, cpg, k.kh, k.kw})) +
                  ", \"float32\"), bias: T.Buffer(" + Shape({k.o, 1, 1}) + ", \"float32\"), out: T.Buffer(" + out +
                  ", \"float32\")):\n";
  std::string conv = k.bias_relu ? "conv" : "out";
  if (k.bias_relu) s += "    conv = T.alloc_buffer(" + out + ", \"float32\")\n";
  auto at = [](int64_t s, const std::string& v, const std::string& r, int64_t p) {
    return v + " * " + std::to_string(s) + " + " + r + " * 1 - " + std::to_string(p);
  };
  std::string iy = at(k.sh, "v_i2", "v_k1", k.pt), ix = at(k.sw, "v_i3", "v_k2", k.pl);
  s += "    for i0, i1, i2, i3, k0, k1, k2 in T.grid(" + I(k.n) + ", " + I(k.o) + ", " + I(k.Ho()) + ", " + I(k.Wo()) +
       ", " + I(cpg) + ", " + I(k.kh) + ", " + I(k.kw) + "):\n";
  s += "        with T.block(\"conv2d\"):\n";
  s += "            v_i0, v_i1, v_i2, v_i3, v_k0, v_k1, v_k2 = T.axis.remap(\"SSSSRRR\", [i0, i1, i2, i3, k0, k1, k2])\n";
  s += "            with T.init():\n                " + conv + "[v_i0, v_i1, v_i2, v_i3] = T.float32(0)\n";
  std::string ch = k.groups == 1 ? "v_k0" : "v_i1 // " + std::to_string(k.o / k.groups) + " * " + std::to_string(cpg) + " + v_k0";
  s += "            " + conv + "[v_i0, v_i1, v_i2, v_i3] = " + conv + "[v_i0, v_i1, v_i2, v_i3] + T.if_then_else(" + iy +
       " >= 0 and " + iy + " < " + std::to_string(k.h) + " and " + ix + " >= 0 and " + ix + " < " +
       std::to_string(k.w) + ", data[v_i0, " + ch + ", " + iy + ", " + ix + "] * " +
       (k.packed ? "weight[v_i1 // " + std::to_string(k.block) + ", v_k0, v_k1, v_k2, v_i1 % " + std::to_string(k.block) + "]" : std::string("weight[v_i1, v_k0, v_k1, v_k2]")) +
       ", T.float32(0))\n";
  if (!k.bias_relu) return s;
  s += "    for i0, i1, i2, i3 in T.grid(" + I(k.n) + ", " + I(k.o) + ", " + I(k.Ho()) + ", " + I(k.Wo()) + "):\n";
  s += "        with T.block(\"bias_relu\"):\n";
  s += "            v0, v1, v2, v3 = T.axis.remap(\"SSSS\", [i0, i1, i2, i3])\n";
  s += "            out[v0, v1, v2, v3] = T.max(conv[v0, v1, v2, v3] + bias[v1, T.int64(0), T.int64(0)], T.float32(0))\n";
  return s;
}

// As tune/lower.h lowers with the default schedules (and knobs).
inline ir::PrimFunc Lower(const ir::PrimFunc& f, const ScheduleKnobs& knobs = {}) {
  ir::PrimFunc scheduled = ApplyDefaultSchedule(InlineElementwise(LowerBlocks(f)), 1, knobs);
  return InlineElementwise(scheduled, /*after_schedule=*/true);
}

}  // namespace conv_block_test
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_BLOCK_TEST_UTIL_H_
