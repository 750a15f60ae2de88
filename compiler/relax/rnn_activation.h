// The activation functions of the recurrent operators (R.nn.lstm, R.nn.gru,
// R.nn.rnn; op_rnn.cc) and their text form, the `activations` attribute:
// a comma-separated list of ONNX activation names, each optionally with its
// parameters in parentheses:
//
//   activations="HardSigmoid(0.2, 0.5),Tanh,LeakyRelu(0.1)"
//
// Names (case-insensitive), parameters and defaults as the ONNX RNN operators
// define them:
//   Relu, Tanh, Sigmoid, Softsign, Softplus   (no parameters)
//   Affine(alpha=1, beta=0)          alpha*x + beta
//   LeakyRelu(alpha=0.01)            x if x >= 0 else alpha*x
//   ThresholdedRelu(alpha=1)         x if x > alpha else 0
//   ScaledTanh(alpha=1, beta=1)      alpha*tanh(beta*x)
//   HardSigmoid(alpha=0.2, beta=0.5) min(max(alpha*x + beta, 0), 1)
//   Elu(alpha=1)                     x if x >= 0 else alpha*(exp(x) - 1)
// The parameters live in the string (not in float-list attributes) so that an
// activation and its parameters read together and print → parse unchanged.
#ifndef KILN_COMPILER_RELAX_RNN_ACTIVATION_H_
#define KILN_COMPILER_RELAX_RNN_ACTIVATION_H_

#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace relax {

struct RnnActivation {
  std::string name;  // lower case: "sigmoid", "leakyrelu", ...
  double alpha = 0;
  double beta = 0;
};

// How many parameters (0, 1 or 2) activation `name` (any case) takes;
// -1 for an unknown name.
int RnnActivationParams(const std::string& name);

// Parses the attribute's text. Errors (kInvalidArgument, without a prefix):
// an unknown name, too many parameters, a malformed number.
Result<std::vector<RnnActivation>> ParseRnnActivations(const std::string& text);

// f(x) as TIR, in x's dtype.
ir::PrimExpr ApplyRnnActivation(const RnnActivation& a, const ir::PrimExpr& x);

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_RNN_ACTIVATION_H_
