/* kiln.h: the C API of the Kiln runtime. Plain C11; also compiles as C++.
 *
 * Load a compiled .vmfb, look up its functions, create call contexts, wrap
 * caller memory as tensors, invoke, read the outputs, and register C functions
 * that compiled programs call by name (R.call_packed / R.call_dps_packed).
 *
 * RULES (they hold for every function below; nothing repeats them)
 *
 * Status. Every function returns kiln_status_t*, except the release/free
 * functions, the status accessors, kiln_status_create, kiln_value_kind_name
 * and the version functions. NULL means success. A non-NULL status is owned
 * by the caller and released with kiln_status_free; it carries a code and a
 * one-line-or-more message with context ("main: argument x, dimension 1:
 * expected 3, got 4").
 * Caller mistakes (a bad file, a wrong shape, an unknown name, a NULL handle,
 * an index out of range, a value of the wrong kind) are statuses; Kiln never
 * aborts on them.
 *
 * Out-parameters are named out_*. Each is set to NULL (or 0, or a zeroed
 * struct) first, so it is defined even when the call fails. Handles are only
 * written on success.
 *
 * Ownership. create/load/wrap/share/invoke return an owned handle that the
 * caller releases exactly once with the matching *_release. Accessors (names,
 * shapes, data pointers, value infos, kiln_outputs_get, kiln_value_tuple_get,
 * kiln_args_get_tensor, ...) borrow: the result stays valid as long as the
 * handle it came from. Release functions accept NULL. No function consumes
 * its arguments, also when it fails; the one exception is
 * kiln_tensor_from_dlpack, which takes over the DLManagedTensor on success
 * only (the DLPack convention). Handles keep what they need alive: a context
 * keeps its module and instance, a module its instance, a tensor its storage
 * (output tensors keep module constants they point into), a value what it
 * holds; so handles may be released in any order.
 *
 * Thread-safety, per handle:
 *   kiln_instance_t       thread-safe (immutable after creation).
 *   kiln_module_t         thread-safe (immutable): any number of threads may
 *                         use it and create contexts from it at once; its
 *                         kiln_function_t are immutable too.
 *   kiln_context_t        thread-compatible: one thread at a time; create a
 *                         context per concurrent caller.
 *   kiln_tensor_t         thread-compatible handle; several handles may share
 *                         storage (kiln_tensor_share) and be used from
 *                         different threads; writing the data while another
 *                         thread reads it is the caller's race.
 *   kiln_value_t          thread-safe: a value never changes after it is
 *                         made; many threads may read it and pass it to
 *                         calls at once.
 *   kiln_outputs_t        thread-compatible (value handles are made on
 *                         first access).
 *   options objects       thread-compatible; copied when used.
 *   kiln_status_t         thread-compatible.
 * Registration functions are thread-safe. A registered C function, a logging
 * callback, an allocator and a tensor release callback may be called from
 * several threads at once.
 *
 * Compatibility. KILN_API_VERSION is the version of this header;
 * kiln_api_version() that of the library actually linked. Within a major
 * version the ABI only grows: functions, enum values and constants are added,
 * never changed or removed, and public structs (kiln_allocator_t,
 * kiln_value_info_t) keep their layout: a later version that needs more adds
 * a new struct and function beside them. A program built against 0.N runs
 * with any library 0.M, M >= N. Each function added after 0.1 says since when.
 */
#ifndef KILN_CAPI_KILN_H_
#define KILN_CAPI_KILN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_API_VERSION_MAJOR 0
#define KILN_API_VERSION_MINOR 6
/* (major << 16) | minor of this header. */
#define KILN_API_VERSION ((KILN_API_VERSION_MAJOR << 16) | KILN_API_VERSION_MINOR)

/* History: 0.1 modules, contexts, tensors, invoke, registered C functions;
 * 0.2 context options (threads, executor); 0.3 allocator, invoke by function
 * handle, profiling; 0.4 runtime instances with logging, function
 * introspection (kiln_value_info_t), values (scalars, shapes, nested tuples)
 * as inputs and outputs, tensors with a release callback, DLPack; 0.5 weights
 * verified at load (kiln_instance_options_set_verify_weights), tensors read
 * from and written to .npy files, plugins (kiln_plugin_load); 0.6 devices:
 * instances on a CUDA GPU, device tensors in and out (DLPack kDLCUDA). */

/* (major << 16) | minor of the library actually linked. */
uint32_t kiln_api_version(void);
/* "0.1.0": the Kiln release. Static storage. */
const char* kiln_version_string(void);

/* ---- Status ------------------------------------------------------------ */

typedef enum kiln_status_code_e {
  KILN_STATUS_OK = 0,
  KILN_STATUS_INVALID_ARGUMENT = 1,
  KILN_STATUS_NOT_FOUND = 2,
  KILN_STATUS_OUT_OF_RANGE = 3,
  KILN_STATUS_DATA_LOSS = 4,
  KILN_STATUS_UNIMPLEMENTED = 5,
  KILN_STATUS_FAILED_PRECONDITION = 6,
  KILN_STATUS_RESOURCE_EXHAUSTED = 7,
  KILN_STATUS_INTERNAL = 8,
  KILN_STATUS_INCOMPATIBLE = 9,
} kiln_status_code_t;

