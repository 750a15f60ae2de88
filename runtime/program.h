// Program: the decoded, verified content of a .vmfb file as plain C++ values.
//
// The loader (vmfb_loader.h) produces it from the FlatBuffer; nothing outside
// the loader and the writer sees FlatBuffers types. The VM and the graph
// executor both run from a LinkedProgram: a Program plus everything resolved
// once at load (native libraries, kernel and packed-function pointers).
//
// Guarantees after DecodeVmfb succeeded (the structural part of "verify once"):
//   - every function's code range lies inside `code`;
//   - every Function callable's index is < functions.size();
//   - every tensor constant has a sane dtype, non-negative dims, and its bytes
//     (dtype bytes x elements) lie inside the weights segment;
//   - every native library's bytes lie inside the file and, in a file with
//     checksums (format 1.1+), match their checksum;
//   - the weights match their checksum when the load asked for it;
//   - every graph node names a callable in range, and each graph argument's
//     input/constant/output index is in range and its storage fits the arena.
// Bytecode itself (opcodes, registers, jumps) is verified by the VM (vm/).
//
// Thread-safety: immutable after load; share freely.
#ifndef KILN_RUNTIME_PROGRAM_H_
#define KILN_RUNTIME_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kiln_kernel_abi.h"
#include "runtime/any.h"
#include "runtime/dtype.h"

namespace kiln {

class NativeLibrary;
class ThreadPool;

// The .vmfb format version this runtime reads: a newer major is refused, any
// minor of this major loads.
constexpr uint16_t kVmfbRuntimeFormatMajor = 1;
constexpr uint16_t kVmfbRuntimeFormatMinor = 1;
// The first minor whose segments carry checksums (runtime/checksum.h).
constexpr uint16_t kVmfbChecksumsSinceMinor = 1;

struct ProgramTarget {
  std::string triple;
  std::string cpu;
  std::string features;
};

struct ProgramValueInfo {
  std::string name;
  enum class Kind : uint8_t { kTensor, kShape, kTuple, kPrim, kObject, kFunction } kind = Kind::kTensor;
  DType dtype;
  int32_t ndim = -1;
  std::vector<std::string> dims;
};

struct ProgramFunction {
  std::string name;
  std::vector<ProgramValueInfo> params;
  std::vector<ProgramValueInfo> results;
  uint32_t register_count = 0;
  uint32_t shape_heap_size = 0;
  uint32_t code_begin = 0;  // [code_begin, code_end) in Program::code
  uint32_t code_end = 0;
};

enum class ProgramConstantKind : uint8_t { kTensor = 0, kInt = 1, kFloat = 2, kString = 3, kShape = 4 };

struct ProgramConstant {
  ProgramConstantKind kind = ProgramConstantKind::kTensor;
  std::string name;
  // The value, ready for a register: a tensor borrowing the file's weights
  // segment (zero copy; its owner keeps the file alive), an int, a float, a
  // string or a shape.
  Any value;
  uint64_t weights_offset = 0;  // kTensor: where its bytes are in the weights segment
};

enum class CallableKind : uint8_t { kBuiltin = 0, kPacked = 1, kKernel = 2, kFunction = 3 };
const char* CallableKindName(CallableKind kind);

struct ProgramCallable {
  CallableKind kind = CallableKind::kBuiltin;
  std::string name;
  uint32_t function_index = 0;
  int32_t num_args = -1;
};

// A kernel's operation count and parameter bytes as expressions of its
// arguments (runtime/kernel_cost.h); "" unknown.
struct ProgramKernelCost {
  std::string flops;
  std::string bytes;
};

struct ProgramNativeLibrary {
  std::string format;
  ProgramTarget target;
  std::vector<std::string> kernel_names;
  // Parallel to kernel_names; empty in files written without them.
  std::vector<ProgramKernelCost> kernel_costs;
  const uint8_t* data = nullptr;  // inside the file's bytes
  uint64_t size = 0;
  uint64_t checksum = 0;          // when Program::has_checksums; verified at every load
};

// GPU kernels (kiln-compile --target=cuda; schemas/vmfb.fbs GpuModule).
// Expressions (grid sizes, workspace dims) use runtime/kernel_cost.h's
// grammar over the kernel function's arguments.
enum class GpuParamKind : uint8_t { kBuffer = 0, kWorkspace = 1, kDim = 2 };

struct ProgramGpuParam {
  GpuParamKind kind = GpuParamKind::kBuffer;
  int32_t arg = 0;        // kBuffer, kDim: the argument it comes from
  int32_t dim = -1;       // kDim: its dimension; -1: the scalar argument
  int32_t workspace = 0;  // kWorkspace: index into workspaces
};

struct ProgramGpuWorkspace {
  std::string name;
  DType dtype;
  std::vector<std::string> shape;
};

struct ProgramGpuKernel {
  std::string name;    // the PTX .entry
  std::string grid_x;
  uint32_t block_x = 1;
};

struct ProgramGpuFunction {
  std::string name;    // the Kernel callable it implements
  int32_t num_args = 0;
  std::vector<ProgramGpuParam> params;
  std::vector<ProgramGpuWorkspace> workspaces;
  std::vector<ProgramGpuKernel> kernels;
};

struct ProgramGpuModule {
  std::string format;  // "ptx"
  std::string arch;    // "sm_80"
  const char* ptx = nullptr;  // inside the file's bytes, not NUL-terminated
  uint64_t ptx_size = 0;
  // ptxas's cubin for `arch` (an ELF file), inside the file's bytes; null
  // when the compiler had no ptxas. Loaded instead of JIT-compiling the PTX
  // on a device of the same major compute capability and at least its minor.
  const uint8_t* cubin = nullptr;
  uint64_t cubin_size = 0;
  std::vector<ProgramGpuFunction> functions;
};

// Makes a program's GPU kernels callable (runtime/cuda/gpu_linker.h, for one
// CUDA device): LoadVmfb asks it for a packed function per GPU kernel
// function and for a device copy of each tensor constant.
class GpuLinker {
 public:
  virtual ~GpuLinker() = default;
  // Called once per GPU module, before Resolve for its functions.
  virtual Status LoadModule(const ProgramGpuModule& module) = 0;
  // A packed function that takes the Kernel callable's arguments and
  // launches `function`'s kernels.
  virtual Result<PackedFunc> Resolve(const ProgramGpuModule& module, const ProgramGpuFunction& function) = 0;
  // The tensor constant `host` in memory the kernels can read.
  virtual Result<Any> UploadConstant(const Any& host) = 0;
  // A packed callable the device provides itself (a GPU library function
  // such as kiln.cublas.matmul, bound to this device and its stream), tried
  // before the global registry; kNotFound for names it does not provide.
  virtual Result<PackedFunc> ResolvePacked(const std::string& name) {
    return NotFound("no device function '" + name + "'");
  }
};

enum class GraphArgKind : uint8_t { kInput = 0, kConstant = 1, kStorage = 2, kOutput = 3 };

struct ProgramGraphArg {
  GraphArgKind kind = GraphArgKind::kStorage;
  uint32_t index = 0;
  uint64_t byte_offset = 0;
  DType dtype;
  std::vector<int64_t> shape;
};

struct ProgramGraphNode {
  uint32_t callable = 0;
  std::vector<ProgramGraphArg> args;
};

struct ProgramGraph {
  std::string function;
  uint64_t arena_bytes = 0;
  std::vector<ProgramGraphArg> inputs;
  std::vector<ProgramGraphArg> outputs;
  std::vector<ProgramGraphNode> nodes;
};

struct Program {
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  std::string producer;
  ProgramTarget target;
  std::vector<ProgramFunction> functions;
  std::vector<int64_t> code;
  std::vector<ProgramCallable> callables;
  std::vector<ProgramConstant> constants;
  uint64_t weights_size = 0;
  // Format 1.1 and later: every segment has a checksum (SegmentChecksum).
  // Older files have none; nothing about their segments' bytes was checked.
  bool has_checksums = false;
  uint64_t weights_checksum = 0;
  // Whether this load compared the weights segment with its checksum
  // (DecodeOptions::verify_weights on a file that has checksums).
  bool weights_verified = false;
  std::vector<ProgramNativeLibrary> native_libraries;
  std::vector<ProgramGraph> graphs;
  // Kernels for a GPU (--target=cuda); empty in CPU files.
  std::vector<ProgramGpuModule> gpu_modules;

