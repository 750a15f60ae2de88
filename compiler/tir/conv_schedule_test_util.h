// Helpers of the conv schedule tests (conv_schedule_*_test.cc): a conv case,
// its Relax module, compiling and lowering it, a census of the lowered loop
// nest, and CheckConv, which runs a compiled case against a double-precision
// reference of conv2d + epilogue.
#ifndef KILN_COMPILER_TIR_CONV_SCHEDULE_TEST_UTIL_H_
#define KILN_COMPILER_TIR_CONV_SCHEDULE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/tir/compiled_test_util.h"
#include "compiler/tir/pool_schedule.h"
#include "compiler/params/param_file.h"
#include "compiler/text/text.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace conv_test {


using test_util::CompileAndLoad;
using test_util::FloatTensor;
using test_util::InvokeMain;
using test_util::RandomFloats;

using namespace ir;  // NOLINT

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t groups = 1;
  // none | bn_relu | bn_residual_relu | bias_relu6 | row_residual_relu (a
  // residual of shape (N, O, 1, Wo), broadcast over the output rows: the
  // epilogue cannot be stored through the flat view of the output)
  std::string epilogue = "none";
  // input: w is an argument (OIHW); constant: w is bound at compile time
  // (CompileOptions::params), so pack-constant-weights may pack it;
  // packed: w is an argument already in kernel_layout "OIHW<block>o".
  std::string weights = "input";
  int64_t block = 8;
  // The driver's winograd-conv2d pass (constant 3x3 weights); off, so that
  // these tests reach the direct convolution schedule.
  bool winograd = false;

  int64_t Ho() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t Wo() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
  std::string Name() const {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "n%ld c%ld %ldx%ld o%ld k%ldx%ld s%ld,%ld d%ld,%ld p%ld,%ld,%ld,%ld g%ld %s",
                  long(n), long(c), long(h), long(w), long(o), long(kh), long(kw), long(sh), long(sw), long(dh),
                  long(dw), long(pt), long(pl), long(pb), long(pr), long(groups), epilogue.c_str());
    return std::string(buf) + " weights " + weights + (weights == "packed" ? std::to_string(block) : "");
  }
};

inline std::string Dims(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}

inline std::string T(const std::vector<int64_t>& d) { return "R.Tensor(" + Dims(d) + ", dtype=\"float32\")"; }

// main(x, w, scale, shift, r) -> epilogue(conv2d(x, w)); scale/shift are
// (O, 1, 1) as a batch norm in inference form broadcasts them.
inline std::string ConvModule(const ConvCase& k) {
  std::vector<int64_t> out = {k.n, k.o, k.Ho(), k.Wo()};
  std::vector<int64_t> w = {k.o, k.c / k.groups, k.kh, k.kw};
  if (k.weights == "packed") w = {k.o / k.block, k.c / k.groups, k.kh, k.kw, k.block};
  std::vector<int64_t> r = out;
  if (k.epilogue == "row_residual_relu") r[2] = 1;
  std::string src = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: " + T({k.n, k.c, k.h, k.w}) +
                    ", w: " + T(w) + ", scale: " + T({k.o, 1, 1}) +
                    ", shift: " + T({k.o, 1, 1}) + ", r: " + T(r) + ") -> " + T(out) + ":\n";
  src += "        with R.dataflow():\n";
  src += "            c = R.nn.conv2d(x, w, strides=[" + std::to_string(k.sh) + ", " + std::to_string(k.sw) +
         "], padding=[" + std::to_string(k.pt) + ", " + std::to_string(k.pl) + ", " + std::to_string(k.pb) + ", " +
         std::to_string(k.pr) + "], dilation=[" + std::to_string(k.dh) + ", " + std::to_string(k.dw) +
         "], groups=" + std::to_string(k.groups) +
         (k.weights == "packed" ? ", kernel_layout=\"OIHW" + std::to_string(k.block) + "o\"" : std::string()) + ")\n";
  if (k.epilogue == "none") {
    src += "            gv = c\n";
  } else if (k.epilogue == "bias_relu6") {  // MobileNetV2: bias, then ReLU6 as a clip
    src += "            e = R.add(c, shift)\n            gv = R.clip(e, min=0, max=6)\n";
  } else {
    src += "            d = R.multiply(c, scale)\n            e = R.add(d, shift)\n";
    if (k.epilogue == "bn_residual_relu" || k.epilogue == "row_residual_relu") {
      src += "            f = R.add(e, r)\n            gv = R.nn.relu(f)\n";
    } else {
      src += "            gv = R.nn.relu(e)\n";
    }
  }
  src += "            R.output(gv)\n        return gv\n";
  return src;
}

inline Result<IRModule> Parse(const std::string& source) { return text::ParseModule(source, "conv_test.relax"); }

inline std::shared_ptr<const vm::Module> Compile(const std::string& source, int threads, const params::ParamList& params,
                                          bool winograd) {
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  options.params = params;
  options.winograd = winograd;
  return CompileAndLoad(source, options, threads);
}

