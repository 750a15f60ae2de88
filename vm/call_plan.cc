#include "vm/call_plan.h"

#include <algorithm>
#include <cstring>

#include "runtime/kernel_call.h"
#include "vm/builtins.h"

namespace kiln {
namespace vm {
namespace {

// Key words: a tag per argument, then its dtype and shape or its value.
constexpr int64_t kKeyTensor = 1;
constexpr int64_t kKeyInt = 2;

int64_t PackDType(const DLDataType& t) {
  return static_cast<int64_t>(t.code) | (static_cast<int64_t>(t.bits) << 8) | (static_cast<int64_t>(t.lanes) << 16);
}

// A tensor a plan can take as an argument: its kernels read it through a
// compact CPU DLTensor like the recorded one.
bool PlannableTensor(const TensorObj& o) { return o.strides.empty() && o.dl.device.device_type == kDLCPU; }

// The builtins whose results depend on argument shapes and int values only
// (none reads tensor data), and that a replay can skip or redo: everything a
// symbolic function's prologue and result making call.
bool ShapeOnly(Builtin b) {
  switch (b) {
    case Builtin::kCheckTensor:
    case Builtin::kMatchShape:
    case Builtin::kMatchShapeExplained:
    case Builtin::kMakeShape:
    case Builtin::kShapeArith:
    case Builtin::kAllocTensor:
    case Builtin::kTupleGetItem:
    case Builtin::kMakeTuple:
    case Builtin::kCopy:
    case Builtin::kAllocStorage:
    case Builtin::kTensorView:
    case Builtin::kHeapLoad:
    case Builtin::kHeapLoads:
    case Builtin::kAllocArena:
    case Builtin::kArenaView:
    case Builtin::kArenaTensor:
    case Builtin::kArenaTensors:
    case Builtin::kStorageTensors:
    case Builtin::kReshapeView:
    case Builtin::kRaise:
      return true;
    default:
      return false;
  }
}

// Whether [base, base + bytes) holds p; an empty range holds its start only.
bool Within(const void* p, const void* base, uint64_t bytes, uint64_t* offset) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base);
  if (a < b || a - b > bytes || (a - b == bytes && bytes != 0)) return false;
  *offset = a - b;
  return true;
}

uint64_t BytesOf(const TensorObj& o) {
  return static_cast<uint64_t>(ShapeNumElements(o.shape)) * DType::FromDL(o.dl.dtype).bytes();
}

void* DataOf(const TensorObj& o) { return static_cast<char*>(o.dl.data) + o.dl.byte_offset; }

}  // namespace

bool Replayable(const DecodedFunction& fn, const LinkedProgram& linked) {
  for (size_t pc = 0; pc < fn.code.size(); ++pc) {
    const Instruction& ins = fn.code[pc];
    switch (ins.op) {
      case Opcode::kRet:
        break;
      case Opcode::kGoto:
      case Opcode::kIf:
        if (ins.target <= pc) return false;  // a backward jump could run a site twice
        break;
      case Opcode::kCall: {
        const ResolvedCallable& c = linked.callables[ins.callable];
        if (c.kind == CallableKind::kKernel) break;
        if (c.kind != CallableKind::kBuiltin || !ShapeOnly(static_cast<Builtin>(c.builtin))) return false;
        break;
      }
    }
  }
  return true;
}

bool KeyOf(Span<const Any> args, std::vector<int64_t>* key) {
  key->clear();
  for (const Any& a : args) {
    if (a.is_int()) {
      key->push_back(kKeyInt);
      key->push_back(a.int_value());
    } else if (a.is_tensor() && PlannableTensor(*a.tensor_obj())) {
      const TensorObj& o = *a.tensor_obj();
      key->push_back(kKeyTensor);
      key->push_back(PackDType(o.dl.dtype));
      key->push_back(static_cast<int64_t>(o.shape.size()));
      key->insert(key->end(), o.shape.begin(), o.shape.end());
    } else {
      key->clear();
      return false;
    }
  }
  return true;
}

