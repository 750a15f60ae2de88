#include "runtime/native_library.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln {
namespace {

// Writes all of `data` to `fd`, retrying short writes.
bool WriteAll(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Whether this CPU has the LLVM feature `name`; -1 when we cannot tell (the
// feature is then ignored).
int HostHasFeature(const std::string& name) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (name == "sse2") return __builtin_cpu_supports("sse2") ? 1 : 0;
  if (name == "sse3") return __builtin_cpu_supports("sse3") ? 1 : 0;
  if (name == "ssse3") return __builtin_cpu_supports("ssse3") ? 1 : 0;
  if (name == "sse4.1") return __builtin_cpu_supports("sse4.1") ? 1 : 0;
  if (name == "sse4.2") return __builtin_cpu_supports("sse4.2") ? 1 : 0;
  if (name == "popcnt") return __builtin_cpu_supports("popcnt") ? 1 : 0;
  if (name == "avx") return __builtin_cpu_supports("avx") ? 1 : 0;
  if (name == "avx2") return __builtin_cpu_supports("avx2") ? 1 : 0;
  if (name == "fma") return __builtin_cpu_supports("fma") ? 1 : 0;
  if (name == "bmi") return __builtin_cpu_supports("bmi") ? 1 : 0;
  if (name == "bmi2") return __builtin_cpu_supports("bmi2") ? 1 : 0;
  if (name == "avx512f") return __builtin_cpu_supports("avx512f") ? 1 : 0;
  if (name == "avx512bw") return __builtin_cpu_supports("avx512bw") ? 1 : 0;
  if (name == "avx512vl") return __builtin_cpu_supports("avx512vl") ? 1 : 0;
  if (name == "avx512dq") return __builtin_cpu_supports("avx512dq") ? 1 : 0;
  if (name == "avx512cd") return __builtin_cpu_supports("avx512cd") ? 1 : 0;
  if (name == "avx512vnni") return __builtin_cpu_supports("avx512vnni") ? 1 : 0;
#endif
  return -1;
}

// ELF e_machine values (the ELF specification's registry).
struct ElfMachine {
  uint16_t machine;
  const char* arch;
};
constexpr ElfMachine kElfMachines[] = {
    {62, "x86_64"}, {183, "aarch64"}, {3, "i386"}, {40, "arm"}, {243, "riscv64"}, {21, "ppc64"}, {22, "s390x"},
};

}  // namespace

std::string ElfArchitecture(const void* data, size_t size) {
  const auto* b = static_cast<const uint8_t*>(data);
  if (data == nullptr || size < 20 || b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F') return "";
  // e_machine at byte 18, in the byte order EI_DATA (byte 5) names.
  uint16_t machine = b[5] == 2 ? static_cast<uint16_t>(b[18] << 8 | b[19]) : static_cast<uint16_t>(b[19] << 8 | b[18]);
  for (const ElfMachine& m : kElfMachines)
    if (m.machine == machine) return m.arch;
  return "ELF machine " + std::to_string(machine);
}

const char* HostArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__i386__)
  return "i386";
#elif defined(__arm__)
  return "arm";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "";
#endif
}

Status CheckHostArchitecture(const void* data, size_t size, const std::string& triple) {
  std::string arch = ElfArchitecture(data, size);
  std::string host = HostArchitecture();
  if (arch.empty() || host.empty() || arch == host) return Status::Ok();
  std::string built = triple.empty() ? arch : triple + " (" + arch + ")";
  return Incompatible("the code was compiled for " + built + "; this machine is " + host +
                      " (compile with kiln-compile --target for this machine)");
}

Status CheckHostCpuFeatures(const std::string& llvm_features) {
  return CheckCpuFeatures(llvm_features, HostHasFeature);
}

Status CheckCpuFeatures(const std::string& llvm_features, int (*has_feature)(const std::string& name)) {
  std::string lacking;
  size_t pos = 0;
  while (pos <= llvm_features.size()) {
    size_t comma = llvm_features.find(',', pos);
    if (comma == std::string::npos) comma = llvm_features.size();
    std::string item = llvm_features.substr(pos, comma - pos);
    pos = comma + 1;
    // Only required features ("+x") matter; "-x" says the code avoids x.
    if (item.size() < 2 || item[0] != '+') continue;
    std::string name = item.substr(1);
    if (has_feature(name) == 0) lacking += (lacking.empty() ? "" : ", ") + name;
  }
  if (!lacking.empty()) {
    return Incompatible("the code needs CPU features this machine lacks: " + lacking);
  }
  return Status::Ok();
}

Result<std::unique_ptr<NativeLibrary>> NativeLibrary::LoadFromMemory(const void* data, size_t size,
                                                                     const std::string& name) {
  if (data == nullptr || size == 0) return DataLoss(name + ": the native library is empty");
  std::unique_ptr<NativeLibrary> lib(new NativeLibrary());
  lib->fd_ = memfd_create("kiln-native-library", MFD_CLOEXEC);
  if (lib->fd_ < 0) return ResourceExhausted(name + ": memfd_create failed: " + std::strerror(errno));
  if (!WriteAll(lib->fd_, static_cast<const uint8_t*>(data), size)) {
    return ResourceExhausted(name + ": writing the library to memory failed: " + std::strerror(errno));
  }
  std::string path = "/proc/self/fd/" + std::to_string(lib->fd_);
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const char* err = dlerror();
    return DataLoss(name + ": cannot load the native library: " + (err ? err : "unknown dlopen error"));
  }
  void* sym = dlsym(lib->handle_, KILN_KERNEL_QUERY_SYMBOL);
  if (sym == nullptr) return DataLoss(name + ": the native library exports no '" KILN_KERNEL_QUERY_SYMBOL "'");
  auto query = reinterpret_cast<kiln_kernel_query_fn>(sym);
  lib->table_ = query(KILN_KERNEL_ABI_VERSION);
  if (lib->table_ == nullptr) {
    return Incompatible(StrFormat("%s: the native library does not serve kernel ABI version %u", name.c_str(),
                                  KILN_KERNEL_ABI_VERSION));
  }
  if (lib->table_->abi_version != KILN_KERNEL_ABI_VERSION) {
    return Incompatible(StrFormat("%s: the native library has kernel ABI version %u; this runtime has %u",
                                  name.c_str(), lib->table_->abi_version, KILN_KERNEL_ABI_VERSION));
  }
  if (lib->table_->num_kernels > 0 && lib->table_->kernels == nullptr) {
    return DataLoss(name + ": the native library's kernel table is missing");
  }
  for (uint32_t i = 0; i < lib->table_->num_kernels; ++i) {
    const kiln_kernel_entry& e = lib->table_->kernels[i];
    if (e.name == nullptr || e.fn == nullptr) {
      return DataLoss(StrFormat("%s: kernel entry %u has no name or no function", name.c_str(), i));
    }
  }
  if (lib->table_->target_features != nullptr) {
    KILN_RETURN_IF_ERROR_CTX(CheckHostCpuFeatures(lib->table_->target_features), "%s", name.c_str());
  }
  return lib;
}

NativeLibrary::~NativeLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
  if (fd_ >= 0) close(fd_);
}

Result<const kiln_kernel_entry*> NativeLibrary::Find(const std::string& kernel) const {
  for (uint32_t i = 0; i < table_->num_kernels; ++i) {
    if (kernel == table_->kernels[i].name) return &table_->kernels[i];
  }
  return NotFound("no kernel named '" + kernel + "' in the native library");
}

}  // namespace kiln
