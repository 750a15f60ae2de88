// vm::Module: a loaded, verified .vmfb, ready to run from any number of threads.
// vm::Context: the per-caller state of calls into a Module.
//
// Thread-safety: a Module is immutable after Load and thread-safe; share it
// freely (std::shared_ptr). A Context is thread-compatible: one thread at a
// time; create one per concurrent caller. Calls take no lock: everything a
// call writes (registers, shape heap, planned storage, reuse caches) belongs
// to its Context. Creating a Context is cheap relative to a call but not free.
//
// Ownership: Load returns the only owner; tensors in returned outputs may
// borrow module memory (constants) and keep the module's mapping alive.
//
// Memory. Planned storage of a constant size is allocated when a Context is
// created (for calls made through it; a function called from another one gets
// its storage on first use); symbolic sizes on first use. Storage is kept for
// later calls, re-allocated only when a symbolic size grows. Results are
// tensors the caller owns. A Context remembers the objects each call site made
// last (shapes, tensor views, result tensors, graph outputs) and reuses one on
// the next call only when nothing else holds it — the caller has released last
// call's result — and its shape and dtype are the ones wanted; otherwise it
// makes a new one. So on static shapes a call allocates nothing after the
// first one, as long as the caller releases each result before the next call
// (a result kept longer costs one allocation per call, never a wrong value).
// Tuples of results are reused the same way.
// Symbolic shapes allocate what their sizes need; give the context a
// PoolAllocator (runtime/allocator.h) to reuse blocks across calls under a cap.
#ifndef KILN_VM_MODULE_H_
#define KILN_VM_MODULE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/any.h"
#include "runtime/span.h"
#include "runtime/status.h"

namespace kiln {

class ThreadPool;
class Profiler;
struct LinkedProgram;
class GpuLinker;

namespace vm {

struct ValueInfo {
  std::string name;
  enum class Kind : uint8_t { kTensor, kShape, kTuple, kPrim, kObject, kFunction } kind = Kind::kTensor;
  DType dtype;
  int32_t ndim = -1;               // -1: unknown
  std::vector<std::string> dims;   // each dimension as text: "784", "n"
};

struct FunctionSignature {
  std::string name;
  std::vector<ValueInfo> params;
  std::vector<ValueInfo> results;
};

// Threads. Every call runs its kernels' parallel loops on one ThreadPool, and
// library kernels (oneDNN) use that pool's thread count (runtime/thread_pool.h).
// The module has a default pool, chosen at load; a context may choose another.
// Pools are shared per size (ThreadPool::Shared), so contexts asking for the
// same count share workers, and contexts of different counts coexist.
struct LoadOptions {
  // The module's default pool; nullptr: the shared pool of num_threads. A
  // caller's pool must outlive the module and every context and graph session
  // made from it.
  ThreadPool* thread_pool = nullptr;
  // Threads for kernels when thread_pool is null: 0 means the number of cores
  // (DefaultThreadCount()); 1 runs every kernel on the calling thread. Outside
  // [0, kMaxThreads] the load fails with kInvalidArgument.
  int num_threads = 0;
  // Also compare the weights segment with its checksum before the load
  // succeeds (a mismatch is kDataLoss naming the segment). Off by default:
  // it reads every byte of the weights, which loading otherwise only maps.
  // The kernels' segment is checked on every load regardless.
  bool verify_weights = false;
  // A module compiled with --target=cuda runs its kernels on this device
  // (runtime/cuda/gpu_linker.h); without it such a module fails to load
  // with kFailedPrecondition naming its GPU kernels.
  std::shared_ptr<GpuLinker> gpu;
};

// Which engine runs a context's calls.
enum class Executor : uint8_t {
  kVm,     // the register VM, for every function (the default)
  kAuto,   // the static graph executor for functions that have a static graph, the VM for the others
  kGraph,  // the static graph executor only; calling a function without a graph fails (kFailedPrecondition)
};

// "vm", "auto", "graph".
const char* ExecutorName(Executor executor);

struct ContextOptions {
  // This context's pool; nullptr: the shared pool of num_threads.
  ThreadPool* thread_pool = nullptr;
  // 0: the module's default pool; otherwise as LoadOptions::num_threads.
  int num_threads = 0;
  // kAuto and kGraph create a graph session (graph_executor/graph_session.h)
  // for every function with a static graph when the context is created; its
  // arena comes from `allocator`. The graph executor's results equal the VM's
  // bit for bit.
  Executor executor = Executor::kVm;
  // Every tensor the context allocates comes from here: planned storage,
  // intermediates, results, graph arenas. nullptr: DefaultCpuAllocator().
  // Thread-safe (results are freed by whoever drops them last), and it must
  // outlive the context and every tensor its calls returned. When it returns
  // nullptr the call fails with kResourceExhausted naming the builtin, the
  // size and allocator->Describe(); the context stays usable. The context
  // asks for 64 bytes more per block than the tensor needs (the alignment, if
  // larger): a header holding the size, for LastCallPeakBytes.
  Allocator* allocator = nullptr;
  // The same, owned: used when `allocator` is null, and kept alive by the
  // context and by every tensor it allocated (for adapters made per context,
  // such as the C API's callbacks).
  std::shared_ptr<Allocator> shared_allocator;
  // On the VM, a call whose arguments have the dtypes, shapes and int values
  // of one of the function's recent calls records the kernel calls it makes
  // (up to eight such call plans per function are kept); later calls with
  // those again replay them without the bytecode (the prologue's shape
  // matching, arena layout and views are skipped; vm/call_plan.h). Results
  // are bit for bit the same. false: every call is interpreted. Profiled calls
  // are always interpreted.
  bool replay = true;
};

class Context;

// A function resolved once by name (Module::LookupFunction), so that calls
// skip the name lookup. Valid for the module that made it and its contexts;
// a default-constructed handle names no function.
struct FunctionHandle {
  const void* module = nullptr;
  int32_t index = -1;
};

class Module {
 public:
  // Memory-maps and verifies the file; resolves every kernel and packed
  // function. Fails with the full list of what is missing.
  static Result<std::shared_ptr<const Module>> LoadFile(const std::string& path, const LoadOptions& options = {});
  // Loads from the caller's buffer, which must outlive the module and stay
  // unchanged (borrowed; nothing is copied).
  static Result<std::shared_ptr<const Module>> LoadBuffer(const void* data, size_t size,
                                                          const LoadOptions& options = {});
  // Loads from a buffer the module takes over; `release(data, user)` runs when
  // the module is destroyed (also when loading fails).
  static Result<std::shared_ptr<const Module>> LoadOwnedBuffer(const void* data, size_t size,
                                                               void (*release)(const void* data, void* user),
                                                               void* user, const LoadOptions& options = {});

