// relax.einsum(operands, subscripts): Einstein summation over named indices.
//
// "bij,bjk->bik": every letter names one index; letters of the output are the
// result's dimensions in that order, every other letter is summed over (in
// order of first appearance). Without "->" the output is the letters that
// appear exactly once, alphabetically (numpy's implicit mode). A letter
// repeated within one operand takes its diagonal ("ii->i"). All sizes named by
// one letter must agree; "..." (ellipsis broadcasting) is not supported.
//
// Operands come as TVM writes them, one tuple (R.einsum((a, b), subscripts=
// "...")), or as separate tensor arguments.
#include "compiler/relax/op_defs.h"

#include <algorithm>
#include <map>

#include "compiler/relax/nn_attrs.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"

namespace kiln {
namespace relax {
namespace nn {
namespace {

using ir::PrimExpr;

struct EinsumSpec {
  std::vector<std::string> inputs;  // one term per operand
  std::string output;
  std::string reduced;  // summed letters, in order of first appearance
};

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

Result<EinsumSpec> ParseSubscripts(const AttrReader& r, const std::string& text, size_t num_operands) {
  EinsumSpec spec;
  std::string lhs = text, rhs;
  bool explicit_out = false;
  size_t arrow = text.find("->");
  if (arrow != std::string::npos) {
    lhs = text.substr(0, arrow);
    rhs = text.substr(arrow + 2);
    explicit_out = true;
  }
  if (text.find("...") != std::string::npos) {
    return Unimplemented(Where(r.call().span) + r.op() + ": ellipsis (...) in subscripts is not supported");
  }
  std::string term;
  for (char c : lhs + ",") {
    if (c == ' ') continue;
    if (c == ',') {
      spec.inputs.push_back(term);
      term.clear();
    } else if (IsLetter(c)) {
      term += c;
    } else {
      return r.Error("subscripts \"" + text + "\": unexpected character '" + std::string(1, c) + "'");
    }
  }
  if (spec.inputs.size() != num_operands) {
    return r.Error("subscripts \"" + text + "\" name " + std::to_string(spec.inputs.size()) + " operands but " +
                   std::to_string(num_operands) + " were given");
  }
  std::map<char, int> count;
  for (const auto& in : spec.inputs)
    for (char c : in) ++count[c];
  if (explicit_out) {
    for (char c : rhs) {
      if (c == ' ') continue;
      if (!IsLetter(c)) return r.Error("subscripts \"" + text + "\": unexpected character '" + std::string(1, c) + "'");
      if (!count.count(c)) return r.Error("output subscript '" + std::string(1, c) + "' appears in no operand");
      if (spec.output.find(c) != std::string::npos) return r.Error("output subscript '" + std::string(1, c) + "' is repeated");
      spec.output += c;
    }
  } else {
    for (const auto& kv : count)
      if (kv.second == 1) spec.output += kv.first;  // std::map: alphabetical (upper case first, as numpy)
  }
  for (const auto& in : spec.inputs)
    for (char c : in)
      if (spec.output.find(c) == std::string::npos && spec.reduced.find(c) == std::string::npos) spec.reduced += c;
  return spec;
}

// The operands' struct info, from a tuple argument or separate arguments.
Result<std::vector<const ir::TensorSInfo*>> Operands(const AttrReader& r) {
  const ir::CallExpr& call = r.call();
  std::vector<const ir::TensorSInfo*> out;
  if (call.args.size() == 1) {
    if (const auto* tup = ir::SInfoAs<ir::TupleSInfo>(call.args[0]->struct_info)) {
      for (size_t i = 0; i < tup->fields.size(); ++i) {
        const auto* t = ir::SInfoAs<ir::TensorSInfo>(tup->fields[i]);
        if (!t) return r.Error("operand " + std::to_string(i) + " is not a tensor");
        out.push_back(t);
      }
      if (out.empty()) return r.Error("needs at least one operand");
      return out;
    }
  }
  if (call.args.empty()) return r.Error("needs at least one operand");
  for (size_t i = 0; i < call.args.size(); ++i) {
    const ir::TensorSInfo* t = TensorInfoOf(call.args[i]);
    if (!t) return r.Error("operand " + std::to_string(i) + " is not a tensor");
    out.push_back(t);
  }
  return out;
}

// Letter -> size, checking that every occurrence agrees.
Result<std::map<char, PrimExpr>> LetterSizes(const AttrReader& r, const EinsumSpec& spec,
                                             const std::vector<const ir::TensorSInfo*>& ops) {
  std::map<char, PrimExpr> size;
  std::map<char, size_t> first;
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string& term = spec.inputs[i];
    if (ops[i]->ndim >= 0 && static_cast<size_t>(ops[i]->ndim) != term.size()) {
      return r.Error("subscripts \"" + term + "\" have " + std::to_string(term.size()) + " letters but operand " +
                     std::to_string(i) + " has rank " + std::to_string(ops[i]->ndim));
    }
    if (!ops[i]->has_shape) continue;
    for (size_t d = 0; d < term.size(); ++d) {
      char c = term[d];
      const PrimExpr& dim = ops[i]->shape[d];
      auto it = size.find(c);
      if (it == size.end()) {
        size[c] = dim;
        first[c] = i;
      } else if (CompareDims(it->second, dim) == DimRelation::kNotEqual) {
        return r.Error("subscript '" + std::string(1, c) + "' has size " + DimString(it->second) + " in operand " +
                       std::to_string(first[c]) + " but " + DimString(dim) + " in operand " + std::to_string(i));
      }
    }
  }
  return size;
}

Result<ir::StructInfo> InferEinsum(const ir::CallExpr& call) {
  AttrReader r(call);
  KILN_RETURN_IF_ERROR(r.CheckKnown({"subscripts"}));
  if (!r.Has("subscripts")) return r.Error("subscripts is required, as in subscripts=\"ij,jk->ik\"");
  KILN_ASSIGN_OR_RETURN(std::string text, r.String("subscripts", ""));
  KILN_ASSIGN_OR_RETURN(std::vector<const ir::TensorSInfo*> ops, Operands(r));
  for (size_t i = 1; i < ops.size(); ++i) {
    if (ops[i]->has_dtype && ops[0]->has_dtype && ops[i]->dtype != ops[0]->dtype) {
      return r.Error("operand dtypes differ: " + DTypeToString(ops[0]->dtype) + " and " + DTypeToString(ops[i]->dtype));
    }
  }
  KILN_ASSIGN_OR_RETURN(EinsumSpec spec, ParseSubscripts(r, text, ops.size()));
  KILN_ASSIGN_OR_RETURN(auto sizes, LetterSizes(r, spec, ops));
  bool all_shapes = true;
  for (const auto* t : ops) all_shapes &= t->has_shape;
  if (!all_shapes) return ir::MakeTensorSInfoNdim(static_cast<int>(spec.output.size()), ops[0]->dtype);
  std::vector<PrimExpr> out;
  for (char c : spec.output) out.push_back(sizes[c]);
  return ir::MakeTensorSInfo(out, ops[0]->dtype);
}

Result<ir::PrimFunc> LegalizeEinsum(const ir::CallExpr& call, const std::string& name) {
  AttrReader r(call);
  KILN_ASSIGN_OR_RETURN(std::string text, r.String("subscripts", ""));
  KILN_ASSIGN_OR_RETURN(std::vector<const ir::TensorSInfo*> ops, Operands(r));
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* out, ShapedResult(r));
  for (const auto* t : ops)
    if (!t->has_shape) return Unimplemented(Where(call.span) + r.op() + ": legalization needs known shapes");
  KILN_ASSIGN_OR_RETURN(EinsumSpec spec, ParseSubscripts(r, text, ops.size()));
  KILN_ASSIGN_OR_RETURN(auto sizes, LetterSizes(r, spec, ops));
  te::FuncBuilder b(name);
  std::vector<te::Tensor> in;
  for (size_t i = 0; i < ops.size(); ++i) in.push_back(b.Input("A" + std::to_string(i), ops[i]->shape, ops[i]->dtype));
  std::vector<PrimExpr> red;
  for (char c : spec.reduced) red.push_back(sizes[c]);
  DType dt = out->dtype;
  te::Tensor res = b.Reduce("T_einsum", out->shape, dt, te::ReduceKind::kSum, red, [&](const te::Indices& i, const te::Indices& k) {
    auto index_of = [&](char c) {
      size_t o = spec.output.find(c);
      return o != std::string::npos ? i[o] : k[spec.reduced.find(c)];
    };
    PrimExpr prod;
    for (size_t n = 0; n < in.size(); ++n) {
      te::Indices idx;
      for (char c : spec.inputs[n]) idx.push_back(index_of(c));
      PrimExpr v = in[n](idx);
      prod = prod.defined() ? prod * v : v;
    }
    return prod;
  });
  return b.Build({res});
}

}  // namespace
}  // namespace nn

void AddLinalgOps(std::vector<OpInfo>* t) {
  using namespace nn;  // NOLINT: this family's functions
  t->push_back({"relax.einsum", "einsum", -1, InferEinsum, LegalizeEinsum, OpPattern::kOutEWiseFusable});
}

}  // namespace relax
}  // namespace kiln
