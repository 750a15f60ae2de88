#include "runtime/checksum.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln {
namespace {

// The file format names the algorithm: XXH3 64-bit, seed 0. The empty input's
// hash is the published XXH3_64bits("") value, so a change of algorithm or
// seed fails here before it produces files other runtimes reject.
TEST(ChecksumTest, IsXxh3WithSeedZero) {
  EXPECT_EQ(SegmentChecksum(nullptr, 0), 0x2D06800538D394C2ull);
  EXPECT_EQ(SegmentChecksum("", 0), 0x2D06800538D394C2ull);
  EXPECT_STREQ(kSegmentChecksumName, "xxh3-64");
}

TEST(ChecksumTest, EveryByteCounts) {
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 31);
  uint64_t good = SegmentChecksum(bytes.data(), bytes.size());
  for (size_t i = 0; i < bytes.size(); i += 37) {
    bytes[i] ^= 1;
    EXPECT_NE(SegmentChecksum(bytes.data(), bytes.size()), good) << "a flipped bit at byte " << i;
    bytes[i] ^= 1;
  }
  EXPECT_EQ(SegmentChecksum(bytes.data(), bytes.size()), good);
  EXPECT_NE(SegmentChecksum(bytes.data(), bytes.size() - 1), good);
}

TEST(ChecksumTest, HasherInPiecesEqualsOneBlock) {
  std::string data(5000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i % 251 == 0 ? 0 : i * 7);
  // Pieces of every size class XXH3 treats differently, and runs of zeros.
  SegmentHasher h;
  h.Update(data.data(), 3);
  h.UpdateZeros(0);
  h.Update(data.data() + 3, 200);
  h.Update(data.data() + 203, 0);
  h.Update(data.data() + 203, 4000);
  h.Update(data.data() + 4203, data.size() - 4203);
  EXPECT_EQ(h.Digest(), SegmentChecksum(data.data(), data.size()));

  std::string padded = "abc" + std::string(700, '\0') + "xyz";
  SegmentHasher z;
  z.Update("abc", 3);
  z.UpdateZeros(700);
  z.Update("xyz", 3);
  EXPECT_EQ(z.Digest(), SegmentChecksum(padded.data(), padded.size()));
  EXPECT_EQ(SegmentHasher().Digest(), SegmentChecksum(nullptr, 0));
}

}  // namespace
}  // namespace kiln
