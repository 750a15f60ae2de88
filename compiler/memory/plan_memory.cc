#include "compiler/memory/plan_memory.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "compiler/arith/simplify.h"
#include "compiler/memory/arena.h"

namespace kiln {
namespace memory {
namespace {

using TensorSet = std::set<size_t>;  // indices into FunctionPlan::tensors

void CollectVars(const ir::PrimExpr& e, std::vector<const ir::VarNode*>* out) {
  if (!e.defined()) return;
  if (const auto* v = e.as<ir::VarNode>()) {
    out->push_back(v);
    return;
  }
  if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    CollectVars(b->a, out);
    CollectVars(b->b, out);
  } else if (const auto* c = e.as<ir::CastNode>()) {
    CollectVars(c->value, out);
  } else if (const auto* s = e.as<ir::SelectNode>()) {
    CollectVars(s->cond, out);
    CollectVars(s->true_value, out);
    CollectVars(s->false_value, out);
  } else if (const auto* n = e.as<ir::NotNode>()) {
    CollectVars(n->a, out);
  }
}

// The variables a function's arguments bind before its body runs: the VM
// matches each tensor or shape parameter's dimensions that are a plain
// variable (relax/vm_codegen.cc, the prologue).
std::set<const ir::VarNode*> EntryVars(const ir::Function& f) {
  std::set<const ir::VarNode*> vars;
  for (const auto& p : f->params) {
    const std::vector<ir::PrimExpr>* dims = nullptr;
    if (const auto* t = ir::SInfoAs<ir::TensorSInfo>(p->struct_info); t && t->has_shape) dims = &t->shape;
    if (const auto* s = ir::SInfoAs<ir::ShapeSInfo>(p->struct_info); s && s->has_values) dims = &s->values;
    if (dims == nullptr) continue;
    for (const auto& d : *dims)
      if (const auto* v = d.as<ir::VarNode>()) vars.insert(v);
  }
  return vars;
}

// Whether the VM can compute `e` in a function's prologue, before any
// kernel runs: constants and entry variables under arithmetic that cannot
// fail (division and remainder by nonzero constants only).
bool ComputableAtEntry(const ir::PrimExpr& e, const std::set<const ir::VarNode*>& entry) {
  if (arith::AsConstInt(e)) return true;
  if (const auto* v = e.as<ir::VarNode>()) return entry.count(v) > 0;
  switch (e->kind()) {
    case ir::TirKind::kAdd: case ir::TirKind::kSub: case ir::TirKind::kMul:
    case ir::TirKind::kMin: case ir::TirKind::kMax:
    // Comparisons and logic (an If's shape condition) give 0 or 1.
    case ir::TirKind::kEQ: case ir::TirKind::kNE: case ir::TirKind::kLT: case ir::TirKind::kLE:
    case ir::TirKind::kGT: case ir::TirKind::kGE: case ir::TirKind::kAnd: case ir::TirKind::kOr:
      break;
    case ir::TirKind::kFloorDiv: case ir::TirKind::kFloorMod: {
      auto c = arith::AsConstInt(static_cast<const ir::BinaryNode*>(e.get())->b);
      if (!c || *c == 0) return false;
      break;
    }
    default:
      return false;
  }
  const auto* b = static_cast<const ir::BinaryNode*>(e.get());
  return ComputableAtEntry(b->a, entry) && ComputableAtEntry(b->b, entry);
}

// Walks a function in code generation order, numbering bindings, and records
// every allocated tensor with its lifetime, aliases and escapes.
class LifetimeAnalysis {
 public:
  explicit LifetimeAnalysis(FunctionPlan* plan) : plan_(plan) {}

  void Run(const ir::Function& f) {
    TensorSet result = Visit(f->body, "");
    ++pos_;
    Use(result);
    Escape(result);
  }

 private:
  void Use(const TensorSet& s) {
    for (size_t i : s) plan_->tensors[i].last_use = std::max(plan_->tensors[i].last_use, pos_);
  }
  void Escape(const TensorSet& s) {
    for (size_t i : s) plan_->tensors[i].escapes = true;
  }

  TensorSet VisitSeq(const ir::SeqExprNode& seq) {
    for (const auto& block : seq.blocks) {
      for (const auto& b : block.bindings) {
        ++pos_;
        // match_cast only checks the value: the variable aliases it.
        aliases_[b.var.get()] = Visit(b.value, b.var->name);
      }
    }
    ++pos_;
    return Visit(seq.body, "");
  }