  // Index of the function / graph named `name`, or -1.
  int32_t FindFunction(const std::string& name) const;
  int32_t FindGraph(const std::string& name) const;
};

// A callable resolved at load: execution calls through these, never by name.
struct ResolvedCallable {
  CallableKind kind = CallableKind::kBuiltin;
  std::string name;
  int32_t builtin = -1;                 // kBuiltin: index in the VM's builtin table
  PackedFunc packed;                    // kPacked: a copy taken from the registry
  kiln_kernel_fn kernel = nullptr;      // kKernel
  int32_t kernel_num_args = -1;         // kKernel: from the library's entry (-1 unknown)
  uint32_t function_index = 0;          // kFunction
};

// A Program with its native libraries loaded and every callable resolved.
// Owns the file's bytes (through `storage`) for as long as it lives.
struct LinkedProgram {
  LinkedProgram() = default;
  ~LinkedProgram();
  LinkedProgram(const LinkedProgram&) = delete;
  LinkedProgram& operator=(const LinkedProgram&) = delete;

  Program program;
  std::vector<ResolvedCallable> callables;  // parallel to program.callables
  std::vector<std::unique_ptr<NativeLibrary>> libraries;
  ThreadPool* thread_pool = nullptr;        // where kernels launch parallel work
  std::shared_ptr<void> storage;            // keeps the file's bytes alive
  std::shared_ptr<GpuLinker> gpu;           // the device a GPU program was linked for
};

}  // namespace kiln

#endif  // KILN_RUNTIME_PROGRAM_H_
