// The interpreter loop: runs verified, decoded bytecode (vm/bytecode.h).
// Nothing here re-checks what the verifier proved (indices, jump targets,
// builtin operand shapes); only run-time values (kinds, shapes) are checked.
#include "runtime/kernel_call.h"
#include "runtime/thread_pool.h"
#include "vm/module_impl.h"

namespace kiln {
namespace vm {
namespace {

// Deep enough for any real model; stops runaway recursion before the C++
// stack does.
constexpr int kMaxCallDepth = 256;

}  // namespace

Frame& ContextImpl::FrameAt(int depth) {
  while (static_cast<int>(frames_.size()) <= depth) frames_.push_back(std::make_unique<Frame>());
  return *frames_[depth];
}

Status ContextImpl::Invoke(const std::string& function, Span<const Any> args, Any* result) {
  int32_t index = module_->FindFunction(function);
  if (index < 0) {
    std::string names;
    for (const ProgramFunction& f : module_->program().functions) names += (names.empty() ? "" : ", ") + f.name;
    return NotFound("no function named '" + function + "' in module; it has: " + (names.empty() ? "(none)" : names));
  }
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
  KILN_RETURN_IF_ERROR(Execute(function, args, &ret, 0));
  if (result != nullptr) *result = std::move(ret);
  return Status::Ok();
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
  frame.regs.assign(fn.register_count, Any());
  frame.heap.assign(fn.shape_heap_size, 0);
  if (frame.call_args.size() < fn.max_call_args) frame.call_args.resize(fn.max_call_args);
  if (frame.kernel_args.size() < fn.max_call_args) frame.kernel_args.resize(fn.max_call_args);
  for (size_t i = 0; i < args.size(); ++i) frame.regs[i] = args[i];

  Status status;
  const Instruction* code = fn.code.data();
  uint32_t pc = 0;
  for (;;) {
    const Instruction& ins = code[pc];
    switch (ins.op) {
      case Opcode::kRet:
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
        switch (callee.kind) {
          case CallableKind::kBuiltin:
            status = RunBuiltin(static_cast<Builtin>(callee.builtin), a, ins.num_args, frame, src, meta.name, fn,
                                &out);
            break;
          case CallableKind::kPacked: {
            for (uint32_t i = 0; i < ins.num_args; ++i) {
              Any tmp;
              frame.call_args[i] = ArgValue(a[i], frame, src, &tmp);
            }
            status = callee.packed(Span<const Any>(frame.call_args.data(), ins.num_args), &out);
            for (uint32_t i = 0; i < ins.num_args; ++i) frame.call_args[i] = Any();
            if (!status.ok()) status.Annotate(meta.name + ": packed function '" + callee.name + "'");
            break;
          }
          case CallableKind::kKernel: {
            for (uint32_t i = 0; i < ins.num_args; ++i) {
              Any tmp;
              const Any& v = ArgValue(a[i], frame, src, &tmp);
              kiln_kernel_arg& k = frame.kernel_args[i];
              if (v.is_tensor()) {
                k.tensor = AsKernelTensor(&v.tensor_obj()->dl);
              } else if (v.is_int()) {
                k.i64 = v.int_value();
              } else if (v.is_float()) {
                k.f64 = v.float_value();
              } else {
                status = InvalidArgument(StrFormat("%s: kernel '%s': argument %u is %s; kernels take tensors, ints "
                                                   "and floats",
                                                   meta.name.c_str(), callee.name.c_str(), i, v.Describe().c_str()));
                goto done;
              }
            }
            status = CallKernel(callee.kernel, callee.name, frame.kernel_args.data(),
                                static_cast<int32_t>(ins.num_args), pool_);
            if (!status.ok()) status.Annotate(meta.name);
            break;
          }
          case CallableKind::kFunction: {
            // The callee runs in the next frame; our scratch holds its
            // arguments until it returns.
            for (uint32_t i = 0; i < ins.num_args; ++i) {
              Any tmp;
              frame.call_args[i] = ArgValue(a[i], frame, src, &tmp);
            }
            status = Execute(static_cast<int32_t>(callee.function_index),
                             Span<const Any>(frame.call_args.data(), ins.num_args), &out, depth + 1);
            for (uint32_t i = 0; i < ins.num_args; ++i) frame.call_args[i] = Any();
            break;
          }
        }
        if (!status.ok()) goto done;
        if (ins.reg >= 0) frame.regs[ins.reg] = std::move(out);
        ++pc;
        continue;
      }
    }
  }
done:
  // Drop references now rather than at the next call, so tensors die when
  // the caller lets go of them.
  for (Any& r : frame.regs) r = Any();
  return status;
}

}  // namespace vm
}  // namespace kiln