typedef struct kiln_status kiln_status_t;

/* A new status, for C functions registered with kiln_register_function to
 * report failures. Returns NULL for KILN_STATUS_OK. `message` is copied. */
kiln_status_t* kiln_status_create(kiln_status_code_t code, const char* message);
/* KILN_STATUS_OK for NULL. */
kiln_status_code_t kiln_status_code(const kiln_status_t* status);
/* "" for NULL; valid until the status is freed. */
const char* kiln_status_message(const kiln_status_t* status);
/* "NOT_FOUND" etc.; static storage. */
const char* kiln_status_code_name(kiln_status_code_t code);
void kiln_status_free(kiln_status_t* status);

/* ---- Data types ---------------------------------------------------------- */

/* A dtype packs DLPack's (code, bits, lanes): code in bits 24..31, bits in
 * 16..23, lanes in 0..15. */
typedef uint32_t kiln_dtype_t;
#define KILN_DTYPE_CODE_INT 0u
#define KILN_DTYPE_CODE_UINT 1u
#define KILN_DTYPE_CODE_FLOAT 2u
#define KILN_DTYPE_CODE_BFLOAT 4u
#define KILN_DTYPE(code, bits, lanes) \
  ((kiln_dtype_t)((((uint32_t)(code)) << 24) | (((uint32_t)(bits)) << 16) | ((uint32_t)(lanes))))
#define KILN_DTYPE_GET_CODE(t) (((t) >> 24) & 0xffu)
#define KILN_DTYPE_GET_BITS(t) (((t) >> 16) & 0xffu)
#define KILN_DTYPE_GET_LANES(t) ((t) & 0xffffu)
#define KILN_DTYPE_FLOAT32 KILN_DTYPE(KILN_DTYPE_CODE_FLOAT, 32, 1)
#define KILN_DTYPE_FLOAT64 KILN_DTYPE(KILN_DTYPE_CODE_FLOAT, 64, 1)
#define KILN_DTYPE_FLOAT16 KILN_DTYPE(KILN_DTYPE_CODE_FLOAT, 16, 1)
#define KILN_DTYPE_INT64 KILN_DTYPE(KILN_DTYPE_CODE_INT, 64, 1)
#define KILN_DTYPE_INT32 KILN_DTYPE(KILN_DTYPE_CODE_INT, 32, 1)
#define KILN_DTYPE_INT8 KILN_DTYPE(KILN_DTYPE_CODE_INT, 8, 1)
#define KILN_DTYPE_UINT8 KILN_DTYPE(KILN_DTYPE_CODE_UINT, 8, 1)
#define KILN_DTYPE_BOOL KILN_DTYPE(KILN_DTYPE_CODE_UINT, 1, 1)
/* Since API 0.5 (the values are plain KILN_DTYPE()s, valid before too). */
#define KILN_DTYPE_BFLOAT16 KILN_DTYPE(KILN_DTYPE_CODE_BFLOAT, 16, 1)
#define KILN_DTYPE_INT16 KILN_DTYPE(KILN_DTYPE_CODE_INT, 16, 1)
#define KILN_DTYPE_UINT16 KILN_DTYPE(KILN_DTYPE_CODE_UINT, 16, 1)
#define KILN_DTYPE_UINT32 KILN_DTYPE(KILN_DTYPE_CODE_UINT, 32, 1)
#define KILN_DTYPE_UINT64 KILN_DTYPE(KILN_DTYPE_CODE_UINT, 64, 1)

/* ---- Value kinds ------------------------------------------------------- */

/* What a value (kiln_value_t, an argument of a registered function) or a
 * declared parameter/result (kiln_value_info_t) is. INT and FLOAT are scalars
 * (R.Prim), SHAPE a list of int64 (R.Shape), TUPLE an ordered list of values
 * (R.Tuple, possibly nested). */
typedef enum kiln_value_kind_e {
  KILN_VALUE_NONE = 0,
  KILN_VALUE_INT = 1,
  KILN_VALUE_FLOAT = 2,
  KILN_VALUE_STRING = 3,
  KILN_VALUE_TENSOR = 4,
  KILN_VALUE_SHAPE = 5,
  KILN_VALUE_TUPLE = 6,
  KILN_VALUE_FUNCTION = 7,
  KILN_VALUE_OBJECT = 8,
} kiln_value_kind_t;

/* "tensor", "int", "tuple", ...; static storage ("unknown" for others).
 * Since API 0.4. */
const char* kiln_value_kind_name(kiln_value_kind_t kind);

/* ---- Tensors ------------------------------------------------------------- */

/* A dense, row-major CPU tensor. */
#define KILN_TENSOR_ALIGNMENT 64
typedef struct kiln_tensor kiln_tensor_t;

