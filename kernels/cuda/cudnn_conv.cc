// kiln.cudnn.conv2d*: cuDNN's legacy convolution API on the device's stream;
// descriptors and the timed algorithm cached per problem.
#include "kernels/cuda/cudnn_conv.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/cudnn_api.h"
#include "kernels/kernel_args.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/device_functions.h"
#include "runtime/device_memory.h"

namespace kiln {
namespace kernels {
namespace cuda {

using ::kiln::cuda::CudaDevice;

const char* CudnnConvName(CudnnConvEpilogue e) {
  switch (e) {
    case CudnnConvEpilogue::kNone: return "kiln.cudnn.conv2d";
    case CudnnConvEpilogue::kBias: return "kiln.cudnn.conv2d_bias";
    case CudnnConvEpilogue::kBiasRelu: return "kiln.cudnn.conv2d_bias_relu";
  }
  return "kiln.cudnn.conv2d?";
}

Result<CudnnConvProblem> CheckCudnnConvArgs(CudnnConvEpilogue e, Span<const Any> args, Tensor* x, Tensor* w,
                                            Tensor* bias, Tensor* out) {
  const char* fn = CudnnConvName(e);
  const bool has_bias = e != CudnnConvEpilogue::kNone;
  KILN_RETURN_IF_ERROR(CheckArgCount(fn, args, has_bias ? 5 : 4,
                                     has_bias ? "(X, W, Bias, Attrs, Out)" : "(X, W, Attrs, Out)"));
  const size_t attrs_at = has_bias ? 3 : 2;
  KILN_ASSIGN_OR_RETURN(*x, TensorArg(fn, args, 0, "X"));
  KILN_ASSIGN_OR_RETURN(*w, TensorArg(fn, args, 1, "W"));
  if (has_bias) {
    KILN_ASSIGN_OR_RETURN(*bias, TensorArg(fn, args, 2, "Bias"));
  }
  KILN_ASSIGN_OR_RETURN(Tensor attrs, TensorArg(fn, args, attrs_at, "Attrs"));
  KILN_ASSIGN_OR_RETURN(*out, TensorArg(fn, args, attrs_at + 1, "Out"));
  const struct {
    const char* name;
    const Tensor* t;
  } all[] = {{"X", x}, {"W", w}, {"Out", out}, {"Bias", bias}};
  for (const auto& arg : all) {
    if (arg.t == bias && !has_bias) continue;
    KILN_RETURN_IF_ERROR(CheckDType(fn, arg.name, *arg.t, DType::Float32()));
    KILN_RETURN_IF_ERROR(CheckCompact(fn, arg.name, *arg.t));
    if (arg.t != bias && arg.t->ndim() != 4) {
      return InvalidArgument(StrFormat("%s: %s must have rank 4, got shape %s", fn, arg.name,
                                       ShapeToString(arg.t->shape()).c_str()));
    }
  }
  KILN_RETURN_IF_ERROR(CheckDType(fn, "Attrs", attrs, DType::Int64()));
  const int64_t attr_shape[] = {9};
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Attrs", attrs, attr_shape));
  int64_t a[9];  // strides h/w, paddings top/left/bottom/right, dilations h/w, groups
  std::memcpy(a, attrs.raw_data(), sizeof(a));
  CudnnConvProblem p;
  p.n = x->shape()[0], p.c = x->shape()[1], p.h = x->shape()[2], p.w = x->shape()[3];
  p.o = w->shape()[0], p.kh = w->shape()[2], p.kw = w->shape()[3];
  p.oh = out->shape()[2], p.ow = out->shape()[3];
  p.stride_h = a[0], p.stride_w = a[1], p.pad_h = a[2], p.pad_w = a[3];
  p.dilation_h = a[6], p.dilation_w = a[7], p.groups = a[8];
  if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1 || p.groups < 1 || a[2] < 0 ||
      a[3] < 0 || a[4] < 0 || a[5] < 0) {
    return InvalidArgument(StrFormat("%s: Attrs must have strides, dilations and groups >= 1 and paddings >= 0", fn));
  }
  if (a[2] != a[4] || a[3] != a[5]) {
    return InvalidArgument(StrFormat("%s: cuDNN pads symmetrically; got paddings top %lld, bottom %lld, left %lld, "
                                     "right %lld",
                                     fn, static_cast<long long>(a[2]), static_cast<long long>(a[4]),
                                     static_cast<long long>(a[3]), static_cast<long long>(a[5])));
  }
  if (p.c % p.groups != 0 || p.o % p.groups != 0 || w->shape()[1] != p.c / p.groups) {
    return InvalidArgument(StrFormat("%s: X has %lld channels and W shape %s, which does not fit groups=%lld", fn,
                                     static_cast<long long>(p.c), ShapeToString(w->shape()).c_str(),
                                     static_cast<long long>(p.groups)));
  }
  if (p.c == 0 || p.kh == 0 || p.kw == 0) {
    return InvalidArgument(StrFormat("%s: an empty window or no input channels (C=%lld, KH=%lld, KW=%lld) is not "
                                     "supported",
                                     fn, static_cast<long long>(p.c), static_cast<long long>(p.kh),
                                     static_cast<long long>(p.kw)));
  }
  const int64_t want_h = (p.h + 2 * p.pad_h - (p.dilation_h * (p.kh - 1) + 1)) / p.stride_h + 1;
  const int64_t want_w = (p.w + 2 * p.pad_w - (p.dilation_w * (p.kw - 1) + 1)) / p.stride_w + 1;
  if (want_h < 1 || want_w < 1) {
    return InvalidArgument(StrFormat("%s: the window (%lldx%lld, dilation %lldx%lld) is larger than the padded input", fn,
                                     static_cast<long long>(p.kh), static_cast<long long>(p.kw),
                                     static_cast<long long>(p.dilation_h), static_cast<long long>(p.dilation_w)));
  }
  const int64_t want[] = {p.n, p.o, want_h, want_w};
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Out", *out, want));
  if (has_bias) {
    const std::vector<int64_t>& bs = bias->shape();
    const bool fits = (bs.size() == 1 && bs[0] == p.o) || (bs.size() == 3 && bs[0] == p.o && bs[1] == 1 && bs[2] == 1) ||
                      (bs.size() == 4 && bs[0] == 1 && bs[1] == p.o && bs[2] == 1 && bs[3] == 1);
    if (!fits) {
      return InvalidArgument(StrFormat("%s: Bias must hold the %lld output channels ([O], [O, 1, 1] or [1, O, 1, 1]), "
                                       "got shape %s",
                                       fn, static_cast<long long>(p.o), ShapeToString(bs).c_str()));
    }
  }
  // cuDNN's 4-d descriptors take int dimensions.
  for (int64_t d : {p.n, p.c, p.h, p.w, p.o, p.kh, p.kw, p.oh, p.ow}) {
    if (d > INT32_MAX) {
      return InvalidArgument(StrFormat("%s: a dimension of %lld; cuDNN's descriptors take at most %d", fn,
                                       static_cast<long long>(d), INT32_MAX));
    }
  }
  return p;
}

namespace {

constexpr size_t kMaxWorkspaceBytes = 256u << 20;  // offered to the algorithm search
constexpr size_t kMaxPlans = 256;                   // distinct problems cached per binding

struct Plan {
  explicit Plan(const CudnnApi* a) : api(a) {}
  ~Plan() {
    if (act) api->cudnnDestroyActivationDescriptor(act);
    if (bias) api->cudnnDestroyTensorDescriptor(bias);
    if (conv) api->cudnnDestroyConvolutionDescriptor(conv);
    if (filter) api->cudnnDestroyFilterDescriptor(filter);
    if (y) api->cudnnDestroyTensorDescriptor(y);
    if (x) api->cudnnDestroyTensorDescriptor(x);
  }
  const CudnnApi* api;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  bool chosen = false;  // algo found (on the first call's buffers)
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace = 0;
};

using PlanKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t>;

class Binding {
 public:
  Binding(const CudnnApi* api, CudaDevice* device, CudnnConvEpilogue e, bool tf32, cudnnHandle_t handle)
      : api_(api), device_(device), epilogue_(e), tf32_(tf32), handle_(handle) {}
  ~Binding() {
    plans_.clear();
    if (device_->MakeCurrent().ok()) api_->cudnnDestroy(handle_);
  }

