#include "tools/common/prepared_call.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>

#include "tools/common/inline_tensor.h"
#include "runtime/program.h"
#include "runtime/vmfb_gpu.h"
#include "runtime/vmfb_loader.h"
#ifdef KILN_HAVE_CUDA
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_graph.h"
#include "runtime/cuda/gpu_linker.h"
#endif

namespace kiln {
namespace tools {
namespace {

// A 0-d tensor passed where the function takes a scalar becomes that scalar.
Any ToArgument(const Tensor& t, const vm::ValueInfo& param) {
  if (param.kind != vm::ValueInfo::Kind::kPrim || t.ndim() != 0) return Any(t);
  DType d = t.dtype();
  if (d == DType::Float32()) return Any(static_cast<double>(*t.data<float>()));
  if (d == DType::Float64()) return Any(*t.data<double>());
  if (d == DType::Int64()) return Any(*t.data<int64_t>());
  if (d == DType::Int32()) return Any(static_cast<int64_t>(*t.data<int32_t>()));
  if (d == DType::Int8()) return Any(static_cast<int64_t>(*t.data<int8_t>()));
  if (d == DType::UInt8() || d == DType::Bool()) return Any(static_cast<int64_t>(*t.data<uint8_t>()));
  return Any(t);
}

std::string FunctionList(const vm::Module& module) {
  std::string names;
  for (const std::string& n : module.FunctionNames()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

}  // namespace

std::vector<Any> FlattenOutputs(const Any& result) {
  if (result.is_none()) return {};
  if (result.is_tuple()) return result.tuple_fields();
  return {result};
}

Result<std::shared_ptr<const vm::Module>> LoadModuleForTool(const CallSpec& spec) {
  vm::LoadOptions load_options;
  load_options.num_threads = spec.threads;  // the shared pool of that size; oneDNN follows it
  load_options.verify_weights = spec.verify_weights;
  if (spec.device >= 0) {
#ifdef KILN_HAVE_CUDA
    // A CPU file is refused before the device is opened (so also on a
    // machine without one).
    Result<VmfbFileInfo> info = PeekVmfbFileInfo(spec.module_path);
    if (info.ok() && info->target.triple != kGpuTargetTriple) {
      return FailedPrecondition(StrFormat("--device=cuda:%d: '%s' was compiled for the CPU (target '%s'); compile it "
                                          "with kiln-compile --target=cuda to run it on the GPU",
                                          spec.device, spec.module_path.c_str(), info->target.triple.c_str()));
    }
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<cuda::CudaGpuLinker> gpu, cuda::CudaGpuLinker::Create(spec.device));
    load_options.gpu = std::move(gpu);
#else
    return Unimplemented("--device=cuda: this tool was built without CUDA (KILN_WITH_CUDA=OFF)");
#endif
  }
  Result<std::shared_ptr<const vm::Module>> loaded = vm::Module::LoadFile(spec.module_path, load_options);
  if (!loaded.ok()) return loaded.TakeStatus().Annotate("loading '" + spec.module_path + "'");
  return loaded;
}

Result<std::unique_ptr<PreparedCall>> PreparedCall::Create(const CallSpec& spec) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    Result<Tensor> t = ParseTensorArgument(spec.inputs[i]);
    if (!t.ok()) return t.TakeStatus().Annotate(StrFormat("--input %zu", i + 1));
    inputs.push_back(std::move(t).value());
  }
  auto start = std::chrono::steady_clock::now();
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const vm::Module> module, LoadModuleForTool(spec));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<PreparedCall> p, Bind(std::move(module), spec, std::move(inputs)));
  p->load_seconds_ = seconds;
  return p;
}

