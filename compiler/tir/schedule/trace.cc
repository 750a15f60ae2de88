#include "compiler/tir/schedule/trace.h"

#include "compiler/arith/debug_string.h"

namespace kiln {
namespace tir {

namespace {

std::string ArgString(const TraceArg& a) {
  switch (a.kind) {
    case TraceArg::Kind::kBlock: return "b" + std::to_string(a.i);
    case TraceArg::Kind::kLoop: return "l" + std::to_string(a.i);
    case TraceArg::Kind::kInt: return std::to_string(a.i);
    case TraceArg::Kind::kInts: {
      std::string s = "[";
      for (size_t k = 0; k < a.ints.size(); ++k) {
        if (k) s += ", ";
        s += a.ints[k] == -1 ? "None" : std::to_string(a.ints[k]);
      }
      return s + "]";
    }
    case TraceArg::Kind::kString: return "\"" + a.s + "\"";
    case TraceArg::Kind::kIndexMap: {
      std::string s = "lambda ";
      for (size_t k = 0; k < a.map_src.size(); ++k) s += (k ? ", " : "") + a.map_src[k]->name;
      s += ": (";
      for (size_t k = 0; k < a.map_dst.size(); ++k) s += (k ? ", " : "") + arith::ToDebugString(a.map_dst[k]);
      if (a.map_dst.size() == 1) s += ",";
      return s + ")";
    }
  }
  return "?";
}

}  // namespace

std::string Trace::ToString() const {
  std::string out;
  for (const Instruction& inst : insts_) {
    std::string line;
    for (size_t k = 0; k < inst.outputs.size(); ++k) {
      if (k) line += ", ";
      line += (inst.output_is_block[k] ? "b" : "l") + std::to_string(inst.outputs[k]);
    }
    if (!inst.outputs.empty()) line += " = ";
    line += "sch." + inst.name + "(";
    for (size_t k = 0; k < inst.inputs.size(); ++k) {
      if (k) line += ", ";
      if (k < inst.keywords.size() && !inst.keywords[k].empty()) line += inst.keywords[k] + "=";
      line += ArgString(inst.inputs[k]);
    }
    out += line + ")\n";
  }
  return out;
}

}  // namespace tir
}  // namespace kiln
