#include "compiler/fusion/prologue_cost.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace fusion {
namespace {

using ir::PrimExpr;
using ir::TirKind;

struct Dim {
  double extent;  // kAssumedSymbolicExtent when symbolic
  bool symbolic;
  bool reduce;
};
using Domain = std::map<const ir::VarNode*, Dim>;

Dim DimOf(const PrimExpr& extent, bool reduce) {
  if (const auto* c = extent.as<ir::IntImmNode>()) return {static_cast<double>(c->value), false, reduce};
  return {kAssumedSymbolicExtent, true, reduce};
}

// e as sum(coeff * var) + constant over variables of `dom`; false when it is
// not of that form (div, mod, casts, products of variables, loads).
bool Affine(const PrimExpr& e, const Domain& dom, std::map<const ir::VarNode*, int64_t>* terms, int64_t scale) {
  if (e.as<ir::IntImmNode>()) return true;
  if (const auto* v = e.as<ir::VarNode>()) {
    if (!dom.count(v)) return true;  // a symbolic size: a constant here
    (*terms)[v] += scale;
    return true;
  }
  TirKind k = e->kind();
  if (k == TirKind::kAdd || k == TirKind::kSub) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    return Affine(b->a, dom, terms, scale) && Affine(b->b, dom, terms, k == TirKind::kSub ? -scale : scale);
  }
  if (k == TirKind::kMul) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    if (const auto* c = b->b.as<ir::IntImmNode>()) return Affine(b->a, dom, terms, scale * c->value);
    if (const auto* c = b->a.as<ir::IntImmNode>()) return Affine(b->b, dom, terms, scale * c->value);
  }
  return false;
}

class UsedVars : public tir::StmtExprVisitor {
 public:
  explicit UsedVars(const Domain& dom) : dom_(dom) {}
  std::map<const ir::VarNode*, bool> used;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* v = e.as<ir::VarNode>()) {
      if (dom_.count(v)) used[v] = true;
    }
    tir::StmtExprVisitor::VisitExpr(e);
  }

 private:
  const Domain& dom_;
};

// Reads per element of one load's buffer by the nest over `dom`.
double LoadFactor(const ir::BufferLoadNode& load, const Domain& dom) {
  UsedVars uv(dom);
  double factor = 1.0;
  for (const auto& idx : load.indices) {
    uv.VisitExpr(idx);
    std::map<const ir::VarNode*, int64_t> terms;
    if (!Affine(idx, dom, &terms, 1)) continue;  // not affine: counted as read once along it
    // The variable of largest extent walks the dimension (the output's row);
    // the others are taps of a window over it, each `coeff` apart.
    const ir::VarNode* main = nullptr;
    for (const auto& t : terms) {
      if (t.second == 0) continue;
      const Dim& d = dom.at(t.first);
      if (!main) {
        main = t.first;
        continue;
      }
      const Dim& m = dom.at(main);
      if ((d.symbolic && !m.symbolic) || (d.symbolic == m.symbolic && d.extent > m.extent)) main = t.first;
    }
    if (!main) continue;
    double taps = 1.0;
    for (const auto& t : terms)
      if (t.first != main && t.second != 0) taps *= dom.at(t.first).extent;
    double stride = static_cast<double>(std::max<int64_t>(1, std::abs(terms.at(main))));
    factor *= std::max(1.0, taps / stride);
  }
  // Variables no index uses: every iteration of them reads the same element
  // (a convolution's output channels, a matmul's columns). The anchors'
  // schedules share one read among kAnchorTile rows of outputs.
  double spatial = 1.0;
  for (const auto& d : dom) {
    if (uv.used.count(d.first)) continue;
    if (d.second.reduce) {
      factor *= d.second.extent;
    } else {
      spatial *= d.second.extent;
    }
  }
  return factor * std::max(1.0, spatial / kAnchorTile);
}

class ReadCounter : public tir::StmtExprVisitor {
 public:
  explicit ReadCounter(const ir::BufferNode* buffer) : buffer_(buffer) {}
  double total = 0.0;

  void VisitStmt(const ir::Stmt& s) override {
    if (const auto* f = ir::As<ir::ForNode>(s)) {
      loops_.push_back({f->loop_var.get(), DimOf(f->extent, false)});
      tir::StmtExprVisitor::VisitStmt(s);
      loops_.pop_back();
      return;
    }
    if (const auto* br = ir::As<ir::BlockRealizeNode>(s)) {
      if (br->block.iter_vars.empty()) {
        tir::StmtExprVisitor::VisitStmt(s);
        return;
      }
      // Inside a block its iteration variables are the domain (the loops
      // around it only bind them).
      Domain dom;
      for (const auto& iv : br->block.iter_vars)
        dom[iv.var.get()] = DimOf(iv.extent, iv.kind == ir::IterKind::kReduce);
      blocks_.push_back(dom);
      tir::StmtExprVisitor::VisitStmt(s);
      blocks_.pop_back();
      return;
    }
    tir::StmtExprVisitor::VisitStmt(s);
  }

  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<ir::BufferLoadNode>()) {
      if (l->buffer.get() == buffer_) {
        if (!blocks_.empty()) {
          total += LoadFactor(*l, blocks_.back());
        } else {
          Domain dom;
          for (const auto& lp : loops_) dom[lp.first] = lp.second;
          total += LoadFactor(*l, dom);
        }
      }
    }
    tir::StmtExprVisitor::VisitExpr(e);
  }

 private:
  const ir::BufferNode* buffer_;
  std::vector<std::pair<const ir::VarNode*, Dim>> loops_;
  std::vector<Domain> blocks_;
};

