#include "tools/kiln-dump/dump.h"

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

std::string TargetText(const ProgramTarget& t) {
  return StrFormat("triple '%s', cpu '%s', features '%s'", t.triple.c_str(), t.cpu.c_str(), t.features.c_str());
}

}  // namespace

std::string DumpProgram(const Program& p) {
  std::string out;
  out += StrFormat("format: %u.%u\n", p.format_major, p.format_minor);
  out += "producer: " + p.producer + "\n";
  out += "target: " + TargetText(p.target) + "\n";

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

  out += StrFormat("\nconstants (%zu, weights %llu bytes):\n", p.constants.size(),
                   static_cast<unsigned long long>(p.weights_size));
  for (size_t i = 0; i < p.constants.size(); ++i) {
    const ProgramConstant& c = p.constants[i];
    out += StrFormat("  c%zu ", i);
    if (!c.name.empty()) out += c.name + " ";
    switch (c.kind) {
      case ProgramConstantKind::kTensor:
        out += "tensor " + c.value.tensor().TypeString() +
               StrFormat(" at weights+%llu", static_cast<unsigned long long>(c.weights_offset));
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
  return out;
}

Result<std::string> DumpVmfbBytes(const FileBytes& bytes) {
  KILN_ASSIGN_OR_RETURN(Program p, DecodeVmfb(bytes));
  return DumpProgram(p);
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

Result<std::string> DumpVmfbFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(FileBytes bytes, MapFile(path));
  Result<std::string> text = DumpVmfbBytes(bytes);
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
