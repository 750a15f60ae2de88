#include "graph_executor/graph_session.h"

#include <cstring>

#include "runtime/allocator.h"
#include "runtime/kernel_call.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace graph_executor {

struct GraphSession::Node {
  const ResolvedCallable* callee = nullptr;
  // Kernel nodes: one descriptor per argument; shapes point into `shapes`.
  std::vector<kiln_dltensor> dl;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<kiln_kernel_arg> args;
  // Packed nodes: one Any per argument.
  std::vector<Any> values;
};

namespace {

std::string TypeOf(const ProgramGraphArg& a) { return DTypeToString(a.dtype) + ShapeToString(a.shape); }

uint64_t BytesOf(const ProgramGraphArg& a) {
  return static_cast<uint64_t>(ShapeNumElements(a.shape)) * a.dtype.bytes();
}

// Why `t` cannot be bound to `want`, or nullptr. No allocation when it can:
// Run calls this on every input and output.
const char* Mismatch(const Tensor& t, const ProgramGraphArg& want) {
  if (!t.defined()) return "undefined";
  if (t.dtype() != want.dtype || t.shape() != want.shape) return "type";
  if (!t.IsCompact()) return "strided";
  if (t.dl()->device.device_type != kDLCPU) return "device";
  return nullptr;
}

Status MismatchError(const char* why, const Tensor& t, const ProgramGraphArg& want, const std::string& what) {
  std::string w(why);
  if (w == "undefined") return InvalidArgument(what + ": expected " + TypeOf(want) + ", got an undefined tensor");
  if (w == "type") return InvalidArgument(what + ": expected " + TypeOf(want) + ", got " + t.TypeString());
  if (w == "strided") return InvalidArgument(what + ": the tensor must be compact (no strides)");
  return InvalidArgument(what + ": the tensor must be on the CPU");
}

// A kernel node's arguments as profile text ("float32[1, 784], ...").
std::string DescribeKernelArgs(const std::vector<kiln_dltensor>& dl) {
  std::string out;
  for (const kiln_dltensor& d : dl) {
    if (!out.empty()) out += ", ";
    out += DTypeToString(DType{d.dtype_code, d.dtype_bits, d.dtype_lanes});
    out += ShapeToString(Span<const int64_t>(d.shape, static_cast<size_t>(d.ndim)));
  }
  return out;
}

}  // namespace

GraphSession::~GraphSession() {
  if (arena_ != nullptr) allocator_->Free(arena_);
}

Result<std::unique_ptr<GraphSession>> GraphSession::Create(std::shared_ptr<const LinkedProgram> program,
                                                           const std::string& function,
                                                           const GraphSessionOptions& options) {
  if (program == nullptr) return InvalidArgument("GraphSession::Create: no program");
  if (options.num_threads < 0 || options.num_threads > kMaxThreads) {
    return InvalidArgument(StrFormat("GraphSessionOptions: num_threads is %d; use 0 (one per core) to %d",
                                     options.num_threads, kMaxThreads));
  }
  int32_t g = program->program.FindGraph(function);
  if (g < 0) return NotFound("no static graph for function '" + function + "'");
  std::unique_ptr<GraphSession> s(new GraphSession());
  s->program_ = std::move(program);
  s->pool_ = options.thread_pool;
  if (s->pool_ == nullptr && options.num_threads > 0) s->pool_ = ThreadPool::Shared(options.num_threads);
  if (s->pool_ == nullptr) s->pool_ = s->program_->thread_pool;
  if (s->pool_ == nullptr) s->pool_ = ThreadPool::Global();
  s->allocator_ = options.allocator != nullptr ? options.allocator : DefaultCpuAllocator();
  s->graph_ = &s->program_->program.graphs[g];
  s->function_ = function;
  KILN_RETURN_IF_ERROR(s->Prepare());
  return s;
}

std::string GraphSession::InputName(size_t i) const {
  if (i < input_names_.size() && !input_names_[i].empty()) return "input " + input_names_[i];
  return "input " + std::to_string(i);
}

