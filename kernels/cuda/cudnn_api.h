// Internal to kernels/cuda: cuDNN 9, opened with dlopen on first use, as
// cublaslt_api.h opens cuBLASLt. libcudnn.so.9 (then libcudnn.so; or
// $KILN_CUDNN) is cuDNN's dispatch library, which loads its own parts
// (libcudnn_cnn, _ops, engines) on demand; the legacy convolution API used
// here is in it. cudnn.h is used at build time only.
//
// Thread-safe: the table is loaded once and immutable after.
#ifndef KILN_KERNELS_CUDA_CUDNN_API_H_
#define KILN_KERNELS_CUDA_CUDNN_API_H_

#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace kernels {
namespace cuda {

#define KILN_CUDNN_FUNCTIONS(X)                 \
  X(cudnnGetVersion)                            \
  X(cudnnGetErrorString)                        \
  X(cudnnCreate)                                \
  X(cudnnDestroy)                               \
  X(cudnnSetStream)                             \
  X(cudnnCreateTensorDescriptor)                \
  X(cudnnSetTensor4dDescriptor)                 \
  X(cudnnDestroyTensorDescriptor)               \
  X(cudnnCreateFilterDescriptor)                \
  X(cudnnSetFilter4dDescriptor)                 \
  X(cudnnDestroyFilterDescriptor)               \
  X(cudnnCreateConvolutionDescriptor)           \
  X(cudnnSetConvolution2dDescriptor)           \
  X(cudnnSetConvolutionGroupCount)              \
  X(cudnnSetConvolutionMathType)                \
  X(cudnnDestroyConvolutionDescriptor)          \
  X(cudnnGetConvolution2dForwardOutputDim)      \
  X(cudnnGetConvolutionForwardAlgorithmMaxCount) \
  X(cudnnFindConvolutionForwardAlgorithmEx)     \
  X(cudnnConvolutionForward)                    \
  X(cudnnCreateActivationDescriptor)            \
  X(cudnnSetActivationDescriptor)               \
  X(cudnnDestroyActivationDescriptor)           \
  X(cudnnConvolutionBiasActivationForward)      \
  X(cudnnAddTensor)

struct CudnnApi {
#define KILN_CUDNN_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUDNN_FUNCTIONS(KILN_CUDNN_MEMBER)
#undef KILN_CUDNN_MEMBER
  size_t version = 0;   // cudnnGetVersion(): 10000 * major + 100 * minor + patch (cuDNN 9)
  std::string library;  // the name it was opened by
};

// $KILN_CUDNN alone when set, else libcudnn.so.9 and libcudnn.so.
std::vector<std::string> CudnnLibraryNames();

// Opens the first of `names` that loads and resolves the table. Errors
// (kFailedPrecondition): "cuDNN not found: libcudnn.so.9: <dlerror>; ...",
// "cuDNN not found: X is not cuDNN (no cudnnGetVersion in it)", "cuDNN not
// found: X is cuDNN 8.9.7; Kiln needs 9".
Result<std::unique_ptr<CudnnApi>> OpenCudnn(const std::vector<std::string>& names);

// The process's table (OpenCudnn(CudnnLibraryNames()) once), or why none.
Result<const CudnnApi*> Cudnn();

// OK for CUDNN_STATUS_SUCCESS; else kInternal (kResourceExhausted for
// CUDNN_STATUS_ALLOC_FAILED) "what: <cudnnGetErrorString>".
Status CudnnCheck(const CudnnApi& api, cudnnStatus_t status, const char* what);

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln

#define KILN_CUDNN_RETURN_IF_ERROR(api, call, what) \
  KILN_RETURN_IF_ERROR(::kiln::kernels::cuda::CudnnCheck((api), (call), (what)))

#endif  // KILN_KERNELS_CUDA_CUDNN_API_H_
