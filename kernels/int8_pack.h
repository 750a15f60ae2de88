// The packed layout of the right operand of the 8-bit matmul kernels
// (kernels/int8_matmul.h), shared by the kernels and by the compiler, which
// packs constant weights once at import time.
//
// B (K x N, uint8 or int8) is stored as signed bytes: int8 values as they
// are, uint8 values minus 128 (so every B is an int8 matrix Bs plus a shift
// s_b of 0 or 128: B = Bs + s_b). VNNI's vpdpbusd multiplies 4 unsigned
// bytes of A by 4 signed bytes of B and adds the 4 products to one int32
// lane, so 4 consecutive K values of one column sit in one 32-bit lane, and
// 16 columns make one 64-byte vector:
//   element (k, n) at ((n / 16) * K4 + k / 4) * 64 + (n % 16) * 4 + k % 4
// with K4 = ceil(K / 4). Padding (k >= K or n >= N) is zero, so it adds
// nothing to any dot product whatever A holds there.
//
// Thread-safe: free functions without state.
#ifndef KILN_KERNELS_INT8_PACK_H_
#define KILN_KERNELS_INT8_PACK_H_

#include <cstdint>
#include <cstring>

namespace kiln {
namespace kernels {

constexpr int64_t kInt8BlockN = 16;  // columns per packed block (one vector of int32 lanes)
constexpr int64_t kInt8GroupK = 4;   // consecutive K values per 32-bit lane

inline int64_t Int8K4(int64_t k) { return (k + kInt8GroupK - 1) / kInt8GroupK; }
inline int64_t Int8Blocks(int64_t n) { return (n + kInt8BlockN - 1) / kInt8BlockN; }
inline int64_t Int8PackedBytes(int64_t k, int64_t n) { return Int8Blocks(n) * Int8K4(k) * 64; }

// Packs B (K x N row-major; uint8 when `b_unsigned`, else int8) into `packed`
// (Int8PackedBytes(k, n) bytes) and writes colsum[n] = sum over k of the
// stored (signed) values for n < Int8Blocks(n) * 16 (padding columns get 0).
inline void PackInt8B(const void* b, bool b_unsigned, int64_t k, int64_t n, int8_t* packed, int32_t* colsum) {
  const int64_t k4 = Int8K4(k), blocks = Int8Blocks(n);
  // K = 0 or N = 0: nothing to pack (and the buffers may be null, which memset may not take).
  if (Int8PackedBytes(k, n) > 0) std::memset(packed, 0, static_cast<size_t>(Int8PackedBytes(k, n)));
  if (blocks > 0) std::memset(colsum, 0, static_cast<size_t>(blocks * kInt8BlockN) * sizeof(int32_t));
  const uint8_t* src = static_cast<const uint8_t*>(b);
  const int shift = b_unsigned ? 128 : 0;
  for (int64_t kk = 0; kk < k; ++kk) {
    const uint8_t* row = src + kk * n;
    int8_t* dst = packed + (kk / 4) * 64 + (kk % 4);
    for (int64_t j = 0; j < n; ++j) {
      // uint8 v - 128 and int8 v share one bit pattern transform: as int8.
      int v = b_unsigned ? static_cast<int>(row[j]) - shift : static_cast<int>(static_cast<int8_t>(row[j]));
      dst[(j / kInt8BlockN) * k4 * 64 + (j % kInt8BlockN) * 4] = static_cast<int8_t>(v);
      colsum[j] += v;
    }
  }
}

}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_INT8_PACK_H_
