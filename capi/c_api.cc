// The C API (kiln.h) over vm::Module / vm::Context and the global registry:
// status, tensors, modules and their function tables, contexts, calls,
// profiling, outputs and registered C functions. Instances (instance.cc),
// values (value.cc) and DLPack (dlpack.cc) have their own files; the handle
// bodies are in c_api_internal.h.
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "capi/c_api_internal.h"
#include "capi/kiln.h"
#include "runtime/any.h"
#include "runtime/profiler.h"
#include "runtime/registry.h"
#include "runtime/status.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"
#include "vm/module.h"

#ifndef KILN_VERSION_STRING
#define KILN_VERSION_STRING "0.0.0"
#endif

using kiln::Any;
using kiln::AnyKind;
using kiln::DType;
using kiln::Span;
using kiln::Status;
using kiln::StatusCode;
using kiln::Tensor;
using kiln::capi::FromStatus;
using kiln::capi::Invalid;
using kiln::capi::MakeStatus;
using kiln::capi::NoMemory;

namespace kiln {
namespace capi {

static_assert(static_cast<int>(KILN_STATUS_INVALID_ARGUMENT) == static_cast<int>(StatusCode::kInvalidArgument) &&
                  static_cast<int>(KILN_STATUS_NOT_FOUND) == static_cast<int>(StatusCode::kNotFound) &&
                  static_cast<int>(KILN_STATUS_OUT_OF_RANGE) == static_cast<int>(StatusCode::kOutOfRange) &&
                  static_cast<int>(KILN_STATUS_DATA_LOSS) == static_cast<int>(StatusCode::kDataLoss) &&
                  static_cast<int>(KILN_STATUS_UNIMPLEMENTED) == static_cast<int>(StatusCode::kUnimplemented) &&
                  static_cast<int>(KILN_STATUS_FAILED_PRECONDITION) ==
                      static_cast<int>(StatusCode::kFailedPrecondition) &&
                  static_cast<int>(KILN_STATUS_RESOURCE_EXHAUSTED) ==
                      static_cast<int>(StatusCode::kResourceExhausted) &&
                  static_cast<int>(KILN_STATUS_INTERNAL) == static_cast<int>(StatusCode::kInternal) &&
                  static_cast<int>(KILN_STATUS_INCOMPATIBLE) == static_cast<int>(StatusCode::kIncompatible),
              "kiln_status_code_t mirrors kiln::StatusCode");
static_assert(KILN_TENSOR_ALIGNMENT == kiln::kTensorAlignment, "kiln.h states the runtime's alignment");
static_assert(static_cast<int>(KILN_VALUE_OBJECT) == static_cast<int>(AnyKind::kOpaque) &&
                  static_cast<int>(KILN_VALUE_TENSOR) == static_cast<int>(AnyKind::kTensor) &&
                  static_cast<int>(KILN_VALUE_TUPLE) == static_cast<int>(AnyKind::kTuple) &&
                  static_cast<int>(KILN_VALUE_SHAPE) == static_cast<int>(AnyKind::kShape),
              "kiln_value_kind_t mirrors kiln::AnyKind");

namespace {
// Returned when even the status cannot be allocated; kiln_status_free skips it.
kiln_status_t g_out_of_memory{KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory"};
}  // namespace

kiln_status_t* MakeStatus(kiln_status_code_t code, std::string message) {
  if (code == KILN_STATUS_OK) return nullptr;
  kiln_status_t* s = new (std::nothrow) kiln_status_t;
  if (s == nullptr) return &g_out_of_memory;
  s->code = code;
  s->message = std::move(message);
  return s;
}

bool IsStaticOutOfMemory(const kiln_status_t* status) { return status == &g_out_of_memory; }

kiln_status_t* FromStatus(const Status& status) {
  if (status.ok()) return nullptr;
  return MakeStatus(static_cast<kiln_status_code_t>(status.code()), status.message());
}

kiln_status_t* Invalid(const char* function, const std::string& message) {
  return MakeStatus(KILN_STATUS_INVALID_ARGUMENT, std::string(function) + ": " + message);
}

kiln_status_t* NoMemory(const char* function) {
  return MakeStatus(KILN_STATUS_RESOURCE_EXHAUSTED, std::string(function) + ": out of memory");
}

int RawEnum(const void* value) {
  int raw;
  std::memcpy(&raw, value, sizeof(raw));
  return raw;
}

DType ToDType(kiln_dtype_t t) {
  return DType{static_cast<uint8_t>(KILN_DTYPE_GET_CODE(t)), static_cast<uint8_t>(KILN_DTYPE_GET_BITS(t)),
               static_cast<uint16_t>(KILN_DTYPE_GET_LANES(t))};
}

kiln_dtype_t FromDType(DType t) { return KILN_DTYPE(t.code, t.bits, t.lanes); }

kiln_status_t* CheckShape(const char* function, const int64_t* shape, int32_t ndim, kiln_dtype_t dtype) {
  if (ndim < 0) return Invalid(function, kiln::StrFormat("ndim %d is negative", ndim));
  if (ndim > 0 && shape == nullptr) return Invalid(function, "shape is NULL");
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] < 0) {
      return Invalid(function, kiln::StrFormat("dimension %d is negative (%lld)", i, static_cast<long long>(shape[i])));
    }
  }
  uint32_t code = KILN_DTYPE_GET_CODE(dtype);
  if (KILN_DTYPE_GET_BITS(dtype) == 0 || KILN_DTYPE_GET_LANES(dtype) == 0 ||
      (code != KILN_DTYPE_CODE_INT && code != KILN_DTYPE_CODE_UINT && code != KILN_DTYPE_CODE_FLOAT &&
       code != KILN_DTYPE_CODE_BFLOAT)) {
    return Invalid(function, kiln::StrFormat("invalid dtype 0x%08x", dtype));
  }
  return nullptr;
}

