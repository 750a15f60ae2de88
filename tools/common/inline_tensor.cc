#include "tools/common/inline_tensor.h"

#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/mapped_file.h"
#include "runtime/npy.h"
#include "tools/common/element.h"

namespace kiln {
namespace tools {
namespace {

// Shortens user text quoted in messages so one bad flag cannot flood a terminal.
std::string Quote(const std::string& text) {
  constexpr size_t kMax = 48;
  if (text.size() <= kMax) return "'" + text + "'";
  return "'" + text.substr(0, kMax) + "...'";
}


std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// Stores one textual value into element `index` of `t`.
Status StoreValue(const Tensor& t, int64_t index, const std::string& raw) {
  std::string v = Trim(raw);
  DType dtype = t.dtype();
  auto bad = [&]() {
    return InvalidArgument(StrFormat("value %" PRId64 " '%s' is not a valid %s", index + 1, v.c_str(),
                                     DTypeToString(dtype).c_str()));
  };
  if (v.empty()) return bad();
  if (dtype == DType::Bool()) {
    uint8_t b;
    if (v == "1" || v == "true" || v == "True") {
      b = 1;
    } else if (v == "0" || v == "false" || v == "False") {
      b = 0;
    } else {
      return bad();
    }
    SetElementFromUInt(t, index, b);
    return Status::Ok();
  }
  char* end = nullptr;
  errno = 0;
  if (dtype.is_float()) {
    double d = std::strtod(v.c_str(), &end);
    if (*end != '\0' || errno == ERANGE) return bad();
    SetElementFromDouble(t, index, d);  // float16/bfloat16 round to nearest even
    return Status::Ok();
  }
  if (dtype.code == kDLUInt && dtype.bits == 64) {  // past int64's range
    if (v[0] == '-') {
      return InvalidArgument(StrFormat("value %" PRId64 " '%s' is out of range for %s", index + 1, v.c_str(),
                                       DTypeToString(dtype).c_str()));
    }
    unsigned long long u = std::strtoull(v.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE) return bad();
    SetElementFromUInt(t, index, u);
    return Status::Ok();
  }
  long long i = std::strtoll(v.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return bad();
  // (Not -(1 << 63) for int64: negating INT64_MIN is undefined.)
  int64_t lo = dtype.code == kDLUInt ? 0
               : dtype.bits == 64    ? std::numeric_limits<int64_t>::min()
                                     : -(int64_t{1} << (dtype.bits - 1));
  int64_t hi = dtype.bits == 64 ? std::numeric_limits<int64_t>::max()
                                : (dtype.code == kDLUInt ? (int64_t{1} << dtype.bits) - 1
                                                         : (int64_t{1} << (dtype.bits - 1)) - 1);
  if (i < lo || i > hi) {
    return InvalidArgument(StrFormat("value %" PRId64 " '%s' is out of range for %s", index + 1, v.c_str(),
                                     DTypeToString(dtype).c_str()));
  }
  SetElementFromInt(t, index, i);
  return Status::Ok();
}

}  // namespace

uint64_t SplitMix64Next(uint64_t* state) {
  *state += 0x9E3779B97F4A7C15ull;
  uint64_t z = *state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Status FillRandom(const Tensor& t, uint64_t seed) {
  DType dtype = t.dtype();
  if (!IsElementDType(dtype)) {
    return InvalidArgument("cannot fill a " + DTypeToString(dtype) + " tensor with random values");
  }
  uint64_t state = seed;
  int64_t n = t.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = SplitMix64Next(&state);
    if (dtype == DType::Float64()) {
      t.data<double>()[i] = static_cast<double>(z >> 11) * 0x1p-53 * 2.0 - 1.0;
    } else if (dtype.is_float()) {
      // float32's value; float16 and bfloat16 round it.
      SetElementFromDouble(t, i, static_cast<float>(z >> 40) * 0x1p-24f * 2.0f - 1.0f);
    } else if (dtype == DType::Bool()) {
      SetElementFromUInt(t, i, z >> 63);
    } else if (dtype.code == kDLUInt) {
      SetElementFromUInt(t, i, z >> 60);
    } else {
      SetElementFromInt(t, i, static_cast<int64_t>(z >> 60) - 8);
    }
  }
  return Status::Ok();
}

Result<Tensor> ParseInlineTensor(const std::string& text) {
  const std::string what = "inline tensor " + Quote(text);
  size_t eq = text.find('=');
  std::string type_part = text.substr(0, eq);
  if (type_part.empty()) {
    return InvalidArgument(what + ": expected DIMSxDTYPE=VALUES, e.g. 2x3xf32=1,2,3,4,5,6");
  }
  std::vector<std::string> parts = Split(type_part, 'x');
  Result<DType> parsed = ParseDType(parts.back());
  if (!parsed.ok() || !IsElementDType(*parsed)) {
    return InvalidArgument(what + ": unknown dtype '" + parts.back() +
                           "' (expected f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64 or bool)");
  }
  DType dtype = *parsed;
  std::vector<int64_t> shape;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string& d = parts[i];
    char* end = nullptr;
    errno = 0;
    long long v = d.empty() ? -1 : std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || v < 0 || errno == ERANGE || d[0] == '-' || d[0] == '+') {
      return InvalidArgument(what + ": dimension '" + d + "' is not a non-negative integer");
    }
    shape.push_back(v);
  }
  if (eq == std::string::npos) {
    return InvalidArgument(what + " has no values: write " + type_part + "=v1,v2,... or " + type_part +
                           "=random:SEED");
  }
  std::string values = text.substr(eq + 1);
  KILN_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(shape, dtype));
  int64_t count = tensor.NumElements();

