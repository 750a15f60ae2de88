#include "compiler/relax/vm_codegen.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

using compiler::CallableKind;

enum Opcode : int64_t { kCall = 1, kRet = 2, kGoto = 3, kIf = 4 };  // vm/opcodes.def

// match_shape / make_shape operand modes (vm/builtins.def).
enum MatchMode : int64_t { kAssertImm = 0, kStoreHeap = 1, kAssertLoad = 2, kNoOp = 3 };
enum MakeMode : int64_t { kImm = 0, kLoadHeap = 1 };
// The most dimensions vm.builtin.arena_tensor takes (vm/builtins.h).
constexpr size_t kArenaTensorMaxDims = 64;

// Counts, for each variable, its uses other than as the tuple of a
// projection `v[i]` (bindings, results, If conditions and branches).
void CountWholeUses(const ir::Expr& e, std::map<const ir::ExprNode*, int>* uses) {
  if (!e) return;
  switch (e->kind) {
    case ir::ExprKind::kVar: ++(*uses)[e.get()]; break;
    case ir::ExprKind::kTuple:
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) CountWholeUses(f, uses);
      break;
    case ir::ExprKind::kTupleGetItem: {
      const ir::Expr& t = static_cast<const ir::TupleGetItemExpr&>(*e).tuple;
      if (t->kind != ir::ExprKind::kVar) CountWholeUses(t, uses);
      break;
    }
    case ir::ExprKind::kCall: {
      const auto& c = static_cast<const ir::CallExpr&>(*e);
      CountWholeUses(c.op, uses);
      for (const auto& a : c.args) CountWholeUses(a, uses);
      break;
    }
    case ir::ExprKind::kSeqExpr: {
      const auto& s = static_cast<const ir::SeqExprNode&>(*e);
      for (const auto& b : s.blocks)
        for (const auto& bind : b.bindings) CountWholeUses(bind.value, uses);
      CountWholeUses(s.body, uses);
      break;
    }
    case ir::ExprKind::kIf: {
      const auto& i = static_cast<const ir::IfExpr&>(*e);
      CountWholeUses(i.cond, uses);
      CountWholeUses(i.then_branch, uses);
      CountWholeUses(i.else_branch, uses);
      break;
    }
    default: break;
  }
}

class FunctionCodegen {
 public:
  FunctionCodegen(const ir::IRModule& mod, compiler::VmfbProgram* program, const std::map<std::string, uint32_t>& fn_index,
                  const memory::FunctionPlan* plan)
      : mod_(mod), program_(program), fn_index_(fn_index), plan_(plan) {}

  Result<compiler::FunctionInfo> Run(const std::string& name, const ir::Function& f) {
    name_ = name;
    compiler::FunctionInfo info;
    info.name = name;
    num_regs_ = static_cast<int64_t>(f->params.size());
    for (size_t i = 0; i < f->params.size(); ++i) {
      const auto& p = f->params[i];
      values_[p.get()] = EncodeArg(ArgKind::kRegister, static_cast<int64_t>(i));
      info.params.push_back(MakeValueInfo(p->name, p->struct_info));
    }
    for (size_t i = 0; i < f->params.size(); ++i) {
      const auto& p = f->params[i];
      KILN_RETURN_IF_ERROR(EmitMatch(static_cast<int64_t>(i), p->struct_info, name_ + ": argument " + p->name));
    }
    // From here on, arithmetic on the arguments' variables goes to the
    // prologue (see Hoistable); the body is emitted on its own and joined
    // after it, which the relative jumps of If and Goto allow.
    for (const auto& kv : slots_) entry_vars_.insert(kv.first);
    std::vector<int64_t> prologue = std::move(code_);
    code_.clear();
    last_arith_end_ = -1;
    KILN_RETURN_IF_ERROR(PrepareCallTimeArena());
    CountWholeUses(f->body, &whole_uses_);
    KILN_ASSIGN_OR_RETURN(int64_t result, EmitSeq(f->body));
    int64_t reg = ToRegister(result);
    code_.push_back(kRet);
    code_.push_back(reg);
    std::vector<int64_t> body = std::move(code_);
    code_ = std::move(prologue);
    if (!hoisted_ops_.empty()) EmitCall(-1, Builtin("vm.builtin.shape_arith"), hoisted_ops_);
    if (hoisted_loads_.size() == 1) {
      EmitCall(hoisted_loads_.begin()->second, Builtin("vm.builtin.heap_load"), {Imm(hoisted_loads_.begin()->first)});
    } else if (!hoisted_loads_.empty()) {
      // One call for all: each builtin call costs more than a load.
      std::vector<int64_t> pairs;
      for (const auto& [slot, load_reg] : hoisted_loads_) pairs.insert(pairs.end(), {Imm(load_reg), Imm(slot)});
      EmitCall(-1, Builtin("vm.builtin.heap_loads"), pairs);
    }
    if (arena_storage_ >= 0) {
      // Every size is on the heap now: lay the arena out before any kernel.
      std::vector<int64_t> args = {Imm(arena_storage_), Imm(arena_first_slot_),
                                   Imm(static_cast<int64_t>(arena_sizes_.size()))};
      const memory::PlannedStorage& storage = plan_->storages[arena_storage_];
      for (size_t k = 0; k < arena_sizes_.size(); ++k) {
        const memory::PlannedTensor& t = plan_->tensors[storage.members[k]];
        args.insert(args.end(), {Imm(arena_sizes_[k].first), Imm(arena_sizes_[k].second),
                                 Imm(static_cast<int64_t>(t.def)), Imm(static_cast<int64_t>(t.last_use))});
      }
      EmitCall(arena_reg_, Builtin("vm.builtin.alloc_arena"), args);
      // And make the views the arguments determine, all in one call.
      if (!arena_views_.empty()) {
        std::vector<int64_t> views = {EncodeArg(ArgKind::kRegister, arena_reg_)};
        views.insert(views.end(), arena_views_.begin(), arena_views_.end());
        EmitCall(-1, Builtin("vm.builtin.arena_tensors"), views);
      }
    }
    for (const auto& [index, views] : static_views_) {
      std::vector<int64_t> args = {Imm(static_cast<int64_t>(index)),
                                   Imm(static_cast<int64_t>(plan_->storages[index].static_bytes))};
      args.insert(args.end(), views.begin(), views.end());
      EmitCall(-1, Builtin("vm.builtin.storage_tensors"), args);
    }
    code_.insert(code_.end(), body.begin(), body.end());
    info.results.push_back(MakeValueInfo("result", f->ret_sinfo));
    info.register_count = static_cast<uint32_t>(num_regs_);
    info.shape_heap_size = static_cast<uint32_t>(num_slots_);
    info.code = std::move(code_);
    return info;
  }

