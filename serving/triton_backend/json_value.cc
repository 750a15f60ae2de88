#include "serving/triton_backend/json_value.h"

#include <cerrno>
#include <cctype>
#include <cstdlib>

namespace kiln::triton {

const JsonValue* JsonValue::Find(const std::string& key) const {
  if (kind != Kind::kObject) return nullptr;
  for (const auto& [name, value] : members) {
    if (name == key) return &value;
  }
  return nullptr;
}

bool JsonValue::AsInt(int64_t* out) const {
  if (kind != Kind::kNumber && kind != Kind::kString) return false;
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  *out = v;
  return true;
}

namespace {

// Recursive descent over [pos, end); depth-limited so a hostile config cannot blow the stack.
class Reader {
 public:
  Reader(const char* text, size_t size) : begin_(text), pos_(text), end_(text + size) {}

  bool Document(JsonValue* out, std::string* error) {
    if (!Value(out, 0)) {
      *error = error_ + " at byte " + std::to_string(pos_ - begin_);
      return false;
    }
    SkipSpace();
    if (pos_ != end_) {
      *error = "unexpected text after the JSON value at byte " + std::to_string(pos_ - begin_);
      return false;
    }
    return true;
  }

 private:
  static constexpr int kMaxDepth = 64;

  void SkipSpace() {
    while (pos_ < end_ && (*pos_ == ' ' || *pos_ == '\n' || *pos_ == '\r' || *pos_ == '\t')) ++pos_;
  }
  bool Fail(const char* what) {
    error_ = what;
    return false;
  }
  bool Literal(const char* word) {
    const char* p = pos_;
    for (; *word != '\0'; ++word, ++p) {
      if (p >= end_ || *p != *word) return Fail("invalid literal");
    }
    pos_ = p;
    return true;
  }

  bool Value(JsonValue* out, int depth) {
    if (depth > kMaxDepth) return Fail("nesting too deep");
    SkipSpace();
    if (pos_ >= end_) return Fail("unexpected end of text");
    switch (*pos_) {
      case '{': return Object(out, depth);
      case '[': return Array(out, depth);
      case '"': out->kind = JsonValue::Kind::kString; return String(&out->text);
      case 't': out->kind = JsonValue::Kind::kBool; out->boolean = true; return Literal("true");
      case 'f': out->kind = JsonValue::Kind::kBool; out->boolean = false; return Literal("false");
      case 'n': out->kind = JsonValue::Kind::kNull; return Literal("null");
      default: return Number(out);
    }
  }

  bool Number(JsonValue* out) {
    const char* start = pos_;
    while (pos_ < end_ && (std::isdigit(static_cast<unsigned char>(*pos_)) || *pos_ == '-' || *pos_ == '+' ||
                           *pos_ == '.' || *pos_ == 'e' || *pos_ == 'E')) {
      ++pos_;
    }
    if (pos_ == start) return Fail("unexpected character");
    out->kind = JsonValue::Kind::kNumber;
    out->text.assign(start, pos_);
    char* parsed_end = nullptr;
    out->number = std::strtod(out->text.c_str(), &parsed_end);
    if (parsed_end != out->text.c_str() + out->text.size()) return Fail("invalid number");
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string* s) {
    if (cp < 0x80) {
      s->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool Hex4(uint32_t* out) {
    if (end_ - pos_ < 4) return Fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      char c = *pos_;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else return Fail("invalid \\u escape");
    }
    *out = v;
    return true;
  }

  bool String(std::string* out) {
    ++pos_;  // the opening quote
    out->clear();
    while (pos_ < end_ && *pos_ != '"') {
      char c = *pos_++;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= end_) break;
      char e = *pos_++;
      switch (e) {
        case '"': case '\\': case '/': out->push_back(e); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          // A surrogate pair spells one code point above U+FFFF.
          if (cp >= 0xD800 && cp < 0xDC00 && end_ - pos_ >= 6 && pos_[0] == '\\' && pos_[1] == 'u') {
            pos_ += 2;
            uint32_t low = 0;
            if (!Hex4(&low)) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default: return Fail("invalid escape");
      }
    }
    if (pos_ >= end_) return Fail("unterminated string");
    ++pos_;  // the closing quote
    return true;
  }

  bool Array(JsonValue* out, int depth) {
    ++pos_;
    out->kind = JsonValue::Kind::kArray;
    SkipSpace();
    if (pos_ < end_ && *pos_ == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      out->items.emplace_back();
      if (!Value(&out->items.back(), depth + 1)) return false;
      SkipSpace();
      if (pos_ < end_ && *pos_ == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < end_ && *pos_ == ']') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or ']'");
    }
  }

  bool Object(JsonValue* out, int depth) {
    ++pos_;
    out->kind = JsonValue::Kind::kObject;
    SkipSpace();
    if (pos_ < end_ && *pos_ == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (pos_ >= end_ || *pos_ != '"') return Fail("expected a member name");
      std::string key;
      if (!String(&key)) return false;
      SkipSpace();
      if (pos_ >= end_ || *pos_ != ':') return Fail("expected ':'");
      ++pos_;
      out->members.emplace_back(std::move(key), JsonValue());
      if (!Value(&out->members.back().second, depth + 1)) return false;
      SkipSpace();
      if (pos_ < end_ && *pos_ == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < end_ && *pos_ == '}') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or '}'");
    }
  }

  const char* begin_;
  const char* pos_;
  const char* end_;
  std::string error_;
};

}  // namespace

bool ParseJson(const char* text, size_t size, JsonValue* out, std::string* error) {
  *out = JsonValue();
  Reader reader(text, size);
  return reader.Document(out, error);
}

}  // namespace kiln::triton
