// The packed functions of the 8-bit matmul (kernels/int8_matmul.h), in
// destination-passing style, both computing ONNX MatMulInteger exactly:
//
// kiln.int8.matmul_integer(A, B, a_zero_point, b_zero_point, Out)
//   A uint8/int8 [..., M, K], B uint8/int8 [K, N], a_zero_point of A's type
//   with 1 or M elements, b_zero_point of B's type with 1 or N elements,
//   Out int32 [..., M, N]. B is packed on every call (a run-time B).
// kiln.int8.matmul_integer_packed(A, Bp, Bterms, a_zero_point, Out)
//   B packed ahead of time (by the compiler, for a constant B): Bp int8
//   [ceil(N/16), ceil(K/4), 64] (int8_pack.h), Bterms int32 [2, 16*ceil(N/16)]
//   holding B's column sums and the effective zero point zb' = zb - s_b of
//   every column. N is Out's last dimension.
//
// The work runs on the calling thread's pool (ThreadPool::Current()).
#include <string>
#include <vector>

#include "kernels/int8_matmul.h"
#include "kernels/int8_pack.h"
#include "kernels/kernel_args.h"
#include "runtime/registry.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace kernels {
namespace {

bool Is8Bit(DType t) { return t == DType::UInt8() || t == DType::Int8(); }

// Checks A and Out ([..., M, K] and [..., M, N]) and fills the A side of `p`.
Status CheckAOut(const char* fn, const Tensor& a, const Tensor& out, int64_t n, Int8MatmulProblem* p) {
  if (!Is8Bit(a.dtype())) {
    return InvalidArgument(StrFormat("%s: A must be uint8 or int8, got %s", fn, DTypeToString(a.dtype()).c_str()));
  }
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "A", a));
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "Out", out));
  KILN_RETURN_IF_ERROR(CheckDType(fn, "Out", out, DType::Int32()));
  if (a.ndim() < 2) {
    return InvalidArgument(StrFormat("%s: A must have rank >= 2 ([..., M, K]), got %s", fn, a.TypeString().c_str()));
  }
  std::vector<int64_t> want(a.shape().begin(), a.shape().end() - 1);
  want.push_back(n);
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Out", out, want));
  p->a = static_cast<const uint8_t*>(a.raw_data());
  p->a_signed = a.dtype() == DType::Int8();
  p->k = a.shape().back();
  p->m = a.shape()[a.ndim() - 2];
  p->rows = 1;
  for (int i = 0; i + 1 < a.ndim(); ++i) p->rows *= a.shape()[i];
  p->lda = p->k;
  p->n = n;
  p->out = out.data<int32_t>();
  return Status::Ok();
}

// The effective zero point of A (za + 128 for int8 A): one value or M.
Status AZeroPoint(const char* fn, const Tensor& a, const Tensor& za, Int8MatmulProblem* p, std::vector<int32_t>* store) {
  KILN_RETURN_IF_ERROR(CheckDType(fn, "a_zero_point", za, a.dtype()));
  const int64_t count = za.NumElements();
  if (count != 1 && count != p->m) {
    return InvalidArgument(StrFormat("%s: a_zero_point has %lld elements, expected 1 or M=%lld", fn,
                                     static_cast<long long>(count), static_cast<long long>(p->m)));
  }
  store->resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    (*store)[i] = p->a_signed ? int32_t{za.data<int8_t>()[i]} + 128 : int32_t{za.data<uint8_t>()[i]};
  }
  p->za = store->data();
  p->za_per_row = count != 1;
  return Status::Ok();
}