  Status Call(Span<const Any> args, Any* ret) {
    *ret = Any();
    const char* fn = CudnnConvName(epilogue_);
    // Attrs are read on the host; in a GPU program they are a constant in
    // device memory (runtime/cuda/gpu_linker.h), copied out here.
    std::vector<Any> with_host_attrs;
    const size_t attrs_at = epilogue_ == CudnnConvEpilogue::kNone ? 2 : 3;
    if (args.size() == attrs_at + 2 && args[attrs_at].is_tensor() &&
        !IsHostAddressable(args[attrs_at].tensor_obj()->dl.device)) {
      KILN_ASSIGN_OR_RETURN(Tensor host, HostAttrs(args[attrs_at].tensor()));
      with_host_attrs.assign(args.begin(), args.end());
      with_host_attrs[attrs_at] = Any(host);
      args = Span<const Any>(with_host_attrs.data(), with_host_attrs.size());
    }
    Tensor x, w, bias, out;
    KILN_ASSIGN_OR_RETURN(CudnnConvProblem p, CheckCudnnConvArgs(epilogue_, args, &x, &w, &bias, &out));
    if (out.NumElements() == 0) return Status::Ok();
    KILN_RETURN_IF_ERROR(device_->MakeCurrent());
    std::lock_guard<std::mutex> lock(mu_);
    const PlanKey key{p.n, p.c, p.h, p.w, p.o, p.kh, p.kw, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h,
                      p.dilation_w, p.groups};
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      if (plans_.size() >= kMaxPlans) plans_.clear();
      Result<std::unique_ptr<Plan>> plan = MakePlan(p);
      if (!plan.ok()) return plan.TakeStatus().Annotate(fn);
      it = plans_.emplace(key, std::move(plan).value()).first;
    }
    Plan& plan = *it->second;
    if (!plan.chosen) {
      Status s = Choose(&plan, x, w, out);
      if (!s.ok()) return s.Annotate(fn);
    }
    uint64_t workspace = 0;
    if (plan.workspace > 0) {
      KILN_ASSIGN_OR_RETURN(workspace, device_->Allocate(plan.workspace));
    }
    Status s = Run(plan, x, w, bias, out, reinterpret_cast<void*>(workspace));
    if (workspace != 0) device_->Free(workspace);  // stream-ordered
    return s.ok() ? s : s.Annotate(fn);
  }

