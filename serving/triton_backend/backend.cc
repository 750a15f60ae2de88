// libtriton_kiln.so: Triton Inference Server's backend for Kiln modules.
//
// Per model (TRITONBACKEND_ModelInitialize): the configuration is read and checked against
// the module (model_spec.h), and VERSION/model.vmfb is loaded once; every instance shares
// that immutable kiln_module_t. Per instance: one kiln_context_t (a context is
// thread-compatible, and Triton runs one Execute at a time per instance), with
// kiln_threads threads, and the staging buffers its calls reuse.
//
// Execute gets the requests the scheduler gathered. With max_batch_size > 0 the requests
// whose inputs agree on every dimension but the first are concatenated along it into
// 64-byte aligned staging buffers (Kiln's kernels need that alignment), answered by one
// call, and the outputs are split back by rows; a lone request whose single buffer is
// already aligned is passed without a copy. When a merged call fails, its requests are
// retried one by one so that only the faulty ones get an error. A Kiln error becomes that
// request's error response carrying Kiln's message (INVALID_ARG for a caller's mistake).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "capi/kiln.h"
#include "serving/triton_backend/json_value.h"
#include "serving/triton_backend/model_spec.h"
#include "serving/triton_backend/triton_api.h"

namespace kiln::triton {
namespace {

// TRITONBACKEND_ModelInstanceExecute and friends exist since backend API 1.0.
constexpr uint32_t kMinBackendApiMinor = 0;

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void Log(TRITONSERVER_LogLevel level, int line, const std::string& message) {
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(level, __FILE__, line, message.c_str());
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

TRITONSERVER_Error* Error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, message.c_str());
}

// A Kiln status as a Triton error (consumes the status).
TRITONSERVER_Error* FromKiln(kiln_status_t* status, const std::string& context = "") {
  kiln_status_code_t code = kiln_status_code(status);
  TRITONSERVER_Error_Code triton_code = TRITONSERVER_ERROR_INTERNAL;
  switch (code) {
    case KILN_STATUS_INVALID_ARGUMENT:
    case KILN_STATUS_OUT_OF_RANGE:
      triton_code = TRITONSERVER_ERROR_INVALID_ARG;
      break;
    case KILN_STATUS_NOT_FOUND:
      triton_code = TRITONSERVER_ERROR_NOT_FOUND;
      break;
    case KILN_STATUS_UNIMPLEMENTED:
    case KILN_STATUS_INCOMPATIBLE:
      triton_code = TRITONSERVER_ERROR_UNSUPPORTED;
      break;
    case KILN_STATUS_RESOURCE_EXHAUSTED:
      triton_code = TRITONSERVER_ERROR_UNAVAILABLE;
      break;
    default:
      break;
  }
  TRITONSERVER_Error* e = Error(triton_code, context + kiln_status_message(status));
  kiln_status_free(status);
  return e;
}

#define KILN_TRITON_RETURN_IF_ERROR(expr)      \
  do {                                          \
    TRITONSERVER_Error* kiln_triton_e = (expr); \
    if (kiln_triton_e != nullptr) return kiln_triton_e; \
  } while (0)

// A 64-byte aligned buffer that keeps its largest size.
class StagingBuffer {
 public:
  StagingBuffer() = default;
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  ~StagingBuffer() { std::free(data_); }
  char* Reserve(size_t bytes) {
    size_t rounded = std::max<size_t>(KILN_TENSOR_ALIGNMENT, (bytes + KILN_TENSOR_ALIGNMENT - 1) /
                                                                 KILN_TENSOR_ALIGNMENT * KILN_TENSOR_ALIGNMENT);
    if (rounded > capacity_) {
      std::free(data_);
      data_ = static_cast<char*>(std::aligned_alloc(KILN_TENSOR_ALIGNMENT, rounded));
      capacity_ = data_ == nullptr ? 0 : rounded;
    }
    return data_;
  }