bool KeyMatches(const std::vector<int64_t>& key, Span<const Any> args) {
  if (key.empty()) return false;
  size_t k = 0;
  const size_t n = key.size();
  for (const Any& a : args) {
    if (k >= n) return false;
    if (a.is_int()) {
      if (key[k] != kKeyInt || k + 1 >= n || key[k + 1] != a.int_value()) return false;
      k += 2;
    } else if (a.is_tensor()) {
      const TensorObj& o = *a.tensor_obj();
      if (key[k] != kKeyTensor || !PlannableTensor(o) || k + 2 >= n || key[k + 1] != PackDType(o.dl.dtype)) {
        return false;
      }
      const size_t ndim = o.shape.size();
      if (key[k + 2] != static_cast<int64_t>(ndim) || k + 3 + ndim > n) return false;
      if (!std::equal(o.shape.begin(), o.shape.end(), key.begin() + static_cast<ptrdiff_t>(k + 3))) return false;
      k += 3 + ndim;
    } else {
      return false;
    }
  }
  return k == n;
}

void PlanRecorder::AfterCall(const Instruction& ins, const Arg* args, const ResolvedCallable& callee,
                             const Frame& frame, const ValueSource& src, const Any& out) {
  if (failed_) return;
  CallPlan& p = *plan_;
  if (callee.kind == CallableKind::kBuiltin) {
    Builtin b = static_cast<Builtin>(callee.builtin);
    if (b == Builtin::kAllocTensor) {
      const TensorObj& o = *out.tensor_obj();
      p.sites_.push_back(CallPlan::Site{ins.arg_begin, DType::FromDL(o.dl.dtype), o.shape});
      site_objects_.push_back(out);
    } else if (b == Builtin::kMakeTuple) {
      tuples_.emplace_back(ins.arg_begin, out);
    }
    return;
  }
  if (callee.kind != CallableKind::kKernel) {
    failed_ = true;  // Replayable() let only kernels and shape builtins through
    return;
  }
  // The interpreter just built the kernel's arguments in frame.kernel_args;
  // copy them, each tensor's descriptor with its shape.
  p.steps_.push_back(CallPlan::Step{&callee, static_cast<uint32_t>(p.args_.size()), ins.num_args});
  for (uint32_t i = 0; i < ins.num_args; ++i) {
    kiln_kernel_arg k = frame.kernel_args[i];
    int32_t dl = -1;
    if (args[i].kind != ArgKind::kImmediate) {
      Any tmp;
      const Any& v = ArgValue(args[i], frame, src, &tmp);
      if (v.is_tensor()) {
        const TensorObj& o = *v.tensor_obj();
        if (!PlannableTensor(o)) {
          failed_ = true;
          return;
        }
        kiln_dltensor d = *AsKernelTensor(const_cast<DLTensor*>(&o.dl));
        d.data = DataOf(o);
        d.byte_offset = 0;
        d.shape = nullptr;  // set in Finish, once dims_ stops growing
        d.strides = nullptr;
        dl = static_cast<int32_t>(p.dl_.size());
        p.dl_.push_back(d);
        dl_fixed_.push_back(args[i].kind == ArgKind::kConstant ? 1 : 0);
        dl_dims_.push_back(static_cast<uint32_t>(p.dims_.size()));
        p.dims_.insert(p.dims_.end(), o.shape.begin(), o.shape.end());
      } else if (!v.is_int() && !v.is_float()) {
        failed_ = true;
        return;
      }
    }
    p.args_.push_back(k);
    arg_dl_.push_back(dl);
  }
}

