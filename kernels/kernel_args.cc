#include "kernels/kernel_args.h"

#include <string>

namespace kiln {
namespace kernels {

Status CheckArgCount(const char* fn, Span<const Any> args, size_t count, const char* signature) {
  if (args.size() == count) return Status::Ok();
  return InvalidArgument(StrFormat("%s: expected %zu arguments %s, got %zu", fn, count, signature, args.size()));
}

Result<Tensor> TensorArg(const char* fn, Span<const Any> args, size_t index, const char* name) {
  KILN_CHECK(index < args.size(), "%s: argument index %zu out of range", fn, index);
  const Any& arg = args[index];
  if (!arg.is_tensor()) {
    return InvalidArgument(StrFormat("%s: argument %zu (%s) must be a tensor, got %s", fn, index, name,
                                     arg.Describe().c_str()));
  }
  Tensor t = arg.tensor();
  if (t.dl()->device.device_type != kDLCPU) {
    return InvalidArgument(StrFormat("%s: %s must be on the CPU, got device type %d", fn, name,
                                     static_cast<int>(t.dl()->device.device_type)));
  }
  return t;
}

Status CheckDType(const char* fn, const char* name, const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return Status::Ok();
  return InvalidArgument(StrFormat("%s: %s has dtype %s, expected %s", fn, name, DTypeToString(t.dtype()).c_str(),
                                   DTypeToString(dtype).c_str()));
}

bool IsCompactRowMajor(const Tensor& t) {
  const DLTensor* dl = t.dl();
  if (dl->strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = dl->ndim - 1; i >= 0; --i) {
    if (dl->shape[i] != 1 && dl->strides[i] != expected) return false;
    expected *= dl->shape[i];
  }
  return true;
}

Status CheckCompact(const char* fn, const char* name, const Tensor& t) {
  if (IsCompactRowMajor(t)) return Status::Ok();
  const DLTensor* dl = t.dl();
  std::vector<int64_t> strides(dl->strides, dl->strides + dl->ndim);
  return InvalidArgument(StrFormat("%s: %s must be compact row-major, got shape %s with strides %s", fn, name,
                                   ShapeToString(t.shape()).c_str(), ShapeToString(strides).c_str()));
}

Status CheckShape(const char* fn, const char* name, const Tensor& t, Span<const int64_t> shape) {
  bool same = t.shape().size() == shape.size();
  for (size_t i = 0; same && i < shape.size(); ++i) same = t.shape()[i] == shape[i];
  if (same) return Status::Ok();
  return InvalidArgument(StrFormat("%s: %s has shape %s, expected %s", fn, name, ShapeToString(t.shape()).c_str(),
                                   ShapeToString(shape).c_str()));
}

Result<MatmulDims> CheckMatmulArgs(const char* fn, Span<const Any> args, Tensor* a, Tensor* b, Tensor* out) {
  KILN_RETURN_IF_ERROR(CheckArgCount(fn, args, 3, "(A, B, Out)"));
  KILN_ASSIGN_OR_RETURN(*a, TensorArg(fn, args, 0, "A"));
  KILN_ASSIGN_OR_RETURN(*b, TensorArg(fn, args, 1, "B"));
  KILN_ASSIGN_OR_RETURN(*out, TensorArg(fn, args, 2, "Out"));
  const struct {
    const char* name;
    const Tensor* t;
  } all[] = {{"A", a}, {"B", b}, {"Out", out}};
  for (const auto& arg : all) {
    KILN_RETURN_IF_ERROR(CheckDType(fn, arg.name, *arg.t, DType::Float32()));
    KILN_RETURN_IF_ERROR(CheckCompact(fn, arg.name, *arg.t));
  }
  if (a->ndim() < 2) {
    return InvalidArgument(StrFormat("%s: A must have rank >= 2 ([..., M, K]), got rank %d (%s)", fn, a->ndim(),
                                     a->TypeString().c_str()));
  }
  if (b->ndim() != 2) {
    return InvalidArgument(StrFormat("%s: B must have rank 2 ([K, N]), got rank %d (%s)", fn, b->ndim(),
                                     b->TypeString().c_str()));
  }
  MatmulDims dims;
  const std::vector<int64_t>& as = a->shape();
  dims.k = as.back();
  dims.n = b->shape()[1];
  if (b->shape()[0] != dims.k) {
    return InvalidArgument(StrFormat("%s: A has K=%lld but B has K=%lld", fn, static_cast<long long>(dims.k),
                                     static_cast<long long>(b->shape()[0])));
  }
  std::vector<int64_t> out_shape(as.begin(), as.end() - 1);
  out_shape.push_back(dims.n);
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Out", *out, out_shape));
  dims.rows = ShapeNumElements(Span<const int64_t>(as.data(), as.size() - 1));
  return dims;
}

}  // namespace kernels
}  // namespace kiln