/* Wraps caller memory without copying. `data` must hold prod(shape) elements
 * of `dtype` and stay valid (and unchanged while a call reads it) until the
 * tensor is released and no call using it is running. `shape` is copied.
 * Compiled kernels require KILN_TENSOR_ALIGNMENT-byte aligned data: a call
 * whose kernel gets an unaligned input fails ("...: data is not 64-byte
 * aligned") rather than copying behind the caller's back. */
kiln_status_t* kiln_tensor_wrap(void* data, const int64_t* shape, int32_t ndim, kiln_dtype_t dtype,
                                kiln_tensor_t** out_tensor);
/* A new tensor with zeroed storage owned by Kiln (64-byte aligned). */
kiln_status_t* kiln_tensor_create(const int64_t* shape, int32_t ndim, kiln_dtype_t dtype,
                                  kiln_tensor_t** out_tensor);
/* A new handle to the same storage (for keeping an output or an argument
 * beyond the handle it was borrowed from). */
kiln_status_t* kiln_tensor_share(const kiln_tensor_t* tensor, kiln_tensor_t** out_tensor);
void kiln_tensor_release(kiln_tensor_t* tensor);

/* Since API 0.4. Called once with (user, data) when the last reference to a
 * wrapped tensor's storage goes: its last handle is released and no output,
 * value, DLPack export or running call holds it. May run on any thread. */
typedef void (*kiln_tensor_release_fn_t)(void* user, void* data);
/* As kiln_tensor_wrap, and the tensor owns `data` through `release`: Kiln
 * calls release(user, data) exactly once, when the storage's last reference
 * goes. `release` may be NULL (then as kiln_tensor_wrap). When the call fails
 * `release` is not called: the memory stays the caller's. */
kiln_status_t* kiln_tensor_wrap_with_release(void* data, const int64_t* shape, int32_t ndim, kiln_dtype_t dtype,
                                             kiln_tensor_release_fn_t release, void* user,
                                             kiln_tensor_t** out_tensor);

/* DLPack (dlpack/dlpack.h, version 0.6 and later: DLManagedTensor). Include
 * <dlpack/dlpack.h> to use these; kiln.h itself only names the struct.
 * Since API 0.4. */
struct DLManagedTensor;
/* A tensor over `managed`'s memory, without copying. Kiln takes `managed`
 * over on success and calls its deleter once, when the last reference goes;
 * on failure the caller keeps it. The tensor must be in host memory (kDLCPU,
 * kDLCUDAHost) or, since API 0.6, on a CUDA GPU (kDLCUDA: an input of a GPU
 * instance's calls, see kiln_instance_options_set_device), compact row-major (strides NULL or those of a compact tensor), with a
 * dtype kiln_tensor_wrap accepts; otherwise KILN_STATUS_INVALID_ARGUMENT
 * naming what is wrong. */
kiln_status_t* kiln_tensor_from_dlpack(struct DLManagedTensor* managed, kiln_tensor_t** out_tensor);
/* A new DLManagedTensor sharing `tensor`'s storage (no copy), owned by the
 * caller: call its deleter (managed->deleter(managed)) exactly once when done;
 * it keeps the storage alive until then. Strides NULL; the device is the
 * tensor's (kDLCPU, or kDLCUDA for outputs of a GPU instance since 0.6). */
kiln_status_t* kiln_tensor_to_dlpack(const kiln_tensor_t* tensor, struct DLManagedTensor** out_managed);
/* Since API 0.6. Where the tensor's storage is: (KILN_DEVICE_CPU, 0),
 * (KILN_DEVICE_CUDA, gpu), or another DLPack device an import named. */
kiln_status_t* kiln_tensor_device(const kiln_tensor_t* tensor, int32_t* out_device_type, int32_t* out_device_id);

kiln_status_t* kiln_tensor_dtype(const kiln_tensor_t* tensor, kiln_dtype_t* out_dtype);
kiln_status_t* kiln_tensor_ndim(const kiln_tensor_t* tensor, int32_t* out_ndim);
/* Borrowed array of ndim dimensions (NULL-free even for ndim 0). */
kiln_status_t* kiln_tensor_shape(const kiln_tensor_t* tensor, const int64_t** out_shape);
kiln_status_t* kiln_tensor_element_count(const kiln_tensor_t* tensor, int64_t* out_count);
kiln_status_t* kiln_tensor_byte_size(const kiln_tensor_t* tensor, size_t* out_size);
/* Borrowed pointer to the first element. Writing through it is allowed when
 * the storage is writable (wrapped caller memory, created tensors, outputs
 * that are not module constants). For a device tensor (kiln_tensor_device)
 * it is a device address, not readable on the host. */
kiln_status_t* kiln_tensor_data(const kiln_tensor_t* tensor, void** out_data);

/* NumPy .npy files (since API 0.5), format versions 1.0 and 2.0, C order,
 * little-endian, of every dtype Kiln computes in: float16/32/64, int8..64,
 * uint8..64, bool and bfloat16. NumPy has no bfloat16: it is written as '<V2'
 * (what np.save writes for an ml_dtypes.bfloat16 array; view the loaded array
 * as ml_dtypes.bfloat16, or as '<u2' for the bits) and '<V2'/'|V2' read as
 * bfloat16.
 * A new tensor owning a copy of the file's data (64-byte aligned).
 * KILN_STATUS_NOT_FOUND when the file cannot be opened, KILN_STATUS_DATA_LOSS
 * for a damaged file, KILN_STATUS_UNIMPLEMENTED for a valid .npy Kiln does not
 * read (another dtype, Fortran order, big-endian); the message names the path. */