 private:
  int64_t NewReg() { return num_regs_++; }

  uint32_t Builtin(const char* name) { return InternCallable(program_, CallableKind::kBuiltin, name); }

  int64_t StringConstant(const std::string& s) {
    for (size_t i = 0; i < program_->constants.size(); ++i) {
      const auto& c = program_->constants[i];
      if (c.kind == compiler::ConstantKind::kString && c.string_value == s) return EncodeArg(ArgKind::kConstant, i);
    }
    compiler::ConstantValue c;
    c.kind = compiler::ConstantKind::kString;
    c.string_value = s;
    program_->constants.push_back(std::move(c));
    return EncodeArg(ArgKind::kConstant, static_cast<int64_t>(program_->constants.size() - 1));
  }

  int64_t ShapeConstant(const std::vector<int64_t>& dims) {
    for (size_t i = 0; i < program_->constants.size(); ++i) {
      const auto& c = program_->constants[i];
      if (c.kind == compiler::ConstantKind::kShape && c.shape == dims) return EncodeArg(ArgKind::kConstant, i);
    }
    compiler::ConstantValue c;
    c.kind = compiler::ConstantKind::kShape;
    c.shape = dims;
    program_->constants.push_back(std::move(c));
    return EncodeArg(ArgKind::kConstant, static_cast<int64_t>(program_->constants.size() - 1));
  }

  int64_t TensorConstant(const ir::ConstantExpr& c) {
    return EncodeArg(ArgKind::kConstant, InternTensorConstant(program_, c));
  }

  void EmitCall(int64_t dst, uint32_t callable, const std::vector<int64_t>& args) {
    code_.push_back(kCall);
    code_.push_back(dst);
    code_.push_back(callable);
    code_.push_back(static_cast<int64_t>(args.size()));
    code_.insert(code_.end(), args.begin(), args.end());
  }

  int64_t Imm(int64_t v) { return EncodeArg(ArgKind::kImmediate, v); }

  // Moves a value that is not in a register (a constant, an immediate) into one.
  int64_t ToRegister(int64_t word) {
    if ((word >> 56) == static_cast<int64_t>(ArgKind::kRegister)) return word & ((int64_t{1} << 56) - 1);
    int64_t reg = NewReg();
    EmitCall(reg, Builtin("vm.builtin.copy"), {word});
    return reg;
  }

  // check_tensor + match_shape for a value of known struct info in `reg`;
  // with `messages` (one per dimension, ir::Binding) match_shape_explained.
  Status EmitMatch(int64_t reg, const ir::StructInfo& sinfo, const std::string& ctx,
                   const std::vector<std::string>& messages = {}) {
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(sinfo);
    const auto* s = ir::SInfoAs<ir::ShapeSInfo>(sinfo);
    int64_t rword = EncodeArg(ArgKind::kRegister, reg);
    int64_t cword = StringConstant(ctx);
    if (t) {
      DType dt = t->dtype;
      EmitCall(-1, Builtin("vm.builtin.check_tensor"),
               {rword, Imm(t->ndim), Imm(t->has_dtype ? dt.code : -1), Imm(dt.bits), Imm(dt.lanes), cword});
    }
    const std::vector<ir::PrimExpr>* dims = nullptr;
    if (t && t->has_shape) dims = &t->shape;
    if (s && s->has_values) dims = &s->values;
    if (!dims) return Status::Ok();
    std::vector<int64_t> args = {rword, cword, Imm(static_cast<int64_t>(dims->size()))};
    for (const auto& d : *dims) {
      if (auto c = ConstDim(d)) {
        args.push_back(Imm(kAssertImm));
        args.push_back(Imm(*c));
      } else if (const auto* v = d.as<ir::VarNode>()) {
        auto it = slots_.find(v);
        if (it == slots_.end()) {
          int64_t slot = num_slots_++;
          slots_[v] = slot;
          args.push_back(Imm(kStoreHeap));
          args.push_back(Imm(slot));
        } else {
          args.push_back(Imm(kAssertLoad));
          args.push_back(Imm(it->second));
        }
      } else if (IsComputable(d)) {
        // A composite dimension (n * 2) whose variables are already bound:
        // compute it into a slot (shape_arith, emitted before this call) and
        // check against it, or a wrong shape would pass unnoticed.
        KILN_ASSIGN_OR_RETURN(auto operand, DimOperand(d));
        args.push_back(Imm(kAssertLoad));
        args.push_back(Imm(operand.second));
      } else {
        // Its variables are bound only by later arguments: not checked yet.
        args.push_back(Imm(kNoOp));
        args.push_back(Imm(0));
      }
    }
    if (messages.empty()) {
      EmitCall(-1, Builtin("vm.builtin.match_shape"), args);
      return Status::Ok();
    }
    if (messages.size() != dims->size()) {
      return Internal(ctx + ": " + std::to_string(messages.size()) + " messages for " + std::to_string(dims->size()) +
                      " dimensions");
    }
    // The function's name leads each message, as it leads the generic text.
    for (const auto& m : messages) args.push_back(StringConstant(m.empty() ? m : name_ + ": " + m));
    EmitCall(-1, Builtin("vm.builtin.match_shape_explained"), args);
    return Status::Ok();
  }

  // Whether DimOperand can compute `d` now: constants, bound variables and
  // the arithmetic shape_arith implements.
  bool IsComputable(const ir::PrimExpr& d) const {
    if (ConstDim(d)) return true;
    if (const auto* v = d.as<ir::VarNode>()) return slots_.count(v) > 0;
    switch (d->kind()) {
      case ir::TirKind::kAdd: case ir::TirKind::kSub: case ir::TirKind::kMul: case ir::TirKind::kFloorDiv:
      case ir::TirKind::kFloorMod: case ir::TirKind::kMin: case ir::TirKind::kMax:
      case ir::TirKind::kEQ: case ir::TirKind::kNE: case ir::TirKind::kLT: case ir::TirKind::kLE:
      case ir::TirKind::kGT: case ir::TirKind::kGE: case ir::TirKind::kAnd: case ir::TirKind::kOr: {
        const auto* b = static_cast<const ir::BinaryNode*>(d.get());
        return IsComputable(b->a) && IsComputable(b->b);
      }
      default: return false;
    }
  }

