#include "compiler/tir/schedule/trace.h"

#include <cstdio>

#include "compiler/arith/debug_string.h"

namespace kiln {
namespace tir {

namespace {

std::string LoopName(int64_t id) {
  if (id == kRootLoopId) return "ROOT";
  if (id == kInlineLoopId) return "INLINE";
  return "l" + std::to_string(id);
}

std::string ArgString(const TraceArg& a) {
  switch (a.kind) {
    case TraceArg::Kind::kBlock: return "b" + std::to_string(a.i);
    case TraceArg::Kind::kLoop: return LoopName(a.i);
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
    case TraceArg::Kind::kExprs: {
      std::string s = "[";
      for (size_t k = 0; k < a.ints.size(); ++k) s += (k ? ", v" : "v") + std::to_string(a.ints[k]);
      return s + "]";
    }
    case TraceArg::Kind::kFloats: {
      std::string s = "[";
      for (size_t k = 0; k < a.floats.size(); ++k) {
        char buf[32];
        snprintf(buf, sizeof buf, "%g", a.floats[k]);
        s += (k ? ", " : "") + std::string(buf);
      }
      return s + "]";
    }
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
      switch (inst.output_kinds[k]) {
        case Instruction::Output::kBlock: line += "b" + std::to_string(inst.outputs[k]); break;
        case Instruction::Output::kLoop: line += LoopName(inst.outputs[k]); break;
        case Instruction::Output::kExpr: line += "v" + std::to_string(inst.outputs[k]); break;
      }
    }
    if (!inst.outputs.empty()) line += " = ";
    line += "sch." + inst.name + "(";
    for (size_t k = 0; k < inst.inputs.size(); ++k) {
      if (k) line += ", ";
      if (k < inst.keywords.size() && !inst.keywords[k].empty()) line += inst.keywords[k] + "=";
      line += ArgString(inst.inputs[k]);
    }
    if (!inst.decision.empty() || inst.is_sampling()) {
      line += inst.inputs.empty() ? "decision=" : ", decision=";
      if (inst.decision.size() == 1 && inst.name != "sample_perfect_tile") {
        line += std::to_string(inst.decision[0]);
      } else {
        line += "[";
        for (size_t k = 0; k < inst.decision.size(); ++k) line += (k ? ", " : "") + std::to_string(inst.decision[k]);
        line += "]";
      }
    }
    out += line + ")\n";
  }
  return out;
}

}  // namespace tir
}  // namespace kiln