 private:
  char* data_ = nullptr;
  size_t capacity_ = 0;
};

struct ModelState {
  std::string name;
  ModelSpec spec;
  kiln_module_t* module = nullptr;
  const kiln_function_t* function = nullptr;
  ~ModelState() { kiln_module_release(module); }
};

struct InstanceState {
  TRITONBACKEND_ModelInstance* instance = nullptr;
  ModelState* model = nullptr;
  kiln_context_t* context = nullptr;
  std::vector<std::unique_ptr<StagingBuffer>> staging;  // one per input
  ~InstanceState() { kiln_context_release(context); }
};

// One request's inputs as Triton gave them.
struct Pending {
  TRITONBACKEND_Request* request = nullptr;
  std::vector<TRITONBACKEND_Input*> inputs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<uint32_t> buffer_counts;
  int64_t rows = 1;  // the batch size of a batched model's request
};

// Releases a kiln_outputs_t and the tensors wrapped for a call.
struct CallResources {
  std::vector<kiln_tensor_t*> tensors;
  kiln_outputs_t* outputs = nullptr;
  ~CallResources() {
    kiln_outputs_release(outputs);
    for (kiln_tensor_t* t : tensors) kiln_tensor_release(t);
  }
};

TRITONSERVER_Error* ReadModelSpec(TRITONBACKEND_Model* model, const std::string& name, ModelSpec* spec) {
  TRITONSERVER_Message* message = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelConfig(model, 1, &message));
  const char* text = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* e = TRITONSERVER_MessageSerializeToJson(message, &text, &size);
  JsonValue config;
  std::string error;
  bool ok = e == nullptr && ParseJson(text, size, &config, &error) && ReadModelConfig(config, spec, &error);
  TRITONSERVER_Error* d = TRITONSERVER_MessageDelete(message);
  if (d != nullptr) TRITONSERVER_ErrorDelete(d);
  if (e != nullptr) return e;
  if (!ok) return Error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + name + "': " + error);
  return nullptr;
}

// Fills `out` with the properties of each configured input of `request`.
TRITONSERVER_Error* GatherInputs(const ModelSpec& spec, TRITONBACKEND_Request* request, Pending* out) {
  out->request = request;
  const bool batched = spec.max_batch_size > 0;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const TensorSpec& t = spec.inputs[i];
    TRITONBACKEND_Input* input = nullptr;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, t.name.c_str(), &input));
    TRITONSERVER_DataType dtype = TRITONSERVER_TYPE_INVALID;
    const int64_t* shape = nullptr;
    uint32_t ndim = 0;
    uint64_t byte_size = 0;
    uint32_t buffer_count = 0;
    KILN_TRITON_RETURN_IF_ERROR(
        TRITONBACKEND_InputProperties(input, nullptr, &dtype, &shape, &ndim, &byte_size, &buffer_count));
    if (dtype != t.triton_dtype) {
      return Error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + t.name + "': expected " +
                                                       ConfigDtypeName(t.triton_dtype) + ", got " +
                                                       ConfigDtypeName(dtype));
    }
    std::vector<int64_t> dims(shape, shape + ndim);
    int64_t elements = 1;
    for (int64_t d : dims) elements *= d;
    if (byte_size != static_cast<uint64_t>(elements) * t.element_size) {
      return Error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + t.name + "': " + std::to_string(byte_size) +
                                                       " bytes for " + std::to_string(elements) + " elements");
    }
    if (batched) {
      if (dims.empty()) return Error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + t.name + "' has no batch dimension");
      if (i == 0) {
        out->rows = dims[0];
      } else if (dims[0] != out->rows) {
        return Error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + t.name + "' has batch size " +
                                                         std::to_string(dims[0]) + ", input '" +
                                                         spec.inputs[0].name + "' " + std::to_string(out->rows));
      }
    }
    out->inputs.push_back(input);
    out->shapes.push_back(std::move(dims));
    out->buffer_counts.push_back(buffer_count);
  }
  return nullptr;
}

