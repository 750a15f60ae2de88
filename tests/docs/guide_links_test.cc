// The guide hangs together: index.md links every page of docs/guide/, and
// every relative link of every page (guide pages, ../ docs, #anchors) points
// at a file that exists and, with an anchor, at a heading it has (GitHub's
// anchor rule: lower case, punctuation dropped, spaces to '-').
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The lines of a Markdown file outside fenced code blocks.
std::vector<std::string> ProseLines(const std::string& markdown) {
  std::vector<std::string> lines;
  std::istringstream in(markdown);
  std::string fence;
  for (std::string line; std::getline(in, line);) {
    size_t indent = line.find_first_not_of(' ');
    std::string trimmed = indent == std::string::npos ? "" : line.substr(indent);
    bool is_fence = indent != std::string::npos && indent <= 3 &&
                    (trimmed.compare(0, 3, "```") == 0 || trimmed.compare(0, 3, "~~~") == 0);
    if (is_fence) {
      std::string marker = trimmed.substr(0, trimmed.find_first_not_of(trimmed[0]));
      if (fence.empty()) {
        fence = marker;
      } else if (trimmed[0] == fence[0] && marker.size() >= fence.size() &&
                 trimmed.find_first_not_of(" \t", marker.size()) == std::string::npos) {
        fence.clear();
      }
      continue;
    }
    if (fence.empty()) lines.push_back(line);
  }
  return lines;
}

std::string Slug(const std::string& heading) {
  std::string slug;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_') {
      slug += static_cast<char>(std::tolower(c));
    } else if (c == ' ') {
      slug += '-';
    }
  }
  return slug;
}

std::set<std::string> Anchors(const fs::path& page) {
  std::set<std::string> anchors;
  for (const std::string& line : ProseLines(ReadFile(page))) {
    size_t hashes = line.find_first_not_of('#');
    if (hashes == 0 || hashes == std::string::npos || hashes > 6 || line[hashes] != ' ') continue;
    anchors.insert(Slug(line.substr(hashes + 1)));
  }
  return anchors;
}

std::vector<fs::path> GuidePages() {
  std::vector<fs::path> pages;
  for (const auto& entry : fs::directory_iterator(KILN_GUIDE_DIR)) {
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  }
  std::sort(pages.begin(), pages.end());
  return pages;
}

TEST(GuideLinksTest, SlugFollowsGitHub) {
  EXPECT_EQ(Slug("The `.relax` text form"), "the-relax-text-form");
  EXPECT_EQ(Slug("Functions, executors and threads"), "functions-executors-and-threads");
  EXPECT_EQ(Slug("Build it with make and pkg-config"), "build-it-with-make-and-pkg-config");
}

TEST(GuideLinksTest, ProseSkipsCode) {
  std::vector<std::string> lines = ProseLines("a\n```sh\n# not a heading\n```\nb\n~~~~\n```\n~~~~\nc\n");
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(GuideLinksTest, IndexLinksEveryPage) {
  std::string index = ReadFile(fs::path(KILN_GUIDE_DIR) / "index.md");
  ASSERT_FALSE(index.empty());
  for (const fs::path& page : GuidePages()) {
    if (page.filename() == "index.md") continue;
    EXPECT_NE(index.find("](" + page.filename().string() + ")"), std::string::npos)
        << "docs/guide/index.md does not link " << page.filename();
  }
}

TEST(GuideLinksTest, RelativeLinksResolve) {
  static const std::regex kLink(R"(\]\(([^)\s]+)\))");
  int checked = 0;
  for (const fs::path& page : GuidePages()) {
    for (const std::string& line : ProseLines(ReadFile(page))) {
      for (auto it = std::sregex_iterator(line.begin(), line.end(), kLink); it != std::sregex_iterator(); ++it) {
        std::string target = (*it)[1];
        if (target.find("://") != std::string::npos || target.compare(0, 7, "mailto:") == 0) continue;
        std::string file = target.substr(0, target.find('#'));
        std::string anchor = target.find('#') == std::string::npos ? "" : target.substr(target.find('#') + 1);
        fs::path resolved = file.empty() ? page : page.parent_path() / file;
        ++checked;
        if (!fs::exists(resolved)) {
          ADD_FAILURE() << page.filename() << ": link to " << target << ": " << resolved << " does not exist";
          continue;
        }
        if (!anchor.empty() && resolved.extension() == ".md") {
          std::set<std::string> anchors = Anchors(resolved);
          EXPECT_TRUE(anchors.count(anchor))
              << page.filename() << ": link to " << target << ": no heading with anchor #" << anchor << " in "
              << resolved.filename();
        }
      }
    }
  }
  EXPECT_GT(checked, 10);
}

}  // namespace