kiln_status_t* kiln_tensor_read_npy(const char* path, kiln_tensor_t** out_tensor);
/* Writes `tensor` to `path` (replacing it). KILN_STATUS_INVALID_ARGUMENT for a
 * dtype with no .npy form (vector dtypes). */
kiln_status_t* kiln_tensor_write_npy(const kiln_tensor_t* tensor, const char* path);

/* ---- Modules and functions ----------------------------------------------- */

typedef struct kiln_module kiln_module_t;
/* A function of a module; borrowed from the module, never released. */
typedef struct kiln_function kiln_function_t;

/* Maps and verifies the file, and resolves every kernel and registered
 * function the program needs (register C functions first). */
kiln_status_t* kiln_module_load_file(const char* path, kiln_module_t** out_module);
/* Same from the caller's buffer, which is borrowed: it must stay valid and
 * unchanged until the module is released and every context and output
 * tensor of it is released. */
kiln_status_t* kiln_module_load_buffer(const void* data, size_t size, kiln_module_t** out_module);
void kiln_module_release(kiln_module_t* module);

kiln_status_t* kiln_module_function_count(const kiln_module_t* module, size_t* out_count);
kiln_status_t* kiln_module_function_at(const kiln_module_t* module, size_t index,
                                       const kiln_function_t** out_function);
/* KILN_STATUS_NOT_FOUND naming the functions the module has. */
kiln_status_t* kiln_module_lookup_function(const kiln_module_t* module, const char* name,
                                           const kiln_function_t** out_function);

/* Borrowed; valid while the module lives. */
kiln_status_t* kiln_function_name(const kiln_function_t* function, const char** out_name);
kiln_status_t* kiln_function_param_count(const kiln_function_t* function, size_t* out_count);
kiln_status_t* kiln_function_result_count(const kiln_function_t* function, size_t* out_count);

/* Since API 0.4. A declared parameter or result of a function, as the
 * compiler wrote it into the .vmfb. Every pointer is borrowed and valid while
 * the module lives (also after kiln_module_release if a context of it lives).
 * A function has one result; a function returning a tuple declares one
 * result of kind KILN_VALUE_TUPLE (its call gives one output per field). */
typedef struct kiln_value_info {
  /* The parameter's name ("x"); results are named "result". */
  const char* name;
  /* TENSOR, SHAPE, TUPLE, INT or FLOAT (a scalar: R.Prim), OBJECT or
   * FUNCTION. */
  kiln_value_kind_t kind;
  /* Element type of a tensor, type of a scalar; 0 when not declared. */
  kiln_dtype_t dtype;
  /* Rank of a tensor, length of a shape; -1 when not declared. */
  int32_t ndim;
  /* ndim entries when ndim > 0 (else NULL): a size, or -1 for a symbolic or
   * undeclared dimension. */
  const int64_t* dims;
  /* ndim entries when ndim > 0 (else NULL): each dimension as text: "784",
   * "n", "n * 4"; "" when undeclared (R.Tensor(ndim=2)). */
  const char* const* dim_names;
} kiln_value_info_t;

/* KILN_STATUS_OUT_OF_RANGE for index >= the count. */
kiln_status_t* kiln_function_param_info(const kiln_function_t* function, size_t index,
                                        kiln_value_info_t* out_info);
kiln_status_t* kiln_function_result_info(const kiln_function_t* function, size_t index,
                                         kiln_value_info_t* out_info);

/* ---- Calls ------------------------------------------------------------------ */

typedef struct kiln_context kiln_context_t;
/* The results of one call. */
typedef struct kiln_outputs kiln_outputs_t;

/* Which engine runs a context's calls. */
typedef enum kiln_executor_e {
  /* The static graph executor for functions that have a static graph (fully
   * static shapes: no per-call planning), the VM for the others. */
  KILN_EXECUTOR_AUTO = 0,
  /* Always the register VM. */
  KILN_EXECUTOR_VM = 1,
  /* Always the static graph; calling a function without one fails with
   * KILN_STATUS_FAILED_PRECONDITION. */
  KILN_EXECUTOR_GRAPH = 2,
} kiln_executor_t;

/* A context with KILN_EXECUTOR_AUTO. */
kiln_status_t* kiln_context_create(const kiln_module_t* module, kiln_context_t** out_context);
kiln_status_t* kiln_context_create_with_executor(const kiln_module_t* module, kiln_executor_t executor,
                                                 kiln_context_t** out_context);
void kiln_context_release(kiln_context_t* context);

/* Context options (since API 0.2). Threads: a context runs the parallel loops
 * of its kernels on a pool of num_threads threads, the calling thread
 * included, and oneDNN calls with the same count while the pool's idle
 * workers sleep. Contexts asking for the same count share one pool. */