// Copies the buffers of input `i` of `p` to `dst` (byte_size bytes in all).
TRITONSERVER_Error* CopyInput(const Pending& p, size_t i, char* dst) {
  for (uint32_t b = 0; b < p.buffer_counts[i]; ++b) {
    const void* buffer = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(p.inputs[i], b, &buffer, &size, &type, &type_id));
    if (type == TRITONSERVER_MEMORY_GPU) {
      return Error(TRITONSERVER_ERROR_UNSUPPORTED, "the kiln backend takes inputs in CPU memory only");
    }
    std::memcpy(dst, buffer, size);
    dst += size;
  }
  return nullptr;
}

// Sends `error` (owned) as the response of `p`, records the request and releases it.
void Fail(InstanceState* state, const Pending& p, TRITONSERVER_Error* error, uint64_t exec_start) {
  uint64_t now = NowNs();
  TRITONSERVER_Error* e =
      TRITONBACKEND_ModelInstanceReportStatistics(state->instance, p.request, false, exec_start, now, now, now);
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
  TRITONBACKEND_Response* response = nullptr;
  e = TRITONBACKEND_ResponseNew(&response, p.request);
  if (e == nullptr) {
    e = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
  } else {
    TRITONSERVER_ErrorDelete(error);
  }
  if (e != nullptr) {
    Log(TRITONSERVER_LOG_ERROR, __LINE__, std::string("kiln backend: could not send an error response: ") +
                                              TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
  }
  e = TRITONBACKEND_RequestRelease(p.request, TRITONSERVER_REQUEST_RELEASE_ALL);
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

// Answers `p` with rows [row, row + p.rows) of the call's outputs (all rows when not
// batched): the outputs the request asked for, by name.
TRITONSERVER_Error* Respond(const ModelSpec& spec, const Pending& p, kiln_outputs_t* outputs, int64_t row,
                            int64_t total_rows, TRITONBACKEND_Response* response) {
  const bool batched = spec.max_batch_size > 0;
  uint32_t requested = 0;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(p.request, &requested));
  for (uint32_t r = 0; r < requested; ++r) {
    const char* name = nullptr;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(p.request, r, &name));
    size_t index = spec.outputs.size();
    for (size_t j = 0; j < spec.outputs.size(); ++j) {
      if (spec.outputs[j].name == name) index = j;
    }
    if (index == spec.outputs.size()) {
      return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("no output named '") + name + "'");
    }
    const TensorSpec& t = spec.outputs[index];
    const kiln_tensor_t* tensor = nullptr;
    kiln_status_t* s = kiln_outputs_get(outputs, index, &tensor);
    kiln_dtype_t dtype = 0;
    int32_t ndim = 0;
    const int64_t* shape = nullptr;
    void* data = nullptr;
    if (s == nullptr) s = kiln_tensor_dtype(tensor, &dtype);
    if (s == nullptr) s = kiln_tensor_ndim(tensor, &ndim);
    if (s == nullptr) s = kiln_tensor_shape(tensor, &shape);
    if (s == nullptr) s = kiln_tensor_data(tensor, &data);
    if (s != nullptr) return FromKiln(s, "output '" + t.name + "': ");
    if (dtype != t.kiln_dtype) {
      return Error(TRITONSERVER_ERROR_INTERNAL, "output '" + t.name + "': the function returned " +
                                                    KilnDtypeName(dtype) + ", the configuration says " +
                                                    ConfigDtypeName(t.triton_dtype));
    }
    std::vector<int64_t> dims(shape, shape + ndim);
    int64_t row_elements = 1;
    for (size_t d = batched ? 1 : 0; d < dims.size(); ++d) row_elements *= dims[d];
    const char* src = static_cast<const char*>(data);
    if (batched) {
      if (dims.empty() || dims[0] != total_rows) {
        return Error(TRITONSERVER_ERROR_INTERNAL, "output '" + t.name + "' does not have the " +
                                                      std::to_string(total_rows) + " rows of the batch");
      }
      src += static_cast<size_t>(row * row_elements) * t.element_size;
      dims[0] = p.rows;
    }
    size_t bytes = static_cast<size_t>((batched ? p.rows : 1) * row_elements) * t.element_size;
    TRITONBACKEND_Output* output = nullptr;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, name, t.triton_dtype, dims.data(),
                                                             static_cast<uint32_t>(dims.size())));
    void* buffer = nullptr;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, bytes, &type, &type_id));
    if (type == TRITONSERVER_MEMORY_GPU) {
      return Error(TRITONSERVER_ERROR_UNSUPPORTED, "the kiln backend writes outputs to CPU memory only");
    }
    if (bytes > 0) std::memcpy(buffer, src, bytes);
  }
  return nullptr;
}

