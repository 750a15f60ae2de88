// PreparedCall: a loaded module, parsed inputs and a ready call context for
// one function — everything kiln-run and kiln-bench do before the first call.
// Input errors come before the module loads, so a typo in a flag does not
// wait for a large model.
//
// Thread-compatible: one thread calls Call() at a time.
#ifndef KILN_TOOLS_COMMON_PREPARED_CALL_H_
#define KILN_TOOLS_COMMON_PREPARED_CALL_H_

#include <memory>
#include <string>
#include <vector>

#include "graph_executor/graph_session.h"
#include "runtime/any.h"
#include "runtime/profiler.h"
#include "runtime/thread_pool.h"
#include "vm/module.h"

namespace kiln {
namespace tools {

struct CallSpec {
  std::string module_path;
  std::string function = "main";
  std::vector<std::string> inputs;  // SPECs (tools/common/inline_tensor.h)
  int threads = 0;                  // 0: one per core (vm::LoadOptions::num_threads)
  std::string executor = "auto";    // "auto", "vm" or "graph"
};

class PreparedCall {
 public:
  static Result<std::unique_ptr<PreparedCall>> Create(const CallSpec& spec);

  // One call. The graph executor writes into the same output tensors every
  // time, so repeated calls on it allocate nothing.
  Status Call(Any* result);

  // Records later calls into `profiler` (runtime/profiler.h); nullptr stops.
  // Not owned.
  void SetProfiler(Profiler* profiler);

  bool uses_graph() const { return session_ != nullptr; }
  const std::shared_ptr<const vm::Module>& module() const { return module_; }

 private:
  PreparedCall() = default;
  CallSpec spec_;
  std::shared_ptr<const vm::Module> module_;
  std::vector<Tensor> inputs_;
  std::vector<Any> args_;
  std::unique_ptr<vm::Context> context_;
  std::unique_ptr<graph_executor::GraphSession> session_;
  std::vector<Tensor> graph_outputs_;
};

// Splits the result of a call into the outputs the user sees.
std::vector<Any> FlattenOutputs(const Any& result);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_PREPARED_CALL_H_
