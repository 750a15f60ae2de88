// The 8-bit integer matmul of ONNX's MatMulInteger / QLinearMatMul:
//   Out[r, n] = sum_k (A[r, k] - za[r]) * (B[k, n] - zb[n])   (int32, wrapping)
// for uint8 or int8 A and B, with per-tensor or per-row / per-column zero
// points, exact.
//
// Every signedness combination runs as one u8 x s8 product, the form of
// AVX512-VNNI's vpdpbusd (4 u8*s8 products summed into an int32 lane, no
// saturation anywhere: vpmaddubsw, whose int16 pair sums saturate, is not
// used). Where the CPU has AMX-INT8 and K is a multiple of 64, 32 x 32 tiles
// run on AMX's tdpbusd (the same u8 x s8 product into int32) instead. With A = Au - s_a (Au uint8; s_a = 128 for int8 A, whose bytes are
// flipped by xor 0x80) and B = Bs + s_b (Bs int8; s_b = 128 for uint8 B, see
// int8_pack.h), and the effective zero points za' = za + s_a, zb' = zb - s_b:
//   Out = sum_k Au*Bs - za' * colsum(Bs)[n] + zb'[n] * (K * za' - rowsum(Au)[r])
// which is an identity in int32 arithmetic modulo 2^32, so the result equals
// the definition bit for bit, overflow included.
//
// Thread-safe: RunInt8Matmul has no shared state; it splits the work over
// `pool` (which may be null: then it runs on the calling thread).
#ifndef KILN_KERNELS_INT8_MATMUL_H_
#define KILN_KERNELS_INT8_MATMUL_H_

#include <cstdint>

namespace kiln {

class ThreadPool;

namespace kernels {

struct Int8MatmulProblem {
  // A: `rows` x k bytes, row stride `lda` >= k; uint8 values, or int8 ones
  // when a_signed. Its rows may be several matrices of `m` rows each (batch
  // dimensions flattened): a per-row zero point indexes row % m.
  const uint8_t* a = nullptr;
  bool a_signed = false;
  int64_t rows = 0, m = 0, k = 0, lda = 0;
  // B packed by PackInt8B (K x n) and its column sums (Int8Blocks(n) * 16).
  const int8_t* packed_b = nullptr;
  const int32_t* colsum = nullptr;
  int64_t n = 0;
  // Effective zero points (see above): za' one value, or m (per row);
  // zb' one value, or at least n (per column).
  const int32_t* za = nullptr;
  bool za_per_row = false;
  const int32_t* zb = nullptr;
  bool zb_per_col = false;
  // Out: rows x n int32, row stride n.
  int32_t* out = nullptr;
};

enum class Int8Isa {
  kBest,        // AMX-INT8 (K a multiple of 64) and AVX512-VNNI where the CPU has them
  kAvx512Vnni,  // AVX512-VNNI only (where the CPU has it)
  kPortable,    // plain C++ (the reference the tests compare the vector code with)
};

// Whether this CPU runs the AVX512-VNNI code (avx512f, avx512bw, avx512vnni).
bool CpuHasAvx512Vnni();
// Whether the AMX code runs: the CPU has AMX-INT8 and the OS granted this
// process the tile state (requested on the first call).
bool CpuHasAmxInt8();

// Computes the product. Uses a per-thread scratch buffer for A when A is
// int8 or k is not a multiple of 4 (flipped / padded copy) and for row sums.
void RunInt8Matmul(const Int8MatmulProblem& p, Int8Isa isa, ThreadPool* pool);

}  // namespace kernels
}  // namespace kiln

#endif  // KILN_KERNELS_INT8_MATMUL_H_