Status GraphSession::Prepare() {
  const ProgramGraph& g = *graph_;
  const Program& p = program_->program;
  int32_t f = p.FindFunction(function_);
  if (f >= 0 && p.functions[f].params.size() == g.inputs.size()) {
    for (const ProgramValueInfo& v : p.functions[f].params) input_names_.push_back(v.name);
  }
  if (g.arena_bytes > 0) {
    arena_ = allocator_->Allocate(g.arena_bytes, kTensorAlignment);
    if (arena_ == nullptr) {
      return ResourceExhausted(StrFormat("%s: cannot allocate the graph's %llu-byte arena from %s", function_.c_str(),
                                         static_cast<unsigned long long>(g.arena_bytes),
                                         allocator_->Describe().c_str()));
    }
  }
  for (const ProgramGraphNode& n : g.nodes) {
    const ResolvedCallable& r = program_->callables[n.callable];
    if (r.kind == CallableKind::kKernel && r.kernel_num_args >= 0 &&
        static_cast<size_t>(r.kernel_num_args) != n.args.size()) {
      return DataLoss(StrFormat("corrupt .vmfb: graph '%s' calls kernel '%s' with %zu arguments; it takes %d",
                                function_.c_str(), r.name.c_str(), n.args.size(), r.kernel_num_args));
    }
  }

  input_dl_uses_.assign(g.inputs.size(), {});
  output_dl_uses_.assign(g.outputs.size(), {});
  input_any_uses_.assign(g.inputs.size(), {});
  output_any_uses_.assign(g.outputs.size(), {});
  // Every vector below is sized once and never grows again, so the pointers
  // taken into them stay valid for the session's life.
  nodes_.resize(g.nodes.size());
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const ProgramGraphNode& n = g.nodes[ni];
    Node& node = nodes_[ni];
    node.callee = &program_->callables[n.callable];
    size_t na = n.args.size();
    if (node.callee->kind == CallableKind::kKernel) {
      node.dl.resize(na);
      node.shapes.resize(na);
      node.args.resize(na);
      for (size_t ai = 0; ai < na; ++ai) {
        const ProgramGraphArg& a = n.args[ai];
        kiln_dltensor& d = node.dl[ai];
        node.shapes[ai] = a.shape;
        d.data = nullptr;
        d.device_type = kDLCPU;
        d.device_id = 0;
        d.ndim = static_cast<int32_t>(a.shape.size());
        d.dtype_code = a.dtype.code;
        d.dtype_bits = a.dtype.bits;
        d.dtype_lanes = a.dtype.lanes;
        d.shape = node.shapes[ai].data();
        d.strides = nullptr;
        d.byte_offset = 0;
        switch (a.kind) {
          case GraphArgKind::kInput: input_dl_uses_[a.index].push_back(&d); break;
          case GraphArgKind::kOutput: output_dl_uses_[a.index].push_back(&d); break;
          case GraphArgKind::kConstant: d.data = p.constants[a.index].value.tensor().raw_data(); break;
          case GraphArgKind::kStorage: d.data = static_cast<char*>(arena_) + a.byte_offset; break;
        }
        node.args[ai].tensor = &d;
      }
    } else {
      node.values.resize(na);
      for (size_t ai = 0; ai < na; ++ai) {
        const ProgramGraphArg& a = n.args[ai];
        switch (a.kind) {
          case GraphArgKind::kInput: input_any_uses_[a.index].push_back(&node.values[ai]); break;
          case GraphArgKind::kOutput: output_any_uses_[a.index].push_back(&node.values[ai]); break;
          case GraphArgKind::kConstant: node.values[ai] = p.constants[a.index].value; break;
          case GraphArgKind::kStorage:
            node.values[ai] = Any(Tensor::Borrow(static_cast<char*>(arena_) + a.byte_offset, a.shape, a.dtype));
            break;
        }
      }
    }
  }
  return Status::Ok();
}

Result<std::vector<Tensor>> GraphSession::NewOutputs() const {
  std::vector<Tensor> out;
  for (const ProgramGraphArg& a : graph_->outputs) {
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(a.shape, a.dtype));
    out.push_back(std::move(t));
  }
  return out;
}