typedef struct kiln_context_options kiln_context_options_t;
/* Defaults: KILN_EXECUTOR_AUTO, num_threads 0 (one per physical core). */
kiln_status_t* kiln_context_options_create(kiln_context_options_t** out_options);
void kiln_context_options_release(kiln_context_options_t* options);
/* KILN_STATUS_INVALID_ARGUMENT for an unknown executor. */
kiln_status_t* kiln_context_options_set_executor(kiln_context_options_t* options, kiln_executor_t executor);
/* 0: one thread per physical core; 1: every kernel on the calling thread.
 * KILN_STATUS_INVALID_ARGUMENT outside [0, 1024]. */
kiln_status_t* kiln_context_options_set_num_threads(kiln_context_options_t* options, int32_t num_threads);
/* Since API 0.3. Where a context's tensors come from (planned storage,
 * intermediates, outputs, the graph executor's arena). `allocate(user, size,
 * alignment)` returns `size` bytes aligned to `alignment` (a power of two, at
 * least KILN_TENSOR_ALIGNMENT) or NULL; `free(user, ptr)` takes back what
 * `allocate` returned. A NULL from `allocate` fails that call with
 * KILN_STATUS_RESOURCE_EXHAUSTED and the context stays usable. Both may be
 * called from any thread (an output is freed by whichever thread releases it
 * last); they, and `user`, must stay valid until every context created with
 * these options and every tensor those contexts returned is released. */
typedef struct kiln_allocator {
  void* user;
  void* (*allocate)(void* user, size_t size, size_t alignment);
  void (*free)(void* user, void* ptr);
} kiln_allocator_t;
/* Copies *allocator; NULL restores the default (aligned_alloc / free).
 * KILN_STATUS_INVALID_ARGUMENT if `allocate` or `free` is NULL. */
kiln_status_t* kiln_context_options_set_allocator(kiln_context_options_t* options, const kiln_allocator_t* allocator);
/* The options are copied; `options` may be released right after. */
kiln_status_t* kiln_context_create_with_options(const kiln_module_t* module, const kiln_context_options_t* options,
                                                kiln_context_t** out_context);
/* The number of threads the context's kernels run on. */
kiln_status_t* kiln_context_num_threads(const kiln_context_t* context, int32_t* out_num_threads);

/* ---- Runtime instance (since API 0.4) ----------------------------------------
 *
 * An instance holds what a process's modules and contexts share: the thread
 * pool (contexts created from it run their kernels on it), the allocator and
 * a logging callback. It is optional: the functions above work without one
 * (on the shared pool of their thread count, the default allocator, no log).
 * Pools are shared per size: instances and contexts asking for the same
 * thread count use the same workers, so they never oversubscribe the cores. */

typedef struct kiln_instance kiln_instance_t;
typedef struct kiln_instance_options kiln_instance_options_t;

typedef enum kiln_log_level_e {
  KILN_LOG_DEBUG = 0,   /* contexts created */
  KILN_LOG_INFO = 1,    /* instances created, modules loaded */
  KILN_LOG_WARNING = 2, /* failed calls on the instance's contexts */
  KILN_LOG_ERROR = 3,   /* failed module loads */
} kiln_log_level_t;

/* Receives one message (no trailing newline), borrowed for the call. Called
 * from the thread doing the logged work, possibly several at once. */
typedef void (*kiln_log_fn_t)(void* user, kiln_log_level_t level, const char* message);

/* Defaults: num_threads 0 (one per physical core), the default allocator, no
 * logging. */
kiln_status_t* kiln_instance_options_create(kiln_instance_options_t** out_options);
void kiln_instance_options_release(kiln_instance_options_t* options);
/* As kiln_context_options_set_num_threads. */
kiln_status_t* kiln_instance_options_set_num_threads(kiln_instance_options_t* options, int32_t num_threads);
/* As kiln_context_options_set_allocator; used by the instance's contexts that
 * do not set their own. */
kiln_status_t* kiln_instance_options_set_allocator(kiln_instance_options_t* options,
                                                   const kiln_allocator_t* allocator);
/* Messages at `min_level` and above go to log(user, level, message); `log`
 * NULL turns logging off. `log` and `user` must stay valid while the instance
 * or anything made from it lives. KILN_STATUS_INVALID_ARGUMENT for an unknown
 * level. */
kiln_status_t* kiln_instance_options_set_logger(kiln_instance_options_t* options, kiln_log_fn_t log, void* user,
                                                kiln_log_level_t min_level);
/* Since API 0.5. `enable` nonzero: modules loaded through the instance also
 * compare their weights with the checksum the compiler stored, and a mismatch
 * fails the load with KILN_STATUS_DATA_LOSS naming the segment. Off by
 * default: it reads every byte of the weights, which loading otherwise maps
 * without touching. The kernels' checksum is compared on every load. Files
 * from before checksums (format 1.0) load unverified, with a KILN_LOG_WARNING
 * message saying so. */
