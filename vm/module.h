// vm::Module: a loaded, verified .vmfb, ready to run from any number of threads.
// vm::Context: the per-caller state of calls into a Module.
//
// Thread-safety: a Module is immutable after Load and thread-safe; share it
// freely (std::shared_ptr). A Context is thread-compatible: one thread at a
// time; create one per concurrent caller. Creating a Context is cheap relative
// to a call but not free (it sizes registers and planned storage).
//
// Ownership: Load returns the only owner; tensors in returned outputs may
// borrow module memory (constants) and keep the module's mapping alive.
#ifndef KILN_VM_MODULE_H_
#define KILN_VM_MODULE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/any.h"
#include "runtime/span.h"
#include "runtime/status.h"

namespace kiln {

class ThreadPool;
struct LinkedProgram;

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
};

struct ContextOptions {
  // This context's pool; nullptr: the shared pool of num_threads.
  ThreadPool* thread_pool = nullptr;
  // 0: the module's default pool; otherwise as LoadOptions::num_threads.
  int num_threads = 0;
};

class Context;

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
  virtual Status Invoke(const std::string& function, Span<const Any> args, Any* result) = 0;
  // The pool this context's kernels launch on, and so its thread count
  // (thread_pool()->num_threads()). Never null.
  virtual ThreadPool* thread_pool() const = 0;
};

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_MODULE_H_
