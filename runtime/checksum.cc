#include "runtime/checksum.h"

// Inline everything: the hash compiles into the runtime, and deployments link
// no libxxhash.so.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kiln {

uint64_t SegmentChecksum(const void* data, size_t size) {
  // XXH3 reads nothing for a zero length, but keep the pointer valid anyway.
  static const uint8_t kEmpty = 0;
  return XXH3_64bits(size == 0 ? &kEmpty : data, size);
}

struct SegmentHasher::State {
  XXH3_state_t xxh;
};

SegmentHasher::SegmentHasher() : state_(new State) { XXH3_64bits_reset(&state_->xxh); }

SegmentHasher::~SegmentHasher() = default;

void SegmentHasher::Update(const void* data, size_t size) {
  if (size > 0) XXH3_64bits_update(&state_->xxh, data, size);
}

void SegmentHasher::UpdateZeros(size_t count) {
  static const uint8_t kZeros[256] = {};
  while (count > 0) {
    size_t n = count < sizeof(kZeros) ? count : sizeof(kZeros);
    XXH3_64bits_update(&state_->xxh, kZeros, n);
    count -= n;
  }
}

uint64_t SegmentHasher::Digest() const { return XXH3_64bits_digest(&state_->xxh); }

}  // namespace kiln