Result<std::unique_ptr<PreparedCall>> PreparedCall::Bind(std::shared_ptr<const vm::Module> module,
                                                         const CallSpec& spec, std::vector<Tensor> inputs) {
  std::unique_ptr<PreparedCall> p(new PreparedCall());
  p->spec_ = spec;
  p->module_ = std::move(module);
  p->inputs_ = std::move(inputs);
  Result<vm::FunctionSignature> sig = p->module_->GetSignature(spec.function);
  if (!sig.ok()) {
    return NotFound("no function '" + spec.function + "' in '" + spec.module_path + "' (it has: " +
                    FunctionList(*p->module_) + ")");
  }
  if (sig->params.size() != p->inputs_.size()) {
    return InvalidArgument(StrFormat("function '%s' takes %zu inputs, got %zu --input flags", spec.function.c_str(),
                                     sig->params.size(), p->inputs_.size()));
  }
  p->gpu_ = p->module_->linked_program()->gpu;
  // A CUDA graph replays fixed addresses and sizes: only for static shapes.
  p->static_shapes_ = true;
  for (const vm::ValueInfo& param : sig->params) {
    if (param.kind != vm::ValueInfo::Kind::kTensor) continue;
    for (const std::string& d : param.dims) {
      if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos) p->static_shapes_ = false;
    }
    if (param.ndim < 0) p->static_shapes_ = false;
  }
  for (size_t i = 0; i < p->inputs_.size(); ++i) {
    // NumPy has no bfloat16: bits saved as uint16 ('<u2') are taken for a
    // bfloat16 parameter (runtime/npy.h). The tensor is ours; retag it.
    Tensor& t = p->inputs_[i];
    const vm::ValueInfo& param = sig->params[i];
    if (param.kind == vm::ValueInfo::Kind::kTensor && param.dtype == DType{kDLBfloat, 16, 1} &&
        t.dtype() == DType{kDLUInt, 16, 1}) {
      t.dl()->dtype = param.dtype.dl();
    }
#ifdef KILN_HAVE_CUDA
    // The function boundary's host -> device copy, once: calls reuse it.
    if (p->gpu_ && param.kind == vm::ValueInfo::Kind::kTensor) {
      KILN_ASSIGN_OR_RETURN(t, static_cast<cuda::CudaGpuLinker*>(p->gpu_.get())->ToDevice(t));
    }
#endif
    p->args_.push_back(ToArgument(t, param));
  }
  KILN_ASSIGN_OR_RETURN(p->handle_, p->module_->LookupFunction(spec.function));

  bool has_graph = p->module_->HasStaticGraph(spec.function);
  if (spec.executor == "graph" && !has_graph) {
    return FailedPrecondition("function '" + spec.function + "' has no static graph (try --executor=vm)");
  }
  vm::ContextOptions options;
  options.executor = spec.executor == "vm" ? vm::Executor::kVm : vm::Executor::kAuto;
  options.replay = spec.replay;
#ifdef KILN_HAVE_CUDA
  if (p->gpu_) {
    auto* gpu = static_cast<cuda::CudaGpuLinker*>(p->gpu_.get());
    options.shared_allocator = gpu->allocator();
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaTimer> timer, cuda::CudaTimer::Create(*gpu->device()));
    p->gpu_timer_ = std::shared_ptr<cuda::CudaTimer>(std::move(timer));
  }
#endif
  KILN_ASSIGN_OR_RETURN(p->context_, p->module_->CreateContext(options));
  p->uses_graph_ = spec.executor != "vm" && has_graph;
  return p;
}

#ifdef KILN_HAVE_CUDA
// Records the call once on the device's stream (its launches are queued
// into the graph, not run) and keeps the graph and the result it writes.
// The first, plain call made every allocation, so this one hits the caches;
// anything that synchronizes (a builtin reading a value on the host) fails
// the capture, and the calls stay plain.
Status PreparedCall::CaptureCudaGraph() {
  auto* gpu = static_cast<cuda::CudaGpuLinker*>(gpu_.get());
  if (!static_shapes_) {
    graph_note_ = "not captured: the function has symbolic shapes";
    return Status::Ok();
  }
  Status begin = cuda::CudaGraph::BeginCapture(gpu->device());
  if (!begin.ok()) {
    graph_note_ = "not captured: " + begin.message();
    return Status::Ok();
  }
  Any captured;
  Status call = context_->Invoke(handle_, args_, &captured);
  Result<std::unique_ptr<cuda::CudaGraph>> graph = cuda::CudaGraph::EndCapture(gpu->device());
  if (!call.ok()) {
    graph_note_ = "not captured: the call failed while recording: " + call.message();
  } else if (!graph.ok()) {
    graph_note_ = "not captured: " + graph.status().message();
  } else {
    graph_note_ = StrFormat("captured as a CUDA graph of %zu nodes", (*graph)->num_nodes());
    cuda_graph_ = std::shared_ptr<cuda::CudaGraph>(std::move(graph).value());
    graph_result_ = std::move(captured);
  }
  return Status::Ok();
}
#endif