  // The tensors `e`'s value may be (or contain); marks them used at pos_.
  TensorSet Visit(const ir::Expr& e, const std::string& bound_name) {
    switch (e->kind) {
      case ir::ExprKind::kVar: {
        auto it = aliases_.find(e.get());
        if (it == aliases_.end()) return {};
        Use(it->second);
        return it->second;
      }
      case ir::ExprKind::kTuple: {
        TensorSet all;
        for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) {
          TensorSet s = Visit(f, "");
          all.insert(s.begin(), s.end());
        }
        return all;
      }
      case ir::ExprKind::kTupleGetItem:
        // Coarse: an element may be any tensor of the tuple.
        return Visit(static_cast<const ir::TupleGetItemExpr&>(*e).tuple, "");
      case ir::ExprKind::kSeqExpr:
        return VisitSeq(static_cast<const ir::SeqExprNode&>(*e));
      case ir::ExprKind::kIf: {
        const auto& i = static_cast<const ir::IfExpr&>(*e);
        Visit(i.cond, "");
        // A boolean shape condition (R.prim_value) says which branch runs:
        // the tensors written in a branch exist only when its guard is 1.
        // Another condition leaves the enclosing guard as it is.
        const auto* pv = ir::ExprAs<ir::PrimValueExpr>(i.cond);
        ir::PrimExpr outer = guard_;
        ir::PrimExpr one = ir::IntImm(DType::Int64(), 1);
        ir::PrimExpr then_guard = outer, else_guard = outer;
        if (pv != nullptr && pv->value.defined() && pv->value.dtype() == DType::Bool()) {
          then_guard = pv->value;
          else_guard = ir::MakeBinary(ir::TirKind::kSub, one, pv->value);
          if (outer.defined()) {
            then_guard = ir::MakeBinary(ir::TirKind::kMul, outer, then_guard);
            else_guard = ir::MakeBinary(ir::TirKind::kMul, outer, else_guard);
          }
        }
        guard_ = then_guard;
        TensorSet t = Visit(i.then_branch, "");
        guard_ = else_guard;
        TensorSet f = Visit(i.else_branch, "");
        guard_ = outer;
        ++pos_;  // the copy of the branch result
        t.insert(f.begin(), f.end());
        Use(t);
        return t;
      }
      case ir::ExprKind::kCall:
        return VisitCall(static_cast<const ir::CallExpr&>(*e), bound_name);
      default:
        return {};
    }
  }

  TensorSet VisitCall(const ir::CallExpr& call, const std::string& bound_name) {
    const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
    bool dps = op && (op->name == "relax.call_tir" || op->name == "relax.call_dps_packed");
    const auto* ext = ir::ExprAs<ir::ExternFuncExpr>(call.op);
    if (ext && ext->global_symbol == "vm.builtin.reshape_view" && !call.args.empty()) {
      // A view of its first argument (transform/view_reshapes.h): the same
      // memory, so the argument lives as long as the view is used.
      for (size_t i = 1; i < call.args.size(); ++i) Visit(call.args[i], "");
      return Visit(call.args[0], "");
    }
    if (!dps) {
      // The callee may keep an argument or return it: never reuse those.
      for (const auto& a : call.args) Escape(Visit(a, ""));
      return {};
    }
    for (size_t i = 1; i < call.args.size(); ++i) Visit(call.args[i], "");
    TensorSet outs;
    bool seen = !seen_calls_.insert(&call).second;
    for (size_t k = 0; k < call.sinfo_args.size(); ++k) {
      PlannedTensor t;
      t.call = &call;
      t.output = static_cast<int>(k);
      t.name = call.sinfo_args.size() == 1 ? bound_name : "";
      t.def = t.last_use = pos_;
      t.guard = guard_;
      // A call node reached twice (a shared subtree) would need two places.
      t.escapes = seen || !SetBytes(call.sinfo_args[k], &t);
      outs.insert(plan_->tensors.size());
      plan_->tensors.push_back(std::move(t));
    }
    return outs;
  }

  // Size in bytes of a tensor of known shape and dtype; false otherwise.
  static bool SetBytes(const ir::StructInfo& s, PlannedTensor* t) {
    const auto* ti = ir::SInfoAs<ir::TensorSInfo>(s);
    if (!ti || !ti->has_shape || !ti->has_dtype) return false;
    ir::PrimExpr bytes = ir::IntImm(DType::Int64(), static_cast<int64_t>(ti->dtype.bytes()));
    for (const auto& d : ti->shape) {
      if (!d.defined() || d.dtype() != DType::Int64()) return false;
      bytes = ir::MakeBinary(ir::TirKind::kMul, bytes, d);
    }
    t->bytes = arith::Simplify(bytes);
    return true;
  }

