// PreparedCall: a loaded module, inputs and a ready call context for one
// function — everything kiln-run and kiln-bench do before the first call.
// Input errors come before the module loads, so a typo in a flag does not
// wait for a large model.
//
// Thread-compatible: one thread calls Call() at a time. Several PreparedCalls
// made with Bind() on one module run in parallel (each has its own context),
// which is how kiln-bench --concurrency drives one module from N threads.
#ifndef KILN_TOOLS_COMMON_PREPARED_CALL_H_
#define KILN_TOOLS_COMMON_PREPARED_CALL_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/any.h"
#include "runtime/profiler.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tools {

struct CallSpec {
  std::string module_path;
  std::string function = "main";
  std::vector<std::string> inputs;  // SPECs (tools/common/inline_tensor.h)
  int threads = 0;                  // 0: one per core (vm::LoadOptions::num_threads)
  std::string executor = "auto";    // "auto", "vm" or "graph"
  bool verify_weights = false;      // vm::LoadOptions::verify_weights
  // -1: the CPU. N: CUDA device N, for a module compiled with --target=cuda
  // (runtime/cuda/gpu_linker.h): inputs are copied to the device before the
  // first call, and each call waits for its kernels before it returns.
  int device = -1;
  // On a GPU, a function whose parameters all have static shapes is
  // captured as a CUDA graph in its second call (runtime/cuda/cuda_graph.h)
  // and replayed from then on: one launch per call. When capture fails the
  // calls stay plain launches and cuda_graph_note() says why.
  bool cuda_graph = true;
  // ContextOptions::replay (vm/module.h).
  bool replay = true;
};

// Loads spec.module_path with spec.threads; errors name the file.
Result<std::shared_ptr<const vm::Module>> LoadModuleForTool(const CallSpec& spec);

class PreparedCall {
 public:
  // Parses spec.inputs, loads the module, binds (below). An input read as
  // uint16 for a bfloat16 parameter is taken as its bits (the .npy
  // convention of runtime/npy.h).
  static Result<std::unique_ptr<PreparedCall>> Create(const CallSpec& spec);
  // A caller of spec.function on an already loaded module with the given
  // inputs; checks the function exists and the input count.
  static Result<std::unique_ptr<PreparedCall>> Bind(std::shared_ptr<const vm::Module> module, const CallSpec& spec,
                                                    std::vector<Tensor> inputs);

  // One call. On the graph executor repeated calls allocate nothing. On a
  // GPU the results stay in device memory (kDLCUDA): OutputsToHost.
  Status Call(Any* result);
  // Replaces each device tensor in `outputs` with a host copy (waiting for
  // the device); a no-op on the CPU.
  Status OutputsToHost(std::vector<Any>* outputs) const;

  // Records later calls into `profiler` (runtime/profiler.h); nullptr stops.
  // Not owned.
  void SetProfiler(Profiler* profiler) { context_->set_profiler(profiler); }

  bool uses_graph() const { return uses_graph_; }
  // Bytes held at once by tensors of the last call (vm::Context::LastCallPeakBytes).
  uint64_t LastCallPeakBytes() const { return context_->LastCallPeakBytes(); }
  // On a GPU: the last call's time on the device's stream (CUDA events
  // recorded before and after it), in ms; -1 on the CPU.
  double LastCallGpuMs() const { return last_gpu_ms_; }
  // On a GPU: "captured as a CUDA graph of N nodes", "not captured: <why>",
  // or "" before the second call (and on the CPU).
  const std::string& cuda_graph_note() const { return graph_note_; }
  // Seconds Create() spent loading the module (0 after Bind()).
  double load_seconds() const { return load_seconds_; }
  const std::shared_ptr<const vm::Module>& module() const { return module_; }
  const std::vector<Tensor>& inputs() const { return inputs_; }

 private:
  PreparedCall() = default;
  CallSpec spec_;
  std::shared_ptr<const vm::Module> module_;
  vm::FunctionHandle handle_;
  std::vector<Tensor> inputs_;
  std::vector<Any> args_;
  std::unique_ptr<vm::Context> context_;
  // The device of a GPU module (a cuda::CudaGpuLinker); null on the CPU.
  std::shared_ptr<GpuLinker> gpu_;
  std::shared_ptr<void> gpu_timer_;  // a cuda::CudaTimer on the GPU
  double last_gpu_ms_ = -1;
  // CUDA graph replay (CallSpec::cuda_graph): the graph (a cuda::CudaGraph),
  // the result of the captured call (its tensors are what each replay
  // writes), and the calls so far.
  std::shared_ptr<void> cuda_graph_;
  Any graph_result_;
  int gpu_calls_ = 0;
  std::string graph_note_;
  bool static_shapes_ = false;
  Status CaptureCudaGraph();
  bool uses_graph_ = false;
  double load_seconds_ = 0;
};

// Splits the result of a call into the outputs the user sees.
std::vector<Any> FlattenOutputs(const Any& result);

// Inputs for `function` of `module` made from its signature: each tensor
// parameter gets the documented random values (inline_tensor.h) of seed
// `seed + index`; a symbolic dimension takes its value from `dims`
// (kInvalidArgument naming the dimension and parameter when it is missing).
// Non-tensor parameters are refused (give them with --input).
Result<std::vector<Tensor>> RandomInputs(const vm::Module& module, const std::string& function,
                                         const std::map<std::string, int64_t>& dims, uint64_t seed);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_PREPARED_CALL_H_
