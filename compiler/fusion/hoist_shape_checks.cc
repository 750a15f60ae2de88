#include "compiler/fusion/hoist_shape_checks.h"

#include "compiler/fusion/op_pattern.h"
#include "compiler/tir/split_concat.h"

#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

namespace kiln {
namespace fusion {
namespace {

// Adds one per read of each Relax variable in `e`.
void CountReads(const ir::Expr& e, std::unordered_map<const ir::VarExpr*, int>* reads) {
  if (!e) return;
  switch (e->kind) {
    case ir::ExprKind::kVar:
      ++(*reads)[static_cast<const ir::VarExpr*>(e.get())];
      return;
    case ir::ExprKind::kTuple:
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) CountReads(f, reads);
      return;
    case ir::ExprKind::kTupleGetItem:
      CountReads(static_cast<const ir::TupleGetItemExpr&>(*e).tuple, reads);
      return;
    case ir::ExprKind::kCall: {
      const auto& c = static_cast<const ir::CallExpr&>(*e);
      CountReads(c.op, reads);
      for (const auto& a : c.args) CountReads(a, reads);
      return;
    }
    case ir::ExprKind::kIf: {
      const auto& i = static_cast<const ir::IfExpr&>(*e);
      CountReads(i.cond, reads);
      CountReads(i.then_branch, reads);
      CountReads(i.else_branch, reads);
      return;
    }
    case ir::ExprKind::kSeqExpr: {
      const auto& s = static_cast<const ir::SeqExprNode&>(*e);
      for (const auto& b : s.blocks)
        for (const auto& bind : b.bindings) CountReads(bind.value, reads);
      CountReads(s.body, reads);
      return;
    }
    default:
      return;
  }
}

void CollectVars(const ir::PrimExpr& e, std::set<const ir::VarNode*>* out) {
  if (!e.defined() || e.as<ir::IntImmNode>()) return;
  if (const auto* v = e.as<ir::VarNode>()) {
    out->insert(v);
  } else if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    CollectVars(b->a, out);
    CollectVars(b->b, out);
  } else if (const auto* c = e.as<ir::CastNode>()) {
    CollectVars(c->value, out);
  } else {
    // Anything else in a shape (a call, a select): treat as unknown.
    out->insert(nullptr);
  }
}

const ir::TensorSInfo* KnownTensor(const ir::StructInfo& s) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(s);
  return t && t->has_shape && t->has_dtype ? t : nullptr;
}

// The call_tir of binding `b` with one tensor output, or null.
const ir::CallExpr* KernelCall(const ir::Binding& b) {
  if (b.match_cast) return nullptr;
  const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
  const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
  if (!op || op->name != "relax.call_tir" || call->sinfo_args.size() != 1 || call->args.size() < 2) return nullptr;
  return KnownTensor(call->sinfo_args[0]) ? call : nullptr;
}

// Whether every variable of `want` is known where `call` runs: a variable
// of the function's parameters (`params`), or one that occurs in the call's
// output shape, its arguments' shapes or its tir_vars.
bool KnownAtCall(const ir::CallExpr& call, const std::vector<ir::PrimExpr>& want,
                 const std::set<const ir::VarNode*>& params) {
  std::set<const ir::VarNode*> known = params, needed;
  for (const auto& d : KnownTensor(call.sinfo_args[0])->shape) CollectVars(d, &known);
  if (const auto* args = ir::ExprAs<ir::TupleExpr>(call.args[1])) {
    for (const auto& a : args->fields)
      if (const auto* t = a ? KnownTensor(a->struct_info) : nullptr)
        for (const auto& d : t->shape) CollectVars(d, &known);
  }
  if (call.args.size() == 3)
    if (const auto* s = ir::ExprAs<ir::ShapeExpr>(call.args[2]))
      for (const auto& d : s->values) CollectVars(d, &known);
  known.erase(nullptr);
  for (const auto& d : want) CollectVars(d, &needed);
  for (const auto* v : needed)
    if (v == nullptr || !known.count(v)) return false;
  return true;
}

}  // namespace

void CollectShapeVars(const ir::StructInfo& s, std::set<const ir::VarNode*>* out) {
  if (const auto* t = ir::SInfoAs<ir::TensorSInfo>(s)) {
    for (const auto& d : t->shape) CollectVars(d, out);
  } else if (const auto* sh = ir::SInfoAs<ir::ShapeSInfo>(s)) {
    for (const auto& d : sh->values) CollectVars(d, out);
  } else if (const auto* p = ir::SInfoAs<ir::PrimSInfo>(s)) {
    CollectVars(p->value, out);
  } else if (const auto* tu = ir::SInfoAs<ir::TupleSInfo>(s)) {
    for (const auto& f : tu->fields) CollectShapeVars(f, out);
  }
  out->erase(nullptr);
}

