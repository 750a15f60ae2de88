#include "kernels/int8_matmul.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define KILN_INT8_X86 1
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/int8_pack.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace kernels {
namespace {

// Register tile: kMR rows x kNV vectors of 16 int32 columns = 24
// accumulators, plus kNV B vectors and one A broadcast: 29 of 32 zmm.
constexpr int kMR = 6;
constexpr int kNV = 4;
// Rows one task covers: its B column chunk (K4 x 256 bytes) is reused over
// this many rows while it sits in L1/L2. A multiple of kMR and of the AMX
// tile's 32 rows.
constexpr int64_t kRowsPerTask = 96;

inline int32_t Wrap(uint32_t v) { return static_cast<int32_t>(v); }

// What every tile needs: A as unsigned bytes, row-padded to a multiple of 4
// with zeros (when copied), its row sums, and the problem.
struct Prepared {
  const Int8MatmulProblem* p;
  const uint8_t* au;  // rows x lda bytes, unsigned
  int64_t lda;
  const int32_t* rterm;  // per row: K * za'[r] - rowsum(Au)[r]
  int64_t k4;
};

int32_t Za(const Int8MatmulProblem& p, int64_t r) { return p.za_per_row ? p.za[r % p.m] : p.za[0]; }
int32_t Zb(const Int8MatmulProblem& p, int64_t n) { return p.zb_per_col ? p.zb[n] : p.zb[0]; }

// ---- portable ----

void TilePortable(const Prepared& s, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const Int8MatmulProblem& p = *s.p;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* a = s.au + r * s.lda;
    const uint32_t za = static_cast<uint32_t>(Za(p, r));
    for (int64_t n = c0; n < c1; ++n) {
      const int8_t* b = p.packed_b + (n / kInt8BlockN) * s.k4 * 64 + (n % kInt8BlockN) * 4;
      uint32_t acc = 0;
      for (int64_t g = 0; g < s.k4; ++g)
        for (int j = 0; j < 4; ++j) acc += static_cast<uint32_t>(int32_t{a[g * 4 + j]} * int32_t{b[g * 64 + j]});
      acc -= za * static_cast<uint32_t>(p.colsum[n]);
      acc += static_cast<uint32_t>(Zb(p, n)) * static_cast<uint32_t>(s.rterm[r]);
      p.out[r * p.n + n] = Wrap(acc);
    }
  }
}

#if KILN_INT8_X86
// ---- AVX512-VNNI ----

#define KILN_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

// acc += the u8 x s8 dot products of a and b, 4 per lane. Written as inline
// assembly because GCC's _mm512_dpbusd_epi32 does not tie the accumulator to
// the destination: it copied every accumulator around each instruction (and
// spilled some), a third of the VNNI code's speed.
KILN_VNNI_TARGET inline void Dpbusd(__m512i& acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}

// MR rows x NV vectors starting at row r0, column block `blk`; `last_cols`
// is the number of valid columns in the last vector (1..16).
template <int MR, int NV>
KILN_VNNI_TARGET void TileVnni(const Prepared& s, int64_t r0, int64_t blk, int last_cols) {
  const Int8MatmulProblem& p = *s.p;
  const int64_t bstride = s.k4 * 64;
  const int8_t* pb = p.packed_b + blk * bstride;
  const uint8_t* a = s.au + r0 * s.lda;
  __m512i acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_si512();
  for (int64_t g = 0; g < s.k4; ++g) {
    __m512i bv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) bv[j] = _mm512_loadu_si512(pb + j * bstride + g * 64);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      int32_t word;
      std::memcpy(&word, a + i * s.lda + g * 4, 4);
      const __m512i av = _mm512_set1_epi32(word);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) Dpbusd(acc[i][j], av, bv[j]);
    }
  }
  // Out = acc - za' * colsum + zb' * rterm, in wrapping int32 lanes.
  const __mmask16 last_mask = static_cast<__mmask16>((1u << last_cols) - 1u);
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j) {
    const int64_t n0 = (blk + j) * kInt8BlockN;
    const __mmask16 mask = j == NV - 1 ? last_mask : static_cast<__mmask16>(0xFFFF);
    const __m512i cs = _mm512_loadu_si512(p.colsum + n0);
    const __m512i zb = p.zb_per_col ? _mm512_maskz_loadu_epi32(mask, p.zb + n0) : _mm512_set1_epi32(p.zb[0]);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const int64_t r = r0 + i;
      __m512i v = _mm512_sub_epi32(acc[i][j], _mm512_mullo_epi32(_mm512_set1_epi32(Za(p, r)), cs));
      v = _mm512_add_epi32(v, _mm512_mullo_epi32(zb, _mm512_set1_epi32(s.rterm[r])));
      _mm512_mask_storeu_epi32(p.out + r * p.n + n0, mask, v);
    }
  }
}

