// kiln.ref.add (numpy broadcasting) and kiln.ref.relu.
#include <algorithm>
#include <cstdint>

#include "kernels/kernel_args.h"
#include "kernels/ref_kernels.h"
#include "runtime/registry.h"

namespace kiln {
namespace kernels {
namespace {

bool IsElementwiseDType(DType t) {
  return t == DType::Float32() || t == DType::Float64() || t == DType::Int32() || t == DType::Int64();
}

Status CheckElementwiseDType(const char* fn, const char* name, const Tensor& t) {
  if (IsElementwiseDType(t.dtype())) return Status::Ok();
  return InvalidArgument(StrFormat("%s: %s has dtype %s, expected float32, float64, int32 or int64", fn, name,
                                   DTypeToString(t.dtype()).c_str()));
}

// Strides of `shape` (row-major) aligned to the last `rank` dimensions of the
// output; a broadcast dimension (extent 1, or missing) gets stride 0.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& shape, size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t src = shape.size() - 1 - i;
    size_t dst = rank - 1 - i;
    strides[dst] = shape[src] == 1 ? 0 : stride;
    stride *= shape[src];
  }
  return strides;
}

template <typename T>
void AddLoop(const Tensor& a, const Tensor& b, const Tensor& out) {
  const std::vector<int64_t>& shape = out.shape();
  const size_t rank = shape.size();
  const std::vector<int64_t> sa = BroadcastStrides(a.shape(), rank);
  const std::vector<int64_t> sb = BroadcastStrides(b.shape(), rank);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  const int64_t total = out.NumElements();
  // Odometer over the output index; offsets into A and B follow it.
  std::vector<int64_t> index(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < total; ++i) {
    po[i] = pa[oa] + pb[ob];
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      oa += sa[d];
      ob += sb[d];
      if (index[d] < shape[d]) break;
      oa -= sa[d] * shape[d];
      ob -= sb[d] * shape[d];
      index[d] = 0;
    }
  }
}

template <typename T>
void ReluLoop(const Tensor& a, const Tensor& out) {
  const T* pa = a.data<T>();
  T* po = out.data<T>();
  const int64_t n = a.NumElements();
  for (int64_t i = 0; i < n; ++i) po[i] = std::max(pa[i], T(0));
}

// Calls F<T>() for the element type of `t` (one of IsElementwiseDType).
template <template <typename> class F, typename... Args>
void DispatchElementwise(DType t, Args&&... args) {
  if (t == DType::Float32()) F<float>()(args...);
  else if (t == DType::Float64()) F<double>()(args...);
  else if (t == DType::Int32()) F<int32_t>()(args...);
  else F<int64_t>()(args...);
}

template <typename T>
struct AddFn {
  void operator()(const Tensor& a, const Tensor& b, const Tensor& o) const { AddLoop<T>(a, b, o); }
};
template <typename T>
struct ReluFn {
  void operator()(const Tensor& a, const Tensor& o) const { ReluLoop<T>(a, o); }
};

}  // namespace

Result<std::vector<int64_t>> BroadcastShapes(const char* fn, Span<const int64_t> a, Span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      return InvalidArgument(StrFormat("%s: shapes %s and %s do not broadcast (dimension %zu from the end: %lld vs %lld)",
                                       fn, ShapeToString(a).c_str(), ShapeToString(b).c_str(), i,
                                       static_cast<long long>(da), static_cast<long long>(db)));
    }
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Status RefAdd(Span<const Any> args, Any* ret) {
  const char* fn = "kiln.ref.add";
  KILN_RETURN_IF_ERROR(CheckArgCount(fn, args, 3, "(A, B, Out)"));
  KILN_ASSIGN_OR_RETURN(Tensor a, TensorArg(fn, args, 0, "A"));
  KILN_ASSIGN_OR_RETURN(Tensor b, TensorArg(fn, args, 1, "B"));
  KILN_ASSIGN_OR_RETURN(Tensor out, TensorArg(fn, args, 2, "Out"));
  KILN_RETURN_IF_ERROR(CheckElementwiseDType(fn, "A", a));
  KILN_RETURN_IF_ERROR(CheckDType(fn, "B", b, a.dtype()));
  KILN_RETURN_IF_ERROR(CheckDType(fn, "Out", out, a.dtype()));
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "A", a));
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "B", b));
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "Out", out));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastShapes(fn, a.shape(), b.shape()));
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Out", out, shape));
  DispatchElementwise<AddFn>(a.dtype(), a, b, out);
  return Status::Ok();
}

Status RefRelu(Span<const Any> args, Any* ret) {
  const char* fn = "kiln.ref.relu";
  KILN_RETURN_IF_ERROR(CheckArgCount(fn, args, 2, "(A, Out)"));
  KILN_ASSIGN_OR_RETURN(Tensor a, TensorArg(fn, args, 0, "A"));
  KILN_ASSIGN_OR_RETURN(Tensor out, TensorArg(fn, args, 1, "Out"));
  KILN_RETURN_IF_ERROR(CheckElementwiseDType(fn, "A", a));
  KILN_RETURN_IF_ERROR(CheckDType(fn, "Out", out, a.dtype()));
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "A", a));
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "Out", out));
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Out", out, a.shape()));
  DispatchElementwise<ReluFn>(a.dtype(), a, out);
  return Status::Ok();
}

KILN_REGISTER_GLOBAL("kiln.ref.add", RefAdd);
KILN_REGISTER_GLOBAL("kiln.ref.relu", RefRelu);

}  // namespace kernels
}  // namespace kiln
