#include "compiler/relax/rnn_activation.h"

#include <cctype>
#include <cstdlib>

#include "compiler/relax/op_elem_util.h"

namespace kiln {
namespace relax {
namespace {

using ir::PrimExpr;
using ir::TirKind;
using elem::Bin;
using elem::Const;
using elem::Intrin;
using elem::Select;

struct Known {
  const char* name;
  int params;
  double alpha, beta;  // defaults
};

// The ONNX RNN operators' activation list with the defaults of the
// same-named ONNX operators.
const Known kKnown[] = {
    {"relu", 0, 0, 0},        {"tanh", 0, 0, 0},         {"sigmoid", 0, 0, 0},
    {"softsign", 0, 0, 0},    {"softplus", 0, 0, 0},     {"affine", 2, 1.0, 0.0},
    {"leakyrelu", 1, 0.01, 0}, {"thresholdedrelu", 1, 1.0, 0}, {"scaledtanh", 2, 1.0, 1.0},
    {"hardsigmoid", 2, 0.2, 0.5}, {"elu", 1, 1.0, 0},
};

const Known* Find(const std::string& lower) {
  for (const Known& k : kKnown)
    if (lower == k.name) return &k;
  return nullptr;
}

std::string Lower(const std::string& s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

// Splits at commas outside parentheses.
std::vector<std::string> SplitTop(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

Result<double> ParseNumber(const std::string& text, const std::string& entry) {
  std::string t = Trim(text);
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size()) {
    return InvalidArgument("activation \"" + entry + "\": \"" + t + "\" is not a number");
  }
  return v;
}

}  // namespace

int RnnActivationParams(const std::string& name) {
  const Known* k = Find(Lower(name));
  return k ? k->params : -1;
}

Result<std::vector<RnnActivation>> ParseRnnActivations(const std::string& text) {
  std::vector<RnnActivation> out;
  for (const std::string& raw : SplitTop(text)) {
    std::string entry = Trim(raw);
    std::string name = entry;
    std::vector<std::string> args;
    size_t open = entry.find('(');
    if (open != std::string::npos) {
      if (entry.back() != ')') return InvalidArgument("activation \"" + entry + "\": expected Name(alpha[, beta])");
      name = Trim(entry.substr(0, open));
      std::string inner = entry.substr(open + 1, entry.size() - open - 2);
      args = SplitTop(inner);
    }
    const Known* k = Find(Lower(name));
    if (!k) {
      return InvalidArgument("unknown activation \"" + name +
                             "\" (expected Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
                             "HardSigmoid, Elu, Softsign or Softplus)");
    }
    if (static_cast<int>(args.size()) > k->params) {
      return InvalidArgument("activation \"" + entry + "\": " + k->name + " takes " + std::to_string(k->params) +
                             " parameter(s), got " + std::to_string(args.size()));
    }
    RnnActivation a;
    a.name = k->name;
    a.alpha = k->alpha;
    a.beta = k->beta;
    if (args.size() >= 1) { KILN_ASSIGN_OR_RETURN(a.alpha, ParseNumber(args[0], entry)); }
    if (args.size() >= 2) { KILN_ASSIGN_OR_RETURN(a.beta, ParseNumber(args[1], entry)); }
    out.push_back(a);
  }
  return out;
}

PrimExpr ApplyRnnActivation(const RnnActivation& a, const PrimExpr& x) {
  DType t = x.dtype();
  auto c = [&](double v) { return Const(t, v); };
  auto mul = [](PrimExpr p, PrimExpr q) { return Bin(TirKind::kMul, p, q); };
  auto add = [](PrimExpr p, PrimExpr q) { return Bin(TirKind::kAdd, p, q); };
  const std::string& n = a.name;
  if (n == "relu") return Bin(TirKind::kMax, x, c(0));
  if (n == "tanh") return Intrin(t, "tanh", {x});
  if (n == "sigmoid") return Intrin(t, "sigmoid", {x});
  if (n == "softsign") return Bin(TirKind::kDiv, x, add(c(1), Intrin(t, "fabs", {x})));
  if (n == "softplus") return Intrin(t, "log", {add(c(1), Intrin(t, "exp", {x}))});
  if (n == "affine") return add(mul(c(a.alpha), x), c(a.beta));
  if (n == "leakyrelu") return Select(Bin(TirKind::kGE, x, c(0)), x, mul(c(a.alpha), x));
  if (n == "thresholdedrelu") return Select(Bin(TirKind::kGT, x, c(a.alpha)), x, c(0));
  if (n == "scaledtanh") return mul(c(a.alpha), Intrin(t, "tanh", {mul(c(a.beta), x)}));
  if (n == "hardsigmoid") return Bin(TirKind::kMin, Bin(TirKind::kMax, add(mul(c(a.alpha), x), c(a.beta)), c(0)), c(1));
  // elu (ParseRnnActivations admits no other name)
  return Select(Bin(TirKind::kGE, x, c(0)), x, mul(c(a.alpha), Bin(TirKind::kSub, Intrin(t, "exp", {x}), c(1))));
}

}  // namespace relax
}  // namespace kiln