kiln_status_t* kiln_instance_options_set_verify_weights(kiln_instance_options_t* options, int32_t enable);
/* Devices (since API 0.6). Device types are DLPack's. */
#define KILN_DEVICE_CPU 1  /* kDLCPU */
#define KILN_DEVICE_CUDA 2 /* kDLCUDA */
/* Modules loaded through the instance run on (device_type, device_id):
 * KILN_DEVICE_CPU with id 0 (the default), or KILN_DEVICE_CUDA for GPU
 * `device_id`, which takes a .vmfb compiled with kiln-compile --target=cuda.
 * KILN_STATUS_INVALID_ARGUMENT here for another type or id. The GPU is opened
 * by kiln_instance_create, which fails with KILN_STATUS_FAILED_PRECONDITION
 * without a driver or GPU ("no CUDA driver: libcuda.so.1: ..."),
 * KILN_STATUS_INVALID_ARGUMENT for a GPU that does not exist, and
 * KILN_STATUS_UNIMPLEMENTED in a library built without CUDA. A GPU
 * instance allocates device memory: it takes no allocator (a context of it
 * that sets one gets host memory, which its GPU kernels refuse at the call:
 * "... argument 1 is on cpu; its kernels read memory of cuda:0"). Its contexts take input tensors in host memory (copied to the
 * GPU at each call) or on that GPU (kiln_tensor_from_dlpack of a kDLCUDA
 * tensor), and their outputs are on the GPU: kiln_tensor_data gives a device
 * address, kiln_tensor_to_dlpack exports kDLCUDA, kiln_instance_copy_to_host
 * copies the values out. Calls return once their work is queued on the
 * instance's stream; kiln_instance_copy_to_host and
 * kiln_instance_synchronize wait for it. */
kiln_status_t* kiln_instance_options_set_device(kiln_instance_options_t* options, int32_t device_type,
                                                int32_t device_id);
/* `options` may be NULL (defaults); it is copied. */
kiln_status_t* kiln_instance_create(const kiln_instance_options_t* options, kiln_instance_t** out_instance);
void kiln_instance_release(kiln_instance_t* instance);
kiln_status_t* kiln_instance_num_threads(const kiln_instance_t* instance, int32_t* out_num_threads);
/* Since API 0.6. The instance's device (kiln_instance_options_set_device). */
kiln_status_t* kiln_instance_device(const kiln_instance_t* instance, int32_t* out_device_type,
                                    int32_t* out_device_id);
/* Since API 0.6. A new host tensor holding `tensor`'s values, copied after the
 * work queued on the instance's GPU so far (so a call's outputs are final);
 * for a tensor in host memory, a new handle to the same storage.
 * KILN_STATUS_FAILED_PRECONDITION for a device tensor on a CPU instance,
 * KILN_STATUS_INVALID_ARGUMENT for one on another device. */
kiln_status_t* kiln_instance_copy_to_host(const kiln_instance_t* instance, const kiln_tensor_t* tensor,
                                          kiln_tensor_t** out_tensor);
/* Since API 0.6. Waits for the work queued on the instance's GPU (before a
 * caller reads device outputs with its own API); nothing to do on the CPU.
 * A kernel's failure shows here. */
kiln_status_t* kiln_instance_synchronize(const kiln_instance_t* instance);
/* As kiln_module_load_file / _buffer; loads are logged (failures at
 * KILN_LOG_ERROR). The module keeps the instance: contexts created from it
 * with kiln_context_create* also get the instance's pool (unless their
 * options set a thread count), allocator (unless they set one) and logger. */
kiln_status_t* kiln_instance_load_module_file(const kiln_instance_t* instance, const char* path,
                                              kiln_module_t** out_module);
kiln_status_t* kiln_instance_load_module_buffer(const kiln_instance_t* instance, const void* data, size_t size,
                                                kiln_module_t** out_module);
/* A context of `module` (loaded with or without an instance) on the
 * instance's pool, with its allocator and logger. `options` may be NULL; its
 * executor and allocator apply, but its thread count must be 0 (the pool is
 * the instance's): otherwise KILN_STATUS_INVALID_ARGUMENT. */
kiln_status_t* kiln_instance_create_context(const kiln_instance_t* instance, const kiln_module_t* module,
                                            const kiln_context_options_t* options, kiln_context_t** out_context);

/* Calls `function` (by name) with `num_inputs` tensors. Input errors (count,
 * dtype, shape) come back as KILN_STATUS_INVALID_ARGUMENT naming the function,
 * the argument and the dimension. */
kiln_status_t* kiln_context_invoke(kiln_context_t* context, const char* function, kiln_tensor_t* const* inputs,
                                   size_t num_inputs, kiln_outputs_t** out_outputs);
void kiln_outputs_release(kiln_outputs_t* outputs);

/* Since API 0.3. Calls a function looked up once (kiln_module_lookup_function
 * or kiln_module_function_at on the module this context was created from),
 * skipping the name lookup: the fast path for a server's repeated calls.
 * Otherwise as kiln_context_invoke; a function of another module is
 * KILN_STATUS_INVALID_ARGUMENT. */
kiln_status_t* kiln_context_invoke_function(kiln_context_t* context, const kiln_function_t* function,
                                            kiln_tensor_t* const* inputs, size_t num_inputs,
                                            kiln_outputs_t** out_outputs);