  // (mode, value) operand pair for a dimension in make_shape / shape_arith.
  Result<std::pair<int64_t, int64_t>> DimOperand(const ir::PrimExpr& d) {
    if (auto c = ConstDim(d)) return std::make_pair(int64_t{kImm}, *c);
    if (const auto* v = d.as<ir::VarNode>()) {
      auto it = slots_.find(v);
      if (it == slots_.end()) {
        return InvalidArgument(name_ + ": symbolic variable '" + v->name +
                               "' is used in a result shape but no argument defines it");
      }
      return std::make_pair(int64_t{kLoadHeap}, it->second);
    }
    int64_t op = -1;
    switch (d->kind()) {
      case ir::TirKind::kAdd: op = 0; break;
      case ir::TirKind::kSub: op = 1; break;
      case ir::TirKind::kMul: op = 2; break;
      case ir::TirKind::kFloorDiv: op = 3; break;
      case ir::TirKind::kFloorMod: op = 4; break;
      case ir::TirKind::kMin: op = 5; break;
      case ir::TirKind::kMax: op = 6; break;
      case ir::TirKind::kEQ: op = 7; break;
      case ir::TirKind::kNE: op = 8; break;
      case ir::TirKind::kLT: op = 9; break;
      case ir::TirKind::kLE: op = 10; break;
      case ir::TirKind::kGT: op = 11; break;
      case ir::TirKind::kGE: op = 12; break;
      case ir::TirKind::kAnd: op = 13; break;
      case ir::TirKind::kOr: op = 14; break;
      default:
        return Unimplemented(name_ + ": shape expression " + DimString(d) + " cannot be computed by the VM");
    }
    // An expression computed before on this path reuses its slot: a model
    // with symbolic image sizes spells ((h + 1) // 2 + 1) // 2 ... in most
    // shapes, which cost one builtin call per operation per use (YOLOv8n:
    // over 7000 shape_arith calls a call).
    std::string key = DimKey(d);
    if (auto it = computed_.find(key); it != computed_.end()) return std::make_pair(int64_t{kLoadHeap}, it->second);
    if (auto it = hoisted_.find(key); it != hoisted_.end()) return std::make_pair(int64_t{kLoadHeap}, it->second);
    const auto* b = static_cast<const ir::BinaryNode*>(d.get());
    KILN_ASSIGN_OR_RETURN(auto a, DimOperand(b->a));
    KILN_ASSIGN_OR_RETURN(auto c, DimOperand(b->b));
    int64_t slot = num_slots_++;
    std::vector<int64_t> group = {Imm(slot), Imm(op), Imm(a.first), Imm(a.second), Imm(c.first), Imm(c.second)};
    if (Hoistable(d)) {
      // Computed once in the prologue, which every path runs: one
      // shape_arith call per function instead of one per operation.
      hoisted_ops_.insert(hoisted_ops_.end(), group.begin(), group.end());
      hoisted_[key] = slot;
    } else if (last_arith_end_ == static_cast<int64_t>(code_.size())) {
      // Straight after another shape_arith: one more group of that call.
      code_.insert(code_.end(), group.begin(), group.end());
      code_[last_arith_pc_ + 3] += 1 * 6;
      last_arith_end_ = static_cast<int64_t>(code_.size());
      computed_[key] = slot;
    } else {
      last_arith_pc_ = static_cast<int64_t>(code_.size());
      EmitCall(-1, Builtin("vm.builtin.shape_arith"), group);
      last_arith_end_ = static_cast<int64_t>(code_.size());
      computed_[key] = slot;
    }
    return std::make_pair(int64_t{kLoadHeap}, slot);
  }

  // Whether `d` may be computed in the prologue: every variable is bound by
  // the arguments (the prologue runs before anything else), and nothing can
  // fail (a division only by a nonzero constant), so computing it on paths
  // that do not use it changes no result and raises no error.
  bool Hoistable(const ir::PrimExpr& d) const {
    if (ConstDim(d)) return true;
    if (const auto* v = d.as<ir::VarNode>()) return entry_vars_.count(v) > 0;
    if (!ir::IsBinary(d->kind())) return false;
    const auto* b = static_cast<const ir::BinaryNode*>(d.get());
    if (d->kind() == ir::TirKind::kFloorDiv || d->kind() == ir::TirKind::kFloorMod) {
      auto c = ConstDim(b->b);
      if (!c || *c == 0) return false;
    }
    return Hoistable(b->a) && Hoistable(b->b);
  }

  // A structural key of a shape expression (variables by identity).
  static std::string DimKey(const ir::PrimExpr& d) {
    if (auto c = ConstDim(d)) return std::to_string(*c);
    if (const auto* v = d.as<ir::VarNode>()) return "v" + std::to_string(reinterpret_cast<uintptr_t>(v));
    if (!ir::IsBinary(d->kind())) return "?" + std::to_string(reinterpret_cast<uintptr_t>(d.get()));
    const auto* b = static_cast<const ir::BinaryNode*>(d.get());
    return "(" + std::to_string(static_cast<int>(d->kind())) + " " + DimKey(b->a) + " " + DimKey(b->b) + ")";
  }

  // An int64 value of a symbolic expression: an immediate when constant,
  // else a register loaded from the heap slot DimOperand computed.
  Result<int64_t> EmitPrim(const ir::PrimExpr& d) {
    KILN_ASSIGN_OR_RETURN(auto operand, DimOperand(d));
    if (operand.first == kImm) return Imm(operand.second);
    // A slot is written once on a path, so one load of it serves every use
    // after it: in the prologue for the arguments' values, else per path.
    if (auto it = hoisted_loads_.find(operand.second); it != hoisted_loads_.end())
      return EncodeArg(ArgKind::kRegister, it->second);
    if (auto it = loads_.find(operand.second); it != loads_.end()) return EncodeArg(ArgKind::kRegister, it->second);
    int64_t reg = NewReg();
    if (Hoistable(d) && !entry_vars_.empty()) {
      hoisted_loads_[operand.second] = reg;
    } else {
      EmitCall(reg, Builtin("vm.builtin.heap_load"), {Imm(operand.second)});
      loads_[operand.second] = reg;
    }
    return EncodeArg(ArgKind::kRegister, reg);
  }

