#include "tools/kiln-dump/dump.h"

#include <algorithm>
#include <vector>

#include "runtime/checksum.h"
#include "runtime/vmfb_gpu.h"
#include "runtime/vmfb_loader.h"
#include "vm/disassembler.h"

namespace kiln {
namespace tools {
namespace {

const char* ValueKindName(ProgramValueInfo::Kind k) {
  switch (k) {
    case ProgramValueInfo::Kind::kTensor: return "Tensor";
    case ProgramValueInfo::Kind::kShape: return "Shape";
    case ProgramValueInfo::Kind::kTuple: return "Tuple";
    case ProgramValueInfo::Kind::kPrim: return "Prim";
    case ProgramValueInfo::Kind::kObject: return "Object";
    case ProgramValueInfo::Kind::kFunction: return "Function";
  }
  return "?";
}

std::string ValueText(const ProgramValueInfo& v) {
  std::string s = v.name.empty() ? "" : v.name + ": ";
  s += ValueKindName(v.kind);
  if (v.kind == ProgramValueInfo::Kind::kTensor) {
    s += "(";
    if (v.ndim >= 0) {
      s += "(";
      for (size_t i = 0; i < v.dims.size(); ++i) s += (i ? ", " : "") + v.dims[i];
      if (v.dims.size() == 1) s += ",";
      s += "), ";
    }
    s += "\"" + DTypeToString(v.dtype) + "\")";
  }
  return s;
}

const char* GraphArgKindName(GraphArgKind k) {
  switch (k) {
    case GraphArgKind::kInput: return "input";
    case GraphArgKind::kConstant: return "constant";
    case GraphArgKind::kStorage: return "storage";
    case GraphArgKind::kOutput: return "output";
  }
  return "?";
}

std::string GraphArgText(const ProgramGraphArg& a) {
  std::string s = DTypeToString(a.dtype) + ShapeToString(a.shape) + " " + GraphArgKindName(a.kind);
  if (a.kind == GraphArgKind::kStorage) {
    s += StrFormat("@%llu", static_cast<unsigned long long>(a.byte_offset));
  } else {
    s += StrFormat(" %u", a.index);
  }
  return s;
}

// What the load checked of the segments' bytes, or why nothing could be.
std::string ChecksumsText(const Program& p) {
  if (!p.has_checksums) return "checksums: none (note: " + NoChecksumsNote(p) + ")\n";
  return StrFormat("checksums: %s on every segment; %s verified, weights %s\n", kSegmentChecksumName,
                   p.gpu_modules.empty() ? "native libraries" : "native libraries and GPU modules",
                   p.weights_verified ? "verified" : "not verified (--verify)");
}

std::string TargetText(const ProgramTarget& t) {
  return StrFormat("triple '%s', cpu '%s', features '%s'", t.triple.c_str(), t.cpu.c_str(), t.features.c_str());
}

// Where each part of the file lies: the FlatBuffer (after its uint32 size
// prefix), the weights segment and each native library. Offsets come from
// the decoded pointers into `bytes`.
std::string SegmentsText(const Program& p, const FileBytes& bytes) {
  struct Segment {
    uint64_t offset, size;
    std::string what;
  };
  std::vector<Segment> segments;
  if (bytes.size >= 4) {
    uint32_t prefix = static_cast<uint32_t>(bytes.data[0]) | static_cast<uint32_t>(bytes.data[1]) << 8 |
                      static_cast<uint32_t>(bytes.data[2]) << 16 | static_cast<uint32_t>(bytes.data[3]) << 24;
    segments.push_back({0, uint64_t{4} + prefix, "flatbuffer (size prefix, header, tables, bytecode)"});
  }
  auto inside = [&](const void* ptr) {
    const uint8_t* q = static_cast<const uint8_t*>(ptr);
    return q >= bytes.data && q <= bytes.data + bytes.size;
  };
  for (const ProgramConstant& c : p.constants) {
    if (c.kind != ProgramConstantKind::kTensor || !c.value.is_tensor()) continue;
    const uint8_t* data = static_cast<const uint8_t*>(c.value.tensor().raw_data());
    if (!inside(data) || static_cast<uint64_t>(data - bytes.data) < c.weights_offset) continue;
    size_t tensors = 0;
    for (const ProgramConstant& k : p.constants) tensors += k.kind == ProgramConstantKind::kTensor;
    std::string what = StrFormat("weights (%zu tensor constants)", tensors);
    if (p.has_checksums) {
      what += StrFormat(", %s %016llx", kSegmentChecksumName, static_cast<unsigned long long>(p.weights_checksum));
    }
    segments.push_back({static_cast<uint64_t>(data - bytes.data) - c.weights_offset, p.weights_size, what});
    break;
  }
  for (size_t i = 0; i < p.native_libraries.size(); ++i) {
    const ProgramNativeLibrary& l = p.native_libraries[i];
    if (!inside(l.data)) continue;
    std::string what = StrFormat("native library %zu (%s, %zu kernels)", i, l.format.c_str(), l.kernel_names.size());
    if (p.has_checksums) {
      what += StrFormat(", %s %016llx", kSegmentChecksumName, static_cast<unsigned long long>(l.checksum));
    }
    segments.push_back({static_cast<uint64_t>(l.data - bytes.data), l.size, what});
  }
  for (size_t i = 0; i < p.gpu_modules.size(); ++i) {
    const ProgramGpuModule& g = p.gpu_modules[i];
    if (!inside(g.ptx)) continue;
    segments.push_back({static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(g.ptx) - bytes.data), g.ptx_size,
                        StrFormat("GPU module %zu (%s, %s)", i, g.format.c_str(), g.arch.c_str())});
    if (g.cubin != nullptr && inside(g.cubin)) {
      segments.push_back({static_cast<uint64_t>(g.cubin - bytes.data), g.cubin_size,
                          StrFormat("GPU module %zu cubin (%s)", i, g.arch.c_str())});
    }
  }
  std::sort(segments.begin(), segments.end(), [](const Segment& a, const Segment& b) { return a.offset < b.offset; });
  std::string out = StrFormat("\nsegments (file %zu bytes):\n", bytes.size);
  for (const Segment& s : segments) {
    out += StrFormat("  offset %10llu  size %10llu  %s\n", static_cast<unsigned long long>(s.offset),
                     static_cast<unsigned long long>(s.size), s.what.c_str());
  }
  return out;
}

// Each GPU module and its launch table: per kernel function the kernels'
// parameters (a$P: argument P's data; ws$W: workspace W; $P.D / $P: an int64
// dimension or scalar), workspaces, and each kernel's grid x block.
std::string GpuModulesText(const Program& p) {
  std::string out = StrFormat("\nGPU modules (%zu):\n", p.gpu_modules.size());
  for (size_t i = 0; i < p.gpu_modules.size(); ++i) {
    const ProgramGpuModule& g = p.gpu_modules[i];
    out += "  " + DescribeGpuModule(g, i) + "\n";
    for (const ProgramGpuFunction& f : g.functions) {
      std::string params;
      for (const ProgramGpuParam& q : f.params) {
        params += params.empty() ? "" : ", ";
        switch (q.kind) {
          case GpuParamKind::kBuffer: params += StrFormat("a%d", q.arg); break;
          case GpuParamKind::kWorkspace: params += StrFormat("ws%d", q.workspace); break;
          case GpuParamKind::kDim: params += q.dim < 0 ? StrFormat("$%d", q.arg) : StrFormat("$%d.%d", q.arg, q.dim); break;
        }
      }
      out += StrFormat("    %s (%d args): params (%s)\n", f.name.c_str(), f.num_args, params.c_str());
      for (size_t w = 0; w < f.workspaces.size(); ++w) {
        std::string shape;
        for (const std::string& d : f.workspaces[w].shape) shape += (shape.empty() ? "" : ", ") + d;
        out += StrFormat("      ws%zu %s: %s[%s]\n", w, f.workspaces[w].name.c_str(),
                         DTypeToString(f.workspaces[w].dtype).c_str(), shape.c_str());
      }
      for (const ProgramGpuKernel& k : f.kernels)
        out += StrFormat("      kernel %s: grid %s x block %u\n", k.name.c_str(), k.grid_x.c_str(), k.block_x);
    }
  }
  return out;
}

}  // namespace

std::string DumpProgram(const Program& p, const FileBytes* bytes) {
  std::string out;
  out += StrFormat("format: %u.%u\n", p.format_major, p.format_minor);
  out += "producer: " + p.producer + "\n";
  out += "target: " + TargetText(p.target) + "\n";
  out += ChecksumsText(p);

  out += StrFormat("\nfunctions (%zu):\n", p.functions.size());
  for (uint32_t i = 0; i < p.functions.size(); ++i) {
    const ProgramFunction& f = p.functions[i];
    std::string params, results;
    for (const ProgramValueInfo& v : f.params) params += (params.empty() ? "" : ", ") + ValueText(v);
    for (const ProgramValueInfo& v : f.results) results += (results.empty() ? "" : ", ") + ValueText(v);
    out += StrFormat("  %s(%s) -> (%s)\n", f.name.c_str(), params.c_str(), results.c_str());
    out += StrFormat("    registers %u, shape heap %u, code words %u\n", f.register_count, f.shape_heap_size,
                     f.code_end - f.code_begin);
    out += vm::DisassembleFunction(p, i, "    ");
  }

  out += StrFormat("\ncallables (%zu):\n", p.callables.size());
  for (size_t i = 0; i < p.callables.size(); ++i) {
    const ProgramCallable& c = p.callables[i];
    out += StrFormat("  @%zu %s %s", i, CallableKindName(c.kind), c.name.c_str());
    if (c.kind == CallableKind::kFunction) out += StrFormat(" (function %u)", c.function_index);
    if (c.kind == CallableKind::kKernel && c.num_args >= 0) out += StrFormat(" (%d args)", c.num_args);
    out += "\n";
  }

  std::string imports;
  size_t num_imports = 0;
  for (const ProgramCallable& c : p.callables) {
    if (c.kind != CallableKind::kPacked) continue;
    imports += "  " + c.name + "\n";
    ++num_imports;
  }
  out += StrFormat("\nimports (%zu packed functions resolved by name at load):\n", num_imports) + imports;

  out += StrFormat("\nconstants (%zu, weights %llu bytes):\n", p.constants.size(),
                   static_cast<unsigned long long>(p.weights_size));
  for (size_t i = 0; i < p.constants.size(); ++i) {
    const ProgramConstant& c = p.constants[i];
    out += StrFormat("  c%zu ", i);
    if (!c.name.empty()) out += c.name + " ";
    switch (c.kind) {
      case ProgramConstantKind::kTensor:
        out += "tensor " + c.value.tensor().TypeString() +
               StrFormat(" at weights+%llu (%zu bytes)", static_cast<unsigned long long>(c.weights_offset),
                         c.value.tensor().NumBytes());
        break;
      default:
        out += c.value.Describe();
        break;
    }
    out += "\n";
  }

  out += StrFormat("\nnative libraries (%zu):\n", p.native_libraries.size());
  for (size_t i = 0; i < p.native_libraries.size(); ++i) {
    const ProgramNativeLibrary& l = p.native_libraries[i];
    out += StrFormat("  library %zu: %s, %llu bytes, %s\n", i, l.format.c_str(),
                     static_cast<unsigned long long>(l.size), TargetText(l.target).c_str());
    std::string names;
    for (const std::string& n : l.kernel_names) names += (names.empty() ? "" : ", ") + n;
    out += "    kernels: " + names + "\n";
  }

  // GPU modules only where there are some, so CPU dumps read as before.
  if (!p.gpu_modules.empty()) out += GpuModulesText(p);

  out += StrFormat("\ngraphs (%zu):\n", p.graphs.size());
  for (const ProgramGraph& g : p.graphs) {
    out += StrFormat("  graph %s: arena %llu bytes, %zu nodes\n", g.function.c_str(),
                     static_cast<unsigned long long>(g.arena_bytes), g.nodes.size());
    for (size_t i = 0; i < g.inputs.size(); ++i) out += StrFormat("    in%zu: %s\n", i, GraphArgText(g.inputs[i]).c_str());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ProgramGraphNode& n = g.nodes[i];
      std::string args;
      for (const ProgramGraphArg& a : n.args) args += (args.empty() ? "" : ", ") + GraphArgText(a);
      out += StrFormat("    node %zu: %s(%s)\n", i, p.callables[n.callable].name.c_str(), args.c_str());
    }
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      out += StrFormat("    out%zu: %s\n", i, GraphArgText(g.outputs[i]).c_str());
    }
  }
  if (bytes != nullptr) out += SegmentsText(p, *bytes);
  return out;
}

