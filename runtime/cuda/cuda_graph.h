// CudaGraph: the work queued on a device's stream between BeginCapture and
// EndCapture, recorded once (cuStreamBeginCapture / cuStreamEndCapture /
// cuGraphInstantiate) and replayed with one launch (cuGraphLaunch), so a
// call of many kernels costs the host one launch.
//
// Capture is relaxed (CU_STREAM_CAPTURE_MODE_RELAXED): a cuMemAlloc of the
// caching allocator's cache miss may happen while recording (the memory is
// allocated then, outside the graph, and kept by whoever holds the tensor).
// Anything that waits for the stream (a copy to the host, a stream
// synchronize) fails the capture instead of recording something that would
// not replay; EndCapture then returns the reason and the stream is usable
// again (callers fall back to plain launches). Every launch on the stream
// while it records, from any thread, goes into the graph: one caller per
// stream while capturing.
//
// A replay reads and writes exactly the device addresses the captured work
// used: the caller keeps them allocated and in place (inputs, outputs,
// planned storage, workspaces) for as long as it replays.
//
// Thread-compatible: one thread captures and launches.
#ifndef KILN_RUNTIME_CUDA_CUDA_GRAPH_H_
#define KILN_RUNTIME_CUDA_CUDA_GRAPH_H_

#include <cstddef>
#include <memory>

#include "runtime/status.h"

namespace kiln {
namespace cuda {

class CudaDevice;

class CudaGraph {
 public:
  // Starts recording the device's stream.
  static Status BeginCapture(CudaDevice* device);
  // Stops recording and instantiates what was recorded. Errors: the
  // capture's failure ("cuStreamEndCapture: CUDA_ERROR_STREAM_CAPTURE_
  // INVALIDATED ..."), a capture of nothing ("the capture recorded no work").
  static Result<std::unique_ptr<CudaGraph>> EndCapture(CudaDevice* device);
  // Whether the device's stream is being recorded now.
  static Result<bool> IsCapturing(CudaDevice* device);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Replays the graph on the device's stream (asynchronous).
  Status Launch();
  // Kernels, copies and memsets recorded.
  size_t num_nodes() const { return nodes_; }

 private:
  CudaGraph() = default;
  CudaDevice* device_ = nullptr;
  void* graph_ = nullptr;  // CUgraph
  void* exec_ = nullptr;   // CUgraphExec
  size_t nodes_ = 0;
};

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_RUNTIME_CUDA_CUDA_GRAPH_H_
