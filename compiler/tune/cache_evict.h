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
// outside the clock. At T > 1 kernel threads the flush runs on the kernel's
// thread pool, one slice of the buffer per thread: Zen's L3 is a victim cache
// that does not evict lines from the other cores' private L2s (1 MiB each on
// Zen 5), so a flush by the measuring thread alone left the other threads'
// share of the operands in their L2. Each slice (bytes / T) is far larger
// than an L2, so every thread that reads one leaves nothing of its own in it.
// (The pool deals the slices one per thread, but a thread that finishes first
// may take a late one's slice: then that core's L2 keeps its lines, as
// before. The bytes read are the same either way.)
//
// Used by kiln-measure-host and runner.cc's forked child; kiln_measure.c (the
// C program for cross targets) has its own copy of the loop.
#ifndef KILN_COMPILER_TUNE_CACHE_EVICT_H_
#define KILN_COMPILER_TUNE_CACHE_EVICT_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace kiln {
class ThreadPool;
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
  // Reads one word of every 64-byte line of the buffer: on the calling
  // thread, or with `pool` of more than one thread, split into
  // pool->num_threads() slices run by its ParallelFor.
  void Evict(ThreadPool* pool = nullptr);
  int64_t bytes() const { return bytes_; }
  // The bytes each slice of the last Evict covered (its lines x 64), in
  // slice order: what a test checks.
  const std::vector<int64_t>& last_slice_bytes() const { return slice_bytes_; }

 private:
  int64_t bytes_;
  std::unique_ptr<uint64_t[]> buf_;
  std::vector<int64_t> slice_bytes_;
};

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_CACHE_EVICT_H_
