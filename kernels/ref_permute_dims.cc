// kiln.ref.permute_dims: Out = transpose(A, axes); axes default to reversed.
#include <cstring>

#include "kernels/kernel_args.h"
#include "kernels/ref_kernels.h"
#include "runtime/registry.h"

namespace kiln {
namespace kernels {
namespace {

// Validates `axes` as a permutation of [0, rank); negative axes count from the end.
Result<std::vector<int64_t>> NormalizeAxes(const char* fn, const std::vector<int64_t>& axes, int rank) {
  if (static_cast<int>(axes.size()) != rank) {
    return InvalidArgument(StrFormat("%s: axes %s has %zu entries but A has rank %d", fn,
                                     ShapeToString(axes).c_str(), axes.size(), rank));
  }
  std::vector<int64_t> norm(axes);
  std::vector<bool> seen(rank, false);
  for (int64_t& ax : norm) {
    if (ax < -rank || ax >= rank) {
      return InvalidArgument(StrFormat("%s: axes %s is not a permutation of the %d axes of A", fn,
                                       ShapeToString(axes).c_str(), rank));
    }
    if (ax < 0) ax += rank;
    if (seen[ax]) {
      return InvalidArgument(StrFormat("%s: axes %s is not a permutation of the %d axes of A", fn,
                                       ShapeToString(axes).c_str(), rank));
    }
    seen[ax] = true;
  }
  return norm;
}

}  // namespace

Status RefPermuteDims(Span<const Any> args, Any* ret) {
  const char* fn = "kiln.ref.permute_dims";
  if (args.size() != 2 && args.size() != 3) {
    return InvalidArgument(StrFormat("%s: expected 2 arguments (A, Out) or 3 (A, axes, Out), got %zu", fn, args.size()));
  }
  KILN_ASSIGN_OR_RETURN(Tensor a, TensorArg(fn, args, 0, "A"));
  KILN_ASSIGN_OR_RETURN(Tensor out, TensorArg(fn, args, args.size() - 1, "Out"));
  const int rank = a.ndim();
  std::vector<int64_t> axes;
  if (args.size() == 3) {
    if (!args[1].is_shape()) {
      return InvalidArgument(StrFormat("%s: argument 1 (axes) must be a shape, got %s", fn, args[1].Describe().c_str()));
    }
    KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes(fn, args[1].shape_dims(), rank));
  } else {
    for (int i = rank - 1; i >= 0; --i) axes.push_back(i);
  }
  KILN_RETURN_IF_ERROR(CheckDType(fn, "Out", out, a.dtype()));
  const size_t elem = a.dtype().bytes();
  if (elem != 1 && elem != 2 && elem != 4 && elem != 8) {
    return InvalidArgument(StrFormat("%s: A has dtype %s; only 1, 2, 4 or 8-byte elements are supported", fn,
                                     DTypeToString(a.dtype()).c_str()));
  }
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "A", a));
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "Out", out));
  std::vector<int64_t> out_shape(rank);
  for (int i = 0; i < rank; ++i) out_shape[i] = a.shape()[axes[i]];
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Out", out, out_shape));

  // in_strides[i]: the stride in A of output dimension i.
  std::vector<int64_t> a_strides(rank, 1);
  for (int i = rank - 2; i >= 0; --i) a_strides[i] = a_strides[i + 1] * a.shape()[i + 1];
  std::vector<int64_t> in_strides(rank);
  for (int i = 0; i < rank; ++i) in_strides[i] = a_strides[axes[i]];

  const char* src = static_cast<const char*>(a.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  const int64_t total = out.NumElements();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;  // in elements of A
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(dst + i * elem, src + offset * elem, elem);
    for (int d = rank - 1; d >= 0; --d) {
      ++index[d];
      offset += in_strides[d];
      if (index[d] < out_shape[d]) break;
      offset -= in_strides[d] * out_shape[d];
      index[d] = 0;
    }
  }
  return Status::Ok();
}

KILN_REGISTER_GLOBAL("kiln.ref.permute_dims", RefPermuteDims);

}  // namespace kernels
}  // namespace kiln
