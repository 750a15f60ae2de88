// kiln.h's runtime instance: options, the shared pool and allocator, the
// logging callback, and the modules and contexts made through an instance.
#include <memory>
#include <new>
#include <string>

#include "capi/c_api_internal.h"
#include "capi/kiln.h"
#include "runtime/device_memory.h"
#include "runtime/thread_pool.h"
#include "runtime/vmfb_loader.h"
#include "vm/module.h"
#ifdef KILN_HAVE_CUDA
#include "runtime/cuda/gpu_linker.h"
#endif

using kiln::capi::FromStatus;
using kiln::capi::MakeStatus;
using kiln::capi::InstanceCore;
using kiln::capi::Invalid;
using kiln::capi::NoMemory;

void kiln::capi::InstanceCore::Log(kiln_log_level_t level, const std::string& message) const {
  if (log != nullptr && level >= min_level) log(log_user, level, message.c_str());
}

namespace {

bool KnownLevel(int level) { return level >= KILN_LOG_DEBUG && level <= KILN_LOG_ERROR; }

// Loads through `load` and logs the outcome on the instance.
template <typename LoadFn>
kiln_status_t* LoadWithInstance(const char* api, const kiln_instance_t* instance, const std::string& what,
                                LoadFn load, kiln_module_t** out_module) {
  const InstanceCore& core = *instance->core;
  kiln::vm::LoadOptions options;
  options.thread_pool = core.pool;
  options.verify_weights = core.verify_weights;
  options.gpu = core.gpu;  // null on the CPU
  kiln::Result<std::shared_ptr<const kiln::vm::Module>> loaded = load(options);
  if (!loaded.ok()) {
    kiln_status_t* s = FromStatus(loaded.status());
    core.Log(KILN_LOG_ERROR, "loading " + what + " failed: " + kiln_status_message(s));
    return s;
  }
  size_t num_functions = (*loaded)->FunctionNames().size();
  kiln_module_t* m = kiln::capi::WrapModule(std::move(loaded).value(), instance->core);
  if (m == nullptr) return NoMemory(api);
  core.Log(KILN_LOG_INFO, kiln::StrFormat("loaded %s: %zu functions, %s", what.c_str(), num_functions,
                                          m->module->Producer().c_str()));
  std::string note = kiln::NoChecksumsNote(m->module->linked_program()->program);
  if (!note.empty()) core.Log(KILN_LOG_WARNING, "loaded " + what + ": " + note);
  *out_module = m;
  return nullptr;
}

}  // namespace

