#include "tools/common/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace kiln {
namespace tools {

void FlagParser::AddValue(const std::string& name, std::function<Status(const std::string&)> set) {
  flags_.push_back(Flag{"--" + name, true, std::move(set)});
}

void FlagParser::AddString(const std::string& name, std::string* dst) {
  AddValue(name, [dst](const std::string& v) {
    *dst = v;
    return Status::Ok();
  });
}

void FlagParser::AddRepeated(const std::string& name, std::vector<std::string>* dst) {
  AddValue(name, [dst](const std::string& v) {
    dst->push_back(v);
    return Status::Ok();
  });
}

void FlagParser::AddInt(const std::string& name, int64_t min, int64_t max, int64_t* dst) {
  std::string flag = "--" + name;
  AddValue(name, [flag, min, max, dst](const std::string& v) -> Status {
    KILN_ASSIGN_OR_RETURN(*dst, ParseIntFlag(flag, v, min, max));
    return Status::Ok();
  });
}

void FlagParser::AddInt(const std::string& name, int min, int max, int* dst) {
  std::string flag = "--" + name;
  AddValue(name, [flag, min, max, dst](const std::string& v) -> Status {
    KILN_ASSIGN_OR_RETURN(int64_t x, ParseIntFlag(flag, v, min, max));
    *dst = static_cast<int>(x);
    return Status::Ok();
  });
}

void FlagParser::AddDouble(const std::string& name, double min, double* dst) {
  std::string flag = "--" + name;
  AddValue(name, [flag, min, dst](const std::string& v) -> Status {
    KILN_ASSIGN_OR_RETURN(*dst, ParseDoubleFlag(flag, v, min));
    return Status::Ok();
  });
}

void FlagParser::AddChoice(const std::string& name, const std::vector<std::string>& choices, std::string* dst) {
  std::string flag = "--" + name;
  AddValue(name, [flag, choices, dst](const std::string& v) -> Status {
    std::string list;
    for (size_t i = 0; i < choices.size(); ++i) {
      if (choices[i] == v) {
        *dst = v;
        return Status::Ok();
      }
      list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    }
    return InvalidArgument(flag + ": '" + v + "' is not " + list);
  });
}

void FlagParser::AddSwitch(const std::string& name, bool* dst) {
  flags_.push_back(Flag{"--" + name, false, [dst](const std::string&) {
                          *dst = true;
                          return Status::Ok();
                        }});
}

void FlagParser::AddAlias(const std::string& short_name, const std::string& name) {
  aliases_.emplace_back(short_name, "--" + name);
}

const FlagParser::Flag* FlagParser::Find(const std::string& name) const {
  std::string full = name;
  for (const auto& a : aliases_) {
    if (a.first == name) full = a.second;
  }
  if (full.compare(0, 2, "--") != 0) return nullptr;
  for (const Flag& f : flags_) {
    if (f.name == full) return &f;
  }
  return nullptr;
}

Status FlagParser::Parse(int argc, const char* const* argv, std::vector<std::string>* positional) {
  bool only_positional = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (only_positional || arg.empty() || arg[0] != '-' || arg == "-") {
      positional->push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      help_ = true;
      continue;
    }
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    const Flag* flag = Find(name);
    if (flag == nullptr) return InvalidArgument("unknown flag '" + name + "' (see --help)");
    std::string value;
    if (!flag->takes_value) {
      if (eq != std::string::npos) return InvalidArgument(name + " takes no value, got '" + arg + "'");
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return InvalidArgument(name + " needs a value");
    }
    Status s = flag->set(value);
    if (!s.ok()) {
      if (s.message().compare(0, 2, "--") == 0) return s;
      return Status(s.code(), name + ": " + s.message());
    }
  }
  return Status::Ok();
}

Result<int64_t> ParseIntFlag(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    if (min == 1 && max >= 1000000000) return InvalidArgument(flag + ": '" + text + "' is not a positive integer");
    return InvalidArgument(StrFormat("%s: '%s' is not an integer in [%lld, %lld]", flag.c_str(), text.c_str(),
                                     static_cast<long long>(min), static_cast<long long>(max)));
  }
  return static_cast<int64_t>(v);
}

Result<double> ParseDoubleFlag(const std::string& flag, const std::string& text, double min) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < min) {
    return InvalidArgument(StrFormat("%s: '%s' is not a number >= %g", flag.c_str(), text.c_str(), min));
  }
  return v;
}

Result<std::pair<std::string, std::vector<int64_t>>> ParseNameValues(const std::string& flag,
                                                                      const std::string& text, int64_t min) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument(flag + ": expected NAME=VALUE[,VALUE...], got '" + text + "'");
  }
  std::pair<std::string, std::vector<int64_t>> out;
  out.first = text.substr(0, eq);
  std::string rest = text.substr(eq + 1);
  size_t start = 0;
  while (true) {
    size_t comma = rest.find(',', start);
    std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    KILN_ASSIGN_OR_RETURN(int64_t v, ParseIntFlag(flag + " " + out.first, item, min, INT64_MAX / 2));
    out.second.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

}  // namespace tools
}  // namespace kiln
