// CallContext: the vm::Context callers get (vm/module_impl.h), and the
// thread-local CallState it installs for the allocation builtins.
#include "runtime/thread_pool.h"
#include "vm/call_state.h"
#include "vm/module_impl.h"

namespace kiln {
namespace vm {
namespace {

thread_local CallState* t_call_state = nullptr;

bool HeldOnlyHere(const Any& a) { return a.object() != nullptr && a.object().use_count() == 1; }

}  // namespace

CallState* CurrentCallState() { return t_call_state; }

ScopedCallState::ScopedCallState(CallState* state) : previous_(t_call_state) {
  t_call_state = state;
  // Latest first: an outer tuple lets go of an inner one (or of a view)
  // before the inner one is looked at, a view of a view before the first.
  for (auto it = state->release_sites.rbegin(); it != state->release_sites.rend(); ++it) {
    Any& kept = state->reuse[it->function][it->offset];
    if (!HeldOnlyHere(kept)) continue;
    if (kept.is_tuple()) {
      for (Any& field : static_cast<TupleObj*>(kept.object().get())->fields) field = Any();
    } else if (kept.is_tensor()) {
      // A view (vm.builtin.reshape_view) no one sees: its site points it at
      // the tensor it views again.
      auto* view = static_cast<TensorObj*>(kept.object().get());
      view->owner.reset();
      view->dl.data = nullptr;
    }
  }
}

ScopedCallState::~ScopedCallState() { t_call_state = previous_; }

const char* ExecutorName(Executor executor) {
  switch (executor) {
    case Executor::kVm: return "vm";
    case Executor::kAuto: return "auto";
    case Executor::kGraph: return "graph";
  }
  return "unknown";
}

namespace {

// The context's counting allocator together with the caller's shared
// allocator it forwards to, so that both live as long as any tensor made.
struct CountedAllocator {
  explicit CountedAllocator(const ContextOptions& o)
      : owner(o.allocator == nullptr ? o.shared_allocator : nullptr),
        counting(o.allocator != nullptr ? o.allocator : owner.get()) {}
  std::shared_ptr<Allocator> owner;
  CountingAllocator counting;
};

std::shared_ptr<CountingAllocator> MakeAllocator(const ContextOptions& options) {
  auto holder = std::make_shared<CountedAllocator>(options);
  return std::shared_ptr<CountingAllocator>(holder, &holder->counting);
}

}  // namespace

CallContext::CallContext(std::shared_ptr<const ModuleImpl> module, ThreadPool* pool, const ContextOptions& options)
    : allocator_(MakeAllocator(options)),
      module_(module),
      vm_(std::move(module), pool),
      executor_(options.executor) {
  state_.allocator = allocator_.get();
  state_.keep_alive = allocator_;
  vm_.set_replay(options.replay);
}

Result<std::unique_ptr<Context>> CallContext::Create(std::shared_ptr<const ModuleImpl> module, ThreadPool* pool,
                                                     const ContextOptions& options) {
  if (options.executor != Executor::kVm && options.executor != Executor::kAuto &&
      options.executor != Executor::kGraph) {
    return InvalidArgument(StrFormat("ContextOptions: unknown executor %d", static_cast<int>(options.executor)));
  }
  std::unique_ptr<CallContext> c(new CallContext(std::move(module), pool, options));
  if (c->executor_ != Executor::kVm) {
    const Program& p = c->module_->program();
    c->graphs_.resize(p.functions.size());
    c->graph_results_.resize(p.functions.size());
    graph_executor::GraphSessionOptions graph_options;
    graph_options.thread_pool = pool;
    graph_options.allocator = c->allocator_.get();
    for (size_t i = 0; i < p.functions.size(); ++i) {
      if (p.FindGraph(p.functions[i].name) < 0) continue;
      KILN_ASSIGN_OR_RETURN(c->graphs_[i], graph_executor::GraphSession::Create(c->module_->linked_program(),
                                                                                p.functions[i].name, graph_options));
    }
  }
  std::vector<bool> on_graph(c->module_->program().functions.size(), false);
  for (size_t i = 0; i < c->graphs_.size(); ++i) on_graph[i] = c->graphs_[i] != nullptr;
  KILN_RETURN_IF_ERROR(c->vm_.PreallocateStorage(c->allocator_.get(), c->state_.keep_alive, on_graph));
  return std::unique_ptr<Context>(std::move(c));
}

Status ContextImpl::PreallocateStorage(Allocator* allocator, const std::shared_ptr<void>& keep_alive,
                                       const std::vector<bool>& skip) {
  const LinkedProgram& linked = module_->linked();
  Frame& frame = FrameAt(0);
  for (const DecodedFunction& fn : module_->functions()) {
    if (fn.function_index < skip.size() && skip[fn.function_index]) continue;
    for (const Instruction& ins : fn.code) {
      if (ins.op != Opcode::kCall) continue;
      const ResolvedCallable& callee = linked.callables[ins.callable];
      if (callee.kind != CallableKind::kBuiltin) continue;
      const Arg* a = fn.args.data() + ins.arg_begin;
      int64_t size = 0;
      if (callee.builtin == static_cast<int32_t>(Builtin::kAllocStorage)) {
        // alloc_storage(index, size_mode, size): the verifier checked the
        // operands; size_mode 0 is a constant size.
        if (a[1].kind != ArgKind::kImmediate || a[1].value != 0 || a[2].kind != ArgKind::kImmediate) continue;
        size = a[2].value;
      } else if (callee.builtin == static_cast<int32_t>(Builtin::kStorageTensors)) {
        size = a[1].value;  // storage_tensors(index, size, ...): always a constant size
      } else {
        continue;
      }
      if (frame.storage.size() <= fn.function_index) frame.storage.resize(fn.function_index + 1);
      std::vector<Tensor>& slots = frame.storage[fn.function_index];
      if (slots.size() < fn.num_storages) slots.resize(fn.num_storages);
      Tensor& storage = slots[a[0].value];
      // Sizes alloc_storage refuses are left for the call to report.
      if (size < 0 || size > (int64_t(1) << 40)) continue;
      if (storage.defined() && storage.shape()[0] >= size) continue;
      const int64_t dims[1] = {size};
      Result<Tensor> t = Tensor::Empty(dims, DType::UInt8(), allocator);
      if (!t.ok()) {
        Status s = t.TakeStatus();
        if (s.code() == StatusCode::kResourceExhausted) {
          s = ResourceExhausted(s.message() + " from " + allocator->Describe());
        }
        s.Annotate(module_->program().functions[fn.function_index].name + ": planned storage " +
                   std::to_string(a[0].value));
        return s;
      }
      t.value().object()->owner = keep_alive;
      storage = std::move(t).value();
    }
  }
  return Status::Ok();
}

Status CallContext::Invoke(const std::string& function, Span<const Any> args, Any* result) {
  allocator_->ResetPeak();
  vm_.set_profiler(profiler_);
  Status status;
  int32_t index = executor_ == Executor::kVm ? -1 : module_->FindFunction(function);
  if (index >= 0 && graphs_[index] != nullptr) {
    status = InvokeGraph(index, args, result);
  } else if (index >= 0 && executor_ == Executor::kGraph) {
    status = FailedPrecondition("function '" + function +
                                "' has no static graph (not all its shapes are static); use Executor::kVm or "
                                "kAuto for it");
  } else {
    // On a GPU (device memory) host tensors are copied in at the boundary.
    std::vector<Any> on_device;
    Result<bool> moved = HostArgumentsToDevice(args, allocator_.get(), state_.keep_alive, &on_device);
    ScopedCallState scope(&state_);
    if (!moved.ok()) {
      status = moved.TakeStatus().Annotate(function);
    } else {
      status = vm_.Invoke(function, *moved ? Span<const Any>(on_device.data(), on_device.size()) : args, result);
    }
  }
  last_peak_ = static_cast<uint64_t>(allocator_->peak_bytes());
  return status;
}

// The same dispatch as by name, for a function looked up once.
Status CallContext::Invoke(FunctionHandle function, Span<const Any> args, Any* result) {
  int32_t index = function.index;
  if (function.module != module_.get() || index < 0 ||
      static_cast<size_t>(index) >= module_->program().functions.size()) {
    return InvalidArgument("Context::Invoke: the function handle is not one of this context's module");
  }
  allocator_->ResetPeak();
  vm_.set_profiler(profiler_);
  Status status;
  if (!graphs_.empty() && graphs_[index] != nullptr) {
    status = InvokeGraph(index, args, result);
  } else if (executor_ == Executor::kGraph) {
    status = FailedPrecondition("function '" + module_->program().functions[index].name +
                                "' has no static graph (not all its shapes are static); use Executor::kVm or "
                                "kAuto for it");
  } else {
    // On a GPU (device memory) host tensors are copied in at the boundary.
    std::vector<Any> on_device;
    Result<bool> moved = HostArgumentsToDevice(args, allocator_.get(), state_.keep_alive, &on_device);
    ScopedCallState scope(&state_);
    if (!moved.ok()) {
      status = moved.TakeStatus().Annotate(module_->program().functions[index].name);
    } else {
      status = vm_.InvokeIndex(index, *moved ? Span<const Any>(on_device.data(), on_device.size()) : args, result);
    }
  }
  last_peak_ = static_cast<uint64_t>(allocator_->peak_bytes());
  return status;
}

Status CallContext::GraphOutputs(int32_t function) {
  const std::vector<ProgramGraphArg>& outs = graphs_[function]->outputs();
  Any& last = graph_results_[function];
  // Reusable when the caller dropped last call's result: the tuple (or the
  // single tensor) and every tensor in it are held only by this cache.
  bool reusable = HeldOnlyHere(last);
  if (reusable && outs.size() != 1) {
    for (const Any& field : last.tuple_fields()) reusable = reusable && HeldOnlyHere(field);
  }
  if (reusable) {
    if (outs.size() == 1) {
      graph_outputs_.push_back(last.tensor());
    } else {
      for (const Any& field : last.tuple_fields()) graph_outputs_.push_back(field.tensor());
    }
    return Status::Ok();
  }
  for (const ProgramGraphArg& o : outs) {
    Result<Tensor> t = Tensor::Empty(o.shape, o.dtype, allocator_.get());
    if (!t.ok()) {
      Status s = t.TakeStatus();
      if (s.code() == StatusCode::kResourceExhausted) {
        s = ResourceExhausted(s.message() + " from " + allocator_->Describe());
      }
      s.Annotate(module_->program().functions[function].name + ": graph output");
      graph_outputs_.clear();
      return s;
    }
    t.value().object()->owner = state_.keep_alive;
    graph_outputs_.push_back(std::move(t).value());
  }
  if (outs.size() == 1) {
    last = Any(graph_outputs_[0]);
  } else {
    last = Any::Tuple(std::vector<Any>(graph_outputs_.begin(), graph_outputs_.end()));
  }
  return Status::Ok();
}

Status CallContext::InvokeGraph(int32_t function, Span<const Any> args, Any* result) {
  const std::string& name = module_->program().functions[function].name;
  graph_inputs_.clear();
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_tensor()) {
      graph_inputs_.clear();
      return InvalidArgument(StrFormat("%s: argument %zu is %s; the graph executor takes tensors", name.c_str(), i,
                                       args[i].Describe().c_str()));
    }
    graph_inputs_.push_back(args[i].tensor());
  }
  Status status = GraphOutputs(function);
  graphs_[function]->set_profiler(profiler_);
  if (status.ok()) status = graphs_[function]->Run(graph_inputs_, graph_outputs_);
  // Hold no caller tensor and no extra output reference between calls.
  graph_inputs_.clear();
  graph_outputs_.clear();
  if (!status.ok()) return status;
  if (result != nullptr) *result = graph_results_[function];
  return Status::Ok();
}

}  // namespace vm
}  // namespace kiln