/* ---- Profiling (since API 0.3) ----------------------------------------------
 *
 * Off by default. While enabled, each call of the context records every
 * kernel, packed function, builtin and bytecode-function call it makes (on the
 * graph executor: every node) with the shapes of its arguments, and the call
 * as a whole. A disabled context records nothing and costs nothing
 * measurable. What was recorded stays until kiln_context_reset_profile. */

/* enable != 0 starts recording (the first time, creates the context's
 * profile), 0 stops it (keeping what was recorded). */
kiln_status_t* kiln_context_enable_profiling(kiln_context_t* context, int32_t enable);
/* Forgets what was recorded. */
kiln_status_t* kiln_context_reset_profile(kiln_context_t* context);
/* The profile as a text table, one row per (kind, name, argument shapes),
 * sorted by total time, with count, mean and share of the calls' time.
 * Borrowed: valid until the next kiln_context_profile_table on this context
 * or its release. KILN_STATUS_FAILED_PRECONDITION if profiling was never
 * enabled. */
kiln_status_t* kiln_context_profile_table(kiln_context_t* context, const char** out_table);
/* Writes the recorded events to `path` as Chrome trace JSON, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open. KILN_STATUS_FAILED_PRECONDITION
 * if profiling was never enabled; KILN_STATUS_INVALID_ARGUMENT naming the path
 * if it cannot be written. */
kiln_status_t* kiln_context_write_trace(const kiln_context_t* context, const char* path);

/* A function returning a tuple has one output per field. */
kiln_status_t* kiln_outputs_count(const kiln_outputs_t* outputs, size_t* out_count);
/* Borrowed; valid while `outputs` lives (kiln_tensor_share to keep it).
 * KILN_STATUS_INVALID_ARGUMENT if that output is not a tensor. */
kiln_status_t* kiln_outputs_get(const kiln_outputs_t* outputs, size_t index, const kiln_tensor_t** out_tensor);

/* ---- Values (since API 0.4) -------------------------------------------------
 *
 * Any value a function takes or returns: a tensor, an int64 or float64
 * scalar, a shape, a (nested) tuple of values. Values made here are inputs
 * of kiln_context_invoke_values; outputs and a registered function's
 * arguments lend theirs out. A value never changes after it is made, so
 * threads may share one (each call takes its own reference). */

typedef struct kiln_value kiln_value_t;

kiln_status_t* kiln_value_create_int64(int64_t value, kiln_value_t** out_value);
kiln_status_t* kiln_value_create_float64(double value, kiln_value_t** out_value);
/* `dims` (ndim entries, each >= 0) is copied. */
kiln_status_t* kiln_value_create_shape(const int64_t* dims, int32_t ndim, kiln_value_t** out_value);
/* The value holds its own reference to the tensor's storage. */
kiln_status_t* kiln_value_create_tensor(const kiln_tensor_t* tensor, kiln_value_t** out_value);
/* A tuple of `num_fields` values (each shared, not copied; none NULL). */
kiln_status_t* kiln_value_create_tuple(const kiln_value_t* const* fields, size_t num_fields,
                                       kiln_value_t** out_value);
/* A new handle to the same value (to keep a borrowed one). */
kiln_status_t* kiln_value_share(const kiln_value_t* value, kiln_value_t** out_value);
void kiln_value_release(kiln_value_t* value);

kiln_status_t* kiln_value_kind(const kiln_value_t* value, kiln_value_kind_t* out_kind);
/* KILN_STATUS_INVALID_ARGUMENT naming the kind it is when the value is not of
 * the kind asked for (kiln_value_get_float64 widens an int). */
kiln_status_t* kiln_value_get_int64(const kiln_value_t* value, int64_t* out_value);
kiln_status_t* kiln_value_get_float64(const kiln_value_t* value, double* out_value);
/* Borrowed; valid while `value` lives. */
kiln_status_t* kiln_value_get_tensor(const kiln_value_t* value, const kiln_tensor_t** out_tensor);
/* Borrowed array of *out_ndim dimensions (never NULL). */
kiln_status_t* kiln_value_get_shape(const kiln_value_t* value, int32_t* out_ndim, const int64_t** out_dims);
kiln_status_t* kiln_value_tuple_size(const kiln_value_t* value, size_t* out_size);
/* Borrowed; valid while `value` lives. KILN_STATUS_OUT_OF_RANGE past the end. */
kiln_status_t* kiln_value_tuple_get(const kiln_value_t* value, size_t index, const kiln_value_t** out_field);

/* Output `index` as a value, whatever its kind (kiln_outputs_get only reads
 * tensors). Borrowed; valid while `outputs` lives. */
kiln_status_t* kiln_outputs_get_value(const kiln_outputs_t* outputs, size_t index,
                                      const kiln_value_t** out_value);

/* Calls `function` (of this context's module) with values: tensors, scalars,
 * shapes and tuples, as its parameters declare. Otherwise as
 * kiln_context_invoke_function: the same checks and messages. */
