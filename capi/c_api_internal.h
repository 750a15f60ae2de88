// c_api_internal.h: the bodies of kiln.h's opaque handles and the helpers the
// C API's .cc files share (status conversion, argument checks). Not installed;
// only capi/*.cc include it.
//
// Every handle is a small struct holding C++ objects; kiln::Status becomes a
// kiln_status_t at this boundary only. Handles are allocated with
// new (std::nothrow) so that running out of memory is a status, not an
// exception crossing into C.
#ifndef KILN_CAPI_C_API_INTERNAL_H_
#define KILN_CAPI_C_API_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "capi/kiln.h"
#include "runtime/allocator.h"
#include "runtime/any.h"
#include "runtime/profiler.h"
#include "runtime/status.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
class ThreadPool;
namespace capi {

// What an instance shares with the modules and contexts made from it. The
// pool is a ThreadPool::Shared one (lives for the process), so nothing made
// from an instance can outlive its pool.
struct InstanceCore {
  int32_t num_threads = 0;
  ThreadPool* pool = nullptr;
  std::shared_ptr<Allocator> allocator;  // null: the default allocator
  kiln_log_fn_t log = nullptr;
  void* log_user = nullptr;
  kiln_log_level_t min_level = KILN_LOG_INFO;
  bool verify_weights = false;  // vm::LoadOptions::verify_weights for its loads
  // kiln_instance_options_set_device: a GPU instance holds its device (a
  // cuda::CudaGpuLinker) and `allocator` is that device's memory.
  int32_t device_type = 1;  // KILN_DEVICE_CPU
  int32_t device_id = 0;
  std::shared_ptr<GpuLinker> gpu;

  // Calls the logging callback when `level` passes the threshold.
  void Log(kiln_log_level_t level, const std::string& message) const;
};

// A caller's kiln_allocator_t as a kiln::Allocator; kept alive by every
// context and tensor that allocated through it.
class CallbackAllocator final : public Allocator {
 public:
  // `source` names the setter in messages ("kiln_context_options_set_allocator").
  CallbackAllocator(const kiln_allocator_t& a, const char* source) : a_(a), source_(source) {}
  void* Allocate(size_t nbytes, size_t alignment) override { return a_.allocate(a_.user, nbytes, alignment); }
  void Free(void* ptr) override {
    if (ptr != nullptr) a_.free(a_.user, ptr);
  }
  std::string Describe() const override { return std::string("the caller's allocator (") + source_ + ")"; }

 private:
  kiln_allocator_t a_;
  const char* source_;
};

}  // namespace capi
}  // namespace kiln

struct kiln_status {
  kiln_status_code_t code;
  std::string message;
};

struct kiln_tensor {
  kiln::Tensor tensor;
};

// A parameter or result of a function as kiln_value_info_t lends it out: the
// arrays the struct points into.
struct kiln_value_info_storage {
  kiln::vm::ValueInfo info;
  std::vector<int64_t> dims;            // -1 for a symbolic or unknown dimension
  std::vector<const char*> dim_names;   // into info.dims (or "" when unknown)
};

struct kiln_function {
  std::string name;
  size_t num_params = 0;
  size_t num_results = 0;
  bool has_graph = false;
  kiln::vm::FunctionHandle handle;  // names the module too: a context checks it is its module's
  std::vector<kiln_value_info_storage> params;
  std::vector<kiln_value_info_storage> results;
};

// Built once per module and shared with its contexts, so the pointers into it
// (names, value infos) never move.
struct kiln_function_table {
  std::vector<kiln_function> functions;
};

struct kiln_module {
  std::shared_ptr<const kiln::capi::InstanceCore> instance;  // null: loaded without an instance
  std::shared_ptr<const kiln::vm::Module> module;
  std::shared_ptr<const kiln_function_table> table;
};

struct kiln_context {
  std::shared_ptr<const kiln::capi::InstanceCore> instance;  // null: created without an instance
  std::shared_ptr<const kiln::vm::Module> module;             // keeps the module alive
  std::shared_ptr<const kiln_function_table> table;           // the module handle may go first
  kiln_executor_t executor = KILN_EXECUTOR_AUTO;
  // Runs every call; it holds the graph sessions when the executor asks for
  // them (vm::ContextOptions::executor).
  std::unique_ptr<kiln::vm::Context> context;
  std::vector<kiln::Any> args;  // reused across calls; holds no value between calls
  // Created by the first kiln_context_enable_profiling; kept when disabled.
  std::unique_ptr<kiln::Profiler> profiler;
  std::string profile_table;  // the text kiln_context_profile_table lends out
};

