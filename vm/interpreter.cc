// The interpreter loop: runs verified, decoded bytecode (vm/bytecode.h).
// Nothing here re-checks what the verifier proved (indices, jump targets,
// builtin operand shapes); only run-time values (kinds, shapes) are checked.
//
// Profiling: with a profiler set (Context::set_profiler), each Call
// instruction runs between two clock reads and is recorded with its argument
// shapes; each invocation is recorded as a whole. Without one, the loop tests
// that one pointer per Call instruction and takes the plain path.
#include "runtime/kernel_call.h"
#include "runtime/profiler.h"
#include "runtime/thread_pool.h"
#include "vm/module_impl.h"

namespace kiln {
namespace vm {
namespace {

// Deep enough for any real model; stops runaway recursion before the C++
// stack does.
constexpr int kMaxCallDepth = 256;

const char* CategoryOf(CallableKind kind) {
  switch (kind) {
    case CallableKind::kBuiltin: return kProfileBuiltin;
    case CallableKind::kPacked: return kProfilePacked;
    case CallableKind::kKernel: return kProfileKernel;
    case CallableKind::kFunction: return kProfileFunction;
  }
  return kProfileKernel;
}

// Records one Call instruction that ran from `start` to now. Its arguments
// are still in the frame (the result is not stored yet); a result that is not
// an argument (allocations, packed and function results) is shown after "->".
void RecordCall(Profiler* profiler, int64_t start, const Instruction& ins, const Arg* args,
                const ResolvedCallable& callee, const Frame& frame, const ValueSource& src,
                const std::string& function, const Any& out) {
  int64_t end = Profiler::Now();
  std::string shapes;
  for (uint32_t i = 0; i < ins.num_args; ++i) {
    // Immediates of builtins are operands (modes, slots), not values.
    if (args[i].kind == ArgKind::kImmediate && callee.kind == CallableKind::kBuiltin) continue;
    Any tmp;
    AppendProfileArg(ArgValue(args[i], frame, src, &tmp), &shapes);
  }
  if (!out.is_none()) {
    std::string result;
    AppendProfileArg(out, &result);
    if (!result.empty()) shapes += (shapes.empty() ? "-> " : " -> ") + result;
  }
  profiler->Record(CategoryOf(callee.kind), callee.name, std::move(shapes),
                   function + "@" + std::to_string(ins.word), start, end);
}

}  // namespace

Frame& ContextImpl::FrameAt(int depth) {
  while (static_cast<int>(frames_.size()) <= depth) frames_.push_back(std::make_unique<Frame>());
  return *frames_[depth];
}

Result<FunctionHandle> ModuleImpl::LookupFunction(const std::string& function) const {
  int32_t index = FindFunction(function);
  if (index < 0) {
    std::string names;
    for (const ProgramFunction& f : program().functions) names += (names.empty() ? "" : ", ") + f.name;
    return NotFound("no function named '" + function + "' in module; it has: " + (names.empty() ? "(none)" : names));
  }
  FunctionHandle h;
  h.module = this;
  h.index = index;
  return h;
}

Status ContextImpl::Invoke(const std::string& function, Span<const Any> args, Any* result) {
  int32_t index = module_->FindFunction(function);
  if (index < 0) return module_->LookupFunction(function).status();
  return InvokeIndex(index, args, result);
}

Status ContextImpl::InvokeIndex(int32_t function, Span<const Any> args, Any* result) {
  const ProgramFunction& f = module_->program().functions[function];
  if (args.size() != f.params.size()) {
    return InvalidArgument(StrFormat("%s: expected %zu argument%s, got %zu", f.name.c_str(), f.params.size(),
                                     f.params.size() == 1 ? "" : "s", args.size()));
  }
  Any ret;
  // Library kernels called from here (oneDNN) size themselves by, and park,
  // the current pool.
  ThreadPool::ScopedCurrent current(pool_);
  if (profiler_ == nullptr) {
    KILN_RETURN_IF_ERROR(replay_ ? ExecutePlanned(function, args, &ret) : Execute(function, args, &ret, 0));
  } else {
    int64_t start = Profiler::Now();
    KILN_RETURN_IF_ERROR(Execute(function, args, &ret, 0));
    int64_t end = Profiler::Now();
    std::string shapes = DescribeProfileArgs(args);
    std::string out;
    AppendProfileArg(ret, &out);
    if (!out.empty()) shapes += " -> " + out;
    profiler_->Record(kProfileInvoke, f.name, std::move(shapes), "", start, end);
  }
  if (result != nullptr) *result = std::move(ret);
  return Status::Ok();
}

Status ContextImpl::ExecutePlanned(int32_t function, Span<const Any> args, Any* result) {
  // A plan takes its tensors from the context's reuse slots, and its kernels
  // read host memory.
  if (CurrentCallState() == nullptr || CallDeviceMemory() != nullptr) return Execute(function, args, result, 0);
  if (plans_.size() <= static_cast<size_t>(function)) plans_.resize(module_->functions().size());
  PlanCache& cache = plans_[function];
  const DecodedFunction& fn = module_->functions()[function];
  if (CallPlan* plan = cache.Find(args)) {
    ++replayed_calls_;
    return plan->Replay(args, fn, module_->program().functions[function].name, pool_, result);
  }
  if (cache.replayable < 0) cache.replayable = Replayable(fn, module_->linked()) ? 1 : 0;
  if (cache.replayable == 0) return Execute(function, args, result, 0);
  std::unique_ptr<PlanRecorder> recorder;
  if (cache.ShouldRecord(args)) {
    recorder.reset(new PlanRecorder());
    recorder_ = recorder.get();
  }
  Status status = Execute(function, args, result, 0);
  recorder_ = nullptr;
  const Frame& frame = FrameAt(0);
  const std::vector<Tensor>* storage =
      frame.storage.size() > static_cast<size_t>(function) ? &frame.storage[function] : nullptr;
  // A call with larger sizes than before replaced planned storage: plans on
  // the old blocks go, and the blocks with them.
  cache.DropStale(storage);
  if (recorder != nullptr && status.ok()) cache.Recorded(args, recorder->Finish(args, storage, module_->program()));
  return status;
}

// Runs one Call instruction: its callee with its arguments; the result goes
// to *out. Inlined twice in Execute (plain and profiled).
inline Status ContextImpl::RunCall(const Instruction& ins, const Arg* a, const ResolvedCallable& callee, Frame& frame,
                                   const ValueSource& src, const ProgramFunction& meta, const DecodedFunction& fn,
                                   int depth, Any* out) {
  switch (callee.kind) {
    case CallableKind::kBuiltin:
      if (callee.builtin == static_cast<int32_t>(Builtin::kLoop)) return RunLoop(a, ins.num_args, frame, src, meta, depth, out);
      return RunBuiltin(static_cast<Builtin>(callee.builtin), a, ins.num_args, frame, src, meta.name, fn, out);
    case CallableKind::kPacked: {
      for (uint32_t i = 0; i < ins.num_args; ++i) {
        Any tmp;
        frame.call_args[i] = ArgValue(a[i], frame, src, &tmp);
      }
      Status status = callee.packed(Span<const Any>(frame.call_args.data(), ins.num_args), out);
      for (uint32_t i = 0; i < ins.num_args; ++i) frame.call_args[i] = Any();
      if (!status.ok()) status.Annotate(meta.name + ": packed function '" + callee.name + "'");
      return status;
    }
    case CallableKind::kKernel: {
      for (uint32_t i = 0; i < ins.num_args; ++i) {
        kiln_kernel_arg& k = frame.kernel_args[i];
        // An immediate is an int argument as it stands: no Any to make and
        // drop per argument of every kernel call.
        if (a[i].kind == ArgKind::kImmediate) {
          k.i64 = a[i].value;
          continue;
        }
        const Any& v = a[i].kind == ArgKind::kRegister   ? frame.regs[a[i].value]
                       : a[i].kind == ArgKind::kConstant ? src.program->constants[a[i].value].value
                                                         : (*src.callable_values)[a[i].value];
        if (v.is_tensor()) {
          k.tensor = AsKernelTensor(&v.tensor_obj()->dl);
        } else if (v.is_int()) {
          k.i64 = v.int_value();
        } else if (v.is_float()) {
          k.f64 = v.float_value();
        } else {
          return InvalidArgument(StrFormat("%s: kernel '%s': argument %u is %s; kernels take tensors, ints "
                                           "and floats",
                                           meta.name.c_str(), callee.name.c_str(), i, v.Describe().c_str()));
        }
      }
      Status status =
          CallKernel(callee.kernel, callee.name, frame.kernel_args.data(), static_cast<int32_t>(ins.num_args), pool_);
      if (!status.ok()) status.Annotate(meta.name);
      return status;
    }
    case CallableKind::kFunction: {
      // The callee runs in the next frame; our scratch holds its arguments
      // until it returns.
      for (uint32_t i = 0; i < ins.num_args; ++i) {
        Any tmp;
        frame.call_args[i] = ArgValue(a[i], frame, src, &tmp);
      }
      Status status = Execute(static_cast<int32_t>(callee.function_index),
                              Span<const Any>(frame.call_args.data(), ins.num_args), out, depth + 1);
      for (uint32_t i = 0; i < ins.num_args; ++i) frame.call_args[i] = Any();
      return status;
    }
  }
  return Internal("unknown callable kind");
}

Status ContextImpl::Execute(int32_t function, Span<const Any> args, Any* result, int depth) {
  const ProgramFunction& meta = module_->program().functions[function];
  if (depth >= kMaxCallDepth) {
    return ResourceExhausted(StrFormat("%s: call depth exceeds %d (runaway recursion?)", meta.name.c_str(),
                                       kMaxCallDepth));
  }
  const DecodedFunction& fn = module_->functions()[function];
  const LinkedProgram& linked = module_->linked();
  const ValueSource& src = module_->values();
  Frame& frame = FrameAt(depth);
  // Registers are all None between calls (cleared below), so they only need
  // to grow; the heap is written by match_shape before it is read, but zero
  // it so a bad program reads zeros rather than last call's values.
  if (frame.regs.size() < fn.register_count) frame.regs.resize(fn.register_count);
  frame.heap.assign(fn.shape_heap_size, 0);
  if (frame.call_args.size() < fn.max_call_args) frame.call_args.resize(fn.max_call_args);
  if (frame.kernel_args.size() < fn.max_call_args) frame.kernel_args.resize(fn.max_call_args);
  for (size_t i = 0; i < args.size(); ++i) frame.regs[i] = args[i];

  Profiler* const profiler = profiler_;
  Status status;
  const Instruction* code = fn.code.data();
  uint32_t pc = 0;
  for (;;) {
    const Instruction& ins = code[pc];
    switch (ins.op) {
      case Opcode::kRet:
        if (__builtin_expect(recorder_ != nullptr, 0) && depth == 0) recorder_->AtReturn(frame.regs[ins.reg]);
        *result = std::move(frame.regs[ins.reg]);
        goto done;
      case Opcode::kGoto:
        pc = ins.target;
        continue;
      case Opcode::kIf: {
        const Any& c = frame.regs[ins.reg];
        bool taken;
        if (c.is_int()) {
          taken = c.int_value() != 0;
        } else {
          status = InvalidArgument(StrFormat("%s: If needs an int condition, got %s (use vm.builtin.to_bool)",
                                             meta.name.c_str(), c.Describe().c_str()));
          goto done;
        }
        pc = taken ? pc + 1 : ins.target;
        continue;
      }
      case Opcode::kCall: {
        const Arg* a = fn.args.data() + ins.arg_begin;
        const ResolvedCallable& callee = linked.callables[ins.callable];
        Any out;
        if (__builtin_expect(profiler == nullptr, 1)) {
          status = RunCall(ins, a, callee, frame, src, meta, fn, depth, &out);
        } else {
          int64_t start = Profiler::Now();
          status = RunCall(ins, a, callee, frame, src, meta, fn, depth, &out);
          if (status.ok()) RecordCall(profiler, start, ins, a, callee, frame, src, meta.name, out);
        }
        if (!status.ok()) goto done;
        if (__builtin_expect(recorder_ != nullptr, 0) && depth == 0) {
          recorder_->AfterCall(ins, a, callee, frame, src, out);
        }
        if (ins.reg >= 0) frame.regs[ins.reg] = std::move(out);
        ++pc;
        continue;
      }
    }
  }
done:
  // Drop references now rather than at the next call, so tensors die when
  // the caller lets go of them.
  for (uint32_t i = 0; i < fn.register_count; ++i) frame.regs[i] = Any();
  return status;
}

}  // namespace vm
}  // namespace kiln
