#include "compiler/tune/cache_evict.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace kiln {
namespace tune {

namespace {

// Where Evict's sum goes, so the compiler keeps its loads.
volatile uint64_t g_evict_sink;

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

void CacheEvictor::Evict() {
  size_t words = static_cast<size_t>(bytes_ / 8);
  uint64_t sum = 0;
  for (size_t i = 0; i < words; i += 8) sum += buf_[i];  // one load per 64-byte line
  g_evict_sink = sum;
}

}  // namespace tune
}  // namespace kiln