 private:
  Result<std::unique_ptr<Plan>> MakePlan(const CudnnConvProblem& p) {
    const CudnnApi& api = *api_;
    auto plan = std::make_unique<Plan>(api_);
    auto i = [](int64_t v) { return static_cast<int>(v); };
    KILN_CUDNN_RETURN_IF_ERROR(api, api.cudnnCreateTensorDescriptor(&plan->x), "cudnnCreateTensorDescriptor");
    KILN_CUDNN_RETURN_IF_ERROR(
        api, api.cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(p.n), i(p.c), i(p.h), i(p.w)),
        "cudnnSetTensor4dDescriptor(X)");
    KILN_CUDNN_RETURN_IF_ERROR(api, api.cudnnCreateTensorDescriptor(&plan->y), "cudnnCreateTensorDescriptor");
    KILN_CUDNN_RETURN_IF_ERROR(api,
                               api.cudnnSetTensor4dDescriptor(plan->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(p.n),
                                                              i(p.o), i(p.oh), i(p.ow)),
                               "cudnnSetTensor4dDescriptor(Out)");
    KILN_CUDNN_RETURN_IF_ERROR(api, api.cudnnCreateFilterDescriptor(&plan->filter), "cudnnCreateFilterDescriptor");
    KILN_CUDNN_RETURN_IF_ERROR(api,
                               api.cudnnSetFilter4dDescriptor(plan->filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(p.o),
                                                              i(p.c / p.groups), i(p.kh), i(p.kw)),
                               "cudnnSetFilter4dDescriptor");
    KILN_CUDNN_RETURN_IF_ERROR(api, api.cudnnCreateConvolutionDescriptor(&plan->conv),
                               "cudnnCreateConvolutionDescriptor");
    KILN_CUDNN_RETURN_IF_ERROR(api,
                               api.cudnnSetConvolution2dDescriptor(plan->conv, i(p.pad_h), i(p.pad_w), i(p.stride_h),
                                                                   i(p.stride_w), i(p.dilation_h), i(p.dilation_w),
                                                                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                               "cudnnSetConvolution2dDescriptor");
    KILN_CUDNN_RETURN_IF_ERROR(api, api.cudnnSetConvolutionGroupCount(plan->conv, i(p.groups)),
                               "cudnnSetConvolutionGroupCount");
    KILN_CUDNN_RETURN_IF_ERROR(
        api, api.cudnnSetConvolutionMathType(plan->conv, tf32_ ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
        "cudnnSetConvolutionMathType");
    // cuDNN's own output size must be the one checked on the host.
    int dims[4];
    KILN_CUDNN_RETURN_IF_ERROR(api,
                               api.cudnnGetConvolution2dForwardOutputDim(plan->conv, plan->x, plan->filter, &dims[0],
                                                                         &dims[1], &dims[2], &dims[3]),
                               "cudnnGetConvolution2dForwardOutputDim");
    if (dims[0] != p.n || dims[1] != p.o || dims[2] != p.oh || dims[3] != p.ow) {
      return Internal(StrFormat("cuDNN computes output [%d, %d, %d, %d], the arguments say [%lld, %lld, %lld, %lld]",
                                dims[0], dims[1], dims[2], dims[3], static_cast<long long>(p.n),
                                static_cast<long long>(p.o), static_cast<long long>(p.oh),
                                static_cast<long long>(p.ow)));
    }
    if (epilogue_ != CudnnConvEpilogue::kNone) {
      KILN_CUDNN_RETURN_IF_ERROR(api, api.cudnnCreateTensorDescriptor(&plan->bias), "cudnnCreateTensorDescriptor");
      KILN_CUDNN_RETURN_IF_ERROR(
          api, api.cudnnSetTensor4dDescriptor(plan->bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, i(p.o), 1, 1),
          "cudnnSetTensor4dDescriptor(Bias)");
    }
    if (epilogue_ == CudnnConvEpilogue::kBiasRelu) {
      KILN_CUDNN_RETURN_IF_ERROR(api, api.cudnnCreateActivationDescriptor(&plan->act),
                                 "cudnnCreateActivationDescriptor");
      KILN_CUDNN_RETURN_IF_ERROR(
          api, api.cudnnSetActivationDescriptor(plan->act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
          "cudnnSetActivationDescriptor");
    }
    return plan;
  }

  // Times cuDNN's candidates on this call's buffers (Out is overwritten by
  // the call itself afterwards) and keeps the fastest that succeeded.
  Status Choose(Plan* plan, const Tensor& x, const Tensor& w, const Tensor& out) {
    const CudnnApi& api = *api_;
    int max_count = 0;
    KILN_CUDNN_RETURN_IF_ERROR(api, api.cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &max_count),
                               "cudnnGetConvolutionForwardAlgorithmMaxCount");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max_count > 0 ? max_count : 1));
    KILN_ASSIGN_OR_RETURN(uint64_t scratch, device_->Allocate(kMaxWorkspaceBytes));
    int found = 0;
    cudnnStatus_t s = api.cudnnFindConvolutionForwardAlgorithmEx(
        handle_, plan->x, x.raw_data(), plan->filter, w.raw_data(), plan->conv, plan->y, out.raw_data(),
        static_cast<int>(perf.size()), &found, perf.data(), reinterpret_cast<void*>(scratch), kMaxWorkspaceBytes);
    device_->Free(scratch);
    KILN_CUDNN_RETURN_IF_ERROR(api, s, "cudnnFindConvolutionForwardAlgorithmEx");
    for (int k = 0; k < found; ++k) {
      const cudnnConvolutionFwdAlgoPerf_t& r = perf[static_cast<size_t>(k)];
      if (r.status != CUDNN_STATUS_SUCCESS) continue;
      if (!tf32_ && r.mathType == CUDNN_TENSOR_OP_MATH) continue;  // float32 math only
      plan->algo = r.algo;
      plan->workspace = r.memory;
      plan->chosen = true;
      return Status::Ok();
    }
    return NotFound(StrFormat("cuDNN has no float32 algorithm for this convolution (%d candidates timed)", found));
  }

