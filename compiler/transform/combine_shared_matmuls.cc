#include "compiler/transform/combine_shared_matmuls.h"

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/arith/expr_compare.h"
#include "compiler/arith/simplify.h"
#include "compiler/ir/attr_values.h"
#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/var_uses.h"

namespace kiln {
namespace transform {
namespace {

// The matmul of binding `b`, its input's shape and its constant weight, or
// false.
struct Candidate {
  size_t at = 0;                  // binding index in the block
  const ir::CallExpr* call = nullptr;
  const ir::ConstantExpr* weight = nullptr;
  std::vector<ir::PrimExpr> x_shape;
};

bool AsCandidate(const ir::Binding& b, size_t at, Candidate* c) {
  if (b.match_cast) return false;
  const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
  const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
  if (!op || op->name != "relax.matmul" || call->args.size() != 2) return false;
  const auto* w = ir::ExprAs<ir::ConstantExpr>(call->args[1]);
  const auto* x = ir::SInfoAs<ir::TensorSInfo>(call->args[0]->struct_info);
  if (!w || !x || !x->has_shape || x->ndim < 2 || x->dtype != DType::Float32()) return false;
  if (w->data.dtype() != DType::Float32() || w->data.shape().size() != 2) return false;
  const auto* k = x->shape.back().as<ir::IntImmNode>();
  if (!k || k->value != w->data.shape()[0]) return false;
  c->at = at;
  c->call = call;
  c->weight = w;
  c->x_shape = x->shape;
  return true;
}

bool SameWeight(const ir::ConstantExpr* a, const ir::ConstantExpr* b) {
  if (a == b || a->data.raw_data() == b->data.raw_data()) return a->data.shape() == b->data.shape();
  return a->data.shape() == b->data.shape() && a->data.dtype() == b->data.dtype() &&
         std::memcmp(a->data.raw_data(), b->data.raw_data(), a->data.NumBytes()) == 0;
}

bool SameShape(const std::vector<ir::PrimExpr>& a, const std::vector<ir::PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!arith::StructuralEqual(a[i], b[i])) return false;
  return true;
}

// The variables that `e` uses.
std::vector<const ir::VarExpr*> UsedVars(const ir::Expr& e) {
  UseCounts uses;
  CountUses(e, &uses);
  std::vector<const ir::VarExpr*> out;
  for (const auto& kv : uses) out.push_back(kv.first);
  return out;
}

class Combiner : public ExprMutator {
 public:
  ir::Function VisitFunction(const ir::Function& f) override {
    names_.clear();
    for (const auto& p : f->params) names_.insert(p->name);
    return ExprMutator::VisitFunction(f);
  }

  ir::BindingBlock VisitBlock(const ir::BindingBlock& block) override {
    ir::BindingBlock out = ExprMutator::VisitBlock(block);
    for (const auto& b : out.bindings) names_.insert(b.var->name);
    if (!out.is_dataflow) return out;
    // One group at a time; each rewrite reorders the block, so look again.
    while (CombineOne(&out)) {
    }
    return out;
  }

 private:
  // Finds the first group of at least kMinCombinedMatmuls independent
  // matmuls of one weight and rewrites it; false when there is none.
  bool CombineOne(ir::BindingBlock* block) {
    std::vector<ir::Binding>& bs = block->bindings;
    std::vector<Candidate> cands;
    for (size_t i = 0; i < bs.size(); ++i) {
      Candidate c;
      if (AsCandidate(bs[i], i, &c)) cands.push_back(c);
    }
    if (cands.size() < static_cast<size_t>(kMinCombinedMatmuls)) return false;
    // deps[i]: the candidates (by index into cands) binding i depends on,
    // itself included when it is one.
    std::unordered_map<const ir::VarExpr*, size_t> def;  // var -> binding index
    for (size_t i = 0; i < bs.size(); ++i) def[bs[i].var.get()] = i;
    std::unordered_map<size_t, size_t> cand_of;  // binding index -> candidate index
    for (size_t c = 0; c < cands.size(); ++c) cand_of[cands[c].at] = c;
    std::vector<std::set<size_t>> deps(bs.size());
    for (size_t i = 0; i < bs.size(); ++i) {
      for (const ir::VarExpr* v : UsedVars(bs[i].value)) {
        auto it = def.find(v);
        if (it == def.end() || it->second >= i) continue;
        deps[i].insert(deps[it->second].begin(), deps[it->second].end());
      }
      auto c = cand_of.find(i);
      if (c != cand_of.end()) deps[i].insert(c->second);
    }
    auto input_deps = [&](const Candidate& c) {
      std::set<size_t> d;
      for (const ir::VarExpr* v : UsedVars(c.call->args[0])) {
        auto it = def.find(v);
        if (it != def.end()) d.insert(deps[it->second].begin(), deps[it->second].end());
      }
      return d;
    };
    std::vector<bool> tried(cands.size(), false);
    for (size_t first = 0; first < cands.size(); ++first) {
      if (tried[first]) continue;
      std::vector<size_t> group = {first};
      tried[first] = true;
      for (size_t c = first + 1; c < cands.size(); ++c) {
        if (tried[c] || !SameWeight(cands[first].weight, cands[c].weight)) continue;
        if (!SameShape(cands[first].x_shape, cands[c].x_shape)) continue;
        tried[c] = true;  // same weight: in this group or never combinable with it
        std::set<size_t> d = input_deps(cands[c]);
        bool independent = true;
        for (size_t g : group) independent = independent && !d.count(g);
        if (independent) group.push_back(c);
      }
      if (group.size() >= static_cast<size_t>(kMinCombinedMatmuls)) return Rewrite(block, cands, group, def);
    }
    return false;
  }

  bool Rewrite(ir::BindingBlock* block, const std::vector<Candidate>& cands, const std::vector<size_t>& group,
               const std::unordered_map<const ir::VarExpr*, size_t>& def) {
    std::vector<ir::Binding>& bs = block->bindings;
    const size_t p = cands[group[0]].at;
    std::unordered_set<size_t> members;
    for (size_t g : group) members.insert(cands[g].at);
    // The bindings after the first member that the members' inputs need:
    // the transitive uses of each input, none of which depends on a member.
    std::vector<bool> hoist(bs.size(), false);
    std::vector<size_t> stack;
    for (size_t g : group)
      for (const ir::VarExpr* v : UsedVars(cands[g].call->args[0])) {
        auto it = def.find(v);
        if (it != def.end() && it->second > p) stack.push_back(it->second);
      }
    while (!stack.empty()) {
      size_t i = stack.back();
      stack.pop_back();
      if (hoist[i]) continue;
      hoist[i] = true;
      for (const ir::VarExpr* v : UsedVars(bs[i].value)) {
        auto it = def.find(v);
        if (it != def.end() && it->second > p && it->second < i) stack.push_back(it->second);
      }
    }

    std::unordered_set<size_t> dropped;  // bindings that go
    std::vector<ir::Binding> out(bs.begin(), bs.begin() + p);
    for (size_t i = p; i < bs.size(); ++i)
      if (hoist[i]) out.push_back(bs[i]);
    const ir::SourceSpan span = bs[p].span;
    auto emit = [&](ir::Expr value) {
      ir::RVar v = ir::MakeRVar(Fresh(), nullptr, true);
      out.push_back(ir::Binding{v, std::move(value), nullptr, span});
      return ir::Expr(v);
    };
    const Candidate& c0 = cands[group[0]];
    const int64_t n = static_cast<int64_t>(group.size());
    // Member i's row block in the stacked input (and product).
    std::vector<int64_t> slot(group.size());
    for (size_t i = 0; i < group.size(); ++i) slot[i] = static_cast<int64_t>(i);
    ir::Expr stacked = WholeTakenTensor(bs, cands, group, def, &slot);
    if (stacked) {
      // The inputs were only sliced for the members: no copy, and their
      // takes go (when nothing else reads them).
      UseCounts uses;
      for (const auto& b : bs) CountUses(b.value, &uses);
      for (size_t g : group) {
        const auto* v = ir::ExprAs<ir::VarExpr>(cands[g].call->args[0]);
        auto it = def.find(v);
        if (v->is_dataflow && uses[v] == 1 && it != def.end()) dropped.insert(it->second);
      }
      out.clear();
      for (size_t i = 0; i < p; ++i)
        if (!dropped.count(i)) out.push_back(bs[i]);
      for (size_t i = p; i < bs.size(); ++i)
        if (hoist[i] && !dropped.count(i)) out.push_back(bs[i]);
    } else {
      std::vector<ir::Expr> parts;
      for (size_t g : group)
        parts.push_back(emit(ir::MakeOpCall("relax.expand_dims", {cands[g].call->args[0]}, {{"axis", ir::AttrInts({0})}})));
      stacked = emit(ir::MakeOpCall("relax.concat", {std::make_shared<ir::TupleExpr>(parts)}, {{"axis", ir::AttrInt(0)}}));
    }
    ir::PrimExpr rows = ir::PrimExpr(n);
    for (size_t d = 0; d + 1 < c0.x_shape.size(); ++d) rows = rows * c0.x_shape[d];
    const int64_t k = c0.weight->data.shape()[0], cols = c0.weight->data.shape()[1];
    auto shape = [](std::vector<ir::PrimExpr> dims) {
      for (auto& d : dims) d = arith::Simplify(d);
      return std::make_shared<ir::ShapeExpr>(std::move(dims));
    };
    ir::Expr flat = emit(ir::MakeOpCall("relax.reshape", {stacked, shape({rows, ir::PrimExpr(k)})}));
    ir::Expr prod = emit(ir::MakeOpCall("relax.matmul", {flat, c0.call->args[1]}, c0.call->attrs));
    std::vector<ir::PrimExpr> out_dims = {ir::PrimExpr(n)};
    out_dims.insert(out_dims.end(), c0.x_shape.begin(), c0.x_shape.end() - 1);
    out_dims.push_back(ir::PrimExpr(cols));
    ir::Expr split = emit(ir::MakeOpCall("relax.reshape", {prod, shape(out_dims)}));
    for (int64_t i = 0; i < n; ++i) {
      const ir::Binding& m = bs[cands[group[i]].at];
      const int64_t none[1] = {0};
      Result<Tensor> index = Tensor::Empty(Span<const int64_t>(none, 0), DType::Int64());
      if (!index.ok()) return false;  // out of memory for one scalar: leave the block as it was
      index->data<int64_t>()[0] = slot[i];
      ir::Expr ie = ir::MakeConstant(std::move(*index));
      out.push_back(ir::Binding{m.var, ir::MakeOpCall("relax.take", {split, ie}, {{"axis", ir::AttrInt(0)}}), nullptr,
                                m.span});
    }
    for (size_t i = p; i < bs.size(); ++i)
      if (!hoist[i] && !members.count(i) && !dropped.count(i)) out.push_back(bs[i]);
    bs = std::move(out);
    return true;
  }