// Whether every binding that reads `v` is an elementwise or broadcast kernel,
// or a concatenation that split_concat.h splits into one copy per source
// (the source's producer then writes its slice of the output).
bool ReadOnlyByElementwise(const ir::IRModule& mod, const std::vector<ir::Binding>& bs, const ir::VarExpr* v) {
  for (const auto& b : bs) {
    std::unordered_map<const ir::VarExpr*, int> reads;
    CountReads(b.value, &reads);
    if (!reads.count(v)) continue;
    const ir::CallExpr* call = KernelCall(b);
    const auto* gv = call ? ir::ExprAs<ir::GlobalVarExpr>(call->args[0]) : nullptr;
    ir::PrimFunc f = gv ? mod.FindPrim(gv->name) : nullptr;
    if (!f || (GetOpPattern(f) > kBroadcast && !tir::HasSplittableConcatenation(f))) return false;
  }
  return true;
}

ir::BindingBlock HoistShapeChecks(const ir::IRModule& mod, const ir::BindingBlock& block,
                                  const std::set<const ir::VarNode*>& params, bool* changed) {
  const auto& bs = block.bindings;
  std::unordered_map<const ir::VarExpr*, int> reads;
  std::unordered_map<const ir::VarExpr*, size_t> bound_at;
  for (size_t i = 0; i < bs.size(); ++i) {
    CountReads(bs[i].value, &reads);
    bound_at[bs[i].var.get()] = i;
  }
  // producer index -> the match_cast binding that replaces it.
  std::unordered_map<size_t, size_t> hoisted;
  for (size_t j = 0; j < bs.size(); ++j) {
    const ir::Binding& m = bs[j];
    const auto* src = m.match_cast ? ir::ExprAs<ir::VarExpr>(m.value) : nullptr;
    if (!src || !src->is_dataflow || reads[src] != 1) continue;
    auto at = bound_at.find(src);
    if (at == bound_at.end() || at->second >= j || hoisted.count(at->second)) continue;
    const ir::CallExpr* call = KernelCall(bs[at->second]);
    const ir::TensorSInfo* want = KnownTensor(m.match_cast);
    if (!call || !want || !ReadOnlyByElementwise(mod, bs, m.var.get())) continue;
    const ir::TensorSInfo* have = KnownTensor(call->sinfo_args[0]);
    if (want->ndim != have->ndim || !(want->dtype == have->dtype) ||
        m.messages.size() != want->shape.size() || !KnownAtCall(*call, want->shape, params)) {
      continue;
    }
    hoisted[at->second] = j;
  }
  if (hoisted.empty()) return block;
  *changed = true;
  std::set<size_t> moved;
  for (const auto& h : hoisted) moved.insert(h.second);
  ir::BindingBlock out;
  out.is_dataflow = block.is_dataflow;
  for (size_t i = 0; i < bs.size(); ++i) {
    if (moved.count(i)) continue;
    auto h = hoisted.find(i);
    if (h == hoisted.end()) {
      out.bindings.push_back(bs[i]);
      continue;
    }
    const ir::Binding& producer = bs[i];
    const ir::Binding& m = bs[h->second];
    const auto* call = ir::ExprAs<ir::CallExpr>(producer.value);
    const auto* have = KnownTensor(call->sinfo_args[0]);
    const auto* want = KnownTensor(m.match_cast);
    // The check: the kernel's output shape, as a value, matched to S'.
    auto shape = std::make_shared<ir::ShapeExpr>(have->shape);
    shape->struct_info = std::make_shared<ir::ShapeSInfo>(true, have->shape, static_cast<int>(have->shape.size()));
    shape->span = m.span;
    ir::StructInfo check_sinfo = std::make_shared<ir::ShapeSInfo>(true, want->shape, static_cast<int>(want->shape.size()));
    auto check_var = std::make_shared<ir::VarExpr>(m.var->name + "_check", check_sinfo, true);
    check_var->struct_info = check_sinfo;
    check_var->span = m.span;
    ir::Binding check;
    check.var = check_var;
    check.value = shape;
    check.match_cast = check_sinfo;
    check.span = m.span;
    check.messages = m.messages;
    out.bindings.push_back(check);
    // The kernel now produces the matched variable itself.
    auto ncall = std::make_shared<ir::CallExpr>(*call);
    ncall->sinfo_args = {m.match_cast};
    ncall->struct_info = m.match_cast;
    ir::Binding produce;
    produce.var = m.var;
    produce.value = ncall;
    produce.span = producer.span;
    out.bindings.push_back(produce);
  }
  return out;
}

}  // namespace fusion
}  // namespace kiln