  Status Run(const Plan& plan, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out, void* ws) {
    const CudnnApi& api = *api_;
    const float one = 1.0f, zero = 0.0f;
    if (epilogue_ == CudnnConvEpilogue::kBiasRelu) {
      // y = relu(conv(x) + 0 * z + bias), with z = y (alpha2 = 0 ignores it).
      KILN_CUDNN_RETURN_IF_ERROR(
          api,
          api.cudnnConvolutionBiasActivationForward(handle_, &one, plan.x, x.raw_data(), plan.filter, w.raw_data(),
                                                    plan.conv, plan.algo, ws, plan.workspace, &zero, plan.y,
                                                    out.raw_data(), plan.bias, bias.raw_data(), plan.act, plan.y,
                                                    out.raw_data()),
          "cudnnConvolutionBiasActivationForward");
      return Status::Ok();
    }
    KILN_CUDNN_RETURN_IF_ERROR(api,
                               api.cudnnConvolutionForward(handle_, &one, plan.x, x.raw_data(), plan.filter,
                                                           w.raw_data(), plan.conv, plan.algo, ws, plan.workspace,
                                                           &zero, plan.y, out.raw_data()),
                               "cudnnConvolutionForward");
    if (epilogue_ == CudnnConvEpilogue::kBias) {
      KILN_CUDNN_RETURN_IF_ERROR(
          api, api.cudnnAddTensor(handle_, &one, plan.bias, bias.raw_data(), &one, plan.y, out.raw_data()),
          "cudnnAddTensor");
    }
    return Status::Ok();
  }