namespace {

// The kiln_value_kind_t a declared parameter or result has.
kiln_value_kind_t InfoKind(const vm::ValueInfo& v) {
  switch (v.kind) {
    case vm::ValueInfo::Kind::kTensor: return KILN_VALUE_TENSOR;
    case vm::ValueInfo::Kind::kShape: return KILN_VALUE_SHAPE;
    case vm::ValueInfo::Kind::kTuple: return KILN_VALUE_TUPLE;
    case vm::ValueInfo::Kind::kPrim: return v.dtype.code == kDLFloat ? KILN_VALUE_FLOAT : KILN_VALUE_INT;
    case vm::ValueInfo::Kind::kFunction: return KILN_VALUE_FUNCTION;
    case vm::ValueInfo::Kind::kObject: return KILN_VALUE_OBJECT;
  }
  return KILN_VALUE_OBJECT;
}

// A dimension's text as a size: "784" -> 784; anything else (a symbol, an
// expression, "") -> -1.
int64_t StaticDim(const std::string& text) {
  if (text.empty() || text.size() > 18) return -1;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

void FillInfos(const std::vector<vm::ValueInfo>& from, std::vector<kiln_value_info_storage>* to) {
  to->resize(from.size());
  for (size_t i = 0; i < from.size(); ++i) {
    kiln_value_info_storage& s = (*to)[i];
    s.info = from[i];
    if (s.info.ndim > 0 && s.info.dims.size() != static_cast<size_t>(s.info.ndim)) {
      s.info.dims.assign(static_cast<size_t>(s.info.ndim), "");  // rank known, sizes undeclared
    }
    for (const std::string& d : s.info.dims) s.dims.push_back(StaticDim(d));
    for (const std::string& d : s.info.dims) s.dim_names.push_back(d.c_str());
  }
}

}  // namespace

void FillValueInfo(const kiln_value_info_storage& s, kiln_value_info_t* out) {
  out->name = s.info.name.c_str();
  out->kind = InfoKind(s.info);
  bool has_dtype = s.info.kind == vm::ValueInfo::Kind::kTensor || s.info.kind == vm::ValueInfo::Kind::kPrim;
  out->dtype = has_dtype && s.info.dtype.bits != 0 ? FromDType(s.info.dtype) : 0;
  out->ndim = s.info.ndim;
  out->dims = s.dims.empty() ? nullptr : s.dims.data();
  out->dim_names = s.dim_names.empty() ? nullptr : s.dim_names.data();
}

kiln_module_t* WrapModule(std::shared_ptr<const vm::Module> module, std::shared_ptr<const InstanceCore> instance) {
  std::unique_ptr<kiln_module_t> m(new (std::nothrow) kiln_module_t);
  std::shared_ptr<kiln_function_table> table(new (std::nothrow) kiln_function_table);
  if (m == nullptr || table == nullptr) return nullptr;
  m->instance = std::move(instance);
  m->module = std::move(module);
  std::vector<std::string> names = m->module->FunctionNames();
  table->functions.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    kiln_function& f = table->functions[i];
    f.name = names[i];
    kiln::Result<vm::FunctionSignature> sig = m->module->GetSignature(f.name);
    if (sig.ok()) {
      f.num_params = sig->params.size();
      f.num_results = sig->results.size();
      FillInfos(sig->params, &f.params);
      FillInfos(sig->results, &f.results);
    }
    f.has_graph = m->module->HasStaticGraph(f.name);
    kiln::Result<vm::FunctionHandle> handle = m->module->LookupFunction(f.name);
    if (handle.ok()) f.handle = *handle;
  }
  m->table = std::move(table);
  return m.release();
}

}  // namespace capi
}  // namespace kiln

namespace {

using kiln::capi::CheckShape;
using kiln::capi::FromDType;
using kiln::capi::ToDType;

kiln_status_t* FinishLoad(const char* function, kiln::Result<std::shared_ptr<const kiln::vm::Module>> loaded,
                          kiln_module_t** out_module) {
  if (!loaded.ok()) return FromStatus(loaded.status());
  kiln_module_t* m = kiln::capi::WrapModule(std::move(loaded).value(), nullptr);
  if (m == nullptr) return NoMemory(function);
  *out_module = m;
  return nullptr;
}

std::string FunctionList(const std::vector<kiln_function>& functions) {
  std::string names;
  for (const kiln_function& f : functions) names += (names.empty() ? "" : ", ") + f.name;
  return names.empty() ? "none" : names;
}

}  // namespace