std::unique_ptr<CallPlan> PlanRecorder::Finish(Span<const Any> args, const std::vector<Tensor>* storage,
                                               const Program& program) {
  if (failed_ || !KeyOf(args, &plan_->key_)) return nullptr;
  CallPlan& p = *plan_;
  // Arguments that share bytes would make a traced pointer ambiguous (a later
  // call may pass them apart): such a call is not recorded.
  for (uint32_t a = 0; a < args.size(); ++a) {
    for (uint32_t b = a + 1; b < args.size(); ++b) {
      if (!args[a].is_tensor() || !args[b].is_tensor()) continue;
      const TensorObj &x = *args[a].tensor_obj(), &y = *args[b].tensor_obj();
      const char *x0 = static_cast<const char*>(DataOf(x)), *y0 = static_cast<const char*>(DataOf(y));
      if (x0 < y0 + BytesOf(y) && y0 < x0 + BytesOf(x)) return nullptr;
      if (x0 == y0) return nullptr;
    }
  }
  for (size_t i = 0; i < p.dl_.size(); ++i) {
    kiln_dltensor& d = p.dl_[i];
    d.shape = p.dims_.data() + dl_dims_[i];
    if (dl_fixed_[i]) continue;
    // Trace the bytes: an argument, an alloc site's tensor, a planned storage.
    uint64_t offset = 0;
    bool found = false;
    for (uint32_t a = 0; !found && a < args.size(); ++a) {
      if (!args[a].is_tensor()) continue;
      const TensorObj& o = *args[a].tensor_obj();
      if (Within(d.data, DataOf(o), BytesOf(o), &offset)) {
        p.patches_.push_back(CallPlan::Patch{static_cast<uint32_t>(i), CallPlan::Base::kArgument, a, offset});
        found = true;
      }
    }
    for (uint32_t s = 0; !found && s < site_objects_.size(); ++s) {
      const TensorObj& o = *site_objects_[s].tensor_obj();
      if (Within(d.data, DataOf(o), BytesOf(o), &offset)) {
        p.patches_.push_back(CallPlan::Patch{static_cast<uint32_t>(i), CallPlan::Base::kSite, s, offset});
        found = true;
      }
    }
    for (size_t b = 0; !found && storage != nullptr && b < storage->size(); ++b) {
      const Tensor& block = (*storage)[b];
      if (block.defined() && Within(d.data, block.raw_data(), block.NumBytes(), &offset)) {
        bool held = false;
        for (const Tensor& t : p.storage_) held = held || t.object() == block.object();
        if (!held) p.storage_.push_back(block);
        found = true;
      }
    }
    // A constant reached through a register (a copy of it).
    for (size_t c = 0; !found && c < program.constants.size(); ++c) {
      const Any& v = program.constants[c].value;
      if (v.is_tensor() && Within(d.data, DataOf(*v.tensor_obj()), BytesOf(*v.tensor_obj()), &offset)) found = true;
    }
    if (!found) return nullptr;
  }
  for (size_t i = 0; i < p.args_.size(); ++i) {
    if (arg_dl_[i] >= 0) p.args_[i].tensor = &p.dl_[static_cast<size_t>(arg_dl_[i])];
  }
  // The result, traced by identity.
  struct Tracer {
    const PlanRecorder& r;
    Span<const Any> args;
    const Program& program;
    bool Trace(const Any& v, CallPlan::ResultValue* out) {
      using Kind = CallPlan::ResultValue::Kind;
      if (v.is_int() || v.is_none()) {
        out->kind = Kind::kFixed;
        out->fixed = v;
        return true;
      }
      if (v.is_tuple()) {
        for (const auto& t : r.tuples_) {
          if (t.second.object() != v.object()) continue;
          out->kind = Kind::kTuple;
          out->index = t.first;
          out->fields.resize(v.tuple_fields().size());
          for (size_t i = 0; i < out->fields.size(); ++i) {
            if (!Trace(v.tuple_fields()[i], &out->fields[i])) return false;
          }
          return true;
        }
        return false;
      }
      if (!v.is_tensor()) return false;
      for (uint32_t a = 0; a < args.size(); ++a) {
        if (args[a].object() == v.object()) {
          out->kind = Kind::kArgument;
          out->index = a;
          return true;
        }
      }
      for (uint32_t s = 0; s < r.site_objects_.size(); ++s) {
        if (r.site_objects_[s].object() == v.object()) {
          out->kind = Kind::kSite;
          out->index = s;
          return true;
        }
      }
      for (const ProgramConstant& c : program.constants) {
        if (c.value.object() == v.object()) {
          out->kind = Kind::kFixed;
          out->fixed = v;
          return true;
        }
      }
      return false;
    }
  } tracer{*this, args, program};
  if (!tracer.Trace(returned_, &p.result_)) return nullptr;
  p.site_values_.reserve(p.sites_.size());
  return std::move(plan_);
}

