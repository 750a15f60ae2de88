#include "compiler/transform/conv_transpose_phases.h"

#include <memory>
#include <optional>
#include <set>

#include "compiler/arith/simplify.h"
#include "compiler/ir/attr_values.h"
#include "compiler/transform/expr_mutator.h"

namespace kiln {
namespace transform {
namespace {

// a / b rounded down and up, for any sign of a (b > 0).
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

// "All the way to the start" as a strided_slice end with a negative stride.
constexpr int64_t kBeforeStart = -(int64_t{1} << 40);

std::optional<std::vector<int64_t>> Ints(const ir::AttrMap& attrs, const char* name, std::vector<int64_t> dflt) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return dflt;
  if (it->second.kind == ir::AttrValue::Kind::kIntList) return it->second.ints;
  if (it->second.kind == ir::AttrValue::Kind::kInt) return std::vector<int64_t>{it->second.i};
  return std::nullopt;
}

std::string Str(const ir::AttrMap& attrs, const char* name, const std::string& dflt) {
  auto it = attrs.find(name);
  return it != attrs.end() && it->second.kind == ir::AttrValue::Kind::kString ? it->second.s : dflt;
}

std::optional<int64_t> Const(const ir::PrimExpr& e) {
  if (const auto* i = e.as<ir::IntImmNode>()) return i->value;
  return std::nullopt;
}

// One phase r along one axis.
struct Phase {
  int64_t k0 = 0;     // its first tap
  int64_t taps = 0;   // its tap count (Kr)
  int64_t pad_lo = 0, pad_hi = 0;  // of the stride-1 conv; negative: crop the data
  int64_t short_by = 0;            // how much shorter than the longest phase
  bool operator==(const Phase& o) const { return taps == o.taps && pad_lo == o.pad_lo && pad_hi == o.pad_hi; }
};

// The phases of one axis: output size O = (I - 1) s + c0, every phase's
// length I + (constant), the longest ceil(c0 / s) - 1 + I.
struct Axis {
  int64_t stride = 1;
  std::vector<Phase> phases;
  int64_t longest_minus_input = 0;  // Qmax - I
  int64_t cut = 0;                  // s * Qmax - O, dropped at the end
};

std::optional<Axis> PlanAxis(int64_t s, int64_t k, int64_t pad_lo, int64_t pad_hi, int64_t out_pad) {
  Axis a;
  a.stride = s;
  int64_t c0 = k - pad_lo - pad_hi + out_pad;
  a.longest_minus_input = CeilDiv(c0, s) - 1;
  a.cut = s * CeilDiv(c0, s) - c0;
  for (int64_t r = 0; r < s; ++r) {
    Phase p;
    p.k0 = (r + pad_lo) % s;
    int64_t c = (r + pad_lo) / s;
    if (p.k0 >= k) return std::nullopt;  // a phase with no tap
    p.taps = (k - p.k0 + s - 1) / s;
    int64_t len_minus_input = CeilDiv(c0 - r, s) - 1;  // Q_r - I
    p.pad_lo = p.taps - 1 - c;
    p.pad_hi = len_minus_input - p.pad_lo + p.taps - 1;
    p.short_by = a.longest_minus_input - len_minus_input;
    a.phases.push_back(p);
  }
  return a;
}

class PhaseRewriter : public ExprMutator {
 public:
  ir::Function VisitFunction(const ir::Function& f) override {
    names_.clear();
    for (const auto& p : f->params) names_.insert(p->name);
    return ExprMutator::VisitFunction(f);
  }

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    names_.insert(b.var->name);
    std::vector<ir::Binding> mine;
    ExprMutator::VisitBinding(b, in_dataflow, &mine);
    for (auto& nb : mine) {
      const auto* call = ir::ExprAs<ir::CallExpr>(nb.value);
      const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
      if (op && op->name == "relax.nn.conv2d_transpose" && call->args.size() == 2 && !nb.match_cast &&
          Rewrite(*call, nb, in_dataflow, out)) {
        continue;
      }
      out->push_back(std::move(nb));
    }
  }