extern "C" {

uint32_t kiln_api_version(void) { return (KILN_API_VERSION_MAJOR << 16) | KILN_API_VERSION_MINOR; }

const char* kiln_version_string(void) { return KILN_VERSION_STRING; }

// ---- Status ----------------------------------------------------------------

kiln_status_t* kiln_status_create(kiln_status_code_t code, const char* message) {
  return MakeStatus(code, message ? message : "");
}

kiln_status_code_t kiln_status_code(const kiln_status_t* status) {
  return status ? status->code : KILN_STATUS_OK;
}

const char* kiln_status_message(const kiln_status_t* status) { return status ? status->message.c_str() : ""; }

const char* kiln_status_code_name(kiln_status_code_t code) {
  switch (code) {
    case KILN_STATUS_OK: return "OK";
    case KILN_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case KILN_STATUS_NOT_FOUND: return "NOT_FOUND";
    case KILN_STATUS_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case KILN_STATUS_DATA_LOSS: return "DATA_LOSS";
    case KILN_STATUS_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case KILN_STATUS_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case KILN_STATUS_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case KILN_STATUS_INTERNAL: return "INTERNAL";
    case KILN_STATUS_INCOMPATIBLE: return "INCOMPATIBLE";
  }
  return "UNKNOWN";
}

void kiln_status_free(kiln_status_t* status) {
  if (!kiln::capi::IsStaticOutOfMemory(status)) delete status;
}

// ---- Tensors ---------------------------------------------------------------

kiln_status_t* kiln_tensor_wrap(void* data, const int64_t* shape, int32_t ndim, kiln_dtype_t dtype,
                                kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  if (kiln_status_t* s = CheckShape(__func__, shape, ndim, dtype)) return s;
  Span<const int64_t> dims(shape, static_cast<size_t>(ndim));
  if (data == nullptr && kiln::ShapeNumElements(dims) != 0) return Invalid(__func__, "data is NULL");
  kiln_tensor_t* t = new (std::nothrow) kiln_tensor_t;
  if (t == nullptr) return NoMemory(__func__);
  t->tensor = Tensor::Borrow(data, dims, ToDType(dtype));
  *out_tensor = t;
  return nullptr;
}

kiln_status_t* kiln_tensor_create(const int64_t* shape, int32_t ndim, kiln_dtype_t dtype,
                                  kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  if (kiln_status_t* s = CheckShape(__func__, shape, ndim, dtype)) return s;
  kiln::Result<Tensor> created = Tensor::Empty(Span<const int64_t>(shape, static_cast<size_t>(ndim)), ToDType(dtype));
  if (!created.ok()) return FromStatus(created.status());
  std::memset(created->raw_data(), 0, created->NumBytes());
  kiln_tensor_t* t = new (std::nothrow) kiln_tensor_t;
  if (t == nullptr) return NoMemory(__func__);
  t->tensor = std::move(created).value();
  *out_tensor = t;
  return nullptr;
}

kiln_status_t* kiln_tensor_share(const kiln_tensor_t* tensor, kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  KILN_CAPI_REQUIRE(tensor);
  kiln_tensor_t* t = new (std::nothrow) kiln_tensor_t;
  if (t == nullptr) return NoMemory(__func__);
  t->tensor = tensor->tensor;
  *out_tensor = t;
  return nullptr;
}

void kiln_tensor_release(kiln_tensor_t* tensor) { delete tensor; }

kiln_status_t* kiln_tensor_dtype(const kiln_tensor_t* tensor, kiln_dtype_t* out_dtype) {
  KILN_CAPI_REQUIRE(out_dtype);
  *out_dtype = 0;
  KILN_CAPI_REQUIRE(tensor);
  *out_dtype = FromDType(tensor->tensor.dtype());
  return nullptr;
}

kiln_status_t* kiln_tensor_ndim(const kiln_tensor_t* tensor, int32_t* out_ndim) {
  KILN_CAPI_REQUIRE(out_ndim);
  *out_ndim = 0;
  KILN_CAPI_REQUIRE(tensor);
  *out_ndim = tensor->tensor.ndim();
  return nullptr;
}

kiln_status_t* kiln_tensor_shape(const kiln_tensor_t* tensor, const int64_t** out_shape) {
  KILN_CAPI_REQUIRE(out_shape);
  *out_shape = nullptr;
  KILN_CAPI_REQUIRE(tensor);
  // A vector's data() may be NULL when empty; promise a valid pointer anyway.
  static const int64_t kNoDims[1] = {0};
  const std::vector<int64_t>& dims = tensor->tensor.shape();
  *out_shape = dims.empty() ? kNoDims : dims.data();
  return nullptr;
}

kiln_status_t* kiln_tensor_element_count(const kiln_tensor_t* tensor, int64_t* out_count) {
  KILN_CAPI_REQUIRE(out_count);
  *out_count = 0;
  KILN_CAPI_REQUIRE(tensor);
  *out_count = tensor->tensor.NumElements();
  return nullptr;
}

kiln_status_t* kiln_tensor_byte_size(const kiln_tensor_t* tensor, size_t* out_size) {
  KILN_CAPI_REQUIRE(out_size);
  *out_size = 0;
  KILN_CAPI_REQUIRE(tensor);
  *out_size = tensor->tensor.NumBytes();
  return nullptr;
}

kiln_status_t* kiln_tensor_device(const kiln_tensor_t* tensor, int32_t* out_device_type, int32_t* out_device_id) {
  KILN_CAPI_REQUIRE(out_device_type);
  KILN_CAPI_REQUIRE(out_device_id);
  *out_device_type = 0;
  *out_device_id = 0;
  KILN_CAPI_REQUIRE(tensor);
  *out_device_type = static_cast<int32_t>(tensor->tensor.dl()->device.device_type);
  *out_device_id = tensor->tensor.dl()->device.device_id;
  return nullptr;
}

kiln_status_t* kiln_tensor_data(const kiln_tensor_t* tensor, void** out_data) {
  KILN_CAPI_REQUIRE(out_data);
  *out_data = nullptr;
  KILN_CAPI_REQUIRE(tensor);
  *out_data = tensor->tensor.raw_data();
  return nullptr;
}

// ---- Modules ---------------------------------------------------------------

kiln_status_t* kiln_module_load_file(const char* path, kiln_module_t** out_module) {
  KILN_CAPI_REQUIRE(out_module);
  *out_module = nullptr;
  KILN_CAPI_REQUIRE(path);
  return FinishLoad(__func__, kiln::vm::Module::LoadFile(path), out_module);
}

kiln_status_t* kiln_module_load_buffer(const void* data, size_t size, kiln_module_t** out_module) {
  KILN_CAPI_REQUIRE(out_module);
  *out_module = nullptr;
  KILN_CAPI_REQUIRE(data);
  return FinishLoad(__func__, kiln::vm::Module::LoadBuffer(data, size), out_module);
}

void kiln_module_release(kiln_module_t* module) { delete module; }

kiln_status_t* kiln_module_function_count(const kiln_module_t* module, size_t* out_count) {
  KILN_CAPI_REQUIRE(out_count);
  *out_count = 0;
  KILN_CAPI_REQUIRE(module);
  *out_count = module->table->functions.size();
  return nullptr;
}

kiln_status_t* kiln_module_function_at(const kiln_module_t* module, size_t index,
                                       const kiln_function_t** out_function) {
  KILN_CAPI_REQUIRE(out_function);
  *out_function = nullptr;
  KILN_CAPI_REQUIRE(module);
  if (index >= module->table->functions.size()) {
    return MakeStatus(KILN_STATUS_OUT_OF_RANGE, kiln::StrFormat("kiln_module_function_at: index %zu, but the "
                                                                "module has %zu functions",
                                                                index, module->table->functions.size()));
  }
  *out_function = &module->table->functions[index];
  return nullptr;
}

kiln_status_t* kiln_module_lookup_function(const kiln_module_t* module, const char* name,
                                           const kiln_function_t** out_function) {
  KILN_CAPI_REQUIRE(out_function);
  *out_function = nullptr;
  KILN_CAPI_REQUIRE(module);
  KILN_CAPI_REQUIRE(name);
  for (const kiln_function& f : module->table->functions) {
    if (f.name == name) {
      *out_function = &f;
      return nullptr;
    }
  }
  return MakeStatus(KILN_STATUS_NOT_FOUND, std::string("no function '") + name + "' in the module (it has: " +
                                               FunctionList(module->table->functions) + ")");
}

kiln_status_t* kiln_function_name(const kiln_function_t* function, const char** out_name) {
  KILN_CAPI_REQUIRE(out_name);
  *out_name = nullptr;
  KILN_CAPI_REQUIRE(function);
  *out_name = function->name.c_str();
  return nullptr;
}

kiln_status_t* kiln_function_param_count(const kiln_function_t* function, size_t* out_count) {
  KILN_CAPI_REQUIRE(out_count);
  *out_count = 0;
  KILN_CAPI_REQUIRE(function);
  *out_count = function->num_params;
  return nullptr;
}

kiln_status_t* kiln_function_result_count(const kiln_function_t* function, size_t* out_count) {
  KILN_CAPI_REQUIRE(out_count);
  *out_count = 0;
  KILN_CAPI_REQUIRE(function);
  *out_count = function->num_results;
  return nullptr;
}

namespace {

kiln_status_t* ValueInfoAt(const char* api, const kiln_function_t* function, const char* what,
                           const std::vector<kiln_value_info_storage>& infos, size_t index,
                           kiln_value_info_t* out_info) {
  if (index >= infos.size()) {
    return MakeStatus(KILN_STATUS_OUT_OF_RANGE, kiln::StrFormat("%s: index %zu, but '%s' has %zu %s", api, index,
                                                                function->name.c_str(), infos.size(), what));
  }
  kiln::capi::FillValueInfo(infos[index], out_info);
  return nullptr;
}

}  // namespace

kiln_status_t* kiln_function_param_info(const kiln_function_t* function, size_t index,
                                        kiln_value_info_t* out_info) {
  KILN_CAPI_REQUIRE(out_info);
  *out_info = kiln_value_info_t{};
  KILN_CAPI_REQUIRE(function);
  return ValueInfoAt(__func__, function, "parameters", function->params, index, out_info);
}

kiln_status_t* kiln_function_result_info(const kiln_function_t* function, size_t index,
                                         kiln_value_info_t* out_info) {
  KILN_CAPI_REQUIRE(out_info);
  *out_info = kiln_value_info_t{};
  KILN_CAPI_REQUIRE(function);
  return ValueInfoAt(__func__, function, "results", function->results, index, out_info);
}

// ---- Calls -----------------------------------------------------------------

kiln_status_t* kiln_context_create(const kiln_module_t* module, kiln_context_t** out_context) {
  return kiln_context_create_with_executor(module, KILN_EXECUTOR_AUTO, out_context);
}

namespace {

// C callers may pass any int as a kiln_executor_t; reading an out-of-range
// value as the C++ enum type is undefined (UBSan: "not a valid value for type
// 'kiln_executor_e'"), so the check reads the raw bits.
int RawExecutor(const kiln_executor_t* executor) {
  static_assert(sizeof(int) == sizeof(*executor), "kiln_executor_t is an int-sized enum");
  return kiln::capi::RawEnum(executor);
}

bool KnownExecutor(int executor) {
  return executor == KILN_EXECUTOR_AUTO || executor == KILN_EXECUTOR_VM || executor == KILN_EXECUTOR_GRAPH;
}

}  // namespace

}  // extern "C"

kiln_status_t* kiln::capi::CreateContext(const char* fn, const kiln_module_t* module,
                                         const kiln_context_options& options,
                                         std::shared_ptr<const InstanceCore> instance, kiln_context_t** out_context) {
  if (!KnownExecutor(RawExecutor(&options.executor))) {
    return Invalid(fn, kiln::StrFormat("unknown executor %d", RawExecutor(&options.executor)));
  }
  kiln::vm::ContextOptions context_options;
  context_options.num_threads = options.num_threads;
  if (instance != nullptr) {
    // The instance's pool unless the options ask for a thread count (only
    // contexts of modules loaded through an instance can).
    if (options.num_threads == 0) context_options.thread_pool = instance->pool;
    context_options.shared_allocator = instance->allocator;
  }
  if (options.has_allocator) {
    context_options.shared_allocator.reset(
        new (std::nothrow) CallbackAllocator(options.allocator, "kiln_context_options_set_allocator"));
    if (context_options.shared_allocator == nullptr) return NoMemory(fn);
  }
  switch (options.executor) {
    case KILN_EXECUTOR_VM: context_options.executor = kiln::vm::Executor::kVm; break;
    case KILN_EXECUTOR_GRAPH: context_options.executor = kiln::vm::Executor::kGraph; break;
    default: context_options.executor = kiln::vm::Executor::kAuto; break;
  }
  kiln::Result<std::unique_ptr<kiln::vm::Context>> context = module->module->CreateContext(context_options);
  if (!context.ok()) return FromStatus(context.status());
  if (*context == nullptr) return MakeStatus(KILN_STATUS_INTERNAL, std::string(fn) + ": the module returned no context");
  kiln_context_t* c = new (std::nothrow) kiln_context_t;
  if (c == nullptr) return NoMemory(fn);
  c->executor = options.executor;
  c->module = module->module;
  c->table = module->table;
  c->context = std::move(context).value();
  if (instance != nullptr) {
    instance->Log(KILN_LOG_DEBUG, kiln::StrFormat("context created (executor %s, %d threads)",
                                                  kiln::vm::ExecutorName(c->context->executor()),
                                                  c->context->thread_pool()->num_threads()));
  }
  c->instance = std::move(instance);
  *out_context = c;
  return nullptr;
}

extern "C" {

namespace {
using kiln::capi::CreateContext;
}  // namespace

kiln_status_t* kiln_context_create_with_executor(const kiln_module_t* module, kiln_executor_t executor,
                                                 kiln_context_t** out_context) {
  KILN_CAPI_REQUIRE(out_context);
  *out_context = nullptr;
  KILN_CAPI_REQUIRE(module);
  if (!KnownExecutor(RawExecutor(&executor))) {
    return Invalid(__func__, kiln::StrFormat("unknown executor %d", RawExecutor(&executor)));
  }
  kiln_context_options options;
  options.executor = executor;
  return CreateContext(__func__, module, options, module->instance, out_context);
}

kiln_status_t* kiln_context_options_create(kiln_context_options_t** out_options) {
  KILN_CAPI_REQUIRE(out_options);
  *out_options = nullptr;
  kiln_context_options_t* o = new (std::nothrow) kiln_context_options_t;
  if (o == nullptr) return NoMemory(__func__);
  *out_options = o;
  return nullptr;
}

void kiln_context_options_release(kiln_context_options_t* options) { delete options; }

kiln_status_t* kiln_context_options_set_executor(kiln_context_options_t* options, kiln_executor_t executor) {
  KILN_CAPI_REQUIRE(options);
  if (!KnownExecutor(RawExecutor(&executor))) {
    return Invalid(__func__, kiln::StrFormat("unknown executor %d", RawExecutor(&executor)));
  }
  options->executor = executor;
  return nullptr;
}

kiln_status_t* kiln_context_options_set_num_threads(kiln_context_options_t* options, int32_t num_threads) {
  KILN_CAPI_REQUIRE(options);
  if (num_threads < 0 || num_threads > kiln::kMaxThreads) {
    return Invalid(__func__, kiln::StrFormat("num_threads is %d; use 0 (one per core) to %d",
                                             static_cast<int>(num_threads), kiln::kMaxThreads));
  }
  options->num_threads = num_threads;
  return nullptr;
}

kiln_status_t* kiln_context_options_set_allocator(kiln_context_options_t* options, const kiln_allocator_t* allocator) {
  KILN_CAPI_REQUIRE(options);
  if (allocator == nullptr) {
    options->has_allocator = false;
    options->allocator = kiln_allocator_t{};
    return nullptr;
  }
  if (allocator->allocate == nullptr || allocator->free == nullptr) {
    return Invalid(__func__, "the allocator needs both an allocate and a free callback");
  }
  options->has_allocator = true;
  options->allocator = *allocator;
  return nullptr;
}

kiln_status_t* kiln_context_create_with_options(const kiln_module_t* module, const kiln_context_options_t* options,
                                                kiln_context_t** out_context) {
  KILN_CAPI_REQUIRE(out_context);
  *out_context = nullptr;
  KILN_CAPI_REQUIRE(module);
  KILN_CAPI_REQUIRE(options);
  return CreateContext(__func__, module, *options, module->instance, out_context);
}

kiln_status_t* kiln_context_num_threads(const kiln_context_t* context, int32_t* out_num_threads) {
  KILN_CAPI_REQUIRE(out_num_threads);
  *out_num_threads = 0;
  KILN_CAPI_REQUIRE(context);
  *out_num_threads = context->context->thread_pool()->num_threads();
  return nullptr;
}

void kiln_context_release(kiln_context_t* context) { delete context; }

namespace {

// One released outputs handle per thread, kept for the next call on that
// thread: a server's call loop then allocates no handle and its vectors keep
// their capacity. The spare holds no value (kiln_outputs_release clears it).
thread_local std::unique_ptr<kiln_outputs_t> t_spare_outputs;

kiln_outputs_t* NewOutputs() {
  if (t_spare_outputs != nullptr) return t_spare_outputs.release();
  return new (std::nothrow) kiln_outputs_t;
}

// The call behind kiln_context_invoke and kiln_context_invoke_function, once
// the function is known.
kiln_status_t* Invoke(const char* api, kiln_context_t* context, const kiln_function& function,
                      kiln_tensor_t* const* inputs, size_t num_inputs, kiln_outputs_t** out_outputs) {
  for (size_t i = 0; i < num_inputs; ++i) {
    if (inputs[i] == nullptr) return Invalid(api, kiln::StrFormat("input %zu is NULL", i));
  }
  context->args.resize(num_inputs);
  for (size_t i = 0; i < num_inputs; ++i) context->args[i] = Any(inputs[i]->tensor);
  return kiln::capi::InvokeAnys(api, context, function, num_inputs, out_outputs);
}

}  // namespace

}  // extern "C"

