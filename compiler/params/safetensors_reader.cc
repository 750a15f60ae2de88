// .safetensors: u64 header length, JSON header, data. The JSON is parsed by a
// small recursive reader that keeps object keys in file order; only the
// subset the format uses matters (objects, arrays, strings, integers), but
// any valid JSON value in "__metadata__" is skipped correctly.
#include <cctype>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "compiler/params/param_file.h"

namespace kiln {
namespace params {
namespace {

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  std::string str;       // kString
  bool is_int = false;   // kNumber without fraction or exponent
  int64_t i = 0;
  std::vector<Json> items;                                  // kArray
  std::vector<std::pair<std::string, Json>> members;       // kObject, in order
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}

  // Sets *error (with the byte offset) on failure.
  bool ParseDocument(Json* out, std::string* error) {
    if (!Value(out, 0) || (Space(), pos_ != s_.size())) {
      if (error_.empty()) error_ = "unexpected character";
      *error = error_ + " at byte " + std::to_string(pos_) + " of the header";
      return false;
    }
    return true;
  }

 private:
  void Space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Fail(const char* why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  bool Literal(const char* word) {
    size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return Fail("invalid literal");
    pos_ += n;
    return true;
  }
  bool String(std::string* out) {
    ++pos_;  // opening quote
    for (;;) {
      if (pos_ >= s_.size()) return Fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return Fail("unterminated string");
      char esc = s_[pos_++];
      switch (esc) {
        case '"': case '\\': case '/': out->push_back(esc); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return Fail("bad \\u escape");
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            char h = s_[pos_++];
            if (!std::isxdigit(static_cast<unsigned char>(h))) return Fail("bad \\u escape");
            cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          // UTF-8 encode (surrogate pairs are kept as two 3-byte units; names
          // with them are not expected).
          if (cp < 0x80) {
            out->push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else {
            out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          }
          break;
        }
        default: return Fail("bad escape in string");
      }
    }
  }
  bool Number(Json* out) {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    bool digits = false, integral = true;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        digits = true;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || (c == '-' && pos_ > start)) {
        integral = false;
      } else {
        break;
      }
      ++pos_;
    }
    if (!digits) return Fail("invalid number");
    out->kind = Json::kNumber;
    std::string text = s_.substr(start, pos_ - start);
    if (integral && text.size() <= 18) {
      out->is_int = true;
      out->i = std::stoll(text);
    }
    return true;
  }
  bool Value(Json* out, int depth) {
    if (depth > 64) return Fail("nesting too deep");
    Space();
    if (pos_ >= s_.size()) return Fail("unexpected end");
    char c = s_[pos_];
    if (c == '{') {
      out->kind = Json::kObject;
      ++pos_;
      Space();
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      for (;;) {
        Space();
        if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a quoted key");
        std::string key;
        if (!String(&key)) return false;
        Space();
        if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("expected ':'");
        ++pos_;
        Json v;
        if (!Value(&v, depth + 1)) return false;
        out->members.emplace_back(std::move(key), std::move(v));
        Space();
        if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
        if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
        return Fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      out->kind = Json::kArray;
      ++pos_;
      Space();
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      for (;;) {
        Json v;
        if (!Value(&v, depth + 1)) return false;
        out->items.push_back(std::move(v));
        Space();
        if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
        if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
        return Fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      out->kind = Json::kString;
      return String(&out->str);
    }
    if (c == 't') return out->kind = Json::kBool, Literal("true");
    if (c == 'f') return out->kind = Json::kBool, Literal("false");
    if (c == 'n') return out->kind = Json::kNull, Literal("null");
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return Number(out);
    return Fail("unexpected character");
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

const Json* Member(const Json& obj, const char* key) {
  for (const auto& m : obj.members)
    if (m.first == key) return &m.second;
  return nullptr;
}

struct SafeType {
  const char* name;
  DType dtype;
};
const SafeType kTypes[] = {
    {"F64", DType::Float64()},       {"F32", DType::Float32()},       {"F16", DType::Float16()},
    {"BF16", DType{kDLBfloat, 16, 1}}, {"I64", DType::Int64()},         {"I32", DType::Int32()},
    {"I16", DType{kDLInt, 16, 1}},   {"I8", DType::Int8()},           {"U64", DType{kDLUInt, 64, 1}},
    {"U32", DType{kDLUInt, 32, 1}},  {"U16", DType{kDLUInt, 16, 1}},  {"U8", DType::UInt8()},
    {"BOOL", DType::Bool()},
};

Result<NamedTensor> ReadTensor(const std::string& name, const Json& info, const uint8_t* data, uint64_t data_size,
                               const std::string& where) {
  if (info.kind != Json::kObject) return DataLoss(where + ": expected an object with dtype, shape and data_offsets");
  const Json* dtype = Member(info, "dtype");
  const Json* shape = Member(info, "shape");
  const Json* offsets = Member(info, "data_offsets");
  if (!dtype || dtype->kind != Json::kString) return DataLoss(where + ": missing or non-string \"dtype\"");
  if (!shape || shape->kind != Json::kArray) return DataLoss(where + ": missing or non-array \"shape\"");
  if (!offsets || offsets->kind != Json::kArray || offsets->items.size() != 2) {
    return DataLoss(where + ": \"data_offsets\" must be [begin, end]");
  }
  DType t;
  bool known = false;
  for (const auto& k : kTypes) {
    if (dtype->str == k.name) {
      t = k.dtype;
      known = true;
    }
  }
  if (!known) {
    return Unimplemented(where + ": unsupported dtype '" + dtype->str +
                         "' (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL)");
  }
  std::vector<int64_t> dims;
  uint64_t elements = 1;
  for (const auto& d : shape->items) {
    if (d.kind != Json::kNumber || !d.is_int || d.i < 0) return DataLoss(where + ": shape entries must be non-negative integers");
    dims.push_back(d.i);
    if (d.i != 0 && elements > (uint64_t{1} << 62) / static_cast<uint64_t>(d.i)) return DataLoss(where + ": shape too large");
    elements *= static_cast<uint64_t>(d.i);
  }
  for (const auto& o : offsets->items) {
    if (o.kind != Json::kNumber || !o.is_int || o.i < 0) return DataLoss(where + ": data_offsets must be non-negative integers");
  }
  uint64_t begin = static_cast<uint64_t>(offsets->items[0].i), end = static_cast<uint64_t>(offsets->items[1].i);
  if (begin > end || end > data_size) {
    return DataLoss(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                    "] out of range (the data section has " + std::to_string(data_size) + " bytes; truncated?)");
  }
  uint64_t want = elements * t.bytes();
  if (end - begin != want) {
    return DataLoss(where + ": data_offsets span " + std::to_string(end - begin) + " bytes but " + dtype->str +
                    ShapeToString(dims) + " needs " + std::to_string(want));
  }
  KILN_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(dims, t));
  if (want) std::memcpy(tensor.raw_data(), data + begin, want);
  if (t == DType::Bool()) {
    for (uint64_t k = 0; k < elements; ++k) {
      if (tensor.data<uint8_t>()[k] > 1) return DataLoss(where + ": BOOL value other than 0 or 1");
    }
  }
  return NamedTensor{name, std::move(tensor)};
}

}  // namespace

Result<ParamList> ParseSafetensors(const void* data, size_t size, const std::string& file) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (size < 8) return DataLoss(file + ": not a .safetensors file: shorter than its 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | p[i];
  if (header_len > size - 8) {
    return DataLoss(file + ": header length " + std::to_string(header_len) + " runs past the end of the file (" +
                    std::to_string(size) + " bytes; truncated, or not a .safetensors file)");
  }
  std::string header(reinterpret_cast<const char*>(p + 8), header_len);
  if (header.empty() || header[0] != '{') return DataLoss(file + ": not a .safetensors file: the header is not a JSON object");
  Json root;
  std::string error;
  if (!JsonReader(header).ParseDocument(&root, &error)) return DataLoss(file + ": malformed JSON header: " + error);
  if (root.kind != Json::kObject) return DataLoss(file + ": the header is not a JSON object");
  const uint8_t* body = p + 8 + header_len;
  uint64_t body_size = size - 8 - header_len;
  ParamList out;
  std::set<std::string> seen;
  for (const auto& m : root.members) {
    if (m.first == "__metadata__") continue;
    std::string where = file + ": tensor '" + m.first + "'";
    if (!seen.insert(m.first).second) return InvalidArgument(where + ": the name appears twice");
    KILN_ASSIGN_OR_RETURN(NamedTensor t, ReadTensor(m.first, m.second, body, body_size, where));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace params
}  // namespace kiln
