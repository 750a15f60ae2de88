#include "runtime/cuda/cuda_graph.h"

#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/driver_api.h"

namespace kiln {
namespace cuda {

Status CudaGraph::BeginCapture(CudaDevice* device) {
  KILN_RETURN_IF_ERROR(device->MakeCurrent());
  const DriverApi& api = device->api();
  return Check(api,
               api.cuStreamBeginCapture(static_cast<CUstream>(device->stream()), CU_STREAM_CAPTURE_MODE_RELAXED),
               "cuStreamBeginCapture");
}

Result<bool> CudaGraph::IsCapturing(CudaDevice* device) {
  KILN_RETURN_IF_ERROR(device->MakeCurrent());
  const DriverApi& api = device->api();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  KILN_CUDA_RETURN_IF_ERROR(api, api.cuStreamIsCapturing(static_cast<CUstream>(device->stream()), &status),
                            "cuStreamIsCapturing");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

Result<std::unique_ptr<CudaGraph>> CudaGraph::EndCapture(CudaDevice* device) {
  KILN_RETURN_IF_ERROR(device->MakeCurrent());
  const DriverApi& api = device->api();
  // Ending also ends an invalidated capture, so the stream is plain again
  // whatever happened while recording.
  CUgraph graph = nullptr;
  KILN_CUDA_RETURN_IF_ERROR(api, api.cuStreamEndCapture(static_cast<CUstream>(device->stream()), &graph),
                            "cuStreamEndCapture");
  std::unique_ptr<CudaGraph> g(new CudaGraph());
  g->device_ = device;
  g->graph_ = graph;
  size_t nodes = 0;
  KILN_CUDA_RETURN_IF_ERROR(api, api.cuGraphGetNodes(graph, nullptr, &nodes), "cuGraphGetNodes");
  g->nodes_ = nodes;
  if (nodes == 0) return FailedPrecondition("the capture recorded no work");
  CUgraphExec exec = nullptr;
  KILN_CUDA_RETURN_IF_ERROR(api, api.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate");
  g->exec_ = exec;
  return g;
}

CudaGraph::~CudaGraph() {
  if (device_ == nullptr || !device_->MakeCurrent().ok()) return;
  const DriverApi& api = device_->api();
  if (exec_ != nullptr) (void)api.cuGraphExecDestroy(static_cast<CUgraphExec>(exec_));
  if (graph_ != nullptr) (void)api.cuGraphDestroy(static_cast<CUgraph>(graph_));
}

Status CudaGraph::Launch() {
  KILN_RETURN_IF_ERROR(device_->MakeCurrent());
  const DriverApi& api = device_->api();
  return Check(api, api.cuGraphLaunch(static_cast<CUgraphExec>(exec_), static_cast<CUstream>(device_->stream())),
               "cuGraphLaunch");
}

}  // namespace cuda
}  // namespace kiln
