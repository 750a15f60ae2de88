#include "compiler/tune/cache_evict.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>

#include "runtime/thread_pool.h"

namespace kiln {
namespace tune {

namespace {

// Where Evict's sum goes, so the compiler keeps its loads.
std::atomic<uint64_t> g_evict_sink{0};

// "32768K", "1M", "512": sysfs's cache sizes.
int64_t ParseSysfsSize(const std::string& s) {
  char* end = nullptr;
  long long n = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || n <= 0) return 0;
  if (*end == 'K') return n << 10;
  if (*end == 'M') return n << 20;
  if (*end == 'G') return n << 30;
  return n;
}

}  // namespace

int64_t LastLevelCacheBytes() {
  int best_level = 0;
  int64_t best = 0;
  for (int index = 0; index < 16; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size)) break;
    int64_t bytes = ParseSysfsSize(size);
    if (bytes > 0 && level >= best_level) {
      best_level = level;
      best = bytes;
    }
  }
  if (best > 0) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return l3;
#endif
  return int64_t{32} << 20;
}

int64_t DefaultColdCacheBytes() { return 2 * LastLevelCacheBytes(); }

CacheEvictor::CacheEvictor(int64_t bytes) : bytes_(bytes > 0 ? bytes : DefaultColdCacheBytes()) {
  size_t words = static_cast<size_t>(bytes_ / 8);
  buf_.reset(new uint64_t[words]);
  for (size_t i = 0; i < words; ++i) buf_[i] = i;
}

void CacheEvictor::Evict(ThreadPool* pool) {
  const int64_t lines = bytes_ / 64;
  const int slices = pool != nullptr && pool->num_threads() > 1 ? pool->num_threads() : 1;
  slice_bytes_.assign(static_cast<size_t>(slices), 0);
  auto read_slice = [this, lines, slices](int32_t s) {
    int64_t begin = lines * s / slices, end = lines * (s + 1) / slices;
    uint64_t sum = 0;
    for (int64_t l = begin; l < end; ++l) sum += buf_[static_cast<size_t>(l) * 8];  // one load per 64-byte line
    g_evict_sink.fetch_add(sum, std::memory_order_relaxed);
    slice_bytes_[static_cast<size_t>(s)] = (end - begin) * 64;
  };
  if (slices == 1) {
    read_slice(0);
    return;
  }
  pool->ParallelFor(slices, read_slice);
}

}  // namespace tune
}  // namespace kiln