Status GraphSession::Run(Span<const Tensor> inputs, Span<const Tensor> outputs) {
  const ProgramGraph& g = *graph_;
  if (inputs.size() != g.inputs.size()) {
    return InvalidArgument(StrFormat("%s: expected %zu inputs, got %zu", function_.c_str(), g.inputs.size(),
                                     inputs.size()));
  }
  if (outputs.size() != g.outputs.size()) {
    return InvalidArgument(StrFormat("%s: expected %zu outputs, got %zu", function_.c_str(), g.outputs.size(),
                                     outputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (const char* why = Mismatch(inputs[i], g.inputs[i])) {
      return MismatchError(why, inputs[i], g.inputs[i], function_ + ": " + InputName(i));
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (const char* why = Mismatch(outputs[i], g.outputs[i])) {
      return MismatchError(why, outputs[i], g.outputs[i], function_ + ": output " + std::to_string(i));
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (kiln_dltensor* d : input_dl_uses_[i]) d->data = inputs[i].raw_data();
    for (Any* a : input_any_uses_[i]) *a = Any(inputs[i]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (kiln_dltensor* d : output_dl_uses_[i]) d->data = outputs[i].raw_data();
    for (Any* a : output_any_uses_[i]) *a = Any(outputs[i]);
  }

  Status status;
  // Library kernels (oneDNN) size themselves by, and park, the current pool.
  ThreadPool::ScopedCurrent current(pool_);
  Profiler* const profiler = profiler_;
  const int64_t run_start = profiler != nullptr ? Profiler::Now() : 0;
  for (size_t ni = 0; ni < nodes_.size() && status.ok(); ++ni) {
    Node& node = nodes_[ni];
    const ResolvedCallable& c = *node.callee;
    const int64_t node_start = profiler != nullptr ? Profiler::Now() : 0;
    if (c.kind == CallableKind::kKernel) {
      status = CallKernel(c.kernel, c.name, node.args.data(), static_cast<int32_t>(node.args.size()),
                          pool_);
    } else {
      Any ret;
      status = c.packed(Span<const Any>(node.values.data(), node.values.size()), &ret);
      if (!status.ok()) status.Annotate("packed function '" + c.name + "'");
    }
    if (!status.ok()) status.Annotate(StrFormat("%s: node %zu", function_.c_str(), ni));
    if (profiler != nullptr && status.ok()) {
      bool kernel = c.kind == CallableKind::kKernel;
      profiler->Record(kernel ? kProfileKernel : kProfilePacked, c.name,
                       kernel ? DescribeKernelArgs(node.dl) : DescribeProfileArgs(node.values),
                       StrFormat("%s node %zu", function_.c_str(), ni), node_start, Profiler::Now());
    }
  }
  // Outputs that are not written by a node in place: copies.
  for (size_t i = 0; i < outputs.size() && status.ok(); ++i) {
    const ProgramGraphArg& o = g.outputs[i];
    const void* from = nullptr;
    switch (o.kind) {
      case GraphArgKind::kOutput: continue;
      case GraphArgKind::kInput: from = inputs[o.index].raw_data(); break;
      case GraphArgKind::kConstant: from = program_->program.constants[o.index].value.tensor().raw_data(); break;
      case GraphArgKind::kStorage: from = static_cast<const char*>(arena_) + o.byte_offset; break;
    }
    uint64_t n = BytesOf(o);
    if (n > 0) std::memmove(outputs[i].raw_data(), from, n);
  }
  if (profiler != nullptr && status.ok()) {
    std::string shapes;
    for (const Tensor& t : inputs) AppendProfileArg(Any(t), &shapes);
    std::string outs;
    for (const Tensor& t : outputs) AppendProfileArg(Any(t), &outs);
    profiler->Record(kProfileInvoke, function_, shapes + " -> " + outs, function_ + " (graph)", run_start,
                     Profiler::Now());
  }
  // Let go of the caller's tensors.
  for (auto& uses : input_any_uses_)
    for (Any* a : uses) *a = Any();
  for (auto& uses : output_any_uses_)
    for (Any* a : uses) *a = Any();
  return status;
}

}  // namespace graph_executor
}  // namespace kiln