Status PreparedCall::Call(Any* result) {
#ifdef KILN_HAVE_CUDA
  if (gpu_) {
    auto* gpu = static_cast<cuda::CudaGpuLinker*>(gpu_.get());
    auto* timer = static_cast<cuda::CudaTimer*>(gpu_timer_.get());
    void* stream = gpu->device()->stream();
    if (spec_.cuda_graph && gpu_calls_ == 1 && graph_note_.empty()) KILN_RETURN_IF_ERROR(CaptureCudaGraph());
    ++gpu_calls_;
    KILN_RETURN_IF_ERROR(timer->Start(stream));
    if (cuda_graph_ != nullptr) {
      // One launch; the captured call's result tensors now hold this call's values.
      KILN_RETURN_IF_ERROR(static_cast<cuda::CudaGraph*>(cuda_graph_.get())->Launch());
      *result = graph_result_;
    } else {
      KILN_RETURN_IF_ERROR(context_->Invoke(handle_, args_, result));
    }
    KILN_RETURN_IF_ERROR(timer->Stop(stream));
    // Launches are asynchronous: the results are there (and a kernel's
    // fault is reported) once the device's stream is done.
    KILN_RETURN_IF_ERROR(gpu->Synchronize());
    KILN_ASSIGN_OR_RETURN(float ms, timer->ElapsedMs());
    last_gpu_ms_ = ms;
    return Status::Ok();
  }
#endif
  return context_->Invoke(handle_, args_, result);
}

Status PreparedCall::OutputsToHost(std::vector<Any>* outputs) const {
#ifdef KILN_HAVE_CUDA
  if (!gpu_) return Status::Ok();
  auto* gpu = static_cast<cuda::CudaGpuLinker*>(gpu_.get());
  for (size_t i = 0; i < outputs->size(); ++i) {
    Any& v = (*outputs)[i];
    if (!v.is_tensor()) continue;
    Result<Tensor> host = gpu->ToHost(v.tensor());
    if (!host.ok()) return host.TakeStatus().Annotate(StrFormat("output %zu", i));
    v = Any(std::move(host).value());
  }
#else
  (void)outputs;
#endif
  return Status::Ok();
}

Result<std::vector<Tensor>> RandomInputs(const vm::Module& module, const std::string& function,
                                         const std::map<std::string, int64_t>& dims, uint64_t seed) {
  Result<vm::FunctionSignature> sig = module.GetSignature(function);
  if (!sig.ok()) return NotFound("no function '" + function + "' (it has: " + FunctionList(module) + ")");
  std::vector<Tensor> out;
  for (size_t i = 0; i < sig->params.size(); ++i) {
    const vm::ValueInfo& p = sig->params[i];
    std::string what = StrFormat("parameter %zu", i) + (p.name.empty() ? "" : " '" + p.name + "'");
    if (p.kind != vm::ValueInfo::Kind::kTensor || p.ndim < 0) {
      return InvalidArgument(what + " of '" + function +
                             "' is not a tensor of known rank; give every input with --input");
    }
    std::vector<int64_t> shape;
    for (const std::string& d : p.dims) {
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(d.c_str(), &end, 10);
      if (!d.empty() && *end == '\0' && errno == 0 && v >= 0) {
        shape.push_back(v);
        continue;
      }
      auto it = dims.find(d);
      if (it == dims.end()) {
        return InvalidArgument("dimension '" + d + "' of " + what + " of '" + function +
                               "' is symbolic: give its value with --dim " + d + "=N");
      }
      shape.push_back(it->second);
    }
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(shape, p.dtype));
    KILN_RETURN_IF_ERROR_CTX(FillRandom(t, seed + i), "%s", what.c_str());
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace tools
}  // namespace kiln
