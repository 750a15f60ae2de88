// NativeLibrary: a kernel library (an ELF shared object produced by the LLVM
// codegen) loaded from memory, without a file on disk: the bytes are written to
// an anonymous memfd and dlopen'ed through /proc/self/fd.
//
// Before anything runs, the library's target CPU features are checked against
// the host CPU, so a library built for AVX-512 on an AVX2 machine is refused
// with that reason instead of dying on an illegal instruction.
//
// Thread-safe after load (the kernel table is immutable).
#ifndef KILN_RUNTIME_NATIVE_LIBRARY_H_
#define KILN_RUNTIME_NATIVE_LIBRARY_H_

#include <memory>
#include <string>
#include <vector>

#include "kernels/kiln_kernel_abi.h"
#include "runtime/status.h"

namespace kiln {

class NativeLibrary {
 public:
  // `name` is for error messages. The bytes are copied into the memfd; the
  // caller's buffer may go away after the call.
  static Result<std::unique_ptr<NativeLibrary>> LoadFromMemory(const void* data, size_t size,
                                                               const std::string& name);
  ~NativeLibrary();
  NativeLibrary(const NativeLibrary&) = delete;
  NativeLibrary& operator=(const NativeLibrary&) = delete;

  const kiln_kernel_library& table() const { return *table_; }
  // kNotFound when the library has no kernel of that name.
  Result<const kiln_kernel_entry*> Find(const std::string& kernel) const;

 private:
  NativeLibrary() = default;
  void* handle_ = nullptr;
  int fd_ = -1;
  const kiln_kernel_library* table_ = nullptr;
};

// Fails (kIncompatible) when an LLVM feature string such as "+avx2,+avx512f"
// names a feature this CPU lacks; unknown features are ignored.
Status CheckHostCpuFeatures(const std::string& llvm_features);

// The same check against any CPU: `has_feature(name)` returns 1 (present),
// 0 (absent) or -1 (unknown, ignored). For tests and cross-target tools.
Status CheckCpuFeatures(const std::string& llvm_features, int (*has_feature)(const std::string& name));

// The architecture an ELF image was built for ("x86_64", "aarch64", "riscv64",
// ... or "ELF machine <n>"), or "" when `data` is not an ELF header.
std::string ElfArchitecture(const void* data, size_t size);

// The architecture this runtime was compiled for, in the same spelling.
const char* HostArchitecture();

// Fails (kIncompatible) unless the ELF image in `data` was built for this
// machine's architecture; `triple` (the target the compiler recorded, may be
// empty) is named in the message: "compiled for aarch64-linux-gnu (aarch64);
// this machine is x86_64".
Status CheckHostArchitecture(const void* data, size_t size, const std::string& triple);

}  // namespace kiln

#endif  // KILN_RUNTIME_NATIVE_LIBRARY_H_
