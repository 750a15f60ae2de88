// The implementation classes behind vm::Module and vm::Context. Internal.
#ifndef KILN_VM_MODULE_IMPL_H_
#define KILN_VM_MODULE_IMPL_H_

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph_executor/graph_session.h"
#include "runtime/mapped_file.h"
#include "runtime/program.h"
#include "vm/bytecode.h"
#include "vm/call_plan.h"
#include "vm/call_state.h"
#include "vm/frame.h"
#include "vm/module.h"

namespace kiln {
namespace vm {

// Immutable after Create; thread-safe.
class ModuleImpl final : public Module, public std::enable_shared_from_this<ModuleImpl> {
 public:
  static Result<std::shared_ptr<const Module>> Create(FileBytes bytes, const LoadOptions& options);

  std::vector<std::string> FunctionNames() const override;
  Result<FunctionSignature> GetSignature(const std::string& function) const override;
  Result<FunctionHandle> LookupFunction(const std::string& function) const override;  // interpreter.cc
  std::string Producer() const override;
  std::string TargetDescription() const override;
  bool HasStaticGraph(const std::string& function) const override;
  std::unique_ptr<Context> CreateContext() const override;
  Result<std::unique_ptr<Context>> CreateContext(const ContextOptions& options) const override;
  ThreadPool* thread_pool() const override { return linked_->thread_pool; }
  std::shared_ptr<const LinkedProgram> linked_program() const override { return linked_; }

  const Program& program() const { return linked_->program; }
  const LinkedProgram& linked() const { return *linked_; }
  const std::vector<DecodedFunction>& functions() const { return functions_; }
  const ValueSource& values() const { return values_; }
  // Index of `name`, or -1.
  int32_t FindFunction(const std::string& name) const;

 private:
  std::shared_ptr<const LinkedProgram> linked_;
  std::vector<DecodedFunction> functions_;
  std::unordered_map<std::string, int32_t> function_index_;
  std::vector<Any> callable_values_;  // callables passed as values
  ValueSource values_{};
};

// The VM engine of a context: a stack of frames reused across calls.
// Thread-compatible. Callers get a CallContext, which runs its VM calls here.
class ContextImpl final {
 public:
  // `pool`: where kernels launch; never null.
  ContextImpl(std::shared_ptr<const ModuleImpl> module, ThreadPool* pool)
      : module_(std::move(module)), pool_(pool) {}
  // Runs on the pool of whoever calls: the caller's current pool
  // (ThreadPool::Current(), e.g. a bytecode function value called from a
  // kernel's context), else the module's default.
  explicit ContextImpl(std::shared_ptr<const ModuleImpl> module);
  Status Invoke(const std::string& function, Span<const Any> args, Any* result);
  ThreadPool* thread_pool() const { return pool_; }
  // Invoke by index, checking the argument count.
  Status InvokeIndex(int32_t function, Span<const Any> args, Any* result);
  // Allocates, for calls entering at depth 0, every planned storage whose
  // size is a constant (vm.builtin.alloc_storage with an immediate size), so
  // that a static plan is in place before the first call. Tensors come from
  // `allocator` and hold `keep_alive`. Functions with skip[index] set (they
  // run on the graph executor) are left out. kResourceExhausted when it
  // fails. (call_context.cc)
  Status PreallocateStorage(Allocator* allocator, const std::shared_ptr<void>& keep_alive,
                            const std::vector<bool>& skip);
  // Where calls record (runtime/profiler.h); nullptr: nowhere (the default).
  // A profiled call is always interpreted.
  void set_profiler(Profiler* profiler) { profiler_ = profiler; }
  // Whether calls replay call plans (vm/call_plan.h; ContextOptions::replay).
  void set_replay(bool replay) { replay_ = replay; }
  // Calls that ran as a replay of a plan, since the context was made.
  uint64_t replayed_calls() const { return replayed_calls_; }

 private:
  // A depth-0 call through the function's call plans: replayed when the
  // arguments have a plan's key, recorded when their key was seen recently
  // (call_plan.h), else interpreted. (interpreter.cc)
  Status ExecutePlanned(int32_t function, Span<const Any> args, Any* result);
  Status Execute(int32_t function, Span<const Any> args, Any* result, int depth);
  Status RunCall(const Instruction& ins, const Arg* args, const ResolvedCallable& callee, Frame& frame,
                 const ValueSource& src, const ProgramFunction& meta, const DecodedFunction& fn, int depth, Any* out);
  Frame& FrameAt(int depth);
  // vm.builtin.loop (vm/loop.cc): calls its body at depth + 1.
  Status RunLoop(const Arg* args, uint32_t num_args, Frame& frame, const ValueSource& src, const ProgramFunction& meta,
                 int depth, Any* out);

  std::shared_ptr<const ModuleImpl> module_;
  ThreadPool* pool_;  // not owned: caller-owned or a process-lifetime shared pool
  std::vector<std::unique_ptr<Frame>> frames_;  // by call depth; pointers stay stable as it grows
  Profiler* profiler_ = nullptr;  // not owned
  std::vector<PlanCache> plans_;  // call plans by function index (grown on first use)
  PlanRecorder* recorder_ = nullptr;  // set while ExecutePlanned records a call
  bool replay_ = true;
  uint64_t replayed_calls_ = 0;
};

// The Context callers get: picks the executor per function, owns the
// allocator (counted for LastCallPeakBytes) and the reuse caches
// (vm/call_state.h), and runs VM calls on a ContextImpl. Thread-compatible.
class CallContext final : public Context {
 public:
  // Creates the graph sessions the executor asks for; fails when one cannot
  // be made (its arena cannot be allocated).
  static Result<std::unique_ptr<Context>> Create(std::shared_ptr<const ModuleImpl> module, ThreadPool* pool,
                                                 const ContextOptions& options);
  Status Invoke(const std::string& function, Span<const Any> args, Any* result) override;
  Status Invoke(FunctionHandle function, Span<const Any> args, Any* result) override;
  ThreadPool* thread_pool() const override { return vm_.thread_pool(); }
  Executor executor() const override { return executor_; }
  uint64_t LastCallPeakBytes() const override { return last_peak_; }
  // Calls that replayed a call plan (vm/call_plan.h); for tests.
  uint64_t replayed_calls() const { return vm_.replayed_calls(); }

 private:
  CallContext(std::shared_ptr<const ModuleImpl> module, ThreadPool* pool, const ContextOptions& options);
  Status InvokeGraph(int32_t function, Span<const Any> args, Any* result);
  // Output tensors for graph function `function`: last call's when the
  // caller let go of them, else new ones. Fills graph_outputs_.
  Status GraphOutputs(int32_t function);

  // Declared first, destroyed last: everything below allocates from it, and
  // every tensor it allocated keeps it alive (CallState::keep_alive).
  std::shared_ptr<CountingAllocator> allocator_;
  CallState state_;
  std::shared_ptr<const ModuleImpl> module_;
  ContextImpl vm_;
  Executor executor_;
  // By function index; null where the function runs on the VM.
  std::vector<std::unique_ptr<graph_executor::GraphSession>> graphs_;
  std::vector<Any> graph_results_;  // by function index: last call's result
  std::vector<Tensor> graph_inputs_, graph_outputs_;  // scratch, empty between calls
  uint64_t last_peak_ = 0;
};

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_MODULE_IMPL_H_