using TileFn = void (*)(const Prepared&, int64_t, int64_t, int);

template <int MR>
TileFn PickNV(int nv) {
  switch (nv) {
    case 1: return TileVnni<MR, 1>;
    case 2: return TileVnni<MR, 2>;
    case 3: return TileVnni<MR, 3>;
    default: return TileVnni<MR, 4>;
  }
}

TileFn PickTile(int mr, int nv) {
  switch (mr) {
    case 1: return PickNV<1>(nv);
    case 2: return PickNV<2>(nv);
    case 3: return PickNV<3>(nv);
    case 4: return PickNV<4>(nv);
    case 5: return PickNV<5>(nv);
    default: return PickNV<6>(nv);
  }
}

// Rows [r0, r1) x blocks [blk, blk + nv), nv <= kNV.
void RangeVnni(const Prepared& s, int64_t r0, int64_t r1, int64_t blk, int nv) {
  if (nv <= 0 || r0 >= r1) return;
  const int64_t end_col = std::min<int64_t>(s.p->n, (blk + nv) * kInt8BlockN);
  const int last_cols = static_cast<int>(end_col - (blk + nv - 1) * kInt8BlockN);
  for (int64_t r = r0; r < r1; r += kMR) {
    const int mr = static_cast<int>(std::min<int64_t>(kMR, r1 - r));
    PickTile(mr, nv)(s, r, blk, last_cols);
  }
}

// ---- AMX (tdpbusd: 16 x 64 u8 times 64 x 16 s8 into 16 x 16 int32) ----
//
// The packed B block is the AMX B tile as it is: row g holds K values
// 4g..4g+3 of its 16 columns. A tile is 16 rows of 64 K values straight from
// A, so AMX runs when K is a multiple of 64 (MiniLM: 384, 1536), on 32 x 32
// tiles (2 A, 2 B, 4 C tile registers); rows and blocks left over go to the
// AVX512-VNNI tiles.

#define KILN_AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni,amx-tile,amx-int8")))

constexpr int64_t kAmxRows = 32;

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Whether the CPU has AMX-INT8 and Linux lets this process use the tile
// state (it must be requested once: arch_prctl ARCH_REQ_XCOMP_PERM).
bool AmxUsable() {
  static const bool ok = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (!((d >> 24) & 1u) || !((d >> 25) & 1u)) return false;  // AMX-TILE, AMX-INT8
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
}

KILN_AMX_TARGET void AmxConfigure() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  // GCC 12 does not see ldtilecfg read the bytes and dropped the stores
  // above (tiles left unconfigured: tilezero faults): a compiler barrier.
  asm volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
}

KILN_AMX_TARGET void AmxRelease() { _tile_release(); }

// 32 rows from r0 x blocks blk, blk + 1.
KILN_AMX_TARGET void TileAmx(const Prepared& s, int64_t r0, int64_t blk) {
  const Int8MatmulProblem& p = *s.p;
  const int64_t bstride = s.k4 * 64;
  const uint8_t* a0 = s.au + r0 * s.lda;
  const uint8_t* a1 = a0 + 16 * s.lda;
  const int8_t* b0 = p.packed_b + blk * bstride;
  const int8_t* b1 = b0 + bstride;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t g = 0; g < s.k4; g += 16) {
    _tile_loadd(4, a0 + g * 4, s.lda);
    _tile_loadd(5, a1 + g * 4, s.lda);
    _tile_loadd(6, b0 + g * 64, 64);
    _tile_loadd(7, b1 + g * 64, 64);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  alignas(64) int32_t c[4][16][16];
  _tile_stored(0, c[0], 64);
  _tile_stored(1, c[1], 64);
  _tile_stored(2, c[2], 64);
  _tile_stored(3, c[3], 64);
  for (int bh = 0; bh < 2; ++bh) {
    const int64_t n0 = (blk + bh) * kInt8BlockN;
    const int64_t cols = std::min<int64_t>(kInt8BlockN, p.n - n0);
    const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1u);
    const __m512i cs = _mm512_loadu_si512(p.colsum + n0);
    const __m512i zb = p.zb_per_col ? _mm512_maskz_loadu_epi32(mask, p.zb + n0) : _mm512_set1_epi32(p.zb[0]);
    for (int rh = 0; rh < 2; ++rh) {
      for (int i = 0; i < 16; ++i) {
        const int64_t r = r0 + rh * 16 + i;
        __m512i v = _mm512_load_si512(c[rh * 2 + bh][i]);
        v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(Za(p, r)), cs));
        v = _mm512_add_epi32(v, _mm512_mullo_epi32(zb, _mm512_set1_epi32(s.rterm[r])));
        _mm512_mask_storeu_epi32(p.out + r * p.n + n0, mask, v);
      }
    }
  }
}

