#include "runtime/npy.h"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace kiln {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kDataAlignment = 64;

// The dtypes .npy I/O supports, with the descriptors it writes. Reading also
// accepts other byte-order marks (DTypeFromDescriptor).
struct NpyType {
  const char* descr;
  DType dtype;
};
const NpyType kNpyTypes[] = {
    {"<f2", DType::Float16()},
    {"<f4", DType::Float32()},
    {"<f8", DType::Float64()},
    {"|i1", DType::Int8()},
    {"<i2", DType{kDLInt, 16, 1}},
    {"<i4", DType::Int32()},
    {"<i8", DType::Int64()},
    {"|u1", DType::UInt8()},
    {"<u2", DType{kDLUInt, 16, 1}},
    {"<u4", DType{kDLUInt, 32, 1}},
    {"<u8", DType{kDLUInt, 64, 1}},
    {"|b1", DType::Bool()},
    // NumPy's own name for an ml_dtypes.bfloat16 array (see npy.h).
    {"<V2", DType{kDLBfloat, 16, 1}},
};
constexpr char kSupported[] =
    "float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool, bfloat16 "
    "(as '<V2')";

// A tiny scanner over the header, which is a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderScanner {
 public:
  explicit HeaderScanner(const std::string& text) : s_(text) {}

  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= s_.size();
  }
  bool ReadString(std::string* out) {
    SkipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) return false;
    *out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  bool ReadWord(std::string* out) {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    *out = s_.substr(start, pos_ - start);
    return !out->empty();
  }
  bool ReadShape(std::vector<int64_t>* out) {
    if (!Consume('(')) return false;
    out->clear();
    for (;;) {
      if (Consume(')')) return true;
      std::string word;
      if (!ReadWord(&word)) return false;
      // Python 2 wrote long integers as "3L".
      if (word.back() == 'L') word.pop_back();
      if (word.empty() || word.size() > 18) return false;
      int64_t value = 0;  // at most 18 digits: no overflow
      for (char c : word) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
        value = value * 10 + (c - '0');
      }
      out->push_back(value);
      if (!Consume(',')) {
        return Consume(')');
      }
    }
  }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

