#include "compiler/text/source.h"

#include <cctype>

namespace kiln {
namespace text {

SourceFile::SourceFile(std::string text, std::string name)
    : text_(std::move(text)), name_(std::make_shared<const std::string>(std::move(name))) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

std::string SourceFile::Line(int line) const {
  if (line < 1 || static_cast<size_t>(line) > line_starts_.size()) return "";
  size_t begin = line_starts_[line - 1];
  size_t end = text_.find('\n', begin);
  if (end == std::string::npos) end = text_.size();
  std::string s = text_.substr(begin, end - begin);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

Status SourceFile::Error(Loc loc, const std::string& message) const {
  std::string out = *name_ + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": error: " + message;
  std::string line = Line(loc.line);
  if (!line.empty()) {
    out += "\n    " + line + "\n    ";
    // Tabs in the prefix keep the caret aligned.
    for (int i = 1; i < loc.col && static_cast<size_t>(i) <= line.size(); ++i) out += line[i - 1] == '\t' ? '\t' : ' ';
    out += '^';
  }
  return InvalidArgument(out);
}

Status QuoteSourceLine(const Status& s, const SourceFile& file) {
  if (s.ok()) return s;
  const std::string& m = s.message();
  std::string prefix = file.name() + ":";
  if (m.compare(0, prefix.size(), prefix) != 0 || m.find('\n') != std::string::npos) return s;
  // <line>:<col>: after the name.
  size_t p = prefix.size(), q = p;
  while (q < m.size() && isdigit(static_cast<unsigned char>(m[q]))) ++q;
  if (q == p || q >= m.size() || m[q] != ':') return s;
  size_t r = q + 1, t = r;
  while (t < m.size() && isdigit(static_cast<unsigned char>(m[t]))) ++t;
  if (t == r || m.compare(t, 2, ": ") != 0) return s;
  int line = std::stoi(m.substr(p, q - p));
  int col = std::stoi(m.substr(r, t - r));
  std::string text = file.Line(line);
  if (text.empty()) return s;
  std::string out = m + "\n    " + text + "\n    ";
  for (int i = 1; i < col && static_cast<size_t>(i) <= text.size(); ++i) out += text[i - 1] == '\t' ? '\t' : ' ';
  out += '^';
  return Status(s.code(), out);
}

}  // namespace text
}  // namespace kiln