struct kiln_context_options {
  kiln_executor_t executor = KILN_EXECUTOR_AUTO;
  int32_t num_threads = 0;
  bool has_allocator = false;  // kiln_context_options_set_allocator
  kiln_allocator_t allocator{};
};

struct kiln_instance_options {
  int32_t num_threads = 0;
  bool has_allocator = false;
  kiln_allocator_t allocator{};
  kiln_log_fn_t log = nullptr;
  void* log_user = nullptr;
  kiln_log_level_t min_level = KILN_LOG_INFO;
  bool verify_weights = false;
  int32_t device_type = KILN_DEVICE_CPU;
  int32_t device_id = 0;
};

struct kiln_instance {
  std::shared_ptr<const kiln::capi::InstanceCore> core;
};

// A value: an Any, with the borrowed handles of what it contains (its tensor,
// its tuple fields, recursively), all made with it (SetValue): a value never
// changes afterwards, so any number of threads may read it.
struct kiln_value {
  kiln::Any any;
  kiln_tensor tensor;               // defined when `any` is a tensor
  std::vector<kiln_value> fields;   // one per tuple field
};

struct kiln_outputs {
  std::vector<kiln::Any> values;
  std::vector<kiln_tensor> tensors;  // parallel to values; undefined for non-tensors
  // kiln_outputs_get_value's handles, built on first use, parallel to values.
  mutable std::vector<kiln_value> value_handles;
};

struct kiln_args {
  kiln::Span<const kiln::Any> values;
  std::vector<kiln_tensor> tensors;  // parallel to values
  mutable std::vector<kiln_value> value_handles;  // kiln_args_get_value, built on first use
};

struct kiln_result {
  kiln::Any* ret;
};

namespace kiln {
namespace capi {

// NULL for KILN_STATUS_OK; a static "out of memory" status when even the
// status cannot be allocated (kiln_status_free skips it).
kiln_status_t* MakeStatus(kiln_status_code_t code, std::string message);
kiln_status_t* FromStatus(const Status& status);
// KILN_STATUS_INVALID_ARGUMENT, "function: message".
kiln_status_t* Invalid(const char* function, const std::string& message);
// KILN_STATUS_RESOURCE_EXHAUSTED, "function: out of memory".
kiln_status_t* NoMemory(const char* function);
bool IsStaticOutOfMemory(const kiln_status_t* status);

DType ToDType(kiln_dtype_t t);
kiln_dtype_t FromDType(DType t);
// Checks the shape and dtype a caller passes to make a tensor.
kiln_status_t* CheckShape(const char* function, const int64_t* shape, int32_t ndim, kiln_dtype_t dtype);

// Fills a value handle for `any`, with the handles of its tensor and fields.
void SetValue(kiln_value* v, Any any);

// Lends out a parameter's or result's description.
void FillValueInfo(const kiln_value_info_storage& s, kiln_value_info_t* out);
// Wraps a loaded module (function table with value infos) for the C API.
kiln_module_t* WrapModule(std::shared_ptr<const vm::Module> module,
                          std::shared_ptr<const InstanceCore> instance);
// Makes a context on `module` with `options`; with `instance`, the instance's
// pool and (unless the options set one) its allocator.
kiln_status_t* CreateContext(const char* api, const kiln_module_t* module, const kiln_context_options& options,
                             std::shared_ptr<const InstanceCore> instance, kiln_context_t** out_context);
// Runs `function` with `args` (already converted) and wraps the results.
kiln_status_t* InvokeAnys(const char* api, kiln_context_t* context, const kiln_function& function,
                          size_t num_inputs, kiln_outputs_t** out_outputs);

// Called by kiln_register_function after a successful registration: counts
// it for the plugin whose entry point is running on this thread (plugin.cc).
void NoteRegistration(const char* name);

// The caller's int as a kiln_log_level_t / kiln_executor_t is read by bits:
// an out-of-range value loaded as the C++ enum type would be undefined.
int RawEnum(const void* value);

}  // namespace capi
}  // namespace kiln

#define KILN_CAPI_REQUIRE(ptr)                                                     \
  do {                                                                             \
    if ((ptr) == nullptr) return ::kiln::capi::Invalid(__func__, #ptr " is NULL"); \
  } while (0)

#endif  // KILN_CAPI_C_API_INTERNAL_H_
