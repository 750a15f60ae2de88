// kiln.cudnn.conv2d and its bias / bias+relu variants: float32 NCHW
// convolutions on a CUDA device through cuDNN 9 (cudnn_api.h; opened at
// first use).
//
// Destination-passing packed functions with kiln.dnnl.conv2d's convention:
//   kiln.cudnn.conv2d(X, W, Attrs, Out)
//   kiln.cudnn.conv2d_bias(X, W, Bias, Attrs, Out)       Out = conv + Bias
//   kiln.cudnn.conv2d_bias_relu(X, W, Bias, Attrs, Out)  Out = relu(conv + Bias)
// X [N, C, H, W], W [O, C/groups, KH, KW], Bias of O values ([O], [O, 1, 1]
// or [1, O, 1, 1]), Attrs int64 [9] (strides, paddings top/left/bottom/right,
// dilations, groups: kiln.dnnl.conv2d's), Out [N, O, OH, OW]; float32,
// compact, in memory the device reaches. cuDNN's legacy API pads
// symmetrically, so top == bottom and left == right (the compiler sends
// only such convolutions).
//
// float32 math (CUDNN_FMA_MATH; TF32 only with KILN_CUDNN_TF32=1). The
// algorithm is chosen once per problem (shape and attributes) by timing
// cuDNN's candidates on the first call's buffers
// (cudnnFindConvolutionForwardAlgorithmEx, workspace up to 256 MiB), and
// cached with the descriptors per binding. bias_relu is one
// cudnnConvolutionBiasActivationForward; bias is the convolution and a
// cudnnAddTensor (cuDNN fuses an identity activation only for one algorithm).
//
// Device functions (runtime/cuda/device_functions.h), as kiln.cublas.matmul;
// one binding's calls are serialized by a mutex.
#ifndef KILN_KERNELS_CUDA_CUDNN_CONV_H_
#define KILN_KERNELS_CUDA_CUDNN_CONV_H_

#include <cstdint>

#include "runtime/any.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace cuda {
class CudaDevice;
}  // namespace cuda

namespace kernels {
namespace cuda {

enum class CudnnConvEpilogue { kNone, kBias, kBiasRelu };

// "kiln.cudnn.conv2d", "kiln.cudnn.conv2d_bias", "kiln.cudnn.conv2d_bias_relu".
const char* CudnnConvName(CudnnConvEpilogue e);

struct CudnnConvProblem {
  int64_t n = 0, c = 0, h = 0, w = 0;  // X
  int64_t o = 0, kh = 0, kw = 0;       // W
  int64_t oh = 0, ow = 0;              // Out
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1, groups = 1;
};

// The arguments of CudnnConvName(e), checked on the host (Attrs read there:
// a constant, in managed memory on the GPU path). InvalidArgument naming the
// function and the argument.
Result<CudnnConvProblem> CheckCudnnConvArgs(CudnnConvEpilogue e, Span<const Any> args, Tensor* x, Tensor* w,
                                            Tensor* bias, Tensor* out);

// The packed function CudnnConvName(e) bound to `device`. Fails with cuDNN's
// load error or the handle's creation error.
Result<PackedFunc> BindCudnnConv(CudnnConvEpilogue e, ::kiln::cuda::CudaDevice* device);

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_CUDA_CUDNN_CONV_H_