// One Kiln call for `group` (requests with equal non-batch dims; one request when not
// batched). Every request of the group is answered and released, except when the merged
// call fails: then each is run alone.
void RunGroup(InstanceState* state, const std::vector<const Pending*>& group, uint64_t exec_start) {
  const ModelSpec& spec = state->model->spec;
  const bool batched = spec.max_batch_size > 0;
  CallResources call;
  int64_t rows = 0;
  for (const Pending* p : group) rows += p->rows;
  TRITONSERVER_Error* error = nullptr;
  for (size_t i = 0; i < spec.inputs.size() && error == nullptr; ++i) {
    const TensorSpec& t = spec.inputs[i];
    std::vector<int64_t> shape = group[0]->shapes[i];
    if (batched) shape[0] = rows;
    int64_t elements = 1;
    for (int64_t d : shape) elements *= d;
    size_t bytes = static_cast<size_t>(elements) * t.element_size;
    void* data = nullptr;
    if (group.size() == 1 && group[0]->buffer_counts[i] == 1) {
      // Zero copy when Triton's one buffer is in CPU memory and aligned.
      const void* buffer = nullptr;
      uint64_t size = 0;
      TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
      int64_t type_id = 0;
      error = TRITONBACKEND_InputBuffer(group[0]->inputs[i], 0, &buffer, &size, &type, &type_id);
      if (error == nullptr && type != TRITONSERVER_MEMORY_GPU &&
          reinterpret_cast<uintptr_t>(buffer) % KILN_TENSOR_ALIGNMENT == 0) {
        data = const_cast<void*>(buffer);
      }
    }
    if (error == nullptr && data == nullptr) {
      char* base = state->staging[i]->Reserve(bytes);
      char* dst = base;
      if (dst == nullptr) {
        error = Error(TRITONSERVER_ERROR_UNAVAILABLE, "out of memory staging input '" + t.name + "'");
        break;
      }
      for (const Pending* p : group) {
        if (error != nullptr) break;
        error = CopyInput(*p, i, dst);
        int64_t request_elements = 1;
        for (int64_t d : p->shapes[i]) request_elements *= d;
        dst += static_cast<size_t>(request_elements) * t.element_size;
      }
      data = base;
    }
    if (error != nullptr) break;
    kiln_tensor_t* tensor = nullptr;
    kiln_status_t* s = kiln_tensor_wrap(data, shape.data(), static_cast<int32_t>(shape.size()), t.kiln_dtype, &tensor);
    if (s != nullptr) {
      error = FromKiln(s, "input '" + t.name + "': ");
      break;
    }
    call.tensors.push_back(tensor);
  }
  uint64_t compute_start = NowNs();
  if (error == nullptr) {
    kiln_status_t* s = kiln_context_invoke_function(state->context, state->model->function, call.tensors.data(),
                                                    call.tensors.size(), &call.outputs);
    if (s != nullptr) error = FromKiln(s);
  }
  uint64_t compute_end = NowNs();
  if (error == nullptr) {
    size_t count = 0;
    kiln_status_t* s = kiln_outputs_count(call.outputs, &count);
    if (s != nullptr) {
      error = FromKiln(s);
    } else if (count != spec.outputs.size()) {
      error = Error(TRITONSERVER_ERROR_INTERNAL, "the function returned " + std::to_string(count) +
                                                     " outputs, the configuration lists " +
                                                     std::to_string(spec.outputs.size()));
    }
  }
  if (error != nullptr && group.size() > 1) {
    // Let each request find out on its own whether it is the faulty one.
    TRITONSERVER_ErrorDelete(error);
    for (const Pending* p : group) RunGroup(state, {p}, exec_start);
    return;
  }
  if (error != nullptr) {
    Fail(state, *group[0], error, exec_start);
    return;
  }
  // Responses are filled first and sent last, after the statistics: a client that reads
  // the metrics once it has its answer then finds its request counted.
  std::vector<TRITONBACKEND_Response*> responses(group.size(), nullptr);
  std::vector<TRITONSERVER_Error*> errors(group.size(), nullptr);
  int64_t row = 0;
  for (size_t k = 0; k < group.size(); ++k) {
    errors[k] = TRITONBACKEND_ResponseNew(&responses[k], group[k]->request);
    if (errors[k] == nullptr) errors[k] = Respond(spec, *group[k], call.outputs, row, rows, responses[k]);
    row += group[k]->rows;
  }
  const uint64_t exec_end = NowNs();
  for (size_t k = 0; k < group.size(); ++k) {
    TRITONSERVER_Error* st = TRITONBACKEND_ModelInstanceReportStatistics(
        state->instance, group[k]->request, errors[k] == nullptr, exec_start, compute_start, compute_end, exec_end);
    if (st != nullptr) TRITONSERVER_ErrorDelete(st);
  }
  TRITONSERVER_Error* st = TRITONBACKEND_ModelInstanceReportBatchStatistics(
      state->instance, batched ? static_cast<uint64_t>(rows) : 1, exec_start, compute_start, compute_end, exec_end);
  if (st != nullptr) TRITONSERVER_ErrorDelete(st);
  for (size_t k = 0; k < group.size(); ++k) {
    if (responses[k] != nullptr) {
      TRITONSERVER_Error* send = TRITONBACKEND_ResponseSend(responses[k], TRITONSERVER_RESPONSE_COMPLETE_FINAL, errors[k]);
      if (send != nullptr) {
        Log(TRITONSERVER_LOG_ERROR, __LINE__, std::string("kiln backend: could not send a response: ") +
                                                  TRITONSERVER_ErrorMessage(send));
        TRITONSERVER_ErrorDelete(send);
      }
    } else {
      // No response object to carry the error: the server answers a released request
      // without a response with an error of its own.
      Log(TRITONSERVER_LOG_ERROR, __LINE__, std::string("kiln backend: could not create a response: ") +
                                                TRITONSERVER_ErrorMessage(errors[k]));
      TRITONSERVER_ErrorDelete(errors[k]);
    }
    TRITONSERVER_Error* rel = TRITONBACKEND_RequestRelease(group[k]->request, TRITONSERVER_REQUEST_RELEASE_ALL);
    if (rel != nullptr) TRITONSERVER_ErrorDelete(rel);
  }
}

}  // namespace
}  // namespace kiln::triton