Status ParseHeader(const std::string& text, const std::string& name, NpyHeader* header) {
  HeaderScanner scan(text);
  auto malformed = [&](const std::string& why) {
    return DataLoss(name + ": malformed .npy header (" + why + "): " + text);
  };
  if (!scan.Consume('{')) return malformed("expected '{'");
  bool have_descr = false, have_order = false, have_shape = false;
  while (!scan.Consume('}')) {
    std::string key;
    if (!scan.ReadString(&key)) return malformed("expected a quoted key");
    if (!scan.Consume(':')) return malformed("expected ':' after '" + key + "'");
    if (key == "descr") {
      if (!scan.ReadString(&header->descr)) return malformed("'descr' is not a string");
      have_descr = true;
    } else if (key == "fortran_order") {
      std::string word;
      if (!scan.ReadWord(&word) || (word != "True" && word != "False")) {
        return malformed("'fortran_order' is not True or False");
      }
      header->fortran_order = word == "True";
      have_order = true;
    } else if (key == "shape") {
      if (!scan.ReadShape(&header->shape)) return malformed("'shape' is not a tuple of integers");
      have_shape = true;
    } else {
      return malformed("unexpected key '" + key + "'");
    }
    if (!scan.Consume(',')) {
      if (!scan.Consume('}')) return malformed("expected ',' or '}'");
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape) {
    return malformed("it needs 'descr', 'fortran_order' and 'shape'");
  }
  return Status::Ok();
}

Result<DType> DTypeFromDescriptor(const std::string& descr, const std::string& name) {
  for (const NpyType& t : kNpyTypes) {
    if (descr == t.descr) return t.dtype;
    // Single-byte types and voids may carry any byte-order mark but '>'
    // (NumPy writes '|' for both); wider ones may say '=' (native, which is
    // little-endian on every host Kiln supports).
    bool any_order = t.descr[0] == '|' || t.descr[1] == 'V';
    if (descr.size() == 3 && descr.substr(1) == std::string(t.descr + 1) &&
        (descr[0] == '=' || (any_order && descr[0] != '>'))) {
      return t.dtype;
    }
  }
  if (!descr.empty() && descr[0] == '>') {
    return Unimplemented(name + ": big-endian data ('" + descr + "') is not supported");
  }
  return Unimplemented(name + ": unsupported dtype '" + descr + "' (supported: " + kSupported + ")");
}

uint32_t ReadLittleEndian(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Result<std::string> NpyDescriptor(DType dtype) {
  for (const NpyType& t : kNpyTypes) {
    if (t.dtype == dtype) return std::string(t.descr);
  }
  return InvalidArgument("cannot write dtype " + DTypeToString(dtype) + " as .npy (supported: " + kSupported + ")");
}

Result<Tensor> ParseNpy(const void* data, size_t size, const std::string& name) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (size < kMagicSize + 2 || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    return DataLoss(name + ": not a .npy file (bad magic)");
  }
  int major = bytes[6], minor = bytes[7];
  size_t len_bytes;
  if (major == 1) {
    len_bytes = 2;
  } else if (major == 2) {
    len_bytes = 4;
  } else {
    return Unimplemented(StrFormat("%s: .npy format version %d.%d is not supported (only 1.0 and 2.0)",
                                   name.c_str(), major, minor));
  }
  size_t prefix = kMagicSize + 2 + len_bytes;
  if (size < prefix) return DataLoss(name + ": truncated .npy header");
  size_t header_len = ReadLittleEndian(bytes + kMagicSize + 2, static_cast<int>(len_bytes));
  if (size - prefix < header_len) {
    return DataLoss(StrFormat("%s: truncated .npy header (needs %zu bytes, file has %zu)", name.c_str(),
                              prefix + header_len, size));
  }
  std::string text(reinterpret_cast<const char*>(bytes + prefix), header_len);
  NpyHeader header;
  KILN_RETURN_IF_ERROR(ParseHeader(text, name, &header));
  KILN_ASSIGN_OR_RETURN(DType dtype, DTypeFromDescriptor(header.descr, name));
  if (header.fortran_order) {
    return Unimplemented(name + ": Fortran-order arrays are not supported; save a C-order array "
                                "(numpy.ascontiguousarray)");
  }
  // Refuse sizes that overflow before computing the byte count.
  uint64_t count = 1;
  for (int64_t d : header.shape) {
    if (d != 0 && count > (uint64_t{1} << 48) / static_cast<uint64_t>(d)) {
      return DataLoss(name + ": shape " + ShapeToString(header.shape) + " is too large");
    }
    count *= static_cast<uint64_t>(d);
  }
  size_t nbytes = static_cast<size_t>(count) * dtype.bytes();
  size_t available = size - prefix - header_len;
  if (available < nbytes) {
    return DataLoss(StrFormat("%s: truncated data: %s%s needs %zu bytes, file has %zu", name.c_str(),
                              DTypeToString(dtype).c_str(), ShapeToString(header.shape).c_str(), nbytes,
                              available));
  }
  KILN_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(header.shape, dtype));
  if (nbytes > 0) std::memcpy(tensor.raw_data(), bytes + prefix + header_len, nbytes);
  return tensor;
}

Result<Tensor> ReadNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open '" + path + "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return DataLoss("error reading '" + path + "'");
  std::string contents = buf.str();
  return ParseNpy(contents.data(), contents.size(), path);
}

Result<std::string> SerializeNpy(const Tensor& tensor) {
  if (!tensor.defined()) return InvalidArgument("cannot write an undefined tensor as .npy");
  if (!tensor.IsCompact()) return InvalidArgument("cannot write a strided tensor as .npy");
  if (tensor.dl()->device.device_type != kDLCPU) {
    return InvalidArgument("cannot write a tensor that is not in CPU memory as .npy");
  }
  KILN_ASSIGN_OR_RETURN(std::string descr, NpyDescriptor(tensor.dtype()));
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i) {
    if (i) shape += ", ";
    shape += std::to_string(tensor.shape()[i]);
  }
  if (tensor.shape().size() == 1) shape += ",";
  shape += ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces and end with '\n' so that magic + version + length + header
  // is a multiple of 64 bytes.
  int major = 1;
  size_t prefix = kMagicSize + 2 + 2;
  size_t total = (prefix + dict.size() + 1 + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  if (total - prefix > 0xffff) {
    major = 2;
    prefix = kMagicSize + 2 + 4;
    total = (prefix + dict.size() + 1 + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  }
  size_t header_len = total - prefix;
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.NumBytes());
  return out;
}

Status WriteNpyFile(const Tensor& tensor, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, SerializeNpy(tensor));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return NotFound("cannot open '" + path + "' for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return DataLoss("error writing '" + path + "'");
  return Status::Ok();
}

}  // namespace kiln