  // A shape operand: a shape constant when every dimension is constant (a
  // pinned program's shapes: no make_shape call, no object made per call),
  // else a register make_shape fills.
  Result<int64_t> EmitMakeShape(const std::vector<ir::PrimExpr>& dims) {
    std::vector<int64_t> values;
    for (const auto& d : dims) {
      auto c = ConstDim(d);
      if (!c || *c < 0) break;
      values.push_back(*c);
    }
    if (values.size() == dims.size()) return ShapeConstant(values);
    std::vector<int64_t> args = {Imm(static_cast<int64_t>(dims.size()))};
    for (const auto& d : dims) {
      KILN_ASSIGN_OR_RETURN(auto operand, DimOperand(d));
      args.push_back(Imm(operand.first));
      args.push_back(Imm(operand.second));
    }
    int64_t reg = NewReg();
    EmitCall(reg, Builtin("vm.builtin.make_shape"), args);
    return EncodeArg(ArgKind::kRegister, reg);
  }

  Result<int64_t> EmitAlloc(const ir::StructInfo& sinfo, const ir::SourceSpan& span) {
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(sinfo);
    if (!t || !t->has_shape || !t->has_dtype) {
      return Unimplemented(Where(span) + "outputs of kernel calls need a tensor type with known shape and dtype, got " +
                           SInfoString(sinfo));
    }
    KILN_ASSIGN_OR_RETURN(int64_t shape, EmitMakeShape(t->shape));
    int64_t reg = NewReg();
    EmitCall(reg, Builtin("vm.builtin.alloc_tensor"),
             {shape, Imm(t->dtype.code), Imm(t->dtype.bits), Imm(t->dtype.lanes)});
    return reg;
  }

  // The plan's call-time arena, if any (memory/plan_memory.h): the sizes of
  // its tensors, which the arguments determine, are computed in the
  // prologue; heap slots for their offsets and a register for the storage
  // are reserved, and Run emits alloc_arena once the sizes are there.
  Status PrepareCallTimeArena() {
    if (plan_ == nullptr) return Status::Ok();
    for (size_t s = 0; s < plan_->storages.size(); ++s) {
      const memory::PlannedStorage& storage = plan_->storages[s];
      if (!storage.call_time) continue;
      if (arena_storage_ >= 0) return Internal(name_ + ": the memory plan has two call-time arenas");
      for (size_t m : storage.members) {
        const ir::PrimExpr& bytes = plan_->tensors[m].arena_bytes;  // 0 in calls skipping its If branch
        if (!IsComputable(bytes) || !Hoistable(bytes)) {
          return Internal(name_ + ": the memory plan lays out a tensor of " + DimString(bytes) +
                          " bytes at call time, but the arguments do not determine its size");
        }
        KILN_ASSIGN_OR_RETURN(auto operand, DimOperand(bytes));
        arena_sizes_.push_back(operand);
      }
      arena_storage_ = static_cast<int64_t>(s);
      arena_first_slot_ = num_slots_;
      num_slots_ += static_cast<int64_t>(storage.members.size());
      arena_reg_ = NewReg();
    }
    return Status::Ok();
  }

  // A planned output: a view at its offset of a storage the Context keeps.
  Result<int64_t> EmitPlannedAlloc(const ir::StructInfo& sinfo, const memory::PlannedTensor& planned) {
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(sinfo);
    KILN_CHECK(t && t->has_shape && t->has_dtype, "the planner placed a tensor of unknown shape");
    const memory::PlannedStorage& storage = plan_->storages[planned.storage];
    if (storage.call_time && t->shape.size() <= kArenaTensorMaxDims) {
      // arena_tensor takes the shape's (mode, value) pairs itself: one
      // builtin call per view, no shape object (vm/builtins.def).
      KILN_CHECK(planned.storage == arena_storage_ && planned.arena_index >= 0);
      const auto& size = arena_sizes_[planned.arena_index];
      // Outside any If branch (a shape-conditioned one's place has no bytes
      // in calls that skip it; another's shape may be absurd when it does not
      // run) and of a shape the arguments determine: made in the prologue
      // with the others (arena_tensors), not between two kernels.
      bool early = if_depth_ == 0 && !planned.guard.defined();
      for (const auto& d : t->shape) early = early && Hoistable(d);
      // arena_tensor's operands after the storage: slot, size, rank, dtype,
      // then (mode, value) per dimension; a group of arena_tensors has the
      // same after its destination register (taken first there, as the
      // listing tests expect; a lone view's after its operands).
      int64_t reg = early ? NewReg() : -1;
      std::vector<int64_t> view = {Imm(arena_first_slot_ + planned.arena_index),
                                   Imm(size.first),
                                   Imm(size.second),
                                   Imm(static_cast<int64_t>(t->shape.size())),
                                   Imm(t->dtype.code),
                                   Imm(t->dtype.bits),
                                   Imm(t->dtype.lanes)};
      for (const auto& d : t->shape) {
        KILN_ASSIGN_OR_RETURN(auto operand, DimOperand(d));
        view.push_back(Imm(operand.first));
        view.push_back(Imm(operand.second));
      }
      if (early) {
        arena_views_.push_back(Imm(reg));
        arena_views_.insert(arena_views_.end(), view.begin(), view.end());
        return reg;
      }
      // In an If arm (an inlined branch), such a view joins the arm's own
      // arena_tensors call where the arm starts: made only when it runs.
      if (arm_views_ != nullptr && if_depth_ == arm_depth_ && !planned.guard.defined() &&
          std::all_of(t->shape.begin(), t->shape.end(), [&](const ir::PrimExpr& d) { return Hoistable(d); })) {
        reg = NewReg();
        arm_views_->push_back(Imm(reg));
        arm_views_->insert(arm_views_->end(), view.begin(), view.end());
        return reg;
      }
      reg = NewReg();
      view.insert(view.begin(), EncodeArg(ArgKind::kRegister, arena_reg_));
      EmitCall(reg, Builtin("vm.builtin.arena_tensor"), view);
      return reg;
    }
    if (storage.is_static && t->shape.size() <= kArenaTensorMaxDims) {
      // A view of a static plan's storage whose shape the arguments
      // determine, everywhere (constant dimensions: no view can fail, so one
      // made for an If branch that does not run changes nothing) or outside
      // If branches: made in the prologue with the others, one
      // storage_tensors call per storage, not three calls (make_shape,
      // alloc_storage, tensor_view) between two kernels.
      bool early = true;
      bool constant = true;
      for (const auto& d : t->shape) {
        early = early && Hoistable(d);
        constant = constant && ConstDim(d).has_value();
      }
      if (early && (constant || if_depth_ == 0)) {
        int64_t reg = NewReg();
        std::vector<int64_t>& views = static_views_[planned.storage];
        views.insert(views.end(), {Imm(reg), Imm(static_cast<int64_t>(planned.offset)), Imm(planned.slot_bytes),
                                   Imm(static_cast<int64_t>(t->shape.size())), Imm(t->dtype.code),
                                   Imm(t->dtype.bits), Imm(t->dtype.lanes)});
        for (const auto& d : t->shape) {
          KILN_ASSIGN_OR_RETURN(auto operand, DimOperand(d));
          views.insert(views.end(), {Imm(operand.first), Imm(operand.second)});
        }
        return reg;
      }
    }
    KILN_ASSIGN_OR_RETURN(int64_t shape, EmitMakeShape(t->shape));
    if (storage.call_time) {  // a rank arena_tensor does not take: a shape register
      KILN_CHECK(planned.storage == arena_storage_ && planned.arena_index >= 0);
      const auto& size = arena_sizes_[planned.arena_index];
      int64_t reg = NewReg();
      EmitCall(reg, Builtin("vm.builtin.arena_view"),
               {EncodeArg(ArgKind::kRegister, arena_reg_), Imm(arena_first_slot_ + planned.arena_index),
                Imm(size.first), Imm(size.second), shape, Imm(t->dtype.code),
                Imm(t->dtype.bits), Imm(t->dtype.lanes)});
      return reg;
    }
    std::pair<int64_t, int64_t> size;
    if (storage.is_static) {
      size = {kImm, static_cast<int64_t>(storage.static_bytes)};
    } else {
      // This tensor's own size: the storage's size expression may use
      // variables bound only on another path (an if/else branch). The plan
      // proved it fits; alloc_storage grows the storage if it does not yet.
      ir::PrimExpr bytes = ir::IntImm(DType::Int64(), static_cast<int64_t>(t->dtype.bytes()));
      for (const auto& d : t->shape) bytes = ir::MakeBinary(ir::TirKind::kMul, bytes, d);
      KILN_ASSIGN_OR_RETURN(size, DimOperand(bytes));
    }
    int64_t block = NewReg();
    EmitCall(block, Builtin("vm.builtin.alloc_storage"), {Imm(planned.storage), Imm(size.first), Imm(size.second)});
    int64_t reg = NewReg();
    EmitCall(reg, Builtin("vm.builtin.tensor_view"),
             {EncodeArg(ArgKind::kRegister, block), Imm(static_cast<int64_t>(planned.offset)), Imm(planned.slot_bytes),
              shape, Imm(t->dtype.code), Imm(t->dtype.bits), Imm(t->dtype.lanes)});
    return reg;
  }

  Result<int64_t> EmitSeq(const ir::Expr& e) {
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(e);
    if (!seq) return EmitExpr(e);
    for (const auto& block : seq->blocks) {
      for (const auto& b : block.bindings) {
        if (!b.match_cast && whole_uses_.count(b.var.get()) == 0) {
          // Only projected (a kernel's outputs, `lv[0]`, `lv[1]`): the
          // projections read the fields' registers, and no tuple is made,
          // kept, filled and taken apart again on every call.
          KILN_ASSIGN_OR_RETURN(bool projected, EmitFields(b.value, &fields_[b.var.get()]));
          if (projected) continue;
          fields_.erase(b.var.get());
        }
        KILN_ASSIGN_OR_RETURN(int64_t v, EmitExpr(b.value));
        if (b.match_cast) {
          int64_t reg = ToRegister(v);
          KILN_RETURN_IF_ERROR(EmitMatch(reg, b.match_cast, name_ + ": match_cast of " + b.var->name, b.messages));
          v = EncodeArg(ArgKind::kRegister, reg);
        }
        values_[b.var.get()] = v;
      }
    }
    return EmitExpr(seq->body);
  }

  // Emits a tuple-valued `e` (a call with several outputs, a tuple
  // expression) without making the tuple, its fields' operands into
  // `fields`; false (nothing emitted) for any other expression.
  Result<bool> EmitFields(const ir::Expr& e, std::vector<int64_t>* fields) {
    if (e->kind == ir::ExprKind::kTuple) {
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) {
        KILN_ASSIGN_OR_RETURN(int64_t w, EmitExpr(f));
        fields->push_back(w);
      }
      return true;
    }
    const auto* call = ir::ExprAs<ir::CallExpr>(e);
    const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
    if (!op || call->sinfo_args.size() < 2) return false;
    if (op->name != "relax.call_tir" && op->name != "relax.call_dps_packed") return false;
    KILN_RETURN_IF_ERROR(EmitDpsCall(*call, op->name == "relax.call_tir", fields).status());
    return true;
  }

  // `fields`: where a call with several outputs puts their registers
  // instead of making a tuple of them (EmitFields).
  Result<int64_t> EmitDpsCall(const ir::CallExpr& call, bool is_call_tir, std::vector<int64_t>* fields_out = nullptr) {
    const ir::Expr& callee = call.args[0];
    const auto* args = ir::ExprAs<ir::TupleExpr>(call.args[1]);
    // The symbolic scalars a kernel takes after its outputs (tir_vars):
    // constants as immediates, anything else computed into the shape heap
    // and loaded into a register.
    std::vector<int64_t> scalars;
    if (call.args.size() > 2) {
      const auto* tir_vars = ir::ExprAs<ir::ShapeExpr>(call.args[2]);
      if (!tir_vars) return InvalidArgument(Where(call.span) + "the tir_vars of a call must be R.shape([...])");
      for (const auto& d : tir_vars->values) {
        KILN_ASSIGN_OR_RETURN(int64_t w, EmitPrim(d));
        scalars.push_back(w);
      }
    }
    std::vector<int64_t> words;
    for (const auto& a : args->fields) {
      KILN_ASSIGN_OR_RETURN(int64_t w, EmitExpr(a));
      words.push_back(w);
    }
    std::vector<int64_t> outs;
    for (size_t k = 0; k < call.sinfo_args.size(); ++k) {
      const ir::StructInfo& s = call.sinfo_args[k];
      const memory::PlannedTensor* planned = plan_ ? plan_->Find(&call, static_cast<int>(k)) : nullptr;
      int64_t reg;
      if (planned && planned->storage >= 0) {
        KILN_ASSIGN_OR_RETURN(reg, EmitPlannedAlloc(s, *planned));
      } else {
        KILN_ASSIGN_OR_RETURN(reg, EmitAlloc(s, call.span));
      }
      outs.push_back(reg);
      words.push_back(EncodeArg(ArgKind::kRegister, reg));
    }
    words.insert(words.end(), scalars.begin(), scalars.end());
    uint32_t target;
    std::string name;
    if (const auto* gv = ir::ExprAs<ir::GlobalVarExpr>(callee)) {
      name = gv->name;
    } else if (const auto* ext = ir::ExprAs<ir::ExternFuncExpr>(callee)) {
      name = ext->global_symbol;
    } else {
      return InvalidArgument(Where(call.span) + "the callee of a destination-passing call must be a function name");
    }
    // A name of a PrimFunc of this module is a kernel (R.call_dps_packed may
    // name one, as in the MLC course); any other name is a packed function.
    if (ir::PrimFunc f = mod_.FindPrim(name)) {
      target = InternCallable(program_, CallableKind::kKernel, name, static_cast<int32_t>(f->params.size()));
      if (f->params.size() != words.size()) {
        return InvalidArgument(Where(call.span) + "'" + name + "' has " + std::to_string(f->params.size()) +
                               " parameters but the call passes " + std::to_string(words.size()) + " arguments");
      }
    } else if (is_call_tir) {
      return NotFound(Where(call.span) + "R.call_tir: no PrimFunc named '" + name + "'");
    } else {
      target = InternCallable(program_, CallableKind::kPacked, name);
    }
    EmitCall(-1, target, words);
    if (outs.size() == 1) return EncodeArg(ArgKind::kRegister, outs[0]);
    if (fields_out != nullptr) {
      for (int64_t r : outs) fields_out->push_back(EncodeArg(ArgKind::kRegister, r));
      return int64_t{-1};
    }
    std::vector<int64_t> fields;
    for (int64_t r : outs) fields.push_back(EncodeArg(ArgKind::kRegister, r));
    int64_t reg = NewReg();
    EmitCall(reg, Builtin("vm.builtin.make_tuple"), fields);
    return EncodeArg(ArgKind::kRegister, reg);
  }

  Result<int64_t> EmitExpr(const ir::Expr& e) {
    switch (e->kind) {
      case ir::ExprKind::kVar: {
        auto it = values_.find(e.get());
        if (it == values_.end()) {
          return Internal(Where(e->span) + "variable '" + static_cast<const ir::VarExpr&>(*e).name + "' has no value");
        }
        return it->second;
      }
      case ir::ExprKind::kConstant:
        return TensorConstant(static_cast<const ir::ConstantExpr&>(*e));
      case ir::ExprKind::kStringImm:
        return StringConstant(static_cast<const ir::StringImmExpr&>(*e).value);
      case ir::ExprKind::kPrimValue: {
        const auto& p = static_cast<const ir::PrimValueExpr&>(*e);
        return EmitPrim(p.value);
      }
      case ir::ExprKind::kShapeExpr: {
        return EmitMakeShape(static_cast<const ir::ShapeExpr&>(*e).values);
      }
      case ir::ExprKind::kTuple: {
        std::vector<int64_t> fields;
        for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) {
          KILN_ASSIGN_OR_RETURN(int64_t w, EmitExpr(f));
          fields.push_back(w);
        }
        int64_t reg = NewReg();
        EmitCall(reg, Builtin("vm.builtin.make_tuple"), fields);
        return EncodeArg(ArgKind::kRegister, reg);
      }
      case ir::ExprKind::kTupleGetItem: {
        const auto& g = static_cast<const ir::TupleGetItemExpr&>(*e);
        auto known = fields_.find(g.tuple.get());
        if (known != fields_.end()) {
          // Struct info inference refused an index out of range.
          KILN_CHECK(g.index >= 0 && static_cast<size_t>(g.index) < known->second.size());
          return known->second[g.index];
        }
        KILN_ASSIGN_OR_RETURN(int64_t t, EmitExpr(g.tuple));
        int64_t reg = NewReg();
        EmitCall(reg, Builtin("vm.builtin.tuple_getitem"), {t, Imm(g.index)});
        return EncodeArg(ArgKind::kRegister, reg);
      }
      case ir::ExprKind::kCall:
        return EmitCallExpr(static_cast<const ir::CallExpr&>(*e));
      case ir::ExprKind::kGlobalVar: {
        // A function of the module as a value (vm.builtin.loop's body).
        const auto& gv = static_cast<const ir::GlobalVarExpr&>(*e);
        auto it = fn_index_.find(gv.name);
        ir::Function f = mod_.FindRelax(gv.name);
        if (it == fn_index_.end() || !f) return NotFound(Where(e->span) + "no Relax function named '" + gv.name + "'");
        return EncodeArg(ArgKind::kCallable, InternCallable(program_, CallableKind::kFunction, gv.name,
                                                            static_cast<int32_t>(f->params.size()), it->second));
      }
      case ir::ExprKind::kIf:
        return EmitIf(static_cast<const ir::IfExpr&>(*e));
      case ir::ExprKind::kSeqExpr:
        return EmitSeq(e);
      default:
        return Unimplemented(Where(e->span) + "this kind of expression cannot be compiled to VM code yet");
    }
  }

  Result<int64_t> EmitCallExpr(const ir::CallExpr& call) {
    if (const auto* op = ir::ExprAs<ir::OpExpr>(call.op)) {
      if (op->name == "relax.call_tir") return EmitDpsCall(call, true);
      if (op->name == "relax.call_dps_packed") return EmitDpsCall(call, false);
      if (op->name == "relax.tensor_to_shape" || op->name == "relax.shape_to_tensor") return EmitShapeValue(call, op->name);
      return Internal(Where(call.span) + "operator " + op->name + " was not legalized before VM code generation");
    }
    std::vector<int64_t> words;
    for (const auto& a : call.args) {
      KILN_ASSIGN_OR_RETURN(int64_t w, EmitExpr(a));
      words.push_back(w);
    }
    uint32_t target;
    if (const auto* ext = ir::ExprAs<ir::ExternFuncExpr>(call.op)) {
      // "vm.builtin.*" names the VM's own builtins (vm.builtin.loop).
      bool builtin = ext->global_symbol.rfind("vm.builtin.", 0) == 0;
      target = InternCallable(program_, builtin ? CallableKind::kBuiltin : CallableKind::kPacked, ext->global_symbol);
    } else if (const auto* gv = ir::ExprAs<ir::GlobalVarExpr>(call.op)) {
      auto it = fn_index_.find(gv->name);
      if (it == fn_index_.end()) return NotFound(Where(call.span) + "no Relax function named '" + gv->name + "'");
      target = InternCallable(program_, CallableKind::kFunction, gv->name, static_cast<int32_t>(call.args.size()), it->second);
    } else {
      return Unimplemented(Where(call.span) + "calls of computed function values are not supported yet");
    }
    int64_t reg = NewReg();
    EmitCall(reg, target, words);
    return EncodeArg(ArgKind::kRegister, reg);
  }

  // R.tensor_to_shape / R.shape_to_tensor run as VM builtins (op_shape_value.cc):
  // the tensor is read, or the shape written, on the host.
  Result<int64_t> EmitShapeValue(const ir::CallExpr& call, const std::string& op) {
    KILN_ASSIGN_OR_RETURN(int64_t arg, EmitExpr(call.args[0]));
    if (op == "relax.shape_to_tensor") {
      if (auto folded = ShapeTensorConstant(arg)) return *folded;
    }
    int64_t reg = NewReg();
    if (op == "relax.tensor_to_shape") {
      std::string what = name_ + ": the shape operand read from a tensor";
      if (const auto* v = ir::ExprAs<ir::VarExpr>(call.args[0])) what = name_ + ": the shape operand " + v->name;
      EmitCall(reg, Builtin("vm.builtin.tensor_to_shape"), {arg, StringConstant(what)});
    } else {
      EmitCall(reg, Builtin("vm.builtin.shape_to_tensor"), {arg});
    }
    return EncodeArg(ArgKind::kRegister, reg);
  }

  // shape_to_tensor of a shape constant is an int64 tensor constant: the
  // builtin allocated and filled a new tensor on every call (romanizer_decoder's
  // Gather bounds check: 0.27 us a call traced). Empty when `shape` is not a
  // shape constant.
  std::optional<int64_t> ShapeTensorConstant(int64_t shape) {
    if (static_cast<ArgKind>(static_cast<uint64_t>(shape) >> 56) != ArgKind::kConstant) return std::nullopt;
    const compiler::ConstantValue& c = program_->constants[static_cast<size_t>(shape & ((int64_t{1} << 56) - 1))];
    if (c.kind != compiler::ConstantKind::kShape) return std::nullopt;
    const std::vector<int64_t> dims = c.shape;
    for (size_t i = 0; i < program_->constants.size(); ++i) {
      const compiler::ConstantValue& k = program_->constants[i];
      if (k.kind == compiler::ConstantKind::kTensor && k.tensor.dtype() == DType::Int64() && k.tensor.ndim() == 1 &&
          k.tensor.shape()[0] == static_cast<int64_t>(dims.size()) &&
          std::equal(dims.begin(), dims.end(), k.tensor.data<int64_t>())) {
        return EncodeArg(ArgKind::kConstant, static_cast<int64_t>(i));
      }
    }
    const int64_t n = static_cast<int64_t>(dims.size());
    Result<Tensor> t = Tensor::Empty(Span<const int64_t>(&n, 1), DType::Int64());
    if (!t.ok()) return std::nullopt;  // the builtin then makes it at run time
    std::copy(dims.begin(), dims.end(), t.value().data<int64_t>());
    compiler::ConstantValue k;
    k.kind = compiler::ConstantKind::kTensor;
    k.tensor = t.value();
    program_->constants.push_back(std::move(k));
    return EncodeArg(ArgKind::kConstant, static_cast<int64_t>(program_->constants.size() - 1));
  }

  // An If arm: its call-time arena views of shapes the arguments determine
  // (EmitPlannedAlloc) made in one arena_tensors call at its start, as the
  // prologue's are, rather than one arena_tensor call before each kernel.
  Result<int64_t> EmitArm(const ir::Expr& arm) {
    std::vector<int64_t> views;
    std::vector<int64_t>* outer = arm_views_;
    const int outer_depth = arm_depth_;
    arm_views_ = &views;
    arm_depth_ = if_depth_;
    const size_t start = code_.size();
    Result<int64_t> r = EmitSeq(arm);
    arm_views_ = outer;
    arm_depth_ = outer_depth;
    if (!r.ok() || views.empty()) return r;
    std::vector<int64_t> body(code_.begin() + static_cast<std::ptrdiff_t>(start), code_.end());
    code_.resize(start);
    views.insert(views.begin(), EncodeArg(ArgKind::kRegister, arena_reg_));
    EmitCall(-1, Builtin("vm.builtin.arena_tensors"), views);
    code_.insert(code_.end(), body.begin(), body.end());
    last_arith_pc_ = last_arith_end_ = -1;  // positions in the moved body
    return r;
  }

  Result<int64_t> EmitIf(const ir::IfExpr& e) {
    KILN_ASSIGN_OR_RETURN(int64_t cond, EmitExpr(e.cond));
    int64_t cond_reg;
    if (ir::ExprAs<ir::PrimValueExpr>(e.cond)) {
      cond_reg = ToRegister(cond);  // already an int (shape-condition)
    } else {
      cond_reg = NewReg();
      EmitCall(cond_reg, Builtin("vm.builtin.to_bool"), {cond});
    }
    int64_t result = NewReg();
    size_t if_pc = code_.size();
    code_.push_back(kIf);
    code_.push_back(cond_reg);
    code_.push_back(0);  // patched: offset to the else branch
    // Shape values computed in one branch are not there in the other or
    // after the If: each starts from what was computed before it.
    const std::map<std::string, int64_t> before = computed_;
    const std::map<int64_t, int64_t> loads_before = loads_;
    ++if_depth_;
    KILN_ASSIGN_OR_RETURN(int64_t t, EmitArm(e.then_branch));
    computed_ = before;
    loads_ = loads_before;
    EmitCall(result, Builtin("vm.builtin.copy"), {t});
    size_t goto_pc = code_.size();
    code_.push_back(kGoto);
    code_.push_back(0);  // patched: offset past the else branch
    code_[if_pc + 2] = static_cast<int64_t>(code_.size() - if_pc);
    KILN_ASSIGN_OR_RETURN(int64_t f, EmitArm(e.else_branch));
    --if_depth_;
    computed_ = before;
    loads_ = loads_before;
    EmitCall(result, Builtin("vm.builtin.copy"), {f});
    code_[goto_pc + 1] = static_cast<int64_t>(code_.size() - goto_pc);
    return EncodeArg(ArgKind::kRegister, result);
  }

  const ir::IRModule& mod_;
  compiler::VmfbProgram* program_;
  const std::map<std::string, uint32_t>& fn_index_;
  const memory::FunctionPlan* plan_;  // null: no planning
  std::string name_;
  std::vector<int64_t> code_;
  int64_t num_regs_ = 0;
  int64_t num_slots_ = 0;
  std::map<const ir::VarNode*, int64_t> slots_;
  std::map<std::string, int64_t> computed_;  // DimKey -> slot, on the current path
  std::map<int64_t, int64_t> loads_;         // slot -> register of its heap_load, on the current path
  // The prologue: the variables the arguments bind, the shape_arith groups
  // that use only them (DimKey -> slot), and the heap_loads of such slots
  // (slot -> register), emitted after the argument checks (Run).
  std::set<const ir::VarNode*> entry_vars_;
  std::vector<int64_t> hoisted_ops_;
  std::map<std::string, int64_t> hoisted_;
  std::map<int64_t, int64_t> hoisted_loads_;
  // The call-time arena (PrepareCallTimeArena): its storage index (-1:
  // none), the size operand of each member, the heap slot of the first
  // offset, and the register holding the storage.
  int64_t arena_storage_ = -1;
  // The operand groups of the prologue's arena_tensors call (EmitPlannedAlloc).
  std::vector<int64_t> arena_views_;
  // The operand groups of the prologue's storage_tensors call of each static
  // storage, by storage index (EmitPlannedAlloc).
  std::map<size_t, std::vector<int64_t>> static_views_;
  int if_depth_ = 0;  // If branches around the binding being emitted
  // The operand groups of the arena_tensors call of the arm being emitted
  // at depth arm_depth_ (EmitArm); null outside arms.
  std::vector<int64_t>* arm_views_ = nullptr;
  int arm_depth_ = 0;
  std::vector<std::pair<int64_t, int64_t>> arena_sizes_;
  int64_t arena_first_slot_ = 0;
  int64_t arena_reg_ = -1;
  // The last shape_arith call emitted in the body: its first word and where
  // it ends, so that one emitted right after it joins it.
  int64_t last_arith_pc_ = -1;
  int64_t last_arith_end_ = -1;
  std::map<const ir::ExprNode*, int64_t> values_;
  // Uses of each variable other than as a projection's tuple (CountWholeUses),
  // and the fields' operands of the tuple variables never made (EmitFields).
  std::map<const ir::ExprNode*, int> whole_uses_;
  std::map<const ir::ExprNode*, std::vector<int64_t>> fields_;
};

}  // namespace