  virtual ~Module() = default;

  virtual std::vector<std::string> FunctionNames() const = 0;
  // kNotFound when the module has no such function.
  virtual Result<FunctionSignature> GetSignature(const std::string& function) const = 0;
  // The handle of `function` for Context::Invoke(FunctionHandle, ...);
  // kNotFound naming the functions the module has.
  virtual Result<FunctionHandle> LookupFunction(const std::string& function) const = 0;
  // Producer, format version and target, as text.
  virtual std::string Producer() const = 0;
  virtual std::string TargetDescription() const = 0;
  // Whether a static graph exists for `function` (runnable by graph_executor).
  virtual bool HasStaticGraph(const std::string& function) const = 0;

  // A new call context for this module, on the module's default pool.
  virtual std::unique_ptr<Context> CreateContext() const = 0;
  // A new call context with its own thread options; kInvalidArgument for a
  // thread count outside [0, kMaxThreads].
  virtual Result<std::unique_ptr<Context>> CreateContext(const ContextOptions& options) const = 0;
  // The default pool of this module's contexts (never null).
  virtual ThreadPool* thread_pool() const = 0;

  // The decoded program with its resolved kernels and packed functions
  // (runtime/program.h), e.g. for graph_executor::GraphSession::Create.
  // Shared: it lives as long as the module or any holder of the pointer.
  virtual std::shared_ptr<const LinkedProgram> linked_program() const = 0;
};

class Context {
 public:
  virtual ~Context() = default;
  // Runs `function` with `args`; the results (one Any, a tuple for several)
  // go to *result. Argument errors name the function, argument and dimension.
  // A failed call leaves the context usable for the next one.
  virtual Status Invoke(const std::string& function, Span<const Any> args, Any* result) = 0;
  // The same for a function looked up once; kInvalidArgument for a handle
  // that is not of this context's module.
  virtual Status Invoke(FunctionHandle function, Span<const Any> args, Any* result) {
    return Unimplemented("this context does not take function handles");
  }
  // The pool this context's kernels launch on, and so its thread count
  // (thread_pool()->num_threads()). Never null.
  virtual ThreadPool* thread_pool() const = 0;
  // The executor chosen in ContextOptions.
  virtual Executor executor() const = 0;
  // The most bytes held at once, during the last call, by tensors allocated
  // through this context (as requested, without alignment padding): planned
  // storage, graph arenas, intermediates and the call's results, plus results
  // of earlier calls the caller still holds. 0 before the first call. For a
  // static plan after the first call: the planned bytes plus the results.
  virtual uint64_t LastCallPeakBytes() const = 0;

  // Profiling (runtime/profiler.h), off by default: while a profiler is set,
  // every call records into it each invocation and each instruction that
  // calls something (kernel, packed function, builtin, bytecode function),
  // with argument shapes; graph-executor calls record each node. nullptr
  // turns it off. Not owned: it must outlive its use here. When off, the VM
  // tests one pointer per Call instruction and records nothing.
  void set_profiler(Profiler* profiler) { profiler_ = profiler; }
  Profiler* profiler() const { return profiler_; }

 protected:
  Profiler* profiler_ = nullptr;
};

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_MODULE_H_