 private:
  bool Rewrite(const ir::CallExpr& call, const ir::Binding& b, bool dataflow, std::vector<ir::Binding>* out) {
    const ir::AttrMap& at = call.attrs;
    if (Str(at, "data_layout", "NCHW") != "NCHW" || Str(at, "kernel_layout", "IOHW") != "IOHW" ||
        Str(at, "out_layout", "NCHW") != "NCHW") {
      return false;
    }
    auto strides = Ints(at, "strides", {1, 1});
    auto dilation = Ints(at, "dilation", {1, 1});
    auto padding = Ints(at, "padding", {0});
    auto out_pad = Ints(at, "output_padding", {0, 0});
    auto groups = Ints(at, "groups", {1});
    if (!strides || !dilation || !padding || !out_pad || !groups || groups->size() != 1) return false;
    if (strides->size() == 1) strides->push_back((*strides)[0]);
    if (dilation->size() == 1) dilation->push_back((*dilation)[0]);
    if (out_pad->size() == 1) out_pad->push_back((*out_pad)[0]);
    std::vector<int64_t> lo, hi;
    if (padding->size() == 1) {
      lo = hi = {(*padding)[0], (*padding)[0]};
    } else if (padding->size() == 2) {
      lo = hi = *padding;
    } else if (padding->size() == 4) {
      lo = {(*padding)[0], (*padding)[1]};
      hi = {(*padding)[2], (*padding)[3]};
    } else {
      return false;
    }
    if (strides->size() != 2 || dilation->size() != 2 || out_pad->size() != 2) return false;
    if ((*dilation)[0] != 1 || (*dilation)[1] != 1) return false;
    const auto* x = ir::SInfoAs<ir::TensorSInfo>(call.args[0]->struct_info);
    const auto* w = ir::SInfoAs<ir::TensorSInfo>(call.args[1]->struct_info);
    if (!x || !w || !x->has_shape || !w->has_shape || x->shape.size() != 4 || w->shape.size() != 4) return false;
    auto ci = Const(w->shape[0]), cog = Const(w->shape[1]), kh = Const(w->shape[2]), kw = Const(w->shape[3]);
    int64_t g = (*groups)[0];
    if (!ci || !cog || !kh || !kw || g < 1 || *ci % g != 0) return false;
    std::optional<Axis> ay = PlanAxis((*strides)[0], *kh, lo[0], hi[0], (*out_pad)[0]);
    std::optional<Axis> ax = PlanAxis((*strides)[1], *kw, lo[1], hi[1], (*out_pad)[1]);
    if (!ay || !ax) return false;
    // Every phase must be at least one element long at the data's size.
    for (const Axis* a : {&*ay, &*ax}) {
      auto in = Const(x->shape[a == &*ay ? 2 : 3]);
      for (const Phase& p : a->phases) {
        if (in && *in + a->longest_minus_input - p.short_by < 1) return false;
      }
    }

    auto emit = [&](ir::Expr value) {
      ir::RVar v = ir::MakeRVar(Fresh(), nullptr, dataflow);
      out->push_back(ir::Binding{v, std::move(value), nullptr, b.span});
      return ir::Expr(v);
    };
    auto op = [&](const char* name, std::vector<ir::Expr> args, ir::AttrMap attrs = {}) {
      return emit(ir::MakeOpCall(name, std::move(args), std::move(attrs)));
    };
    auto shape = [](std::vector<ir::PrimExpr> dims) {
      for (auto& d : dims) d = arith::Simplify(d);
      return std::make_shared<ir::ShapeExpr>(std::move(dims));
    };

    const ir::PrimExpr& n = x->shape[0];
    int64_t cig = *ci / g, co = *cog * g;
    ir::Expr data = call.args[0];
    // The weight as a conv2d's OIHW: [g, Cig, Cog, KH, KW] -> [g * Cog, Cig, KH, KW].
    ir::Expr wt = call.args[1];
    if (g == 1) {
      wt = op("relax.permute_dims", {wt}, {{"axes", ir::AttrInts({1, 0, 2, 3})}});
    } else {
      wt = op("relax.reshape", {wt, shape({g, cig, *cog, *kh, *kw})});
      wt = op("relax.permute_dims", {wt}, {{"axes", ir::AttrInts({0, 2, 1, 3, 4})}});
      wt = op("relax.reshape", {wt, shape({co, cig, *kh, *kw})});
    }
    // A phase's kernel: its taps, reversed.
    auto phase_kernel = [&](const Phase& py, const Phase& px) {
      int64_t sy = ay->stride, sx = ax->stride;
      return op("relax.strided_slice", {wt},
                {{"axes", ir::AttrInts({2, 3})},
                 {"begin", ir::AttrInts({py.k0 + sy * (py.taps - 1), px.k0 + sx * (px.taps - 1)})},
                 {"end", ir::AttrInts({py.k0 > 0 ? py.k0 - 1 : kBeforeStart, px.k0 > 0 ? px.k0 - 1 : kBeforeStart})},
                 {"strides", ir::AttrInts({-sy, -sx})},
                 {"assume_inbound", ir::AttrBool(false)}});
    };
    // A stride-1 conv of the data with a phase's kernel (negative padding crops).
    auto phase_conv = [&](const Phase& py, const Phase& px, ir::Expr kernel) {
      ir::Expr d = data;
      std::vector<int64_t> axes, begin, end;
      const Phase* ps[2] = {&py, &px};
      for (int i = 0; i < 2; ++i) {
        if (ps[i]->pad_lo >= 0 && ps[i]->pad_hi >= 0) continue;
        axes.push_back(2 + i);
        begin.push_back(ps[i]->pad_lo < 0 ? -ps[i]->pad_lo : 0);
        end.push_back(ps[i]->pad_hi < 0 ? ps[i]->pad_hi : int64_t{1} << 40);
      }
      if (!axes.empty()) {
        ir::AttrValue one = ir::AttrInts(std::vector<int64_t>(axes.size(), 1));
        d = op("relax.strided_slice", {d}, {{"axes", ir::AttrInts(axes)}, {"begin", ir::AttrInts(begin)}, {"end", ir::AttrInts(end)},
                                           {"strides", one}, {"assume_inbound", ir::AttrBool(false)}});
      }
      ir::AttrMap attrs = {{"strides", ir::AttrInts({1, 1})},
                           {"padding", ir::AttrInts({std::max<int64_t>(py.pad_lo, 0), std::max<int64_t>(px.pad_lo, 0),
                                                std::max<int64_t>(py.pad_hi, 0), std::max<int64_t>(px.pad_hi, 0)})},
                           {"dilation", ir::AttrInts({1, 1})},
                           {"groups", ir::AttrInt(g)}};
      auto odt = at.find("out_dtype");
      if (odt != at.end()) attrs["out_dtype"] = odt->second;
      return op("relax.nn.conv2d", {d, kernel}, attrs);
    };

    int64_t sy = ay->stride, sx = ax->stride;
    ir::PrimExpr qh = x->shape[2] + ir::PrimExpr(ay->longest_minus_input);
    ir::PrimExpr qw = x->shape[3] + ir::PrimExpr(ax->longest_minus_input);
    bool alike = g == 1;
    for (const Axis* a : {&*ay, &*ax})
      for (const Phase& p : a->phases) alike = alike && p == a->phases[0];
    ir::Expr y;
    if (alike) {
      std::vector<ir::Expr> kernels;
      for (const Phase& py : ay->phases)
        for (const Phase& px : ax->phases) kernels.push_back(phase_kernel(py, px));
      ir::Expr stacked = kernels.size() == 1 ? kernels[0]
                                             : op("relax.concat", {std::make_shared<ir::TupleExpr>(kernels)}, {{"axis", ir::AttrInt(0)}});
      ir::Expr z = phase_conv(ay->phases[0], ax->phases[0], stacked);  // [N, sy*sx*Co, Qh, Qw]
      if (sy * sx == 1) {
        y = z;
      } else {
        z = op("relax.reshape", {z, shape({n, sy, sx, co, qh, qw})});
        z = op("relax.permute_dims", {z}, {{"axes", ir::AttrInts({0, 3, 4, 1, 5, 2})}});
        y = op("relax.reshape", {z, shape({n, co, qh * ir::PrimExpr(sy), qw * ir::PrimExpr(sx)})});
      }
    } else {
      std::vector<ir::Expr> rows;
      for (const Phase& py : ay->phases) {
        std::vector<ir::Expr> cols;
        for (const Phase& px : ax->phases) {
          ir::Expr z = phase_conv(py, px, phase_kernel(py, px));
          if (py.short_by > 0 || px.short_by > 0) {
            z = op("relax.nn.pad", {z}, {{"pad_width", ir::AttrInts({0, 0, 0, 0, 0, py.short_by, 0, px.short_by})},
                                         {"pad_mode", ir::AttrString("constant")},
                                         {"pad_value", ir::AttrFloat(0.0)}});
          }
          cols.push_back(sx == 1 ? z : op("relax.expand_dims", {z}, {{"axis", ir::AttrInts({4})}}));
        }
        ir::Expr row = cols.size() == 1 ? cols[0]
                                        : op("relax.concat", {std::make_shared<ir::TupleExpr>(cols)}, {{"axis", ir::AttrInt(4)}});
        if (sy != 1) row = op("relax.expand_dims", {row}, {{"axis", ir::AttrInts({3})}});
        rows.push_back(row);
      }
      ir::Expr z = rows.size() == 1 ? rows[0]
                                    : op("relax.concat", {std::make_shared<ir::TupleExpr>(rows)}, {{"axis", ir::AttrInt(3)}});
      y = sy * sx == 1 ? z : op("relax.reshape", {z, shape({n, co, qh * ir::PrimExpr(sy), qw * ir::PrimExpr(sx)})});
    }
    if (ay->cut > 0 || ax->cut > 0) {
      std::vector<int64_t> axes, end;
      if (ay->cut > 0) axes.push_back(2), end.push_back(-ay->cut);
      if (ax->cut > 0) axes.push_back(3), end.push_back(-ax->cut);
      ir::Expr sliced = ir::MakeOpCall("relax.strided_slice", {y},
                                       {{"axes", ir::AttrInts(axes)},
                                        {"begin", ir::AttrInts(std::vector<int64_t>(axes.size(), 0))},
                                        {"end", ir::AttrInts(end)},
                                        {"strides", ir::AttrInts(std::vector<int64_t>(axes.size(), 1))},
                                        {"assume_inbound", ir::AttrBool(false)}});
      out->push_back(ir::Binding{b.var, sliced, nullptr, b.span});
    } else {
      out->push_back(ir::Binding{b.var, y, nullptr, b.span});
    }
    return true;
  }

  std::string Fresh() {
    for (int i = 0;; ++i) {
      std::string n = i == 0 ? "ct" : "ct" + std::to_string(i);
      if (names_.insert(n).second) return n;
    }
  }

  std::set<std::string> names_;
};

}  // namespace

Result<ir::IRModule> ConvTransposeToPhases(const ir::IRModule& mod) {
  return MutateFunctions<PhaseRewriter>(mod, /*renormalize=*/true);
}

}  // namespace transform
}  // namespace kiln
