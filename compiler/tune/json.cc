#include "compiler/tune/json.h"

#include <cmath>
#include <cstdio>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kiln {
namespace tune {

const Json* Json::Get(const std::string& key) const {
  if (kind != Kind::kObject) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

namespace {

void WriteString(const std::string& s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      case '\r': *out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          *out += buf;
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

void Write(const Json& j, std::string* out) {
  switch (j.kind) {
    case Json::Kind::kNull: *out += "null"; break;
    case Json::Kind::kBool: *out += j.b ? "true" : "false"; break;
    case Json::Kind::kInt: *out += std::to_string(j.i); break;
    case Json::Kind::kDouble: {
      if (!std::isfinite(j.d)) {  // JSON has no inf / nan
        *out += "null";
        break;
      }
      char buf[40];
      snprintf(buf, sizeof buf, "%.17g", j.d);
      std::string t = buf;
      // Keep it a double when read back.
      if (t.find_first_of(".eE") == std::string::npos) t += ".0";
      *out += t;
      break;
    }
    case Json::Kind::kString: WriteString(j.s, out); break;
    case Json::Kind::kArray:
      *out += '[';
      for (size_t k = 0; k < j.array.size(); ++k) {
        if (k) *out += ',';
        Write(j.array[k], out);
      }
      *out += ']';
      break;
    case Json::Kind::kObject: {
      *out += '{';
      bool first = true;
      for (const auto& [key, v] : j.object) {
        if (!first) *out += ',';
        first = false;
        WriteString(key, out);
        *out += ':';
        Write(v, out);
      }
      *out += '}';
      break;
    }
  }
}

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  Result<Json> Document() {
    KILN_ASSIGN_OR_RETURN(Json v, Value(0));
    Skip();
    if (p_ != t_.size()) return Error("unexpected text after the value");
    return v;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("JSON at offset " + std::to_string(p_) + ": " + what);
  }
  void Skip() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) ++p_;
  }
  bool Eat(const char* word) {
    size_t n = strlen(word);
    if (t_.compare(p_, n, word) != 0) return false;
    p_ += n;
    return true;
  }

  Result<Json> Value(int depth) {
    if (depth > 64) return Error("nested too deeply");
    Skip();
    if (p_ >= t_.size()) return Error("unexpected end");
    char c = t_[p_];
    if (c == '{') return ObjectValue(depth);
    if (c == '[') return ArrayValue(depth);
    if (c == '"') {
      KILN_ASSIGN_OR_RETURN(std::string s, String());
      return Json::Str(std::move(s));
    }
    if (Eat("null")) return Json();
    if (Eat("true")) return Json::Bool(true);
    if (Eat("false")) return Json::Bool(false);
    if (c == '-' || (c >= '0' && c <= '9')) return Number();
    return Error(std::string("unexpected character '") + c + "'");
  }

  Result<Json> Number() {
    size_t start = p_;
    if (t_[p_] == '-') ++p_;
    if (p_ >= t_.size() || !isdigit(static_cast<unsigned char>(t_[p_]))) return Error("bad number");
    while (p_ < t_.size() && isdigit(static_cast<unsigned char>(t_[p_]))) ++p_;
    bool is_double = false;
    if (p_ < t_.size() && t_[p_] == '.') {
      is_double = true;
      ++p_;
      if (p_ >= t_.size() || !isdigit(static_cast<unsigned char>(t_[p_]))) return Error("bad number");
      while (p_ < t_.size() && isdigit(static_cast<unsigned char>(t_[p_]))) ++p_;
    }
    if (p_ < t_.size() && (t_[p_] == 'e' || t_[p_] == 'E')) {
      is_double = true;
      ++p_;
      if (p_ < t_.size() && (t_[p_] == '+' || t_[p_] == '-')) ++p_;
      if (p_ >= t_.size() || !isdigit(static_cast<unsigned char>(t_[p_]))) return Error("bad number");
      while (p_ < t_.size() && isdigit(static_cast<unsigned char>(t_[p_]))) ++p_;
    }
    std::string text = t_.substr(start, p_ - start);
    if (is_double) return Json::Double(strtod(text.c_str(), nullptr));
    errno = 0;
    long long v = strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE) return Error("integer out of range");
    return Json::Int(v);
  }

  Result<std::string> String() {
    ++p_;  // '"'
    std::string out;
    while (true) {
      if (p_ >= t_.size()) return Error("unterminated string");
      char c = t_[p_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= t_.size()) return Error("unterminated string");
      char e = t_[p_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (p_ + 4 > t_.size()) return Error("bad \\u escape");
          unsigned code = 0;
          for (int k = 0; k < 4; ++k) {
            char h = t_[p_++];
            code <<= 4;
            if (h >= '0' && h <= '9') code |= h - '0';
            else if (h >= 'a' && h <= 'f') code |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') code |= h - 'A' + 10;
            else return Error("bad \\u escape");
          }
          // UTF-8 of the basic plane (the writer only escapes control bytes).
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
          }
          break;
        }
        default: return Error(std::string("bad escape \\") + e);
      }
    }
  }

  Result<Json> ArrayValue(int depth) {
    ++p_;
    Json a = Json::Array();
    Skip();
    if (p_ < t_.size() && t_[p_] == ']') {
      ++p_;
      return a;
    }
    while (true) {
      KILN_ASSIGN_OR_RETURN(Json v, Value(depth + 1));
      a.array.push_back(std::move(v));
      Skip();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == ']') {
        ++p_;
        return a;
      }
      return Error("expected ',' or ']'");
    }
  }

  Result<Json> ObjectValue(int depth) {
    ++p_;
    Json o = Json::Object();
    Skip();
    if (p_ < t_.size() && t_[p_] == '}') {
      ++p_;
      return o;
    }
    while (true) {
      Skip();
      if (p_ >= t_.size() || t_[p_] != '"') return Error("expected a quoted key");
      KILN_ASSIGN_OR_RETURN(std::string key, String());
      Skip();
      if (p_ >= t_.size() || t_[p_] != ':') return Error("expected ':'");
      ++p_;
      KILN_ASSIGN_OR_RETURN(Json v, Value(depth + 1));
      o.object[key] = std::move(v);
      Skip();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == '}') {
        ++p_;
        return o;
      }
      return Error("expected ',' or '}'");
    }
  }

  const std::string& t_;
  size_t p_ = 0;
};

}  // namespace

std::string WriteJson(const Json& j) {
  std::string out;
  Write(j, &out);
  return out;
}

Result<Json> ParseJson(const std::string& text) { return Parser(text).Document(); }

}  // namespace tune
}  // namespace kiln