kiln_status_t* kiln_context_invoke_values(kiln_context_t* context, const kiln_function_t* function,
                                          const kiln_value_t* const* inputs, size_t num_inputs,
                                          kiln_outputs_t** out_outputs);

/* ---- Registering C functions ------------------------------------------------ */

/* The arguments of one call into a registered function; borrowed for the call. */
typedef struct kiln_args kiln_args_t;
/* Where a registered function puts its result (leave it unset for none). */
typedef struct kiln_result kiln_result_t;

kiln_status_t* kiln_args_count(const kiln_args_t* args, size_t* out_count);
kiln_status_t* kiln_args_kind(const kiln_args_t* args, size_t index, kiln_value_kind_t* out_kind);
/* Borrowed for the duration of the call. Destination-passing functions write
 * their results into tensors they receive this way. */
kiln_status_t* kiln_args_get_tensor(const kiln_args_t* args, size_t index, const kiln_tensor_t** out_tensor);
kiln_status_t* kiln_args_get_int64(const kiln_args_t* args, size_t index, int64_t* out_value);
/* Ints widen to double. */
kiln_status_t* kiln_args_get_float64(const kiln_args_t* args, size_t index, double* out_value);

/* Since API 0.4. Argument `index` as a value, whatever its kind; borrowed
 * for the duration of the call. */
kiln_status_t* kiln_args_get_value(const kiln_args_t* args, size_t index, const kiln_value_t** out_value);

kiln_status_t* kiln_result_set_tensor(kiln_result_t* result, const kiln_tensor_t* tensor);
kiln_status_t* kiln_result_set_int64(kiln_result_t* result, int64_t value);
kiln_status_t* kiln_result_set_float64(kiln_result_t* result, double value);
/* Since API 0.4. Any value (a tuple, a shape, ...); it is shared, not copied. */
kiln_status_t* kiln_result_set_value(kiln_result_t* result, const kiln_value_t* value);

/* A C function callable by compiled programs. Return NULL on success or a
 * status from kiln_status_create; Kiln takes ownership of the returned status. */
typedef kiln_status_t* (*kiln_packed_fn_t)(void* user, const kiln_args_t* args, kiln_result_t* result);

/* Registers `fn` in the global registry as `name` ("env.linear"). Modules
 * resolve names when they load, so register before loading. `user` is passed
 * to every call and must stay valid until the function is unregistered and
 * every module loaded since is released. KILN_STATUS_FAILED_PRECONDITION if
 * `name` is taken. */
kiln_status_t* kiln_register_function(const char* name, kiln_packed_fn_t fn, void* user);
/* Removes a registration; modules already loaded keep their copy.
 * KILN_STATUS_NOT_FOUND if `name` is not registered. */
kiln_status_t* kiln_unregister_function(const char* name);

/* ---- Plugins (since API 0.5) ------------------------------------------------
 *
 * A plugin is a shared library of C functions that compiled programs call by
 * name, such as env.linear for R.call_dps_packed("env.linear", ...): what a
 * custom-op library is to ONNX Runtime. `kiln-run --plugin=PATH` and
 * `kiln-bench --plugin=PATH` load plugins before the model; a program of
 * your own calls kiln_plugin_load.
 *
 * The one entry point: a plugin exports a C function named
 * KILN_PLUGIN_ENTRY_POINT of type kiln_plugin_register_fn_t,
 *
 *   kiln_status_t* kiln_plugin_register(uint32_t host_api_version)
 *
 * which registers the plugin's functions with kiln_register_function and
 * returns NULL, or returns a status to refuse to load (for example when
 * host_api_version, the loading library's kiln_api_version(), is older than
 * the API the plugin needs). A plugin calls the C API of the process that
 * loads it: link it against libkiln, or leave the kiln_* symbols undefined
 * (the Kiln tools export the C API to the plugins they load). */

#define KILN_PLUGIN_ENTRY_POINT "kiln_plugin_register"
typedef kiln_status_t* (*kiln_plugin_register_fn_t)(uint32_t host_api_version);

/* Loads the shared library at `path` (dlopen; a name without a '/' is a file
 * in the current directory when one exists there, otherwise it is looked up
 * as dlopen does) and calls its entry point;
 * *out_num_functions is the number of functions it registered. The library
 * stays loaded for the life of the process. Register before loading the
 * modules that call the functions. Failures:
 *   KILN_STATUS_NOT_FOUND           the library cannot be loaded (the message
 *                                   carries the loader's reason: no such
 *                                   file, not a shared library, an undefined
 *                                   symbol);
 *   KILN_STATUS_INVALID_ARGUMENT    it does not export the entry point;
 *   the entry point's own code      the entry point failed (its message is
 *                                   kept; what it registered is unregistered);
 *   KILN_STATUS_FAILED_PRECONDITION it registered no function.
 * After a failure the library is unloaded again. Loading a library that
 * kiln_plugin_load already loaded does nothing more and succeeds, with the
 * count of the first time. */
kiln_status_t* kiln_plugin_load(const char* path, size_t* out_num_functions);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* KILN_CAPI_KILN_H_ */