  // When the members' inputs are x_i = R.take(X, c_i, axis=0) of one X with
  // X.shape[0] = n, the c_i all of 0..n-1, and X.shape[1:] their shape, the
  // stacked input is X itself (in its own order: *slot gets c_i); else null.
  static ir::Expr WholeTakenTensor(const std::vector<ir::Binding>& bs, const std::vector<Candidate>& cands,
                                   const std::vector<size_t>& group,
                                   const std::unordered_map<const ir::VarExpr*, size_t>& def,
                                   std::vector<int64_t>* slot) {
    ir::Expr whole;
    std::vector<bool> seen(group.size(), false);
    for (size_t i = 0; i < group.size(); ++i) {
      const auto* v = ir::ExprAs<ir::VarExpr>(cands[group[i]].call->args[0]);
      auto it = v ? def.find(v) : def.end();
      if (it == def.end()) return nullptr;
      const ir::Binding& b = bs[it->second];
      const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
      const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
      if (b.match_cast || !op || op->name != "relax.take" || call->args.size() != 2) return nullptr;
      auto axis = call->attrs.find("axis");
      if (axis == call->attrs.end() || axis->second.kind != ir::AttrValue::Kind::kInt || axis->second.i != 0)
        return nullptr;
      const auto* idx = ir::ExprAs<ir::ConstantExpr>(call->args[1]);
      if (!idx || idx->data.dtype() != DType::Int64() || !idx->data.shape().empty()) return nullptr;
      int64_t c = idx->data.data<int64_t>()[0];
      if (c < 0 || c >= static_cast<int64_t>(group.size()) || seen[c]) return nullptr;
      seen[c] = true;
      (*slot)[i] = c;
      if (!whole) whole = call->args[0];
      if (whole != call->args[0]) return nullptr;
    }
    const auto* x = ir::SInfoAs<ir::TensorSInfo>(whole->struct_info);
    if (!x || !x->has_shape || x->shape.empty()) return nullptr;
    const auto* rows = x->shape[0].as<ir::IntImmNode>();
    std::vector<ir::PrimExpr> rest(x->shape.begin() + 1, x->shape.end());
    if (!rows || rows->value != static_cast<int64_t>(group.size()) || !SameShape(rest, cands[group[0]].x_shape))
      return nullptr;
    return whole;
  }

  std::string Fresh() {
    for (int i = 0;; ++i) {
      std::string n = i == 0 ? "mm_shared" : "mm_shared" + std::to_string(i);
      if (names_.insert(n).second) return n;
    }
  }

  std::set<std::string> names_;
};

}  // namespace

Result<ir::IRModule> CombineSharedMatmuls(const ir::IRModule& mod) {
  return MutateFunctions<Combiner>(mod, /*renormalize=*/true);
}

}  // namespace transform
}  // namespace kiln
