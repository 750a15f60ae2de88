// Segment checksums of the .vmfb format (since 1.1): XXH3, 64 bits, seed 0.
//
// A checksum guards against damage (a changed byte on disk or in a copy), not
// against an attacker: it is not cryptographic. The writer stores one per
// segment; the loader compares them (vmfb_loader.h says when).
//
// xxHash is used header-only (XXH_INLINE_ALL in checksum.cc), so the runtime
// gains no shared-library dependency; building needs Debian's libxxhash-dev.
//
// Thread-safety: SegmentChecksum is a pure function; a SegmentHasher is
// thread-compatible.
#ifndef KILN_RUNTIME_CHECKSUM_H_
#define KILN_RUNTIME_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace kiln {

// "xxh3-64", for messages and kiln-dump.
constexpr const char* kSegmentChecksumName = "xxh3-64";

// The checksum of [data, data + size); `data` may be null when size is 0.
uint64_t SegmentChecksum(const void* data, size_t size);

// The same checksum over bytes given in pieces, for a segment that is never
// in memory as one block (the writer's weights). Equal to SegmentChecksum of
// the concatenation.
class SegmentHasher {
 public:
  SegmentHasher();
  ~SegmentHasher();
  SegmentHasher(const SegmentHasher&) = delete;
  SegmentHasher& operator=(const SegmentHasher&) = delete;

  void Update(const void* data, size_t size);
  void UpdateZeros(size_t count);
  uint64_t Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_CHECKSUM_H_
