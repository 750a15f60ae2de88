#include "compiler/codegen/lld_link.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <mutex>
#include <string>

#include "compiler/codegen/llvm_headers.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <lld/Common/Driver.h>
#pragma GCC diagnostic pop

LLD_HAS_DRIVER(elf)

namespace kiln {
namespace codegen {
namespace {

// Removes the directory and the files we put in it, whatever happens.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/kiln-lld-XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    if (path_.empty()) return;
    if (DIR* d = opendir(path_.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") unlink((path_ + "/" + name).c_str());
      }
      closedir(d);
    }
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::mutex& LldMutex() {
  static std::mutex mu;
  return mu;
}

bool g_lld_unusable = false;  // guarded by LldMutex()

}  // namespace

Result<std::vector<uint8_t>> LinkSharedObject(const std::vector<uint8_t>& object) {
  return LinkSharedObject(std::vector<std::vector<uint8_t>>{object});
}

Result<std::vector<uint8_t>> LinkSharedObject(const std::vector<std::vector<uint8_t>>& objects) {
  TempDir dir;
  if (dir.path().empty()) return Internal("linking the kernel library: cannot create a temporary directory");
  std::string so_path = dir.path() + "/kernels.so";
  // One object keeps the name it always had (kernels.o): its library is the
  // same bytes as before libraries came in parts.
  std::vector<std::string> obj_paths;
  for (size_t i = 0; i < objects.size(); ++i) {
    obj_paths.push_back(dir.path() + (objects.size() == 1 ? std::string("/kernels.o")
                                                          : "/kernels" + std::to_string(i) + ".o"));
    std::ofstream out(obj_paths.back(), std::ios::binary);
    out.write(reinterpret_cast<const char*>(objects[i].data()), static_cast<std::streamsize>(objects[i].size()));
    if (!out) return Internal("linking the kernel library: cannot write " + obj_paths.back());
  }
  // -Bsymbolic: references inside the library (the kernel table) bind to its
  // own kernels; without it a kernel named like a libc/libm function (fmax,
  // isnan, exp) would resolve to the process's one when dlopen'ed.
  // --threads=1: lld's parallel executor would leave worker threads in this
  // process, and kiln-tune forks (without exec) to measure each candidate;
  // a fork while a worker holds an allocator lock leaves the child hung in
  // malloc (seen under ASan with CI's parallel tests). One small object
  // needs no parallel link anyway.
  std::vector<const char*> args = {"ld.lld",   "--threads=1", "-shared", "-Bsymbolic", "-z", "defs", "-z", "noexecstack", "-z",
                                   "relro",    "-z",      "now",     "--build-id=none",     "--hash-style=both",
                                   "-soname",  "libkiln_kernels.so", "-o", so_path.c_str()};
  for (const std::string& p : obj_paths) args.push_back(p.c_str());
  std::string diag;
  {
    std::lock_guard<std::mutex> lock(LldMutex());
    if (g_lld_unusable) return Internal("linking the kernel library: lld crashed earlier in this process");
    llvm::raw_string_ostream out(diag), err(diag);
    lld::Result r = lld::lldMain(args, out, err, {{lld::Gnu, &lld::elf::link}});
    out.flush();
    err.flush();
    if (!r.canRunAgain) g_lld_unusable = true;
    if (r.retCode != 0) return Internal("linking the kernel library with lld failed: " + diag);
  }
  std::ifstream in(so_path, std::ios::binary);
  if (!in) return Internal("linking the kernel library: lld produced no output " + so_path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return bytes;
}

}  // namespace codegen
}  // namespace kiln
