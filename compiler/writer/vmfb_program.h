// VmfbProgram: everything a .vmfb file holds, as plain C++ values. The VM and
// graph code generators fill it; the writer (vmfb_writer.h) serializes it. It
// mirrors schemas/vmfb.fbs without exposing FlatBuffers types to the compiler.
#ifndef KILN_COMPILER_WRITER_VMFB_PROGRAM_H_
#define KILN_COMPILER_WRITER_VMFB_PROGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/tensor.h"

namespace kiln {
namespace compiler {

constexpr uint16_t kVmfbFormatMajor = 1;
constexpr uint16_t kVmfbFormatMinor = 1;

struct TargetInfo {
  std::string triple;    // "x86_64-unknown-linux-gnu"
  std::string cpu;       // "znver4", "generic"
  std::string features;  // LLVM feature string "+avx2,+fma,..."
};

enum class ValueKind : uint8_t { kTensor = 0, kShape = 1, kTuple = 2, kPrim = 3, kObject = 4, kFunction = 5 };

struct ValueInfo {
  std::string name;
  ValueKind kind = ValueKind::kTensor;
  DType dtype = DType::Float32();
  int32_t ndim = -1;
  std::vector<std::string> dims;  // "784", "n"
};

enum class ConstantKind : uint8_t { kTensor = 0, kInt = 1, kFloat = 2, kString = 3, kShape = 4 };

struct ConstantValue {
  ConstantKind kind = ConstantKind::kTensor;
  Tensor tensor;                 // kTensor: data goes into the weights segment
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;
  std::vector<int64_t> shape;    // kShape
  std::string name;
};

enum class CallableKind : uint8_t { kBuiltin = 0, kPacked = 1, kKernel = 2, kFunction = 3 };

struct CallableInfo {
  CallableKind kind = CallableKind::kBuiltin;
  std::string name;
  uint32_t function_index = 0;
  int32_t num_args = -1;
};

struct FunctionInfo {
  std::string name;
  std::vector<ValueInfo> params;
  std::vector<ValueInfo> results;
  uint32_t register_count = 0;
  uint32_t shape_heap_size = 0;
  std::vector<int64_t> code;  // this function's bytecode words (vm/opcodes.def)
};

// A kernel's operation count and parameter bytes as expressions of its
// arguments (runtime/kernel_cost.h); "" unknown.
struct KernelCostInfo {
  std::string flops;
  std::string bytes;
};

struct NativeLibraryInfo {
  std::string format = "elf-shared-object";
  TargetInfo target;
  std::vector<std::string> kernel_names;
  std::vector<KernelCostInfo> kernel_costs;  // parallel to kernel_names, or empty
  std::vector<uint8_t> bytes;
};

// GPU kernels (schemas/vmfb.fbs GpuModule): expressions in the grammar of
// runtime/kernel_cost.h over the kernel function's arguments.
enum class GpuParamKind : uint8_t { kBuffer = 0, kWorkspace = 1, kDim = 2 };

struct GpuParamInfo {
  GpuParamKind kind = GpuParamKind::kBuffer;
  int32_t arg = 0;        // kBuffer, kDim
  int32_t dim = -1;       // kDim: -1 the scalar argument itself
  int32_t workspace = 0;  // kWorkspace
};

struct GpuWorkspaceInfo {
  std::string name;
  DType dtype = DType::Float32();
  std::vector<std::string> shape;
};

struct GpuKernelInfo {
  std::string name;
  std::string grid_x;
  uint32_t block_x = 1;
};

struct GpuFunctionInfo {
  std::string name;
  int32_t num_args = 0;
  std::vector<GpuParamInfo> params;
  std::vector<GpuWorkspaceInfo> workspaces;
  std::vector<GpuKernelInfo> kernels;
};

struct GpuModuleInfo {
  std::string format = "ptx";
  std::string arch;  // "sm_80"
  std::string ptx;
  std::string cubin;  // ptxas's ELF for `arch`; empty: PTX only
  std::vector<GpuFunctionInfo> functions;
};

enum class GraphArgKind : uint8_t { kInput = 0, kConstant = 1, kStorage = 2, kOutput = 3 };

struct GraphArgInfo {
  GraphArgKind kind = GraphArgKind::kStorage;
  uint32_t index = 0;
  uint64_t byte_offset = 0;
  DType dtype = DType::Float32();
  std::vector<int64_t> shape;
};

struct GraphNodeInfo {
  uint32_t callable = 0;
  std::vector<GraphArgInfo> args;
};

struct GraphInfo {
  std::string function;
  uint64_t arena_bytes = 0;
  std::vector<GraphArgInfo> inputs;
  std::vector<GraphArgInfo> outputs;
  std::vector<GraphNodeInfo> nodes;
};

struct VmfbProgram {
  // The format version written into the file; tests override it to produce
  // files from other versions. A minor below 1 writes no segment checksums,
  // as format 1.0 did.
  uint16_t format_major = kVmfbFormatMajor;
  uint16_t format_minor = kVmfbFormatMinor;
  std::string producer = "kiln 0.1.0";
  TargetInfo target;
  std::vector<FunctionInfo> functions;
  std::vector<CallableInfo> callables;
  std::vector<ConstantValue> constants;
  std::vector<NativeLibraryInfo> native_libraries;
  std::vector<GraphInfo> graphs;
  std::vector<GpuModuleInfo> gpu_modules;
};

}  // namespace compiler
}  // namespace kiln

#endif  // KILN_COMPILER_WRITER_VMFB_PROGRAM_H_