  FunctionPlan* plan_;
  size_t pos_ = 0;
  // 0 or 1: whether the bindings being visited run (a product of enclosing
  // If shape conditions); undefined: always, or not known from shapes.
  ir::PrimExpr guard_;
  std::map<const ir::ExprNode*, TensorSet> aliases_;
  std::set<const ir::CallExpr*> seen_calls_;
};

}  // namespace

const PlannedTensor* FunctionPlan::Find(const ir::CallExpr* call, int output) const {
  for (const auto& t : tensors)
    if (t.call == call && t.output == output) return &t;
  return nullptr;
}

size_t FunctionPlan::num_planned() const {
  size_t n = 0;
  for (const auto& t : tensors) n += t.storage >= 0;
  return n;
}

const FunctionPlan* ModulePlan::Find(const std::string& function) const {
  for (const auto& f : functions)
    if (f.function == function) return &f;
  return nullptr;
}

Result<FunctionPlan> PlanFunction(const std::string& name, const ir::Function& f, const PlanOptions& options) {
  KILN_ASSIGN_OR_RETURN(auto bounds_by_name, UpperBoundsFromAttrs(name, f->attrs));
  for (const auto& kv : options.upper_bounds) {
    if (kv.second <= 0) {
      return InvalidArgument(StrFormat("%s: the upper bound of '%s' must be a positive integer, got %lld", name.c_str(),
                                       kv.first.c_str(), static_cast<long long>(kv.second)));
    }
    bounds_by_name[kv.first] = kv.second;
  }
  FunctionPlan plan;
  plan.function = name;
  LifetimeAnalysis(&plan).Run(f);

  // Shape variables are never negative; bounded ones are at most their bound.
  arith::VarBounds bounds;
  for (const auto& t : plan.tensors) {
    std::vector<const ir::VarNode*> vars;
    CollectVars(t.bytes, &vars);
    for (const auto* v : vars) {
      auto it = bounds_by_name.find(v->name);
      bounds[v] = it != bounds_by_name.end() ? arith::IntBounds::Range(0, it->second) : arith::IntBounds::AtLeast(0);
    }
  }

  // Static tensors: one arena, storage 0.
  std::vector<size_t> arena_members;
  std::vector<ArenaBuffer> arena_buffers;
  std::vector<size_t> symbolic;
  std::vector<int64_t> max_bytes(plan.tensors.size(), -1);  // -1: no constant maximum
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const PlannedTensor& t = plan.tensors[i];
    if (t.escapes) continue;
    arith::IntBounds b = arith::ConstIntBound(t.bytes, bounds);
    // Half of int64 keeps offsets and sums far from overflow; such a size is
    // not a useful static plan anyway.
    if (b.max != arith::kPosInf && b.max >= 0 && b.max < (int64_t{1} << 62)) max_bytes[i] = b.max;
  }
  // Sizes known only at call time: lay out what the arguments determine then.
  bool unbounded = false;
  for (size_t i = 0; i < plan.tensors.size(); ++i) unbounded = unbounded || (!plan.tensors[i].escapes && max_bytes[i] < 0);
  std::vector<size_t> call_time;
  std::set<const ir::VarNode*> entry = EntryVars(f);
  if (options.call_time_arena && unbounded) {
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
      if (!plan.tensors[i].escapes && ComputableAtEntry(plan.tensors[i].bytes, entry)) call_time.push_back(i);
    }
    // Constant sizes alone (the symbolic ones depend on values the body
    // computes) are better served by the static arena, made with the Context.
    bool any_symbolic = false;
    for (size_t i : call_time) any_symbolic = any_symbolic || !arith::AsConstInt(plan.tensors[i].bytes);
    if (!any_symbolic) call_time.clear();
  }
  std::vector<bool> in_call_time(plan.tensors.size(), false);
  for (size_t i : call_time) in_call_time[i] = true;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    PlannedTensor& t = plan.tensors[i];
    if (t.escapes || in_call_time[i]) continue;
    if (max_bytes[i] >= 0) {
      t.slot_bytes = static_cast<int64_t>(AlignUp(static_cast<uint64_t>(max_bytes[i])));
      arena_members.push_back(i);
      arena_buffers.push_back(ArenaBuffer{static_cast<uint64_t>(max_bytes[i]), t.def, t.last_use});
    } else {
      symbolic.push_back(i);
    }
  }
  if (!arena_members.empty()) {
    ArenaLayout layout = LayOutArena(arena_buffers);
    PlannedStorage s;
    s.is_static = true;
    s.static_bytes = layout.total_bytes;
    s.bytes = ir::IntImm(DType::Int64(), static_cast<int64_t>(layout.total_bytes));
    plan.storages.push_back(s);
    for (size_t k = 0; k < arena_members.size(); ++k) {
      PlannedTensor& t = plan.tensors[arena_members[k]];
      t.storage = 0;
      t.offset = layout.offsets[k];
    }
  }

  if (!call_time.empty()) {
    PlannedStorage s;
    s.call_time = true;
    s.members = call_time;
    ir::PrimExpr total = ir::IntImm(DType::Int64(), 0);
    const ir::PrimExpr align = ir::IntImm(DType::Int64(), static_cast<int64_t>(kStorageAlignment));
    for (size_t k = 0; k < call_time.size(); ++k) {
      PlannedTensor& t = plan.tensors[call_time[k]];
      t.storage = static_cast<int>(plan.storages.size());
      t.arena_index = static_cast<int>(k);
      t.offset = 0;
      t.slot_bytes = -1;
      // A tensor of an If branch whose shape condition the arguments
      // determine takes bytes only in calls that run that branch: the two
      // branches of an If then lay out as if the other did not exist.
      t.arena_bytes = t.bytes;
      if (t.guard.defined() && ComputableAtEntry(t.guard, entry))
        t.arena_bytes = ir::MakeBinary(ir::TirKind::kMul, t.bytes, t.guard);
      // Each offset is aligned: the sum of the rounded-up sizes bounds the layout.
      ir::PrimExpr rounded = ir::MakeBinary(
          ir::TirKind::kMul,
          ir::MakeBinary(ir::TirKind::kFloorDiv,
                         ir::MakeBinary(ir::TirKind::kAdd, t.bytes,
                                        ir::IntImm(DType::Int64(), static_cast<int64_t>(kStorageAlignment - 1))),
                         align),
          align);
      total = ir::MakeBinary(ir::TirKind::kAdd, total, rounded);
    }
    s.bytes = arith::Simplify(total);
    plan.storages.push_back(s);
  }

  // Symbolic tensors: reuse a free storage that is provably large enough.
  std::vector<std::vector<size_t>> members(plan.storages.size());
  for (size_t i : symbolic) {
    PlannedTensor& t = plan.tensors[i];
    int chosen = -1;
    for (size_t s = 0; s < plan.storages.size() && chosen < 0; ++s) {
      if (plan.storages[s].is_static || plan.storages[s].call_time) continue;
      bool free = true;
      for (size_t m : members[s]) free = free && plan.tensors[m].last_use < t.def;
      if (!free) continue;
      ir::PrimExpr fits = ir::MakeBinary(ir::TirKind::kLE, t.bytes, plan.storages[s].bytes);
      if (arith::CanProveEqual(t.bytes, plan.storages[s].bytes, bounds) || arith::CanProve(fits, bounds)) {
        chosen = static_cast<int>(s);
      }
    }
    if (chosen < 0) {
      PlannedStorage s;
      s.bytes = t.bytes;
      plan.storages.push_back(s);
      members.emplace_back();
      chosen = static_cast<int>(plan.storages.size() - 1);
    }
    t.storage = chosen;
    t.offset = 0;
    t.slot_bytes = -1;
    members[chosen].push_back(i);
  }

  ir::PrimExpr peak = ir::IntImm(DType::Int64(), 0);
  for (const auto& s : plan.storages) {
    plan.fully_static = plan.fully_static && s.is_static;
    peak = ir::MakeBinary(ir::TirKind::kAdd, peak, s.bytes);
  }
  plan.peak_bytes = arith::Simplify(peak);
  return plan;
}

Result<ModulePlan> PlanMemory(const ir::IRModule& mod, const PlanOptions& options) {
  ModulePlan plan;
  for (const auto& e : mod.entries) {
    if (!e.relax) continue;
    KILN_ASSIGN_OR_RETURN(FunctionPlan f, PlanFunction(e.name, e.relax, options));
    plan.functions.push_back(std::move(f));
  }
  return plan;
}

std::string FormatMemoryReport(const ModulePlan& plan) {
  std::ostringstream os;
  for (const auto& f : plan.functions) {
    size_t n = f.storages.size();
    os << "memory plan: " << f.function << ": " << f.num_planned() << " of " << f.tensors.size() << " tensor"
       << (f.tensors.size() == 1 ? "" : "s") << " in " << n << " storage" << (n == 1 ? "" : "s") << ", peak "
       << arith::ToDebugString(f.peak_bytes) << " bytes (" << (f.fully_static ? "static" : "symbolic");
    for (const auto& s : f.storages)
      if (s.call_time) os << "; " << s.members.size() << " laid out at call time";
    os << ")\n";
  }
  return os.str();
}

}  // namespace memory
}  // namespace kiln