extern "C" {

kiln_status_t* kiln_instance_options_create(kiln_instance_options_t** out_options) {
  KILN_CAPI_REQUIRE(out_options);
  *out_options = nullptr;
  kiln_instance_options_t* o = new (std::nothrow) kiln_instance_options_t;
  if (o == nullptr) return NoMemory(__func__);
  *out_options = o;
  return nullptr;
}

void kiln_instance_options_release(kiln_instance_options_t* options) { delete options; }

kiln_status_t* kiln_instance_options_set_num_threads(kiln_instance_options_t* options, int32_t num_threads) {
  KILN_CAPI_REQUIRE(options);
  if (num_threads < 0 || num_threads > kiln::kMaxThreads) {
    return Invalid(__func__, kiln::StrFormat("num_threads is %d; use 0 (one per core) to %d",
                                             static_cast<int>(num_threads), kiln::kMaxThreads));
  }
  options->num_threads = num_threads;
  return nullptr;
}

kiln_status_t* kiln_instance_options_set_allocator(kiln_instance_options_t* options,
                                                   const kiln_allocator_t* allocator) {
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

kiln_status_t* kiln_instance_options_set_logger(kiln_instance_options_t* options, kiln_log_fn_t log, void* user,
                                                kiln_log_level_t min_level) {
  KILN_CAPI_REQUIRE(options);
  static_assert(sizeof(int) == sizeof(kiln_log_level_t), "kiln_log_level_t is an int-sized enum");
  int raw = kiln::capi::RawEnum(&min_level);
  if (!KnownLevel(raw)) {
    return Invalid(__func__, kiln::StrFormat("unknown log level %d; use KILN_LOG_DEBUG (0) to KILN_LOG_ERROR (3)",
                                             raw));
  }
  options->log = log;
  options->log_user = user;
  options->min_level = min_level;
  return nullptr;
}

kiln_status_t* kiln_instance_options_set_verify_weights(kiln_instance_options_t* options, int32_t enable) {
  KILN_CAPI_REQUIRE(options);
  options->verify_weights = enable != 0;
  return nullptr;
}

kiln_status_t* kiln_instance_create(const kiln_instance_options_t* options, kiln_instance_t** out_instance) {
  KILN_CAPI_REQUIRE(out_instance);
  *out_instance = nullptr;
  const kiln_instance_options_t defaults;
  const kiln_instance_options_t& o = options != nullptr ? *options : defaults;
  std::shared_ptr<InstanceCore> core(new (std::nothrow) InstanceCore);
  std::unique_ptr<kiln_instance_t> instance(new (std::nothrow) kiln_instance_t);
  if (core == nullptr || instance == nullptr) return NoMemory(__func__);
  core->pool = kiln::ThreadPool::Shared(o.num_threads);
  core->num_threads = core->pool->num_threads();
  core->device_type = o.device_type;
  core->device_id = o.device_id;
  if (o.device_type == KILN_DEVICE_CUDA) {
    if (o.has_allocator) {
      return Invalid(__func__, "a CUDA instance allocates its GPU's memory; it takes no allocator "
                               "(kiln_instance_options_set_allocator)");
    }
#ifdef KILN_HAVE_CUDA
    kiln::Result<std::shared_ptr<kiln::cuda::CudaGpuLinker>> gpu = kiln::cuda::CudaGpuLinker::Create(o.device_id);
    if (!gpu.ok()) {
      kiln::Status s = gpu.TakeStatus();
      s.Annotate(kiln::StrFormat("%s: KILN_DEVICE_CUDA %d", __func__, static_cast<int>(o.device_id)));
      return FromStatus(s);
    }
    core->allocator = (*gpu)->allocator();
    core->gpu = std::move(gpu).value();
#else
    return kiln::capi::MakeStatus(KILN_STATUS_UNIMPLEMENTED,
                                  std::string(__func__) + ": KILN_DEVICE_CUDA: this library was built without CUDA "
                                                          "(KILN_WITH_CUDA=OFF)");
#endif
  }
  if (o.has_allocator) {
    core->allocator.reset(
        new (std::nothrow) kiln::capi::CallbackAllocator(o.allocator, "kiln_instance_options_set_allocator"));
    if (core->allocator == nullptr) return NoMemory(__func__);
  }
  core->log = o.log;
  core->log_user = o.log_user;
  core->min_level = o.min_level;
  core->verify_weights = o.verify_weights;
  core->Log(KILN_LOG_INFO, kiln::StrFormat("instance created: %d threads, %s", core->num_threads,
                                           o.has_allocator ? "the caller's allocator" : "the default allocator"));
  instance->core = std::move(core);
  *out_instance = instance.release();
  return nullptr;
}

void kiln_instance_release(kiln_instance_t* instance) { delete instance; }

kiln_status_t* kiln_instance_num_threads(const kiln_instance_t* instance, int32_t* out_num_threads) {
  KILN_CAPI_REQUIRE(out_num_threads);
  *out_num_threads = 0;
  KILN_CAPI_REQUIRE(instance);
  *out_num_threads = instance->core->num_threads;
  return nullptr;
}

kiln_status_t* kiln_instance_options_set_device(kiln_instance_options_t* options, int32_t device_type,
                                                int32_t device_id) {
  KILN_CAPI_REQUIRE(options);
  if (device_type != KILN_DEVICE_CPU && device_type != KILN_DEVICE_CUDA) {
    return Invalid(__func__, kiln::StrFormat("device type %d is not one Kiln runs on (KILN_DEVICE_CPU %d, "
                                             "KILN_DEVICE_CUDA %d)",
                                             static_cast<int>(device_type), KILN_DEVICE_CPU, KILN_DEVICE_CUDA));
  }
  if (device_id < 0 || (device_type == KILN_DEVICE_CPU && device_id != 0)) {
    return Invalid(__func__, kiln::StrFormat("device id %d: %s", static_cast<int>(device_id),
                                             device_type == KILN_DEVICE_CPU ? "the CPU is device 0"
                                                                            : "GPU ordinals start at 0"));
  }
  options->device_type = device_type;
  options->device_id = device_id;
  return nullptr;
}

kiln_status_t* kiln_instance_device(const kiln_instance_t* instance, int32_t* out_device_type,
                                    int32_t* out_device_id) {
  KILN_CAPI_REQUIRE(out_device_type);
  KILN_CAPI_REQUIRE(out_device_id);
  *out_device_type = 0;
  *out_device_id = 0;
  KILN_CAPI_REQUIRE(instance);
  *out_device_type = instance->core->device_type;
  *out_device_id = instance->core->device_id;
  return nullptr;
}

kiln_status_t* kiln_instance_copy_to_host(const kiln_instance_t* instance, const kiln_tensor_t* tensor,
                                          kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  KILN_CAPI_REQUIRE(instance);
  KILN_CAPI_REQUIRE(tensor);
  const InstanceCore& core = *instance->core;
  kiln::DeviceMemory* memory = core.allocator != nullptr ? core.allocator->device_memory() : nullptr;
  // On the instance's stream: the copy waits for the calls queued before it.
  kiln::Result<kiln::Tensor> host = kiln::ReadableOnHost(tensor->tensor, memory, __func__);
  if (!host.ok()) return FromStatus(host.status());
  std::unique_ptr<kiln_tensor_t> t(new (std::nothrow) kiln_tensor_t);
  if (t == nullptr) return NoMemory(__func__);
  t->tensor = std::move(host).value();
  *out_tensor = t.release();
  return nullptr;
}

kiln_status_t* kiln_instance_synchronize(const kiln_instance_t* instance) {
  KILN_CAPI_REQUIRE(instance);
  const InstanceCore& core = *instance->core;
  kiln::DeviceMemory* memory = core.allocator != nullptr ? core.allocator->device_memory() : nullptr;
  if (memory == nullptr) return nullptr;
  kiln::Status s = memory->Synchronize();
  if (!s.ok()) return FromStatus(s.Annotate(__func__));
  return nullptr;
}

kiln_status_t* kiln_instance_load_module_file(const kiln_instance_t* instance, const char* path,
                                              kiln_module_t** out_module) {
  KILN_CAPI_REQUIRE(out_module);
  *out_module = nullptr;
  KILN_CAPI_REQUIRE(instance);
  KILN_CAPI_REQUIRE(path);
  std::string file = path;
  return LoadWithInstance(
      __func__, instance, "'" + file + "'",
      [&](const kiln::vm::LoadOptions& options) { return kiln::vm::Module::LoadFile(file, options); }, out_module);
}

kiln_status_t* kiln_instance_load_module_buffer(const kiln_instance_t* instance, const void* data, size_t size,
                                                kiln_module_t** out_module) {
  KILN_CAPI_REQUIRE(out_module);
  *out_module = nullptr;
  KILN_CAPI_REQUIRE(instance);
  KILN_CAPI_REQUIRE(data);
  return LoadWithInstance(
      __func__, instance, kiln::StrFormat("a %zu-byte buffer", size),
      [&](const kiln::vm::LoadOptions& options) { return kiln::vm::Module::LoadBuffer(data, size, options); },
      out_module);
}

kiln_status_t* kiln_instance_create_context(const kiln_instance_t* instance, const kiln_module_t* module,
                                            const kiln_context_options_t* options, kiln_context_t** out_context) {
  KILN_CAPI_REQUIRE(out_context);
  *out_context = nullptr;
  KILN_CAPI_REQUIRE(instance);
  KILN_CAPI_REQUIRE(module);
  const kiln_context_options_t defaults;
  const kiln_context_options_t& o = options != nullptr ? *options : defaults;
  if (o.num_threads != 0) {
    return Invalid(__func__, kiln::StrFormat("the options ask for %d threads, but a context of an instance runs on "
                                             "the instance's pool (%d threads); leave num_threads at 0",
                                             static_cast<int>(o.num_threads), instance->core->num_threads));
  }
  return kiln::capi::CreateContext(__func__, module, o, instance->core, out_context);
}

}  // extern "C"
