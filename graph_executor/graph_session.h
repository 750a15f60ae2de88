// GraphSession: runs the static graph of one function of a loaded program.
//
// Everything is prepared in Create: one arena of the graph's arena_bytes
// (64-byte aligned) holds every intermediate; each node's argument array
// (kernel tensor descriptors, or Any values for packed functions) is built
// once, pointing into inputs, constants and the arena. Run binds the
// caller's tensors (checking dtype and shape), then loops over the nodes. Run
// allocates nothing (a packed function may allocate for itself).
//
// Thread-safety: a session is thread-compatible (one Run at a time); create
// one session per concurrent caller. Sessions share the LinkedProgram.
// Ownership: the session keeps the program alive; Run borrows the caller's
// tensors only for the duration of the call.
#ifndef KILN_GRAPH_EXECUTOR_GRAPH_SESSION_H_
#define KILN_GRAPH_EXECUTOR_GRAPH_SESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "runtime/profiler.h"
#include "runtime/program.h"
#include "runtime/span.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace graph_executor {

// Where the session's kernels launch parallel work (runtime/thread_pool.h);
// library kernels (oneDNN) use the same thread count.
struct GraphSessionOptions {
  // nullptr: the shared pool of num_threads. A caller's pool must outlive the
  // session.
  ThreadPool* thread_pool = nullptr;
  // 0: the program's pool (the module's default, chosen at load); otherwise
  // the shared pool of that many threads. Outside [0, kMaxThreads]: Create
  // fails with kInvalidArgument.
  int num_threads = 0;
  // Where the arena comes from; nullptr: DefaultCpuAllocator(). It must
  // outlive the session.
  Allocator* allocator = nullptr;
};

class GraphSession {
 public:
  // kNotFound when `program` has no static graph for `function`;
  // kResourceExhausted when the arena cannot be allocated.
  static Result<std::unique_ptr<GraphSession>> Create(std::shared_ptr<const LinkedProgram> program,
                                                      const std::string& function,
                                                      const GraphSessionOptions& options = {});
  // The same from a loaded vm::Module (or anything with linked_program()),
  // without this library depending on the VM.
  template <typename ModuleT>
  static auto Create(const std::shared_ptr<const ModuleT>& module, const std::string& function,
                     const GraphSessionOptions& options = {})
      -> decltype(module->linked_program(), Result<std::unique_ptr<GraphSession>>(Status())) {
    if (module == nullptr) return InvalidArgument("GraphSession::Create: no module");
    return Create(module->linked_program(), function, options);
  }
  ~GraphSession();
  GraphSession(const GraphSession&) = delete;
  GraphSession& operator=(const GraphSession&) = delete;

  // What the caller passes: dtype and shape of each input and output.
  const std::vector<ProgramGraphArg>& inputs() const { return graph_->inputs; }
  const std::vector<ProgramGraphArg>& outputs() const { return graph_->outputs; }
  // Fresh tensors of the outputs' dtypes and shapes (allocates; call once).
  Result<std::vector<Tensor>> NewOutputs() const;

  // Runs the graph: reads `inputs`, writes `outputs` (compact CPU tensors of
  // exactly the declared dtypes and shapes). Allocates nothing and looks
  // nothing up: every callee was resolved to a pointer at load and every
  // argument array was built in Create; Run only stores the caller's data
  // pointers into them (a packed function may allocate for itself). Errors name the function and
  // the input/output ("main: input x: expected float32[1, 784], got float32[1, 100]").
  Status Run(Span<const Tensor> inputs, Span<const Tensor> outputs);

  // The pool this session's kernels launch on (never null).
  ThreadPool* thread_pool() const { return pool_; }

  // Per-node timing (runtime/profiler.h), off by default: while a profiler is
  // set, Run records itself (kProfileInvoke) and every node (kernel or packed
  // function, with its argument shapes, at "main node 3"). nullptr turns it
  // off; when off, Run tests one pointer per node. Not owned.
  void set_profiler(Profiler* profiler) { profiler_ = profiler; }
  Profiler* profiler() const { return profiler_; }

 private:
  struct Node;
  GraphSession() = default;
  Status Prepare();
  std::string InputName(size_t i) const;

  std::shared_ptr<const LinkedProgram> program_;
  ThreadPool* pool_ = nullptr;  // not owned
  const ProgramGraph* graph_ = nullptr;
  std::string function_;
  std::vector<std::string> input_names_;
  void* arena_ = nullptr;
  Profiler* profiler_ = nullptr;  // not owned
  Allocator* allocator_ = nullptr;  // the arena's; not owned
  std::vector<Node> nodes_;
  // Where caller tensors get bound: descriptors and Any slots per input/output.
  std::vector<std::vector<kiln_dltensor*>> input_dl_uses_, output_dl_uses_;
  std::vector<std::vector<Any*>> input_any_uses_, output_any_uses_;
};

}  // namespace graph_executor

namespace graph = graph_executor;  // short alias

}  // namespace kiln

#endif  // KILN_GRAPH_EXECUTOR_GRAPH_SESSION_H_