kiln_status_t* kiln::capi::InvokeAnys(const char* api, kiln_context_t* context, const kiln_function& function,
                                      size_t num_inputs, kiln_outputs_t** out_outputs) {
  kiln_status_t* failure = nullptr;
  Any result;
  if (function.num_params != num_inputs) {
    failure = MakeStatus(KILN_STATUS_INVALID_ARGUMENT, kiln::StrFormat("%s: expected %zu inputs, got %zu",
                                                                       function.name.c_str(), function.num_params,
                                                                       num_inputs));
  } else if (context->executor == KILN_EXECUTOR_GRAPH && !function.has_graph) {
    failure = MakeStatus(KILN_STATUS_FAILED_PRECONDITION,
                         "function '" + function.name + "' has no static graph; use KILN_EXECUTOR_VM or AUTO");
  } else {
    failure = FromStatus(context->context->Invoke(function.handle, context->args, &result));
  }
  for (Any& a : context->args) a = Any();  // do not keep the caller's values referenced between calls
  if (failure != nullptr) {
    if (context->instance != nullptr) {
      context->instance->Log(KILN_LOG_WARNING, std::string(api) + " failed: " + kiln_status_message(failure));
    }
    return failure;
  }

  kiln_outputs_t* o = NewOutputs();
  if (o == nullptr) return NoMemory(api);
  if (result.is_tuple()) {
    o->values = result.tuple_fields();
  } else if (!result.is_none()) {
    o->values.push_back(std::move(result));
  }
  o->tensors.resize(o->values.size());
  for (size_t i = 0; i < o->values.size(); ++i) {
    if (o->values[i].is_tensor()) o->tensors[i].tensor = o->values[i].tensor();
  }
  *out_outputs = o;
  return nullptr;
}

