#include "tools/common/prepared_call.h"

#include "tools/common/inline_tensor.h"

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

}  // namespace

std::vector<Any> FlattenOutputs(const Any& result) {
  if (result.is_none()) return {};
  if (result.is_tuple()) return result.tuple_fields();
  return {result};
}

Result<std::unique_ptr<PreparedCall>> PreparedCall::Create(const CallSpec& spec) {
  std::unique_ptr<PreparedCall> p(new PreparedCall());
  p->spec_ = spec;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    Result<Tensor> t = ParseTensorArgument(spec.inputs[i]);
    if (!t.ok()) return t.TakeStatus().Annotate(StrFormat("--input %zu", i + 1));
    p->inputs_.push_back(std::move(t).value());
  }
  vm::LoadOptions load_options;
  load_options.num_threads = spec.threads;  // the shared pool of that size; oneDNN follows it
  Result<std::shared_ptr<const vm::Module>> loaded = vm::Module::LoadFile(spec.module_path, load_options);
  if (!loaded.ok()) return loaded.TakeStatus().Annotate("loading '" + spec.module_path + "'");
  p->module_ = std::move(loaded).value();

  Result<vm::FunctionSignature> sig = p->module_->GetSignature(spec.function);
  if (!sig.ok()) {
    std::string names;
    for (const std::string& n : p->module_->FunctionNames()) names += (names.empty() ? "" : ", ") + n;
    return NotFound("no function '" + spec.function + "' in '" + spec.module_path + "' (it has: " + names + ")");
  }
  if (sig->params.size() != p->inputs_.size()) {
    return InvalidArgument(StrFormat("function '%s' takes %zu inputs, got %zu --input flags", spec.function.c_str(),
                                     sig->params.size(), p->inputs_.size()));
  }
  for (size_t i = 0; i < p->inputs_.size(); ++i) p->args_.push_back(ToArgument(p->inputs_[i], sig->params[i]));

  bool has_graph = p->module_->HasStaticGraph(spec.function);
  if (spec.executor == "graph" && !has_graph) {
    return FailedPrecondition("function '" + spec.function + "' has no static graph (try --executor=vm)");
  }
  if (spec.executor != "vm" && has_graph) {
    KILN_ASSIGN_OR_RETURN(p->session_,
                          graph_executor::GraphSession::Create(p->module_->linked_program(), spec.function));
    KILN_ASSIGN_OR_RETURN(p->graph_outputs_, p->session_->NewOutputs());
  } else {
    p->context_ = p->module_->CreateContext();
  }
  return p;
}

void PreparedCall::SetProfiler(Profiler* profiler) {
  if (session_) session_->set_profiler(profiler);
  if (context_) context_->set_profiler(profiler);
}

Status PreparedCall::Call(Any* result) {
  if (!session_) return context_->Invoke(spec_.function, args_, result);
  KILN_RETURN_IF_ERROR(session_->Run(inputs_, graph_outputs_));
  if (graph_outputs_.size() == 1) {
    *result = Any(graph_outputs_[0]);
  } else {
    *result = Any::Tuple(std::vector<Any>(graph_outputs_.begin(), graph_outputs_.end()));
  }
  return Status::Ok();
}

}  // namespace tools
}  // namespace kiln
