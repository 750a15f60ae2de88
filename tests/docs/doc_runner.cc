#include "tests/docs/doc_runner.h"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/docs/doc_blocks.h"

namespace kiln {
namespace docs {
namespace {

namespace fs = std::filesystem;

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "model.relax": letters, digits, '_', '-', '.'; no directory.
bool IsPlainRelaxName(const std::string& name) {
  if (name.size() <= 6 || name.compare(name.size() - 6, 6, ".relax") != 0 || name[0] == '.') return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

bool WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

// Runs `command` with /bin/sh, its output going to `output`. Returns the
// exit status (128 + signal when killed).
int Run(const std::string& command, const fs::path& output) {
  std::string full = "( " + command + " ) > " + Quote(output.string()) + " 2>&1 < /dev/null";
  int status = std::system(full.c_str());
  if (status == -1) return 127;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

// The last `max_lines` lines of a step's output, indented.
std::string Tail(const fs::path& output, size_t max_lines = 60) {
  std::istringstream in(ReadFile(output));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  size_t first = lines.size() > max_lines ? lines.size() - max_lines : 0;
  if (first > 0) out += "    ... (" + std::to_string(first) + " lines)\n";
  for (size_t i = first; i < lines.size(); ++i) out += "    " + lines[i] + "\n";
  return out;
}

struct Step {
  std::string what;
  std::string command;
};

class Runner {
 public:
  Runner(const RunnerOptions& options, std::ostream& log) : o_(options), log_(log) {}

  int Run(const std::vector<std::string>& inputs) {
    std::vector<fs::path> files;
    for (const std::string& input : inputs) {
      std::error_code ec;
      if (fs::is_directory(input, ec)) {
        std::vector<fs::path> pages;
        for (const auto& entry : fs::directory_iterator(input)) {
          if (entry.path().extension() == ".md") pages.push_back(entry.path());
        }
        std::sort(pages.begin(), pages.end());
        files.insert(files.end(), pages.begin(), pages.end());
      } else if (fs::is_regular_file(input, ec)) {
        files.push_back(input);
      } else {
        log_ << input << ": error: no such file or directory\n";
        return -1;
      }
    }
    if (files.empty()) {
      log_ << "kiln_doc_runner: error: no Markdown files in the inputs\n";
      return -1;
    }
    std::error_code ec;
    fs::remove_all(o_.work_dir, ec);
    fs::create_directories(o_.work_dir, ec);
    if (ec) {
      log_ << o_.work_dir << ": error: cannot create: " << ec.message() << "\n";
      return -1;
    }
    work_ = fs::absolute(o_.work_dir);
    model_ = work_ / "mlp.vmfb";
    fs::path mlp = fs::absolute(fs::path(o_.examples_dir) / "mlp.relax");
    int status = kiln::docs::Run(Timeout() + Quote(o_.kiln_compile) + " " + Quote(mlp.string()) + " -o " +
                                     Quote(model_.string()),
                                 work_ / "mlp.log");
    if (status != 0) {
      log_ << "kiln_doc_runner: error: compiling " << mlp.string() << " failed (status " << status << ")\n"
           << Tail(work_ / "mlp.log");
      return -1;
    }
    int failed = 0, ran = 0;
    for (const fs::path& file : files) {
      if (!RunPage(file, &ran, &failed)) return -1;
    }
    log_ << "kiln_doc_runner: " << ran << " blocks run from " << files.size() << " files, " << failed
         << " failed\n";
    return failed;
  }

 private:
  std::string Timeout() const { return "timeout " + std::to_string(o_.timeout_s) + " "; }

  std::string CompileCommand(const std::string& compiler, const std::string& standard, const fs::path& source,
                             const fs::path& exe) const {
    return Timeout() + compiler + " " + standard + " -Wall -Werror " + o_.extra_flags + " -I" +
           Quote(o_.include_dir) + " " + Quote(source.string()) + " -o " + Quote(exe.string()) + " -L" +
           Quote(o_.library_dir) + " -lkiln -lm -Wl,-rpath," + Quote(o_.library_dir);
  }

  // Creates the page's directory with the examples in it.
  bool PreparePage(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    for (const auto& entry : fs::directory_iterator(o_.examples_dir, ec)) {
      if (entry.path().extension() == ".relax") {
        fs::copy_file(entry.path(), dir / entry.path().filename(), fs::copy_options::overwrite_existing, ec);
      }
    }
    if (ec) {
      log_ << dir.string() << ": error: cannot prepare: " << ec.message() << "\n";
      return false;
    }
    return true;
  }

  bool RunPage(const fs::path& file, int* ran, int* failed) {
    fs::path dir = work_ / file.stem();
    if (!PreparePage(dir)) return false;
    std::vector<DocBlock> blocks = ExtractFencedBlocks(ReadFile(file));
    for (const DocBlock& block : blocks) {
      std::string where = file.string() + ":" + std::to_string(block.line);
      std::string kind = block.info;
      // "relax compile NAME.relax": the module is saved under that name (and
      // compiled to NAME.vmfb) for the page's later blocks.
      std::string relax_name;
      const std::string relax_prefix = "relax compile ";
      if (kind.compare(0, relax_prefix.size(), relax_prefix) == 0) {
        relax_name = kind.substr(relax_prefix.size());
        kind = "relax compile";
        if (!IsPlainRelaxName(relax_name)) {
          ++*ran;
          ++*failed;
          log_ << where << ": error: 'relax compile " << relax_name
               << "': the name must be a plain file name ending in .relax\n";
          continue;
        }
      }
      std::string last_word = kind.substr(kind.find_last_of(' ') == std::string::npos ? 0 : kind.find_last_of(' ') + 1);
      bool runnable = kind == "c run" || kind == "cpp run" || kind == "sh run" || kind == "relax compile";
      if (!runnable) {
        if (last_word == "run" || last_word == "compile") {
          ++*ran;
          ++*failed;
          log_ << where << ": error: unknown kind of example '" << kind
               << "' (runnable kinds: c run, cpp run, sh run, relax compile)\n";
        }
        continue;
      }
      ++*ran;
      if (!block.closed) {
        ++*failed;
        log_ << where << ": error: '" << kind << "' block is never closed\n";
        continue;
      }
      std::string base = "block-" + std::to_string(block.line);
      std::vector<Step> steps;
      if (kind == "c run" || kind == "cpp run") {
        bool c = kind == "c run";
        fs::path source = dir / (base + (c ? ".c" : ".cc"));
        WriteFile(source, block.text);
        steps.push_back({"compiling", "cd " + Quote(dir.string()) + " && " +
                                          CompileCommand(c ? o_.cc : o_.cxx, c ? "-std=c11" : "-std=c++17",
                                                         source, dir / base)});
        steps.push_back({"running", "cd " + Quote(dir.string()) + " && " + Timeout() + "./" + base + " " +
                                        Quote(model_.string())});
      } else if (kind == "sh run") {
        fs::path script = dir / (base + ".sh");
        WriteFile(script, block.text);
        std::string path;
        for (const std::string& d : o_.path_dirs) path += d + ":";
        steps.push_back({"running", "cd " + Quote(dir.string()) + " && PATH=" + Quote(path) + "\"$PATH\" CC=" +
                                        Quote(o_.cc) + " KILN_INCLUDE_DIR=" + Quote(o_.include_dir) + " " +
                                        Timeout() + "bash -euo pipefail " + Quote(script.string())});
      } else {  // relax compile
        std::string stem = relax_name.empty() ? base : relax_name.substr(0, relax_name.size() - 6);
        fs::path source = dir / (stem + ".relax");
        WriteFile(source, block.text);
        steps.push_back({"compiling", "cd " + Quote(dir.string()) + " && " + Timeout() + Quote(o_.kiln_compile) +
                                          " " + Quote(source.filename().string()) + " -o " + Quote(stem + ".vmfb")});
      }
      bool ok = true;
      auto start = std::chrono::steady_clock::now();
      for (const Step& step : steps) {
        fs::path output = dir / (base + ".log");
        int status = kiln::docs::Run(step.command, output);
        if (status != 0) {
          ok = false;
          ++*failed;
          log_ << where << ": error: '" << kind << "' example failed " << step.what << " (exit status " << status
               << (status == 124 ? ": timed out" : "") << ")\n  $ " << step.command << "\n"
               << Tail(output);
          break;
        }
      }
      if (ok) {
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        char took[32];
        std::snprintf(took, sizeof(took), "%.1f s", seconds);
        log_ << where << ": ok (" << kind << ", " << took << ")\n";
      }
    }
    return true;
  }

  const RunnerOptions& o_;
  std::ostream& log_;
  fs::path work_;
  fs::path model_;
};

}  // namespace

int RunDocs(const RunnerOptions& options, const std::vector<std::string>& inputs, std::ostream& log) {
  // Every step runs in a page's directory: make the paths absolute.
  RunnerOptions o = options;
  auto absolute = [](std::string* path) {
    if (!path->empty()) *path = fs::absolute(*path).string();
  };
  absolute(&o.kiln_compile);
  absolute(&o.include_dir);
  absolute(&o.library_dir);
  absolute(&o.examples_dir);
  for (std::string& dir : o.path_dirs) absolute(&dir);
  return Runner(o, log).Run(inputs);
}

}  // namespace docs
}  // namespace kiln