extern "C" {

kiln_status_t* kiln_context_invoke(kiln_context_t* context, const char* function, kiln_tensor_t* const* inputs,
                                   size_t num_inputs, kiln_outputs_t** out_outputs) {
  KILN_CAPI_REQUIRE(out_outputs);
  *out_outputs = nullptr;
  KILN_CAPI_REQUIRE(context);
  KILN_CAPI_REQUIRE(function);
  if (num_inputs > 0 && inputs == nullptr) return Invalid(__func__, "inputs is NULL");
  for (const kiln_function& f : context->table->functions) {
    if (f.name == function) return Invoke(__func__, context, f, inputs, num_inputs, out_outputs);
  }
  return MakeStatus(KILN_STATUS_NOT_FOUND, std::string("no function '") + function + "' in the module (it has: " +
                                               FunctionList(context->table->functions) + ")");
}

kiln_status_t* kiln_context_invoke_function(kiln_context_t* context, const kiln_function_t* function,
                                            kiln_tensor_t* const* inputs, size_t num_inputs,
                                            kiln_outputs_t** out_outputs) {
  KILN_CAPI_REQUIRE(out_outputs);
  *out_outputs = nullptr;
  KILN_CAPI_REQUIRE(context);
  KILN_CAPI_REQUIRE(function);
  if (num_inputs > 0 && inputs == nullptr) return Invalid(__func__, "inputs is NULL");
  if (function->handle.module != context->module.get()) {
    return Invalid(__func__, "function '" + function->name + "' is not of this context's module");
  }
  return Invoke(__func__, context, *function, inputs, num_inputs, out_outputs);
}

kiln_status_t* kiln_context_enable_profiling(kiln_context_t* context, int32_t enable) {
  KILN_CAPI_REQUIRE(context);
  if (enable && context->profiler == nullptr) {
    context->profiler.reset(new (std::nothrow) kiln::Profiler());
    if (context->profiler == nullptr) return NoMemory(__func__);
  }
  context->context->set_profiler(enable ? context->profiler.get() : nullptr);
  return nullptr;
}

kiln_status_t* kiln_context_reset_profile(kiln_context_t* context) {
  KILN_CAPI_REQUIRE(context);
  if (context->profiler != nullptr) context->profiler->Clear();
  return nullptr;
}

kiln_status_t* kiln_context_profile_table(kiln_context_t* context, const char** out_table) {
  KILN_CAPI_REQUIRE(out_table);
  *out_table = nullptr;
  KILN_CAPI_REQUIRE(context);
  if (context->profiler == nullptr) {
    return MakeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      "kiln_context_profile_table: profiling was never enabled on this context "
                      "(kiln_context_enable_profiling)");
  }
  context->profile_table = context->profiler->FormatTable();
  *out_table = context->profile_table.c_str();
  return nullptr;
}

kiln_status_t* kiln_context_write_trace(const kiln_context_t* context, const char* path) {
  KILN_CAPI_REQUIRE(context);
  KILN_CAPI_REQUIRE(path);
  if (context->profiler == nullptr) {
    return MakeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      "kiln_context_write_trace: profiling was never enabled on this context "
                      "(kiln_context_enable_profiling)");
  }
  return FromStatus(context->profiler->WriteChromeTrace(path));
}

void kiln_outputs_release(kiln_outputs_t* outputs) {
  if (outputs == nullptr) return;
  // Drop the tensors now, whatever happens to the handle.
  outputs->values.clear();
  outputs->tensors.clear();
  outputs->value_handles.clear();
  if (t_spare_outputs == nullptr) {
    t_spare_outputs.reset(outputs);
  } else {
    delete outputs;
  }
}

kiln_status_t* kiln_outputs_count(const kiln_outputs_t* outputs, size_t* out_count) {
  KILN_CAPI_REQUIRE(out_count);
  *out_count = 0;
  KILN_CAPI_REQUIRE(outputs);
  *out_count = outputs->values.size();
  return nullptr;
}

kiln_status_t* kiln_outputs_get(const kiln_outputs_t* outputs, size_t index, const kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  KILN_CAPI_REQUIRE(outputs);
  if (index >= outputs->values.size()) {
    return MakeStatus(KILN_STATUS_OUT_OF_RANGE, kiln::StrFormat("kiln_outputs_get: index %zu, but there are %zu "
                                                                "outputs",
                                                                index, outputs->values.size()));
  }
  if (!outputs->values[index].is_tensor()) {
    return Invalid(__func__, kiln::StrFormat("output %zu is not a tensor (%s)", index,
                                             outputs->values[index].Describe().c_str()));
  }
  *out_tensor = &outputs->tensors[index];
  return nullptr;
}