using kiln::triton::Error;
using kiln::triton::FromKiln;
using kiln::triton::InstanceState;
using kiln::triton::ModelState;

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  uint32_t major = 0;
  uint32_t minor = 0;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
  const char* name = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_BackendName(backend, &name));
  if (major != KILN_TRITONBACKEND_API_MAJOR || minor < kiln::triton::kMinBackendApiMinor) {
    return Error(TRITONSERVER_ERROR_UNSUPPORTED,
                 "the kiln backend needs Triton backend API " + std::to_string(KILN_TRITONBACKEND_API_MAJOR) +
                     ".x; this server has " + std::to_string(major) + "." + std::to_string(minor));
  }
  kiln::triton::Log(TRITONSERVER_LOG_INFO, __LINE__,
                    std::string("kiln backend '") + name + "': Kiln " + kiln_version_string() +
                        ", Triton backend API " + std::to_string(major) + "." + std::to_string(minor) +
                        " (declared against " + std::to_string(KILN_TRITONBACKEND_API_MAJOR) + "." +
                        std::to_string(KILN_TRITONBACKEND_API_MINOR) + ")");
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  const char* name = nullptr;
  uint64_t version = 0;
  const char* location = nullptr;
  TRITONBACKEND_ArtifactType artifact = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelVersion(model, &version));
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelRepository(model, &artifact, &location));
  auto state = std::make_unique<ModelState>();
  state->name = name;
  KILN_TRITON_RETURN_IF_ERROR(kiln::triton::ReadModelSpec(model, state->name, &state->spec));
  std::string path = std::string(location) + "/" + std::to_string(version) + "/" + state->spec.vmfb_file;
  kiln_status_t* s = kiln_module_load_file(path.c_str(), &state->module);
  if (s == nullptr) s = kiln_module_lookup_function(state->module, state->spec.function.c_str(), &state->function);
  if (s != nullptr) return FromKiln(s, "model '" + state->name + "': " + path + ": ");
  std::string error;
  if (!kiln::triton::MatchFunction(state->name, state->function, &state->spec, &error)) {
    return Error(TRITONSERVER_ERROR_INVALID_ARG, error);
  }
  kiln::triton::Log(TRITONSERVER_LOG_INFO, __LINE__,
                    "kiln backend: model '" + state->name + "' loaded " + path + ", function '" +
                        state->spec.function + "', max_batch_size " + std::to_string(state->spec.max_batch_size));
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelSetState(model, state.get()));
  state.release();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* state = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &state));
  delete static_cast<ModelState*>(state);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  TRITONBACKEND_Model* model = nullptr;
  void* model_state = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &model_state));
  auto state = std::make_unique<InstanceState>();
  state->instance = instance;
  state->model = static_cast<ModelState*>(model_state);
  kiln_context_options_t* options = nullptr;
  kiln_status_t* s = kiln_context_options_create(&options);
  if (s == nullptr && state->model->spec.threads > 0) {
    s = kiln_context_options_set_num_threads(options, state->model->spec.threads);
  }
  if (s == nullptr) s = kiln_context_options_set_executor(options, KILN_EXECUTOR_AUTO);
  if (s == nullptr) s = kiln_context_create_with_options(state->model->module, options, &state->context);
  kiln_context_options_release(options);
  if (s != nullptr) return FromKiln(s, "model '" + state->model->name + "': ");
  for (size_t i = 0; i < state->model->spec.inputs.size(); ++i) {
    state->staging.push_back(std::make_unique<kiln::triton::StagingBuffer>());
  }
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceSetState(instance, state.get()));
  state.release();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* state = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &state));
  delete static_cast<InstanceState*>(state);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests, uint32_t request_count) {
  void* raw = nullptr;
  KILN_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &raw));
  auto* state = static_cast<InstanceState*>(raw);
  const kiln::triton::ModelSpec& spec = state->model->spec;
  const uint64_t exec_start = kiln::triton::NowNs();
  // From here on the requests are ours: every one is answered and released.
  std::vector<kiln::triton::Pending> pending(request_count);
  std::vector<bool> valid(request_count, false);
  for (uint32_t r = 0; r < request_count; ++r) {
    TRITONSERVER_Error* e = kiln::triton::GatherInputs(spec, requests[r], &pending[r]);
    if (e != nullptr) {
      pending[r].request = requests[r];
      kiln::triton::Fail(state, pending[r], e, exec_start);
    } else {
      valid[r] = true;
    }
  }
  // Groups of requests that one call can answer, in arrival order of their first member.
  std::vector<std::vector<const kiln::triton::Pending*>> groups;
  std::map<std::vector<std::vector<int64_t>>, size_t> group_of;
  for (uint32_t r = 0; r < request_count; ++r) {
    if (!valid[r]) continue;
    if (spec.max_batch_size == 0) {
      groups.push_back({&pending[r]});
      continue;
    }
    std::vector<std::vector<int64_t>> key;
    for (const auto& shape : pending[r].shapes) key.emplace_back(shape.begin() + 1, shape.end());
    auto [it, inserted] = group_of.emplace(std::move(key), groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&pending[r]);
  }
  for (const auto& group : groups) kiln::triton::RunGroup(state, group, exec_start);
  return nullptr;
}

}  // extern "C"
