// Cold-cache measurement (kiln-tune --cold-cache): before each timed call the
// measuring process reads a buffer larger than the last-level cache, so the
// kernel finds none of its operands in any cache, as a kernel whose weights
// stream from memory finds them in a model (ResNet-18's winograd_matmul2: 17
// MB of transformed weight a call, 944 us in the model, 607 us measured warm).
//
// Why a flush buffer rather than rotating copies of the arguments: it costs
// every candidate of a kernel the same, needs no knowledge of which parameter
// is a weight, and needs 2 x LLC bytes whatever the kernel, where rotation
// needs 2 x LLC / (the operands' bytes) copies (hundreds for a small kernel),
// each filled and checked. The flush *reads* (after one write at setup): its
// lines stay clean, so the timed call evicts them without write-backs, while
// the lines the previous call dirtied are written back during the flush,
// outside the clock. The flush runs on the measuring thread only: at T > 1
// threads, the other cores' private L2 (1 MiB each on Zen 5) may keep a share
// of the operands.
//
// Used by kiln-measure-host and runner.cc's forked child; kiln_measure.c (the
// C program for cross targets) has its own copy of the loop.
#ifndef KILN_COMPILER_TUNE_CACHE_EVICT_H_
#define KILN_COMPILER_TUNE_CACHE_EVICT_H_

#include <cstdint>
#include <memory>

namespace kiln {
namespace tune {

// This machine's last-level cache in bytes: the highest-level cache of cpu0
// in sysfs (the L3 this core shares), else sysconf's L3, else 32 MiB. (Under
// the Zen 5 VM here sysconf says 384 MiB, the whole package's; sysfs says 32.)
int64_t LastLevelCacheBytes();
// What a flush reads by default: twice the last-level cache (the L3 of Zen is
// a victim cache of the L2s; twice its size leaves no operand line in it).
int64_t DefaultColdCacheBytes();

class CacheEvictor {
 public:
  // `bytes` <= 0: DefaultColdCacheBytes(). Allocates and writes the buffer
  // once (its pages faulted in before any timing).
  explicit CacheEvictor(int64_t bytes);
  // Reads one word of every 64-byte line of the buffer.
  void Evict();
  int64_t bytes() const { return bytes_; }

 private:
  int64_t bytes_;
  std::unique_ptr<uint64_t[]> buf_;
};

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_CACHE_EVICT_H_