Status MatmulInteger(Span<const Any> args, Any* ret) {
  (void)ret;
  const char* fn = "kiln.int8.matmul_integer";
  KILN_RETURN_IF_ERROR(CheckArgCount(fn, args, 5, "(A, B, a_zero_point, b_zero_point, Out)"));
  KILN_ASSIGN_OR_RETURN(Tensor a, TensorArg(fn, args, 0, "A"));
  KILN_ASSIGN_OR_RETURN(Tensor b, TensorArg(fn, args, 1, "B"));
  KILN_ASSIGN_OR_RETURN(Tensor za, TensorArg(fn, args, 2, "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(Tensor zb, TensorArg(fn, args, 3, "b_zero_point"));
  KILN_ASSIGN_OR_RETURN(Tensor out, TensorArg(fn, args, 4, "Out"));
  if (!Is8Bit(b.dtype())) {
    return InvalidArgument(StrFormat("%s: B must be uint8 or int8, got %s", fn, DTypeToString(b.dtype()).c_str()));
  }
  if (b.ndim() != 2) {
    return InvalidArgument(StrFormat("%s: B must have rank 2 ([K, N]), got %s", fn, b.TypeString().c_str()));
  }
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "B", b));
  const int64_t k = b.shape()[0], n = b.shape()[1];
  Int8MatmulProblem p;
  KILN_RETURN_IF_ERROR(CheckAOut(fn, a, out, n, &p));
  if (p.k != k) {
    return InvalidArgument(StrFormat("%s: A has K=%lld but B has K=%lld", fn, static_cast<long long>(p.k),
                                     static_cast<long long>(k)));
  }
  std::vector<int32_t> za_eff;
  KILN_RETURN_IF_ERROR(AZeroPoint(fn, a, za, &p, &za_eff));
  KILN_RETURN_IF_ERROR(CheckDType(fn, "b_zero_point", zb, b.dtype()));
  const int64_t zb_count = zb.NumElements();
  if (zb_count != 1 && zb_count != n) {
    return InvalidArgument(StrFormat("%s: b_zero_point has %lld elements, expected 1 or N=%lld", fn,
                                     static_cast<long long>(zb_count), static_cast<long long>(n)));
  }
  const bool b_unsigned = b.dtype() == DType::UInt8();
  std::vector<int32_t> zb_eff(static_cast<size_t>(zb_count));
  for (int64_t i = 0; i < zb_count; ++i) {
    zb_eff[i] = b_unsigned ? int32_t{zb.data<uint8_t>()[i]} - 128 : int32_t{zb.data<int8_t>()[i]};
  }
  // A run-time B is packed on every call, in this thread's scratch.
  thread_local std::vector<int8_t> packed;
  thread_local std::vector<int32_t> colsum;
  packed.resize(static_cast<size_t>(Int8PackedBytes(k, n)));
  colsum.resize(static_cast<size_t>(Int8Blocks(n) * kInt8BlockN));
  PackInt8B(b.raw_data(), b_unsigned, k, n, packed.data(), colsum.data());
  p.packed_b = packed.data();
  p.colsum = colsum.data();
  p.zb = zb_eff.data();
  p.zb_per_col = zb_count != 1;
  RunInt8Matmul(p, Int8Isa::kBest, ThreadPool::Current());
  return Status::Ok();
}

Status MatmulIntegerPacked(Span<const Any> args, Any* ret) {
  (void)ret;
  const char* fn = "kiln.int8.matmul_integer_packed";
  KILN_RETURN_IF_ERROR(CheckArgCount(fn, args, 5, "(A, Bp, Bterms, a_zero_point, Out)"));
  KILN_ASSIGN_OR_RETURN(Tensor a, TensorArg(fn, args, 0, "A"));
  KILN_ASSIGN_OR_RETURN(Tensor bp, TensorArg(fn, args, 1, "Bp"));
  KILN_ASSIGN_OR_RETURN(Tensor terms, TensorArg(fn, args, 2, "Bterms"));
  KILN_ASSIGN_OR_RETURN(Tensor za, TensorArg(fn, args, 3, "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(Tensor out, TensorArg(fn, args, 4, "Out"));
  if (out.ndim() < 2) {
    return InvalidArgument(StrFormat("%s: Out must have rank >= 2, got %s", fn, out.TypeString().c_str()));
  }
  const int64_t n = out.shape().back();
  Int8MatmulProblem p;
  KILN_RETURN_IF_ERROR(CheckAOut(fn, a, out, n, &p));
  KILN_RETURN_IF_ERROR(CheckDType(fn, "Bp", bp, DType::Int8()));
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "Bp", bp));
  const int64_t want_bp[] = {Int8Blocks(n), Int8K4(p.k), 64};
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Bp", bp, want_bp));
  KILN_RETURN_IF_ERROR(CheckDType(fn, "Bterms", terms, DType::Int32()));
  KILN_RETURN_IF_ERROR(CheckCompact(fn, "Bterms", terms));
  const int64_t want_terms[] = {2, Int8Blocks(n) * kInt8BlockN};
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Bterms", terms, want_terms));
  std::vector<int32_t> za_eff;
  KILN_RETURN_IF_ERROR(AZeroPoint(fn, a, za, &p, &za_eff));
  p.packed_b = bp.data<int8_t>();
  p.colsum = terms.data<int32_t>();
  p.zb = terms.data<int32_t>() + want_terms[1];
  p.zb_per_col = true;
  RunInt8Matmul(p, Int8Isa::kBest, ThreadPool::Current());
  return Status::Ok();
}

}  // namespace

KILN_REGISTER_GLOBAL("kiln.int8.matmul_integer", MatmulInteger);
KILN_REGISTER_GLOBAL("kiln.int8.matmul_integer_packed", MatmulIntegerPacked);

}  // namespace kernels
}  // namespace kiln