int64_t EncodeArg(ArgKind kind, int64_t value) {
  return (static_cast<int64_t>(kind) << 56) | (value & ((int64_t{1} << 56) - 1));
}

uint32_t InternCallable(compiler::VmfbProgram* program, compiler::CallableKind kind, const std::string& name,
                        int32_t num_args, uint32_t function_index) {
  for (size_t i = 0; i < program->callables.size(); ++i) {
    const auto& c = program->callables[i];
    if (c.kind == kind && c.name == name) return static_cast<uint32_t>(i);
  }
  compiler::CallableInfo c;
  c.kind = kind;
  c.name = name;
  c.num_args = num_args;
  c.function_index = function_index;
  program->callables.push_back(c);
  return static_cast<uint32_t>(program->callables.size() - 1);
}

uint32_t InternTensorConstant(compiler::VmfbProgram* program, const ir::ConstantExpr& c) {
  for (size_t i = 0; i < program->constants.size(); ++i) {
    const auto& k = program->constants[i];
    if (k.kind == compiler::ConstantKind::kTensor && k.tensor.object() == c.data.object()) {
      return static_cast<uint32_t>(i);
    }
  }
  compiler::ConstantValue k;
  k.kind = compiler::ConstantKind::kTensor;
  k.tensor = c.data;
  k.name = c.name;
  program->constants.push_back(std::move(k));
  return static_cast<uint32_t>(program->constants.size() - 1);
}

