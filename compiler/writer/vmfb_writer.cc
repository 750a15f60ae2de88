#include "compiler/writer/vmfb_writer.h"

#include <cstdio>
#include <cstring>

#include "runtime/checksum.h"
#include "runtime/program.h"
#include "schemas/vmfb_generated.h"

namespace kiln {
namespace compiler {
namespace {

static_assert(kVmfbFormatMajor == kVmfbRuntimeFormatMajor && kVmfbFormatMinor == kVmfbRuntimeFormatMinor,
              "the writer and the runtime loader must agree on the format version");

constexpr uint64_t kAlign = 64;

uint64_t AlignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

fb::DType ToFb(DType t) { return fb::DType(t.code, t.bits, t.lanes); }

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Offset<fb::Target> WriteTarget(FlatBufferBuilder& b, const TargetInfo& t) {
  return fb::CreateTargetDirect(b, t.triple.c_str(), t.cpu.c_str(), t.features.c_str());
}

Offset<fb::ValueInfo> WriteValueInfo(FlatBufferBuilder& b, const ValueInfo& v) {
  std::vector<Offset<flatbuffers::String>> dims;
  for (const std::string& d : v.dims) dims.push_back(b.CreateString(d));
  fb::DType dtype = ToFb(v.dtype);
  return fb::CreateValueInfoDirect(b, v.name.c_str(), static_cast<fb::ValueKind>(v.kind), &dtype, v.ndim, &dims);
}

Offset<fb::GraphArg> WriteGraphArg(FlatBufferBuilder& b, const GraphArgInfo& a) {
  fb::DType dtype = ToFb(a.dtype);
  return fb::CreateGraphArgDirect(b, static_cast<fb::GraphArgKind>(a.kind), a.index, a.byte_offset, &dtype, &a.shape);
}

bool WritesChecksums(const VmfbProgram& program) { return program.format_minor >= kVmfbChecksumsSinceMinor; }

// The weights segment's checksum, hashed piece by piece as the segment will be
// in the file (alignment padding included), without a second copy of the
// weights in memory.
uint64_t WeightsChecksum(const VmfbProgram& program, const std::vector<uint64_t>& constant_offsets) {
  SegmentHasher hasher;
  uint64_t hashed = 0;
  for (size_t i = 0; i < program.constants.size(); ++i) {
    const ConstantValue& c = program.constants[i];
    if (c.kind != ConstantKind::kTensor) continue;
    hasher.UpdateZeros(constant_offsets[i] - hashed);
    hasher.Update(c.tensor.raw_data(), c.tensor.NumBytes());
    hashed = constant_offsets[i] + c.tensor.NumBytes();
  }
  return hasher.Digest();
}

}  // namespace

Result<std::vector<uint8_t>> SerializeVmfb(const VmfbProgram& program) {
  // Plan the segments first: their offsets go into the FlatBuffer.
  std::vector<uint64_t> constant_offsets(program.constants.size(), 0);
  uint64_t weights_size = 0;
  for (size_t i = 0; i < program.constants.size(); ++i) {
    const ConstantValue& c = program.constants[i];
    if (c.kind != ConstantKind::kTensor) continue;
    if (!c.tensor.defined()) return InvalidArgument(StrFormat("constant %zu ('%s') has no tensor", i, c.name.c_str()));
    if (!c.tensor.IsCompact()) {
      return InvalidArgument(StrFormat("constant %zu ('%s') is not a compact tensor", i, c.name.c_str()));
    }
    weights_size = AlignUp(weights_size);
    constant_offsets[i] = weights_size;
    weights_size += c.tensor.NumBytes();
  }
  uint64_t segment_end = weights_size;
  std::vector<uint64_t> library_offsets;
  for (const NativeLibraryInfo& lib : program.native_libraries) {
    segment_end = AlignUp(segment_end);
    library_offsets.push_back(segment_end);
    segment_end += lib.bytes.size();
  }
  std::vector<uint64_t> ptx_offsets, cubin_offsets;
  for (const GpuModuleInfo& gpu : program.gpu_modules) {
    segment_end = AlignUp(segment_end);
    ptx_offsets.push_back(segment_end);
    segment_end += gpu.ptx.size();
    segment_end = AlignUp(segment_end);
    cubin_offsets.push_back(segment_end);
    segment_end += gpu.cubin.size();
  }

  FlatBufferBuilder b(1024);
  std::vector<Offset<fb::Function>> functions;
  std::vector<int64_t> code;
  for (const FunctionInfo& f : program.functions) {
    std::vector<Offset<fb::ValueInfo>> params, results;
    for (const ValueInfo& v : f.params) params.push_back(WriteValueInfo(b, v));
    for (const ValueInfo& v : f.results) results.push_back(WriteValueInfo(b, v));
    uint32_t begin = static_cast<uint32_t>(code.size());
    code.insert(code.end(), f.code.begin(), f.code.end());
    functions.push_back(fb::CreateFunctionDirect(b, f.name.c_str(), &params, &results, f.register_count,
                                                 f.shape_heap_size, begin, static_cast<uint32_t>(code.size())));
  }
  std::vector<Offset<fb::Callable>> callables;
  for (const CallableInfo& c : program.callables) {
    callables.push_back(fb::CreateCallableDirect(b, static_cast<fb::CallableKind>(c.kind), c.name.c_str(),
                                                 c.function_index, c.num_args));
  }
  std::vector<Offset<fb::Constant>> constants;
  for (size_t i = 0; i < program.constants.size(); ++i) {
    const ConstantValue& c = program.constants[i];
    fb::DType dtype = ToFb(DType::Int64());
    std::vector<int64_t> shape = c.shape;
    fb::SegmentRef data(0, 0);
    if (c.kind == ConstantKind::kTensor) {
      dtype = ToFb(c.tensor.dtype());
      shape = c.tensor.shape();
      data = fb::SegmentRef(constant_offsets[i], c.tensor.NumBytes());
    }
    constants.push_back(fb::CreateConstantDirect(b, static_cast<fb::ConstantKind>(c.kind), &dtype, &shape, &data,
                                                 c.int_value, c.float_value, c.string_value.c_str(), c.name.c_str()));
  }
  std::vector<Offset<fb::NativeLibrary>> libraries;
  for (size_t i = 0; i < program.native_libraries.size(); ++i) {
    const NativeLibraryInfo& lib = program.native_libraries[i];
    std::vector<Offset<flatbuffers::String>> names;
    for (const std::string& n : lib.kernel_names) names.push_back(b.CreateString(n));
    fb::SegmentRef data(library_offsets[i], lib.bytes.size());
    Offset<fb::Checksum> checksum = 0;
    if (WritesChecksums(program)) {
      uint64_t value = SegmentChecksum(lib.bytes.data(), lib.bytes.size());
      checksum = fb::CreateChecksum(b, fb::ChecksumAlgorithm::XXH3_64, value);
    }
    std::vector<Offset<fb::KernelCost>> costs;
    if (lib.kernel_costs.size() == lib.kernel_names.size()) {
      for (const KernelCostInfo& c : lib.kernel_costs)
        costs.push_back(fb::CreateKernelCostDirect(b, c.flops.c_str(), c.bytes.c_str()));
    }
    libraries.push_back(fb::CreateNativeLibraryDirect(b, lib.format.c_str(), WriteTarget(b, lib.target), &names, &data,
                                                      checksum, costs.empty() ? nullptr : &costs));
  }
  Offset<fb::Checksum> weights_checksum = 0;
  if (WritesChecksums(program)) {
    weights_checksum =
        fb::CreateChecksum(b, fb::ChecksumAlgorithm::XXH3_64, WeightsChecksum(program, constant_offsets));
  }
  std::vector<Offset<fb::Graph>> graphs;
  for (const GraphInfo& g : program.graphs) {
    std::vector<Offset<fb::GraphArg>> inputs, outputs;
    for (const GraphArgInfo& a : g.inputs) inputs.push_back(WriteGraphArg(b, a));
    for (const GraphArgInfo& a : g.outputs) outputs.push_back(WriteGraphArg(b, a));
    std::vector<Offset<fb::GraphNode>> nodes;
    for (const GraphNodeInfo& n : g.nodes) {
      std::vector<Offset<fb::GraphArg>> args;
      for (const GraphArgInfo& a : n.args) args.push_back(WriteGraphArg(b, a));
      nodes.push_back(fb::CreateGraphNodeDirect(b, n.callable, &args));
    }
    graphs.push_back(fb::CreateGraphDirect(b, g.function.c_str(), g.arena_bytes, &inputs, &outputs, &nodes));
  }
  std::vector<Offset<fb::GpuModule>> gpu_modules;
  for (size_t i = 0; i < program.gpu_modules.size(); ++i) {
    const GpuModuleInfo& gpu = program.gpu_modules[i];
    std::vector<Offset<fb::GpuFunction>> funcs;
    for (const GpuFunctionInfo& f : gpu.functions) {
      std::vector<Offset<fb::GpuParam>> params;
      for (const GpuParamInfo& p : f.params)
        params.push_back(fb::CreateGpuParam(b, static_cast<fb::GpuParamKind>(p.kind), p.arg, p.dim, p.workspace));
      std::vector<Offset<fb::GpuWorkspace>> workspaces;
      for (const GpuWorkspaceInfo& w : f.workspaces) {
        std::vector<Offset<flatbuffers::String>> shape;
        for (const std::string& d : w.shape) shape.push_back(b.CreateString(d));
        fb::DType dtype = ToFb(w.dtype);
        workspaces.push_back(fb::CreateGpuWorkspaceDirect(b, w.name.c_str(), &dtype, &shape));
      }
      std::vector<Offset<fb::GpuKernel>> kernels;
      for (const GpuKernelInfo& k : f.kernels)
        kernels.push_back(fb::CreateGpuKernelDirect(b, k.name.c_str(), k.grid_x.c_str(), k.block_x));
      funcs.push_back(fb::CreateGpuFunctionDirect(b, f.name.c_str(), f.num_args, &params, &workspaces, &kernels));
    }
    fb::SegmentRef ptx(ptx_offsets[i], gpu.ptx.size());
    Offset<fb::Checksum> checksum = 0;
    if (WritesChecksums(program)) {
      uint64_t value = SegmentChecksum(reinterpret_cast<const uint8_t*>(gpu.ptx.data()), gpu.ptx.size());
      checksum = fb::CreateChecksum(b, fb::ChecksumAlgorithm::XXH3_64, value);
    }
    fb::SegmentRef cubin(cubin_offsets[i], gpu.cubin.size());
    Offset<fb::Checksum> cubin_checksum = 0;
    if (!gpu.cubin.empty() && WritesChecksums(program)) {
      uint64_t value = SegmentChecksum(reinterpret_cast<const uint8_t*>(gpu.cubin.data()), gpu.cubin.size());
      cubin_checksum = fb::CreateChecksum(b, fb::ChecksumAlgorithm::XXH3_64, value);
    }
    gpu_modules.push_back(fb::CreateGpuModuleDirect(b, gpu.format.c_str(), gpu.arch.c_str(), &ptx, checksum, &funcs,
                                                    gpu.cubin.empty() ? nullptr : &cubin, cubin_checksum));
  }
  fb::FormatVersion version(program.format_major, program.format_minor);
  fb::SegmentRef weights_ref(0, weights_size);
  auto root = fb::CreateModuleDirect(b, &version, program.producer.c_str(), WriteTarget(b, program.target),
                                     &functions, &code, &callables, &constants, &weights_ref, &libraries, &graphs,
                                     weights_checksum, gpu_modules.empty() ? nullptr : &gpu_modules);
  fb::FinishSizePrefixedModuleBuffer(b, root);

  uint64_t base = AlignUp(b.GetSize());
  std::vector<uint8_t> out(base + segment_end, 0);
  std::memcpy(out.data(), b.GetBufferPointer(), b.GetSize());
  for (size_t i = 0; i < program.constants.size(); ++i) {
    const ConstantValue& c = program.constants[i];
    if (c.kind == ConstantKind::kTensor && c.tensor.NumBytes() > 0) {
      std::memcpy(out.data() + base + constant_offsets[i], c.tensor.raw_data(), c.tensor.NumBytes());
    }
  }
  for (size_t i = 0; i < program.native_libraries.size(); ++i) {
    const std::vector<uint8_t>& bytes = program.native_libraries[i].bytes;
    if (!bytes.empty()) std::memcpy(out.data() + base + library_offsets[i], bytes.data(), bytes.size());
  }
  for (size_t i = 0; i < program.gpu_modules.size(); ++i) {
    const std::string& ptx = program.gpu_modules[i].ptx;
    if (!ptx.empty()) std::memcpy(out.data() + base + ptx_offsets[i], ptx.data(), ptx.size());
    const std::string& cubin = program.gpu_modules[i].cubin;
    if (!cubin.empty()) std::memcpy(out.data() + base + cubin_offsets[i], cubin.data(), cubin.size());
  }
  return out;
}

Status WriteVmfbFile(const VmfbProgram& program, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, SerializeVmfb(program));
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return NotFound("cannot open '" + path + "' for writing");
  size_t written = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
  bool closed = std::fclose(f) == 0;
  if (written != bytes.size() || !closed) return ResourceExhausted("cannot write '" + path + "' (disk full?)");
  return Status::Ok();
}

}  // namespace compiler
}  // namespace kiln
