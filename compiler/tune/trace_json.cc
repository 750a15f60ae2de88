#include "compiler/tune/trace_json.h"

namespace kiln {
namespace tune {

using tir::Instruction;
using tir::TraceArg;

namespace {

Json Ints(const std::vector<int64_t>& v) {
  Json a = Json::Array();
  for (int64_t x : v) a.array.push_back(Json::Int(x));
  return a;
}

Json Tagged(const char* tag, Json v) {
  Json a = Json::Array();
  a.array.push_back(Json::Str(tag));
  a.array.push_back(std::move(v));
  return a;
}

Result<std::vector<int64_t>> ReadInts(const Json& j, const std::string& where) {
  if (j.kind != Json::Kind::kArray) return InvalidArgument("trace: " + where + " is not a list");
  std::vector<int64_t> out;
  for (const Json& x : j.array) {
    if (x.kind != Json::Kind::kInt) return InvalidArgument("trace: " + where + " holds a non-integer");
    out.push_back(x.i);
  }
  return out;
}

Result<TraceArg> ReadArg(const Json& j, const std::string& where) {
  if (j.kind != Json::Kind::kArray || j.array.size() != 2 || j.array[0].kind != Json::Kind::kString)
    return InvalidArgument("trace: " + where + " is not a [tag, value] pair");
  const std::string& tag = j.array[0].s;
  const Json& v = j.array[1];
  if (tag == "b" || tag == "l" || tag == "i") {
    if (v.kind != Json::Kind::kInt) return InvalidArgument("trace: " + where + " needs an integer");
    return tag == "b" ? TraceArg::Block(tir::BlockRV{v.i})
                      : tag == "l" ? TraceArg::Loop(tir::LoopRV{v.i}) : TraceArg::Int(v.i);
  }
  if (tag == "is" || tag == "v") {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ints, ReadInts(v, where));
    TraceArg a = TraceArg::Ints(std::move(ints));
    if (tag == "v") a.kind = TraceArg::Kind::kExprs;
    return a;
  }
  if (tag == "s") {
    if (v.kind != Json::Kind::kString) return InvalidArgument("trace: " + where + " needs a string");
    return TraceArg::Str(v.s);
  }
  if (tag == "f") {
    if (v.kind != Json::Kind::kArray) return InvalidArgument("trace: " + where + " needs a list of numbers");
    std::vector<double> f;
    for (const Json& x : v.array) {
      if (!x.is_number()) return InvalidArgument("trace: " + where + " holds a non-number");
      f.push_back(x.number());
    }
    return TraceArg::Floats(std::move(f));
  }
  return InvalidArgument("trace: " + where + " has the unknown tag \"" + tag + "\"");
}

}  // namespace

Result<Json> TraceToJson(const tir::Trace& trace) {
  Json out = Json::Array();
  for (const Instruction& inst : trace.instructions()) {
    Json o = Json::Object();
    o.object["inst"] = Json::Str(inst.name);
    Json in = Json::Array();
    for (const TraceArg& a : inst.inputs) {
      switch (a.kind) {
        case TraceArg::Kind::kBlock: in.array.push_back(Tagged("b", Json::Int(a.i))); break;
        case TraceArg::Kind::kLoop: in.array.push_back(Tagged("l", Json::Int(a.i))); break;
        case TraceArg::Kind::kInt: in.array.push_back(Tagged("i", Json::Int(a.i))); break;
        case TraceArg::Kind::kInts: in.array.push_back(Tagged("is", Ints(a.ints))); break;
        case TraceArg::Kind::kExprs: in.array.push_back(Tagged("v", Ints(a.ints))); break;
        case TraceArg::Kind::kString: in.array.push_back(Tagged("s", Json::Str(a.s))); break;
        case TraceArg::Kind::kFloats: {
          Json f = Json::Array();
          for (double x : a.floats) f.array.push_back(Json::Double(x));
          in.array.push_back(Tagged("f", std::move(f)));
          break;
        }
        case TraceArg::Kind::kIndexMap:
          return Unimplemented("trace to JSON: " + inst.name + "'s index map has no JSON form yet");
      }
    }
    o.object["in"] = std::move(in);
    Json kw = Json::Array();
    for (const auto& k : inst.keywords) kw.array.push_back(Json::Str(k));
    o.object["kw"] = std::move(kw);
    o.object["out"] = Ints(inst.outputs);
    std::string kinds;
    for (auto k : inst.output_kinds)
      kinds += k == Instruction::Output::kBlock ? 'b' : k == Instruction::Output::kLoop ? 'l' : 'v';
    o.object["out_kinds"] = Json::Str(kinds);
    if (inst.is_sampling()) o.object["decision"] = Ints(inst.decision);
    out.array.push_back(std::move(o));
  }
  return out;
}

Result<tir::Trace> TraceFromJson(const Json& json) {
  if (json.kind != Json::Kind::kArray) return InvalidArgument("trace: not a list of instructions");
  tir::Trace trace;
  for (size_t k = 0; k < json.array.size(); ++k) {
    const Json& o = json.array[k];
    std::string where = "instruction " + std::to_string(k);
    const Json* name = o.Get("inst");
    const Json* in = o.Get("in");
    const Json* out = o.Get("out");
    const Json* kinds = o.Get("out_kinds");
    if (!name || name->kind != Json::Kind::kString || !in || in->kind != Json::Kind::kArray || !out || !kinds ||
        kinds->kind != Json::Kind::kString)
      return InvalidArgument("trace: " + where + " lacks inst, in, out or out_kinds");
    Instruction inst;
    inst.name = name->s;
    where += " (" + inst.name + ")";
    for (size_t a = 0; a < in->array.size(); ++a) {
      KILN_ASSIGN_OR_RETURN(TraceArg arg, ReadArg(in->array[a], where + " input " + std::to_string(a)));
      inst.inputs.push_back(std::move(arg));
    }
    if (const Json* kw = o.Get("kw")) {
      if (kw->kind != Json::Kind::kArray) return InvalidArgument("trace: " + where + " kw is not a list");
      for (const Json& s : kw->array) {
        if (s.kind != Json::Kind::kString) return InvalidArgument("trace: " + where + " kw holds a non-string");
        inst.keywords.push_back(s.s);
      }
    }
    KILN_ASSIGN_OR_RETURN(inst.outputs, ReadInts(*out, where + " out"));
    if (kinds->s.size() != inst.outputs.size())
      return InvalidArgument("trace: " + where + " has " + std::to_string(inst.outputs.size()) + " outputs but " +
                             std::to_string(kinds->s.size()) + " output kinds");
    for (char c : kinds->s) {
      if (c == 'b') inst.output_kinds.push_back(Instruction::Output::kBlock);
      else if (c == 'l') inst.output_kinds.push_back(Instruction::Output::kLoop);
      else if (c == 'v') inst.output_kinds.push_back(Instruction::Output::kExpr);
      else return InvalidArgument("trace: " + where + " has the unknown output kind '" + std::string(1, c) + "'");
    }
    if (const Json* d = o.Get("decision")) {
      KILN_ASSIGN_OR_RETURN(inst.decision, ReadInts(*d, where + " decision"));
    } else if (inst.is_sampling()) {
      return InvalidArgument("trace: " + where + " is a sampling instruction without a decision");
    }
    trace.Append(std::move(inst));
  }
  return trace;
}

}  // namespace tune
}  // namespace kiln