  if (!values.empty() && values[0] == '@') {
    // Raw little-endian element bytes in C order, exactly as many as the shape needs.
    std::string path = values.substr(1);
    if (path.empty()) return InvalidArgument(what + ": '@' needs a file name");
    Result<std::string> bytes = ReadFileToString(path);
    if (!bytes.ok()) return NotFound(what + ": cannot read '" + path + "'");
    uint64_t want = static_cast<uint64_t>(count) * dtype.bytes();
    if (bytes->size() != want) {
      return InvalidArgument(StrFormat("%s: '%s' has %zu bytes, shape %s of %s needs %llu", what.c_str(),
                                       path.c_str(), bytes->size(), ShapeToString(shape).c_str(),
                                       DTypeToString(dtype).c_str(), static_cast<unsigned long long>(want)));
    }
    if (want > 0) std::memcpy(tensor.raw_data(), bytes->data(), want);
    return tensor;
  }

  const std::string kRandom = "random:";
  if (values.compare(0, kRandom.size(), kRandom) == 0) {
    std::string seed_text = values.substr(kRandom.size());
    char* end = nullptr;
    errno = 0;
    unsigned long long seed = std::strtoull(seed_text.c_str(), &end, 10);
    if (seed_text.empty() || *end != '\0' || errno == ERANGE || seed_text[0] == '-') {
      return InvalidArgument(what + ": random seed '" + seed_text + "' is not a non-negative integer");
    }
    KILN_RETURN_IF_ERROR(FillRandom(tensor, seed));
    return tensor;
  }

  std::vector<std::string> items;
  if (!Trim(values).empty()) items = Split(values, ',');
  if (static_cast<int64_t>(items.size()) != count) {
    return InvalidArgument(StrFormat("%s: shape %s needs %" PRId64 " values, got %zu", what.c_str(),
                                     ShapeToString(shape).c_str(), count, items.size()));
  }
  for (int64_t i = 0; i < count; ++i) {
    KILN_RETURN_IF_ERROR_CTX(StoreValue(tensor, i, items[i]), "%s", what.c_str());
  }
  return tensor;
}

Result<Tensor> ParseTensorArgument(const std::string& text) {
  if (!text.empty() && text[0] == '@') return ReadNpyFile(text.substr(1));
  return ParseInlineTensor(text);
}

namespace {

void FormatDim(const Tensor& t, size_t dim, int64_t offset, const std::vector<int64_t>& strides,
               bool abbreviate, const PrintOptions& opt, std::string* out) {
  int64_t n = t.shape()[dim];
  bool last = dim + 1 == t.shape().size();
  *out += "[";
  for (int64_t i = 0; i < n; ++i) {
    if (abbreviate && n > 2 * opt.edge_items && i == opt.edge_items) {
      *out += last ? "..., " : "...,\n" + std::string(dim + 1, ' ');
      i = n - opt.edge_items;
    }
    if (last) {
      *out += FormatElementText(t, offset + i);
      if (i + 1 < n) *out += ", ";
    } else {
      FormatDim(t, dim + 1, offset + i * strides[dim], strides, abbreviate, opt, out);
      if (i + 1 < n) *out += ",\n" + std::string(dim + 1, ' ');
    }
  }
  *out += "]";
}

}  // namespace

std::string FormatTensor(const Tensor& t, const PrintOptions& options) {
  std::string out = t.TypeString() + "\n";
  if (!IsElementDType(t.dtype()) || !t.IsCompact()) return out + "(values not printable)";
  if (t.ndim() == 0) return out + FormatElementText(t, 0);
  std::vector<int64_t> strides(t.shape().size(), 1);
  for (size_t d = t.shape().size() - 1; d > 0; --d) strides[d - 1] = strides[d] * t.shape()[d];
  FormatDim(t, 0, 0, strides, t.NumElements() > options.threshold, options, &out);
  return out;
}

std::string FormatValue(const Any& value, const PrintOptions& options) {
  switch (value.kind()) {
    case AnyKind::kTensor: return FormatTensor(value.tensor(), options);
    case AnyKind::kTuple: {
      std::string out = value.Describe();
      for (size_t i = 0; i < value.tuple_fields().size(); ++i) {
        out += StrFormat("\n[%zu] ", i) + FormatValue(value.tuple_fields()[i], options);
      }
      return out;
    }
    default: return value.Describe();
  }
}

}  // namespace tools
}  // namespace kiln