// Runs the compiled module on random inputs and checks every output element
// against a double reference of conv2d + epilogue.
// At `precision` (--precision, docs/precision.md) the mixed-precision pass
// runs too: the kernel of a float16 / bfloat16 conv (conv_schedule_half_test).
inline PrimFunc LowerConv(const ConvCase& k, int threads, const params::ParamList& params = {},
                          transform::Precision precision = transform::Precision::kFloat32);
inline int CountFma(const PrimFunc& f);

// The weights of case `k` (OIHW) and what the module takes for them.
inline std::vector<float> Weights(const ConvCase& k) { return RandomFloats(k.o * (k.c / k.groups) * k.kh * k.kw, 2); }

inline Tensor WeightArg(const ConvCase& k, const std::vector<float>& w) {
  int64_t cg = k.c / k.groups, taps = cg * k.kh * k.kw;
  if (k.weights != "packed") return FloatTensor({k.o, cg, k.kh, k.kw}, w);
  std::vector<float> p(w.size());  // [o / b, taps, o % b]
  for (int64_t o = 0; o < k.o; ++o)
    for (int64_t t = 0; t < taps; ++t) p[((o / k.block) * taps + t) * k.block + o % k.block] = w[o * taps + t];
  return FloatTensor({k.o / k.block, cg, k.kh, k.kw, k.block}, p);
}

inline params::ParamList BoundWeights(const ConvCase& k) {
  if (k.weights != "constant") return {};
  return {{"w", WeightArg(k, Weights(k))}};
}

// The largest rank of the kernel's buffer arguments: 5 when it reads a
// packed weight (every other argument has rank <= 4).
inline size_t MaxParamRank(const PrimFunc& f) {
  size_t rank = 0;
  for (const auto& kv : f->buffer_map) rank = std::max(rank, kv.second->shape.size());
  return rank;
}

// One input and one output channel per group, with a stride and a window
// it unrolls: left to the window schedule (pool_schedule.h).
inline bool StridedDepthwise(const ConvCase& k) {
  return k.c == k.groups && k.o == k.groups && (k.sh > 1 || k.sw > 1) && k.kh * k.kw <= MaxUnrolledWindowTaps();
}

// The deepest nesting of loops in a statement.
inline int MaxLoopDepth(const Stmt& s) {
  struct Depth : StmtExprVisitor {
    int depth = 0, max = 0;
    void VisitStmt(const Stmt& st) override {
      bool loop = As<ForNode>(st) != nullptr;
      depth += loop;
      max = std::max(max, depth);
      StmtExprVisitor::VisitStmt(st);
      depth -= loop;
    }
  } d;
  d.VisitStmt(s);
  return d.max;
}

