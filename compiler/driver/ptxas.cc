#include "compiler/driver/ptxas.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace kiln {
namespace driver {
namespace {

bool IsExecutable(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Removes the scratch directory and what is in it when the assembly ends,
// however it ends.
class ScratchDir {
 public:
  ScratchDir() {
    std::string base = Env("TMPDIR");
    if (base.empty()) base = "/tmp";
    std::string pattern = base + "/kiln-ptxas-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~ScratchDir() {
    for (const std::string& f : files_) ::unlink(f.c_str());
    if (!path_.empty()) ::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  return static_cast<bool>(f);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

Result<std::string> FindPtxas(const std::string& option) {
  if (option == kNoPtxas) return std::string();
  if (!option.empty()) {
    if (!IsExecutable(option)) return NotFound("--ptxas: '" + option + "' is not an executable program");
    return option;
  }
  std::vector<std::string> candidates;
  candidates.push_back(Env("KILN_PTXAS"));
  std::string cuda_home = Env("CUDA_HOME");
  if (!cuda_home.empty()) candidates.push_back(cuda_home + "/bin/ptxas");
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  std::string path = Env("PATH");
  for (size_t begin = 0; begin <= path.size();) {
    size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    if (end > begin) candidates.push_back(path.substr(begin, end - begin) + "/ptxas");
    begin = end + 1;
  }
  for (const std::string& c : candidates)
    if (IsExecutable(c)) return c;
  return std::string();
}

Result<std::string> AssembleCubin(const std::string& ptxas, const std::string& ptx, const std::string& arch) {
  ScratchDir dir;
  if (dir.path().empty()) return Internal(std::string("ptxas: cannot make a scratch directory: ") + strerror(errno));
  std::string in = dir.File("module.ptx"), out = dir.File("module.cubin"), log = dir.File("ptxas.log");
  if (!WriteFile(in, ptx)) return Internal("ptxas: cannot write " + in);

  std::string arch_flag = "-arch=" + arch;
  std::vector<std::string> words = {ptxas, arch_flag, "-O3", "-o", out, in};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(&w[0]);
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // ptxas's diagnostics (both streams) go to the log, for the error below.
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, ptxas.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Internal("ptxas: cannot start '" + ptxas + "': " + strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Internal(std::string("ptxas: waitpid: ") + strerror(errno));
  }
  std::string diagnostics = ReadFile(log);
  while (!diagnostics.empty() && (diagnostics.back() == '\n' || diagnostics.back() == ' ')) diagnostics.pop_back();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                        : "was killed by signal " + std::to_string(WTERMSIG(status));
    return Internal("ptxas '" + ptxas + "' " + how + " assembling the module's PTX for " + arch +
                    (diagnostics.empty() ? std::string(" (no output)") : ":\n" + diagnostics) +
                    "\n(--ptxas=none builds the module with PTX only)");
  }
  std::string cubin = ReadFile(out);
  if (cubin.size() < 4 || cubin.compare(0, 4, "\x7f" "ELF") != 0) {
    return Internal("ptxas '" + ptxas + "' succeeded but wrote no cubin (an ELF file) for " + arch);
  }
  return cubin;
}

}  // namespace driver
}  // namespace kiln