bool IsTranscendental(const std::string& op) {
  static const char* const kNames[] = {"exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "tanh", "sigmoid",
                                       "erf", "sin", "cos", "tan", "pow", "atan", "asin", "acos", "sinh", "cosh"};
  for (const char* n : kNames)
    if (op == n) return true;
  return false;
}

struct Work {
  double ops = 0.0;
  int loads = 0;
  Work& operator+=(const Work& o) {
    ops += o.ops;
    loads += o.loads;
    return *this;
  }
};

bool HasLoad(const PrimExpr& e) {
  struct Finder : tir::StmtExprVisitor {
    bool found = false;
    void VisitExpr(const PrimExpr& x) override {
      if (x.as<ir::BufferLoadNode>()) found = true;
      tir::StmtExprVisitor::VisitExpr(x);
    }
  } f;
  f.VisitExpr(e);
  return f.found;
}

Work Cost(const PrimExpr& e, bool index);

// A choice on the iteration point only (concat's channel test, pad's bounds
// test): a consumer that inlines it splits its loops at the boundaries, so
// it costs nothing per element, and each element loads one branch's values.
Work IndexChoice(const PrimExpr& t, const PrimExpr& f, bool index) {
  Work a = Cost(t, index), b = Cost(f, index);
  Work w;
  w.ops = std::max(a.ops, b.ops);
  w.loads = std::max(a.loads, b.loads);
  return w;
}

// Operation count of an expression. In an index, affine address arithmetic
// (adding variables, multiplying by constants) is free; everything else
// costs as in a value.
Work Cost(const PrimExpr& e, bool index) {
  Work w;
  if (!e.defined()) return w;
  TirKind k = e->kind();
  switch (k) {
    case TirKind::kIntImm:
    case TirKind::kFloatImm:
    case TirKind::kStringImm:
    case TirKind::kVar:
      return w;
    case TirKind::kBufferLoad:
      w.loads = 1;
      for (const auto& i : e.as<ir::BufferLoadNode>()->indices) w += Cost(i, true);
      return w;
    case TirKind::kNot:
      w.ops = 1.0;
      w += Cost(e.as<ir::NotNode>()->a, index);
      return w;
    case TirKind::kCast:
      w.ops = 1.0;
      w += Cost(e.as<ir::CastNode>()->value, index);
      return w;
    case TirKind::kSelect: {
      const auto* s = e.as<ir::SelectNode>();
      if (!HasLoad(s->cond)) return IndexChoice(s->true_value, s->false_value, index);
      w.ops = 1.0;
      w += Cost(s->cond, index);
      w += Cost(s->true_value, index);
      w += Cost(s->false_value, index);
      return w;
    }
    case TirKind::kCall: {
      const auto* c = e.as<ir::CallNode>();
      if (c->op == "if_then_else" && c->args.size() == 3 && !HasLoad(c->args[0]))
        return IndexChoice(c->args[1], c->args[2], index);
      w.ops = IsTranscendental(c->op) ? kTranscendentalCost : 1.0;
      for (const auto& a : c->args) w += Cost(a, index);
      return w;
    }
    default:
      break;
  }
  if (!ir::IsBinary(k)) {
    w.ops = 1.0;
    return w;
  }
  const auto* b = static_cast<const ir::BinaryNode*>(e.get());
  bool address = index && (k == TirKind::kAdd || k == TirKind::kSub ||
                           (k == TirKind::kMul && (b->a.as<ir::IntImmNode>() || b->b.as<ir::IntImmNode>())));
  w.ops = address ? 0.0 : 1.0;
  w += Cost(b->a, index);
  w += Cost(b->b, index);
  return w;
}

class StoreCost : public tir::StmtExprVisitor {
 public:
  double total = 0.0;
  bool plain = true;  // every store at the loop point
  void VisitStmt(const ir::Stmt& s) override {
    if (const auto* st = ir::As<ir::BufferStoreNode>(s)) {
      Work w = Cost(st->value, false);
      std::set<const ir::VarNode*> seen;
      for (const auto& i : st->indices) {
        w += Cost(i, true);
        const auto* v = i.as<ir::VarNode>();
        plain &= v != nullptr && seen.insert(v).second;
      }
      total += w.ops + std::max(0, w.loads - 1);
      return;
    }
    if (const auto* br = ir::As<ir::BlockRealizeNode>(s)) {
      // A block's init (a reduction's zero) is not per element of the result.
      VisitStmt(br->block.body);
      return;
    }
    tir::StmtExprVisitor::VisitStmt(s);
  }
};

}  // namespace

double ReadsPerElement(const ir::PrimFunc& consumer, size_t param) {
  if (!consumer || param >= consumer->params.size()) return 1.0;
  ir::Buffer b = consumer->BufferOf(consumer->params[param]);
  if (!b) return 1.0;
  ReadCounter rc(b.get());
  rc.VisitStmt(consumer->body);
  return std::max(1.0, rc.total);
}

double OpsPerElement(const ir::PrimFunc& producer) {
  if (!producer) return 0.0;
  StoreCost sc;
  sc.VisitStmt(producer->body);
  return sc.total;
}

bool StoresAtLoopPoint(const ir::PrimFunc& producer) {
  if (!producer) return false;
  StoreCost sc;
  sc.VisitStmt(producer->body);
  return sc.plain;
}

bool HasSymbolicExtent(const ir::PrimFunc& kernel) {
  if (!kernel) return false;
  for (const auto& p : kernel->params) {
    ir::Buffer b = kernel->BufferOf(p);
    if (!b) continue;
    for (const auto& d : b->shape)
      if (!d.as<ir::IntImmNode>()) return true;
  }
  return false;
}

bool PrologueTooCostly(double reads, double ops) { return (reads - 1.0) * ops > kMaterializeCost; }

}  // namespace fusion
}  // namespace kiln
