// The .vmfb loader: verifies a file once and decodes it into a Program
// (runtime/program.h), then links it: loads its native libraries and resolves
// every callable to a function pointer, a packed function or a builtin index.
//
// Failures are Statuses, never crashes, for any input bytes: a truncated,
// corrupt or foreign file is kDataLoss, a newer format major or a library for
// a CPU feature this host lacks is kIncompatible, unresolvable names are
// kNotFound with every missing name in one message.
//
// Checksums (format 1.1 and later; runtime/checksum.h): every load compares
// each native-library segment with its checksum before the code is loaded (a
// mismatch is kDataLoss naming the segment); the weights segment is compared
// only on request (DecodeOptions / LinkOptions::verify_weights), because
// hashing reads every byte of a mapping that loading otherwise leaves
// untouched. Files of format 1.0 carry no checksums and load unverified
// (NoChecksumsNote says so).
//
// Trust boundary: the native-library segment is machine code. The loader
// checks its bounds, checksum, ABI version and target features, but it cannot
// make arbitrary code safe; load only files you would run as a program.
//
// Thread-safe: free functions with no shared state (the registry lookup locks).
#ifndef KILN_RUNTIME_VMFB_LOADER_H_
#define KILN_RUNTIME_VMFB_LOADER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/mapped_file.h"
#include "runtime/program.h"
#include "runtime/status.h"

namespace kiln {

// Every entry point needs `bytes.data` 8-byte aligned (kInvalidArgument
// otherwise); mapped files and heap buffers are.
//
struct DecodeOptions {
  // Also compare the weights segment with its checksum (reads all of it).
  bool verify_weights = false;
};

// Verifies and decodes `bytes`. Tensor constants borrow `bytes.data` with
// `bytes.owner` as their owner (zero copy); the bytes must stay valid and
// unchanged while the Program or any such tensor lives.
Result<Program> DecodeVmfb(const FileBytes& bytes, const DecodeOptions& options = {});

// For a program without checksums (format 1.0): a one-line note saying so, to
// show users; "" for a program that has them.
std::string NoChecksumsNote(const Program& program);

struct LinkOptions {
  // As DecodeOptions::verify_weights.
  bool verify_weights = false;
  // Where kernels launch parallel work; nullptr: ThreadPool::Global().
  ThreadPool* thread_pool = nullptr;
  // Maps a builtin name ("vm.builtin.alloc_tensor") to its index, or -1 when
  // unknown. Empty: builtins are not resolved (ResolvedCallable::builtin stays
  // -1) and not reported missing; the graph executor, which calls no builtin,
  // loads this way.
  std::function<int32_t(const std::string&)> resolve_builtin;
  // For a program with GPU modules: the device its kernels run on
  // (runtime/cuda/gpu_linker.h). Null: loading such a program fails with
  // kFailedPrecondition naming its GPU kernels (a CPU-only load).
  std::shared_ptr<GpuLinker> gpu;
};

// What a .vmfb says about itself, readable without decoding or linking its
// code: the format version, the producer and the target. These three fields
// keep their place in every format major, so a file this runtime refuses
// (newer major) can still say what it is.
struct VmfbFileInfo {
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  std::string producer;  // "kiln 0.1.0"
  ProgramTarget target;
  uint64_t file_bytes = 0;
  // Whether this runtime's format (kVmfbRuntimeFormatMajor) can load it.
  bool loadable() const { return format_major == kVmfbRuntimeFormatMajor; }
};

// Reads the header fields of `bytes` after checking only what they need
// (identifier, size prefix, the root table and those fields). kDataLoss for a
// foreign or damaged header; never kIncompatible.
Result<VmfbFileInfo> PeekVmfbInfo(const FileBytes& bytes);
// Maps `path` and peeks at it; errors are prefixed with the path.
Result<VmfbFileInfo> PeekVmfbFileInfo(const std::string& path);

// DecodeVmfb + link. `bytes.owner` is kept alive by the result.
Result<std::shared_ptr<const LinkedProgram>> LoadVmfb(FileBytes bytes, const LinkOptions& options = {});

// Maps `path` and loads it; errors are prefixed with the path.
Result<std::shared_ptr<const LinkedProgram>> LoadVmfbFile(const std::string& path,
                                                         const LinkOptions& options = {});

}  // namespace kiln

#endif  // KILN_RUNTIME_VMFB_LOADER_H_
