#include "tests/docs/doc_blocks.h"

#include <sstream>

namespace kiln {
namespace docs {
namespace {

// A fence: indentation (0..3 spaces), the fence character and its count.
struct Fence {
  size_t indent = 0;
  char ch = 0;
  size_t length = 0;
};

bool ParseFence(const std::string& line, Fence* fence, std::string* rest) {
  size_t indent = 0;
  while (indent < line.size() && line[indent] == ' ') ++indent;
  if (indent > 3 || indent >= line.size()) return false;
  char ch = line[indent];
  if (ch != '`' && ch != '~') return false;
  size_t end = indent;
  while (end < line.size() && line[end] == ch) ++end;
  if (end - indent < 3) return false;
  *rest = line.substr(end);
  // A backtick fence's info string may not contain backticks (that is
  // inline code, not a fence).
  if (ch == '`' && rest->find('`') != std::string::npos) return false;
  fence->indent = indent;
  fence->ch = ch;
  fence->length = end - indent;
  return true;
}

std::string NormalizeInfo(const std::string& raw) {
  std::istringstream words(raw);
  std::string word, info;
  while (words >> word) info += (info.empty() ? "" : " ") + word;
  return info;
}

bool IsBlank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

std::vector<DocBlock> ExtractFencedBlocks(const std::string& markdown) {
  std::vector<DocBlock> blocks;
  std::istringstream in(markdown);
  std::string line;
  int number = 0;
  bool inside = false;
  Fence open;
  DocBlock block;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    Fence fence;
    std::string rest;
    if (!inside) {
      if (ParseFence(line, &fence, &rest)) {
        inside = true;
        open = fence;
        block = DocBlock();
        block.line = number;
        block.info = NormalizeInfo(rest);
      }
      continue;
    }
    if (ParseFence(line, &fence, &rest) && fence.ch == open.ch && fence.length >= open.length && IsBlank(rest)) {
      blocks.push_back(block);
      inside = false;
      continue;
    }
    size_t strip = 0;
    while (strip < open.indent && strip < line.size() && line[strip] == ' ') ++strip;
    block.text += line.substr(strip) + "\n";
  }
  if (inside) {
    block.closed = false;
    blocks.push_back(block);
  }
  return blocks;
}

}  // namespace docs
}  // namespace kiln