// Rows [r0, r1) x column chunk `chunk` (kNV blocks): AMX tiles where they
// fit when `amx`, AVX512-VNNI tiles for the rest.
void TaskVnni(const Prepared& s, int64_t r0, int64_t r1, int64_t chunk, bool amx) {
  const int64_t blocks = Int8Blocks(s.p->n);
  const int64_t blk = chunk * kNV;
  const int nv = static_cast<int>(std::min<int64_t>(kNV, blocks - blk));
  if (!amx) return RangeVnni(s, r0, r1, blk, nv);
  const int64_t amx_rows = (r1 - r0) / kAmxRows * kAmxRows;
  const int amx_blocks = nv / 2 * 2;
  if (amx_rows > 0 && amx_blocks > 0) {
    AmxConfigure();
    for (int64_t r = r0; r < r0 + amx_rows; r += kAmxRows)
      for (int b = 0; b < amx_blocks; b += 2) TileAmx(s, r, blk + b);
    AmxRelease();
  }
  RangeVnni(s, r0, r0 + amx_rows, blk + amx_blocks, nv - amx_blocks);  // the odd block
  RangeVnni(s, r0 + amx_rows, r1, blk, nv);                            // the rows left
}

#else   // !KILN_INT8_X86: the portable loop only.
bool AmxUsable() { return false; }
void TaskVnni(const Prepared&, int64_t, int64_t, int64_t, bool) {}
#endif  // KILN_INT8_X86

// Grow-only per-thread scratch: the calling thread's, reused call after call.
std::vector<uint8_t>& ScratchA() {
  thread_local std::vector<uint8_t> v;
  return v;
}
std::vector<int32_t>& ScratchRows() {
  thread_local std::vector<int32_t> v;
  return v;
}

}  // namespace

bool CpuHasAvx512Vnni() {
#if KILN_INT8_X86
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

bool CpuHasAmxInt8() { return CpuHasAvx512Vnni() && AmxUsable(); }

void RunInt8Matmul(const Int8MatmulProblem& p, Int8Isa isa, ThreadPool* pool) {
  if (p.rows <= 0 || p.n <= 0) return;
  Prepared s;
  s.p = &p;
  s.k4 = Int8K4(p.k);
  // A is read 4 bytes at a time up to 4 * K4: copy it (flipped to unsigned,
  // zero-padded) unless it is uint8 with K a multiple of 4.
  if (p.a_signed || p.k % 4 != 0) {
    std::vector<uint8_t>& buf = ScratchA();
    s.lda = s.k4 * 4;
    buf.resize(static_cast<size_t>(p.rows * s.lda));
    const uint8_t flip = p.a_signed ? 0x80 : 0;
    for (int64_t r = 0; r < p.rows; ++r) {
      const uint8_t* src = p.a + r * p.lda;
      uint8_t* dst = buf.data() + r * s.lda;
      for (int64_t k = 0; k < p.k; ++k) dst[k] = src[k] ^ flip;
      for (int64_t k = p.k; k < s.lda; ++k) dst[k] = 0;
    }
    s.au = buf.data();
  } else {
    s.au = p.a;
    s.lda = p.lda;
  }
  std::vector<int32_t>& rterm = ScratchRows();
  rterm.resize(static_cast<size_t>(p.rows));
  for (int64_t r = 0; r < p.rows; ++r) {
    const uint8_t* a = s.au + r * s.lda;
    uint32_t sum = 0;
    for (int64_t k = 0; k < p.k; ++k) sum += a[k];
    rterm[r] = Wrap(static_cast<uint32_t>(p.k) * static_cast<uint32_t>(Za(p, r)) - sum);
  }
  s.rterm = rterm.data();

  const bool vnni = isa != Int8Isa::kPortable && CpuHasAvx512Vnni();
  const bool amx = vnni && isa == Int8Isa::kBest && p.k % 64 == 0 && p.k > 0 && AmxUsable();
  const int64_t chunks = (Int8Blocks(p.n) + kNV - 1) / kNV;
  const int64_t row_tasks = (p.rows + kRowsPerTask - 1) / kRowsPerTask;
  const int64_t tasks = chunks * row_tasks;
  auto run = [&](int32_t t) {
    const int64_t chunk = t % chunks;
    const int64_t r0 = (t / chunks) * kRowsPerTask;
    const int64_t r1 = std::min(p.rows, r0 + kRowsPerTask);
    if (vnni) {
      TaskVnni(s, r0, r1, chunk, amx);
    } else {
      const int64_t c0 = chunk * kNV * kInt8BlockN;
      TilePortable(s, r0, r1, c0, std::min(p.n, c0 + kNV * kInt8BlockN));
    }
  };
  if (pool && pool->num_threads() > 1 && tasks > 1) {
    pool->ParallelFor(static_cast<int32_t>(tasks), run);
  } else {
    for (int64_t t = 0; t < tasks; ++t) run(static_cast<int32_t>(t));
  }
}

}  // namespace kernels
}  // namespace kiln