  // A host copy of device Attrs, made once per address: the copy waits for
  // the stream, and Attrs are a constant of the program, fixed while it is
  // loaded. Anything but 72 bytes is passed on for the argument checks to
  // refuse (they read no values before checking the shape).
  Result<Tensor> HostAttrs(const Tensor& attrs) {
    std::lock_guard<std::mutex> lock(attrs_mu_);
    auto it = host_attrs_.find(attrs.raw_data());
    if (it != host_attrs_.end()) return it->second;
    if (attrs.NumBytes() != 9 * sizeof(int64_t) || !attrs.IsCompact()) return attrs;
    KILN_ASSIGN_OR_RETURN(Tensor host, Tensor::Empty(attrs.shape(), attrs.dtype()));
    KILN_RETURN_IF_ERROR(device_->CopyToHost(host.raw_data(), reinterpret_cast<uintptr_t>(attrs.raw_data()),
                                             attrs.NumBytes()));
    KILN_RETURN_IF_ERROR(device_->Synchronize());
    host_attrs_.emplace(attrs.raw_data(), host);
    return host;
  }

  const CudnnApi* api_;
  CudaDevice* device_;
  std::mutex attrs_mu_;
  std::map<const void*, Tensor> host_attrs_;  // guarded by attrs_mu_
  const CudnnConvEpilogue epilogue_;
  const bool tf32_;
  cudnnHandle_t handle_;
  std::mutex mu_;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;  // guarded by mu_
};

}  // namespace

Result<PackedFunc> BindCudnnConv(CudnnConvEpilogue e, CudaDevice* device) {
  KILN_ASSIGN_OR_RETURN(const CudnnApi* api, Cudnn());
  KILN_RETURN_IF_ERROR(device->MakeCurrent());
  cudnnHandle_t handle = nullptr;
  KILN_CUDNN_RETURN_IF_ERROR(*api, api->cudnnCreate(&handle), "cudnnCreate");
  Status s = CudnnCheck(*api, api->cudnnSetStream(handle, static_cast<cudaStream_t>(device->stream())), "cudnnSetStream");
  if (!s.ok()) {
    api->cudnnDestroy(handle);
    return s;
  }
  const char* tf32 = std::getenv("KILN_CUDNN_TF32");
  auto binding = std::make_shared<Binding>(api, device, e, tf32 != nullptr && std::string(tf32) == "1", handle);
  return PackedFunc([binding](Span<const Any> args, Any* ret) -> Status { return binding->Call(args, ret); });
}

namespace {
#define KILN_REGISTER_CUDNN_CONV(e) \
  KILN_REGISTER_DEVICE_FUNCTION(CudnnConvName(e), [](CudaDevice* d) { return BindCudnnConv(e, d); })
KILN_REGISTER_CUDNN_CONV(CudnnConvEpilogue::kNone);
KILN_REGISTER_CUDNN_CONV(CudnnConvEpilogue::kBias);
KILN_REGISTER_CUDNN_CONV(CudnnConvEpilogue::kBiasRelu);
#undef KILN_REGISTER_CUDNN_CONV
}  // namespace

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln
