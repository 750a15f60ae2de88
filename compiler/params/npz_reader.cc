// .npz = zip of .npy. The zip is read through its central directory (the
// local headers of a streamed archive may carry zero sizes), with zip64
// records because numpy writes entries with force_zip64=True.
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "compiler/params/param_file.h"
#include "runtime/npy.h"

namespace kiln {
namespace params {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;

// Little-endian reads at an offset already checked to be in range.
class Bytes {
 public:
  Bytes(const void* data, size_t size) : p_(static_cast<const uint8_t*>(data)), size_(size) {}
  size_t size() const { return size_; }
  const uint8_t* at(uint64_t off) const { return p_ + off; }
  bool Has(uint64_t off, uint64_t n) const { return off <= size_ && n <= size_ - off; }
  uint64_t U(uint64_t off, int n) const {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p_[off + i];
    return v;
  }

 private:
  const uint8_t* p_;
  size_t size_;
};

struct Entry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, local_offset = 0;
};

// Reads the zip64 extended-information extra field: it holds, in order, the
// fields whose 32-bit copies are 0xFFFFFFFF.
bool ApplyZip64Extra(const Bytes& b, uint64_t off, uint64_t len, Entry* e) {
  uint64_t end = off + len;
  while (off + 4 <= end) {
    uint64_t id = b.U(off, 2), n = b.U(off + 2, 2);
    off += 4;
    if (off + n > end) return false;
    if (id == 0x0001) {
      uint64_t p = off;
      for (uint64_t* field : {&e->usize, &e->csize, &e->local_offset}) {
        if (*field != 0xFFFFFFFFu) continue;
        if (p + 8 > off + n) return false;
        *field = b.U(p, 8);
        p += 8;
      }
    }
    off += n;
  }
  return true;
}

Status Inflate(const uint8_t* in, uint64_t csize, uint8_t* out, uint64_t usize, const std::string& where) {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return Internal(where + ": zlib inflateInit failed");
  // avail_in/out are 32-bit: feed entries over 4 GiB in slices.
  const uint64_t kSlice = 1u << 30;
  zs.next_in = const_cast<Bytef*>(in);
  zs.next_out = out;
  uint64_t in_left = csize, out_left = usize;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && in_left > 0) {
      zs.avail_in = static_cast<uInt>(in_left < kSlice ? in_left : kSlice);
      in_left -= zs.avail_in;
    }
    if (zs.avail_out == 0 && out_left > 0) {
      zs.avail_out = static_cast<uInt>(out_left < kSlice ? out_left : kSlice);
      out_left -= zs.avail_out;
    }
    uInt before_in = zs.avail_in, before_out = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR || (rc == Z_OK && zs.avail_in == before_in && zs.avail_out == before_out)) break;
  }
  uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != usize) {
    return DataLoss(where + ": corrupt DEFLATE data (" + (zs.msg ? std::string(zs.msg) : "inflated " +
                    std::to_string(produced) + " of " + std::to_string(usize) + " bytes") + ")");
  }
  return Status::Ok();
}

Status FindCentralDirectory(const Bytes& b, const std::string& file, uint64_t* cd_offset, uint64_t* count) {
  if (b.size() < kEndSize) return DataLoss(file + ": not a zip (.npz) archive: too short");
  // The end record sits in the last 22 + 65535 (comment) bytes.
  size_t lowest = b.size() > kEndSize + 0xFFFF ? b.size() - kEndSize - 0xFFFF : 0;
  size_t pos = b.size() - kEndSize;
  for (;; --pos) {
    if (b.U(pos, 4) == kEndSig) break;
    if (pos == lowest) return DataLoss(file + ": not a zip (.npz) archive: no end-of-central-directory record (truncated?)");
  }
  *count = b.U(pos + 10, 2);
  uint64_t cd_size = b.U(pos + 12, 4);
  *cd_offset = b.U(pos + 16, 4);
  if (*count == 0xFFFF || *cd_offset == 0xFFFFFFFFu || cd_size == 0xFFFFFFFFu) {
    if (pos < 20 || b.U(pos - 20, 4) != kZip64LocatorSig) return DataLoss(file + ": zip64 end-of-central-directory locator missing");
    uint64_t rec = b.U(pos - 20 + 8, 8);
    if (!b.Has(rec, 56) || b.U(rec, 4) != kZip64EndSig) return DataLoss(file + ": zip64 end-of-central-directory record missing or out of range");
    *count = b.U(rec + 32, 8);
    *cd_offset = b.U(rec + 48, 8);
  }
  if (!b.Has(*cd_offset, 0)) return DataLoss(file + ": central directory offset " + std::to_string(*cd_offset) + " is past the end of the file");
  return Status::Ok();
}

}  // namespace

Result<ParamList> ParseNpz(const void* data, size_t size, const std::string& file) {
  Bytes b(data, size);
  uint64_t off = 0, count = 0;
  KILN_RETURN_IF_ERROR(FindCentralDirectory(b, file, &off, &count));
  ParamList out;
  std::set<std::string> seen;
  for (uint64_t i = 0; i < count; ++i) {
    if (!b.Has(off, kCentralSize) || b.U(off, 4) != kCentralSig) {
      return DataLoss(file + ": central directory record " + std::to_string(i) + " is truncated or has a bad signature");
    }
    Entry e;
    e.flags = static_cast<uint16_t>(b.U(off + 8, 2));
    e.method = static_cast<uint16_t>(b.U(off + 10, 2));
    e.crc = static_cast<uint32_t>(b.U(off + 16, 4));
    e.csize = b.U(off + 20, 4);
    e.usize = b.U(off + 24, 4);
    uint64_t name_len = b.U(off + 28, 2), extra_len = b.U(off + 30, 2), comment_len = b.U(off + 32, 2);
    e.local_offset = b.U(off + 42, 4);
    if (!b.Has(off + kCentralSize, name_len + extra_len + comment_len)) {
      return DataLoss(file + ": central directory record " + std::to_string(i) + " runs past the end of the file");
    }
    e.name.assign(reinterpret_cast<const char*>(b.at(off + kCentralSize)), name_len);
    std::string where = file + ": entry '" + e.name + "'";
    if (!ApplyZip64Extra(b, off + kCentralSize + name_len, extra_len, &e)) return DataLoss(where + ": malformed zip64 extra field");
    off += kCentralSize + name_len + extra_len + comment_len;

    if (e.flags & 1) return Unimplemented(where + ": encrypted zip entries are not supported");
    if (e.method != 0 && e.method != 8) {
      return Unimplemented(where + ": compression method " + std::to_string(e.method) +
                           " is not supported (only STORED and DEFLATED, as numpy writes)");
    }
    const std::string suffix = ".npy";
    if (e.name.size() <= suffix.size() || e.name.compare(e.name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      return InvalidArgument(where + ": not a .npy entry (an .npz holds NAME.npy files)");
    }
    std::string tensor_name = e.name.substr(0, e.name.size() - suffix.size());
    if (!seen.insert(tensor_name).second) return InvalidArgument(where + ": the name '" + tensor_name + "' appears twice");

    if (!b.Has(e.local_offset, kLocalSize) || b.U(e.local_offset, 4) != kLocalSig) {
      return DataLoss(where + ": local header at offset " + std::to_string(e.local_offset) + " is out of range or has a bad signature");
    }
    uint64_t data_off = e.local_offset + kLocalSize + b.U(e.local_offset + 26, 2) + b.U(e.local_offset + 28, 2);
    if (!b.Has(data_off, e.csize)) {
      return DataLoss(where + ": data (" + std::to_string(e.csize) + " bytes at offset " + std::to_string(data_off) +
                      ") runs past the end of the file (truncated?)");
    }
    if (e.method == 0 && e.csize != e.usize) return DataLoss(where + ": stored entry with different compressed and uncompressed sizes");
    // A deflated stream expands at most ~1032x; larger claims are corrupt
    // headers, not reasons to allocate gigabytes.
    if (e.method == 8 && e.usize / 1032 > e.csize + 1) return DataLoss(where + ": implausible uncompressed size " + std::to_string(e.usize));
    std::vector<uint8_t> inflated;
    const uint8_t* npy = b.at(data_off);
    if (e.method == 8) {
      inflated.resize(e.usize);
      KILN_RETURN_IF_ERROR(Inflate(npy, e.csize, inflated.data(), e.usize, where));
      npy = inflated.data();
    }
    uint32_t crc = static_cast<uint32_t>(crc32_z(0L, npy, static_cast<size_t>(e.usize)));
    if (crc != e.crc) return DataLoss(where + ": CRC-32 mismatch (corrupt data)");
    KILN_ASSIGN_OR_RETURN(Tensor t, ParseNpy(npy, e.usize, where));
    out.push_back(NamedTensor{tensor_name, std::move(t)});
  }
  return out;
}

}  // namespace params
}  // namespace kiln