inline void CheckConv(const ConvCase& k, int threads) {
  SCOPED_TRACE(k.Name() + " threads " + std::to_string(threads));
  // The convolution was rewritten (not left to the naive loop nest): into
  // tiles, or (strided depthwise) by the window schedule, which unrolls the
  // 3 reduction loops of the 7-deep nest.
  params::ParamList bound = BoundWeights(k);
  PrimFunc lowered = k.winograd ? nullptr : LowerConv(k, threads, bound);
  ASSERT_TRUE(lowered != nullptr || k.winograd);
  if (k.winograd) {
    // Checked by WinogradNumbers: the conv2d is gone from the module.
  } else if (StridedDepthwise(k)) {
    EXPECT_LT(MaxLoopDepth(lowered->body), 7);
  } else {
    EXPECT_GE(CountFma(lowered), 1);
  }
  auto mod = Compile(ConvModule(k), threads, bound, k.winograd);
  ASSERT_NE(mod, nullptr);
  int64_t ho = k.Ho(), wo = k.Wo(), cg = k.c / k.groups, og = k.o / k.groups;
  std::vector<float> x = RandomFloats(k.n * k.c * k.h * k.w, 1), w = Weights(k),
                     scale = RandomFloats(k.o, 3), shift = RandomFloats(k.o, 4);
  const bool row_residual = k.epilogue == "row_residual_relu";
  std::vector<int64_t> out_shape = {k.n, k.o, ho, wo}, r_shape = {k.n, k.o, row_residual ? 1 : ho, wo};
  std::vector<float> r = RandomFloats(k.n * k.o * r_shape[2] * wo, 5);
  std::vector<Any> args = {FloatTensor({k.n, k.c, k.h, k.w}, x), WeightArg(k, w),
                           FloatTensor({k.o, 1, 1}, scale), FloatTensor({k.o, 1, 1}, shift), FloatTensor(r_shape, r)};
  if (k.weights == "constant") args.erase(args.begin() + 1);
  Result<Tensor> out = InvokeMain(*mod, args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->shape(), out_shape);
  const float* got = out->data<float>();
  int bad = 0;
  for (int64_t n = 0; n < k.n; ++n) {
    for (int64_t o = 0; o < k.o; ++o) {
      int64_t g = o / og;
      for (int64_t y = 0; y < ho; ++y) {
        for (int64_t xo = 0; xo < wo; ++xo) {
          double acc = 0;
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t ky = 0; ky < k.kh; ++ky) {
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                int64_t iy = y * k.sh + ky * k.dh - k.pt, ix = xo * k.sw + kx * k.dw - k.pl;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                acc += double(x[((n * k.c + g * cg + c) * k.h + iy) * k.w + ix]) *
                       w[((o * cg + c) * k.kh + ky) * k.kw + kx];
              }
            }
          }
          int64_t at = ((n * k.o + o) * ho + y) * wo + xo;
          double want = acc;
          if (k.epilogue == "bias_relu6") {
            want = std::min(std::max(acc + shift[o], 0.0), 6.0);
          } else if (k.epilogue != "none") {
            want = acc * scale[o] + shift[o];
            if (k.epilogue == "bn_residual_relu") want += r[at];
            if (row_residual) want += r[(n * k.o + o) * wo + xo];
            want = want > 0 ? want : 0;
          }
          double tol = 1e-5 * double(cg * k.kh * k.kw) + 1e-5;
          if (!(std::fabs(got[at] - want) <= tol) && bad++ < 5) {
            ADD_FAILURE() << "n " << n << " o " << o << " y " << y << " x " << xo << ": got " << got[at]
                          << ", want " << want;
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// ---------------------------------------------------------------- structure

struct Census : StmtExprVisitor {
  int fma = 0, parallel = 0, nests7 = 0;
  int tail_loops = 0;  // shift-plane tail columns computed for a box of taps only
  std::vector<std::string> stored, allocated;
  std::vector<std::vector<int64_t>> allocated_shapes;  // static extents, -1 symbolic
  int depth = 0, max_depth = 0;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* c = e.as<CallNode>()) fma += c->op == "fma";
    StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    const auto* f = As<ForNode>(s);
    if (f != nullptr) parallel += f->for_kind == ForKind::kParallel;
    if (f != nullptr) tail_loops += f->loop_var->name == "jj_tail";
    if (const auto* a = As<AllocateNode>(s)) {
      allocated.push_back(a->buffer->name);
      std::vector<int64_t> shape;
      for (const PrimExpr& d : a->buffer->shape) {
        const auto* imm = d.as<IntImmNode>();
        shape.push_back(imm != nullptr ? imm->value : -1);
      }
      allocated_shapes.push_back(shape);
    }
    if (const auto* st = As<BufferStoreNode>(s)) stored.push_back(st->buffer->name);
    StmtExprVisitor::VisitStmt(s);
  }
};

// The lowered PrimFunc holding the convolution.
inline PrimFunc LowerConv(const ConvCase& k, int threads, const params::ParamList& params,
                          transform::Precision precision) {
  Result<IRModule> mod = Parse(ConvModule(k));
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return nullptr;
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  options.params = params;
  options.winograd = k.winograd;
  options.precision = precision;
  Result<IRModule> lowered = driver::LowerModule(*mod, options);
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  if (!lowered.ok()) return nullptr;
  for (const ModuleEntry& e : lowered->entries) {
    if (e.prim && e.name.find("conv2d") != std::string::npos && e.name.find("pack_weight") == std::string::npos) {
      return e.prim;
    }
  }
  ADD_FAILURE() << "no conv2d PrimFunc";
  return nullptr;
}

inline Census Count(const PrimFunc& f) {
  Census c;
  c.VisitStmt(f->body);
  return c;
}

inline int CountFma(const PrimFunc& f) { return Count(f).fma; }

// Whether the function allocates the packed input of the band scheme
// ("<input>_band") or of the whole-input scheme ("<input>_padded").
inline bool Allocates(const Census& c, const std::string& suffix) {
  for (const std::string& a : c.allocated)
    if (a.size() >= suffix.size() && a.compare(a.size() - suffix.size(), suffix.size(), suffix) == 0) return true;
  return false;
}

// Planes per channel of the packed input ("<input>_padded", dimension 2):
// stride phases (sh * sw) or shift planes (kw); -1 without one.
inline int64_t PackedPlanes(const Census& c) {
  for (size_t i = 0; i < c.allocated.size(); ++i) {
    const std::string& a = c.allocated[i];
    if (a.size() >= 7 && a.compare(a.size() - 7, 7, "_padded") == 0 && c.allocated_shapes[i].size() == 4) {
      return c.allocated_shapes[i][2];
    }
  }
  return -1;
}

// The rows (first extents) of the accumulator tiles ("acc") the function
// allocates, in order.
inline std::vector<int64_t> AccRows(const Census& c) {
  std::vector<int64_t> rows;
  for (size_t i = 0; i < c.allocated.size(); ++i)
    if (c.allocated[i] == "acc" && !c.allocated_shapes[i].empty()) rows.push_back(c.allocated_shapes[i][0]);
  return rows;
}

}  // namespace conv_test
}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_SCHEDULE_TEST_UTIL_H_