// ---- Registered C functions ---------------------------------------------------

kiln_status_t* kiln_args_count(const kiln_args_t* args, size_t* out_count) {
  KILN_CAPI_REQUIRE(out_count);
  *out_count = 0;
  KILN_CAPI_REQUIRE(args);
  *out_count = args->values.size();
  return nullptr;
}

#define KILN_CAPI_CHECK_INDEX(args, index)                                                                \
  do {                                                                                                    \
    if ((index) >= (args)->values.size()) {                                                               \
      return MakeStatus(KILN_STATUS_OUT_OF_RANGE,                                                         \
                        kiln::StrFormat("%s: index %zu, but there are %zu arguments", __func__, (index), \
                                        (args)->values.size()));                                          \
    }                                                                                                     \
  } while (0)

kiln_status_t* kiln_args_kind(const kiln_args_t* args, size_t index, kiln_value_kind_t* out_kind) {
  KILN_CAPI_REQUIRE(out_kind);
  *out_kind = KILN_VALUE_NONE;
  KILN_CAPI_REQUIRE(args);
  KILN_CAPI_CHECK_INDEX(args, index);
  *out_kind = static_cast<kiln_value_kind_t>(args->values[index].kind());
  return nullptr;
}

kiln_status_t* kiln_args_get_tensor(const kiln_args_t* args, size_t index, const kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  KILN_CAPI_REQUIRE(args);
  KILN_CAPI_CHECK_INDEX(args, index);
  if (!args->values[index].is_tensor()) {
    return Invalid(__func__, kiln::StrFormat("argument %zu: expected a tensor, got %s", index,
                                             args->values[index].Describe().c_str()));
  }
  *out_tensor = &args->tensors[index];
  return nullptr;
}

kiln_status_t* kiln_args_get_int64(const kiln_args_t* args, size_t index, int64_t* out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = 0;
  KILN_CAPI_REQUIRE(args);
  KILN_CAPI_CHECK_INDEX(args, index);
  kiln::Result<int64_t> v = args->values[index].AsInt();
  if (!v.ok()) return Invalid(__func__, kiln::StrFormat("argument %zu: %s", index, v.status().message().c_str()));
  *out_value = *v;
  return nullptr;
}

kiln_status_t* kiln_args_get_float64(const kiln_args_t* args, size_t index, double* out_value) {
  KILN_CAPI_REQUIRE(out_value);
  *out_value = 0;
  KILN_CAPI_REQUIRE(args);
  KILN_CAPI_CHECK_INDEX(args, index);
  kiln::Result<double> v = args->values[index].AsFloat();
  if (!v.ok()) return Invalid(__func__, kiln::StrFormat("argument %zu: %s", index, v.status().message().c_str()));
  *out_value = *v;
  return nullptr;
}

kiln_status_t* kiln_result_set_tensor(kiln_result_t* result, const kiln_tensor_t* tensor) {
  KILN_CAPI_REQUIRE(result);
  KILN_CAPI_REQUIRE(tensor);
  *result->ret = Any(tensor->tensor);
  return nullptr;
}

kiln_status_t* kiln_result_set_int64(kiln_result_t* result, int64_t value) {
  KILN_CAPI_REQUIRE(result);
  *result->ret = Any(value);
  return nullptr;
}

kiln_status_t* kiln_result_set_float64(kiln_result_t* result, double value) {
  KILN_CAPI_REQUIRE(result);
  *result->ret = Any(value);
  return nullptr;
}

kiln_status_t* kiln_register_function(const char* name, kiln_packed_fn_t fn, void* user) {
  KILN_CAPI_REQUIRE(name);
  KILN_CAPI_REQUIRE(fn);
  kiln::PackedFunc packed = [fn, user](Span<const Any> values, Any* ret) -> Status {
    kiln_args_t args;
    args.values = values;
    args.tensors.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].is_tensor()) args.tensors[i].tensor = values[i].tensor();
    }
    kiln_result_t result{ret};
    kiln_status_t* s = fn(user, &args, &result);
    if (s == nullptr) return Status::Ok();
    Status status(static_cast<StatusCode>(s->code), s->message);
    kiln_status_free(s);
    return status;
  };
  kiln::Status s = kiln::RegisterGlobalFunction(name, std::move(packed));
  if (s.ok()) kiln::capi::NoteRegistration(name);
  return FromStatus(s);
}

kiln_status_t* kiln_unregister_function(const char* name) {
  KILN_CAPI_REQUIRE(name);
  if (!kiln::RemoveGlobalFunction(name)) {
    return MakeStatus(KILN_STATUS_NOT_FOUND, std::string("kiln_unregister_function: no function named '") + name +
                                                 "' is registered");
  }
  return nullptr;
}

}  // extern "C"