Result<std::string> DumpVmfbBytes(const FileBytes& bytes, const DecodeOptions& options) {
  KILN_ASSIGN_OR_RETURN(Program p, DecodeVmfb(bytes, options));
  return DumpProgram(p, &bytes);
}

namespace {

std::string InfoText(const VmfbFileInfo& info) {
  return StrFormat("format: %u.%u%s\nproducer: %s\ntarget: %s\nsize: %llu bytes\n", info.format_major,
                   info.format_minor,
                   info.loadable() ? "" : StrFormat(" (this runtime reads %u.x)", kVmfbRuntimeFormatMajor).c_str(),
                   info.producer.c_str(), TargetText(info.target).c_str(),
                   static_cast<unsigned long long>(info.file_bytes));
}

}  // namespace

Result<std::string> DumpVmfbInfoFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(VmfbFileInfo info, PeekVmfbFileInfo(path));
  return InfoText(info);
}

Result<std::string> DumpVmfbFile(const std::string& path, const DecodeOptions& options) {
  KILN_ASSIGN_OR_RETURN(FileBytes bytes, MapFile(path));
  Result<std::string> text = DumpVmfbBytes(bytes, options);
  if (!text.ok()) {
    Status s = text.TakeStatus();
    Result<VmfbFileInfo> info = PeekVmfbInfo(bytes);
    if (info.ok()) {
      std::string header = InfoText(*info);
      header.pop_back();  // the message ends without a newline
      return Status(s.code(), path + ": " + s.message() + "\nheader:\n" + header);
    }
    s.Annotate(path);
    return s;
  }
  return text;
}

}  // namespace tools
}  // namespace kiln