compiler::ValueInfo MakeValueInfo(const std::string& name, const ir::StructInfo& sinfo) {
  compiler::ValueInfo v;
  v.name = name;
  if (!sinfo) {
    v.kind = compiler::ValueKind::kObject;
    return v;
  }
  switch (sinfo->kind) {
    case ir::SInfoKind::kTensor: {
      const auto& t = static_cast<const ir::TensorSInfo&>(*sinfo);
      v.kind = compiler::ValueKind::kTensor;
      v.dtype = t.dtype;
      v.ndim = t.ndim;
      if (t.has_shape)
        for (const auto& d : t.shape) v.dims.push_back(DimString(d));
      break;
    }
    case ir::SInfoKind::kShape: {
      const auto& s = static_cast<const ir::ShapeSInfo&>(*sinfo);
      v.kind = compiler::ValueKind::kShape;
      v.ndim = s.ndim;
      if (s.has_values)
        for (const auto& d : s.values) v.dims.push_back(DimString(d));
      break;
    }
    case ir::SInfoKind::kTuple: v.kind = compiler::ValueKind::kTuple; break;
    case ir::SInfoKind::kPrim:
      v.kind = compiler::ValueKind::kPrim;
      v.dtype = static_cast<const ir::PrimSInfo&>(*sinfo).dtype;
      break;
    case ir::SInfoKind::kFunc: v.kind = compiler::ValueKind::kFunction; break;
    case ir::SInfoKind::kObject: v.kind = compiler::ValueKind::kObject; break;
  }
  return v;
}

Status GenerateVMCode(const ir::IRModule& mod, compiler::VmfbProgram* program, const VMCodegenOptions& options) {
  memory::ModulePlan plan;
  if (options.plan_memory) {
    KILN_ASSIGN_OR_RETURN(plan, memory::PlanMemory(mod, options.memory));
  }
  std::map<std::string, uint32_t> fn_index;
  std::vector<const ir::ModuleEntry*> functions;
  for (const auto& e : mod.entries) {
    if (!e.relax) continue;
    fn_index[e.name] = static_cast<uint32_t>(program->functions.size() + functions.size());
    functions.push_back(&e);
  }
  for (const auto* e : functions) {
    FunctionCodegen codegen(mod, program, fn_index, plan.Find(e->name));
    KILN_ASSIGN_OR_RETURN(compiler::FunctionInfo info, codegen.Run(e->name, e->relax));
    program->functions.push_back(std::move(info));
  }
  return Status::Ok();
}

}  // namespace relax
}  // namespace kiln