bool CallPlan::StorageCurrent(const std::vector<Tensor>* storage) const {
  for (const Tensor& held : storage_) {
    bool current = false;
    for (size_t i = 0; !current && storage != nullptr && i < storage->size(); ++i) {
      current = (*storage)[i].object() == held.object();
    }
    if (!current) return false;
  }
  return true;
}

CallPlan* PlanCache::Find(Span<const Any> args) {
  for (size_t i = 0; i < plans_.size(); ++i) {
    if (!plans_[i]->Matches(args)) continue;
    if (i > 0) std::rotate(plans_.begin(), plans_.begin() + static_cast<ptrdiff_t>(i), plans_.begin() + static_cast<ptrdiff_t>(i) + 1);
    return plans_[0].get();
  }
  return nullptr;
}

bool PlanCache::ShouldRecord(Span<const Any> args) {
  for (size_t i = 0; i < seen_.size(); ++i) {
    if (!KeyMatches(seen_[i].key, args)) continue;
    if (i > 0) std::rotate(seen_.begin(), seen_.begin() + static_cast<ptrdiff_t>(i), seen_.begin() + static_cast<ptrdiff_t>(i) + 1);
    return !seen_[0].untraceable;
  }
  // A new key: in the place of the oldest (whose vector is reused), at the front.
  if (seen_.size() < kKeptPlans) seen_.emplace_back();
  std::rotate(seen_.begin(), seen_.end() - 1, seen_.end());
  seen_[0].untraceable = !KeyOf(args, &seen_[0].key);
  return false;
}

void PlanCache::Recorded(Span<const Any> args, std::unique_ptr<CallPlan> plan) {
  if (plan == nullptr) {
    for (Seen& s : seen_) {
      if (KeyMatches(s.key, args)) s.untraceable = true;
    }
    return;
  }
  plans_.insert(plans_.begin(), std::move(plan));
  if (plans_.size() > kKeptPlans) plans_.pop_back();
}

void PlanCache::DropStale(const std::vector<Tensor>* storage) {
  plans_.erase(std::remove_if(plans_.begin(), plans_.end(),
                              [&](const std::unique_ptr<CallPlan>& p) { return !p->StorageCurrent(storage); }),
               plans_.end());
}

Any CallPlan::MakeResult(const ResultValue& v, Span<const Any> args, const DecodedFunction& fn) {
  switch (v.kind) {
    case ResultValue::Kind::kArgument: return args[v.index];
    case ResultValue::Kind::kSite: return site_values_[v.index];
    case ResultValue::Kind::kFixed: return v.fixed;
    case ResultValue::Kind::kTuple:
      return TupleAtSite(ReuseSlotAt(fn, v.index), fn.function_index, v.index,
                         static_cast<uint32_t>(v.fields.size()),
                         [&](uint32_t i) { return MakeResult(v.fields[i], args, fn); });
  }
  return Any();
}

Status CallPlan::Replay(Span<const Any> args, const DecodedFunction& fn, const std::string& name, ThreadPool* pool,
                        Any* result) {
  Status status;
  // Each alloc site's tensor, as alloc_tensor would give it.
  for (const Site& s : sites_) {
    site_values_.emplace_back();
    status = TensorAtSite(ReuseSlotAt(fn, s.offset), s.dims, s.dtype, name, &site_values_.back());
    if (!status.ok()) break;
  }
  if (status.ok()) {
    for (const Patch& p : patches_) {
      const Any& base = p.base == Base::kArgument ? args[p.index] : site_values_[p.index];
      dl_[p.dl].data = static_cast<char*>(DataOf(*base.tensor_obj())) + p.offset;
    }
    for (const Step& s : steps_) {
      status = CallKernel(s.callee->kernel, s.callee->name, args_.data() + s.first_arg,
                          static_cast<int32_t>(s.num_args), pool);
      if (!status.ok()) {
        status.Annotate(name);
        break;
      }
    }
  }
  if (status.ok()) *result = MakeResult(result_, args, fn);
  // Hold nothing between calls: a site's tensor held here could not be
  // handed out again, and the caller's arguments are theirs.
  site_values_.clear();
  for (const Patch& p : patches_) dl_[p.dl].data = nullptr;
  return status;
}

}  // namespace vm
}  // namespace kiln
