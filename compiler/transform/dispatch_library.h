// Pass: dispatch-library — send chosen operators to library packed functions
// (oneDNN) instead of generated kernels, by rules.
//
//   y = R.nn.conv2d(x, w, strides=.., padding=.., dilation=.., groups=..)
// with a rule {op: conv2d, library: dnnl} becomes
//   y = R.call_dps_packed("kiln.dnnl.conv2d", (x, w, attrs), out_sinfo=...)
// where attrs is an int64[9] constant (kernels/dnnl_kernels.h DnnlConvAttrs:
// strides, paddings top/left/bottom/right, dilations, groups), and
//   y = R.matmul(a, b)  ->  R.call_dps_packed("kiln.dnnl.matmul", (a, b), ...)
// and, with {op: matmul, library: cublas} (GPU modules, --target=cuda; the
// driver refuses it for the CPU and dnnl for the GPU),
//   y = R.matmul(a, b)  ->  R.call_dps_packed("kiln.cublas.matmul", (a, b), ...)
// where b may also be batched (kernels/cuda/cublas_matmul.h). A cuBLAS
// matmul used once, by R.add with a [N] float32 bias, becomes
// kiln.cublas.matmul_bias(a, b, bias), and one used once by R.nn.relu or
// R.nn.gelu_tanh (after the bias or not) kiln.cublas.matmul[_bias]_relu /
// _gelu: cuBLASLt's epilogues. (Exact R.nn.gelu stays a kernel of its own.)
// Likewise {op: conv2d, library: cudnn} (--target=cuda) makes
//   y = R.call_dps_packed("kiln.cudnn.conv2d", (x, w, attrs), ...)
// of a convolution with symmetric padding (cuDNN's legacy API pads so;
// others stay Kiln's), a following R.add of a [O, 1, 1] or [1, O, 1, 1]
// float32 bias kiln.cudnn.conv2d_bias(x, w, bias, attrs), and R.nn.relu
// after that kiln.cudnn.conv2d_bias_relu (kernels/cuda/cudnn_conv.h).
//
// Rules are tried in order; the first whose operator and conditions match
// decides the library ("dnnl", "cublas", "cudnn" or "kiln"); an operator no rule matches keeps
// Kiln's generated kernel (with fusion). A call the library cannot take is
// left to Kiln whatever the rule says: conv2d needs float32 NCHW data, OIHW
// weights, no out_dtype; matmul needs float32 a (..., K) and b (K, N).
// Conditions that need static shapes (min_macs, max_macs) do not match a
// call with symbolic shapes.
//
// Rules come from the driver's options or a YAML file:
//   rules:
//     - op: conv2d          # conv2d | matmul
//       library: dnnl       # dnnl | cublas (matmul) / cudnn (conv2d), --target=cuda | kiln
//       when:               # optional; every key given must hold
//         groups: 1         # conv2d: the groups attribute
//         depthwise: true   # conv2d: groups == input channels == output channels
//         kernel: [3, 3]    # conv2d: the window
//         stride: [1, 1]    # conv2d: the strides
//         min_macs: 1000000 # multiply-adds of the call (static shapes)
//         max_macs: 50000000
//
// Pre: normalized and flattened (A-normal form). Post: normalized. Run before
// pack-constant-weights (which would re-layout a dispatched conv's weight).
#ifndef KILN_COMPILER_TRANSFORM_DISPATCH_LIBRARY_H_
#define KILN_COMPILER_TRANSFORM_DISPATCH_LIBRARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

struct DispatchRule {
  std::string op;       // "conv2d" or "matmul"
  std::string library;  // "dnnl", "cublas" (matmul only), "cudnn" (conv2d only) or "kiln"
  std::optional<int64_t> groups;
  std::optional<bool> depthwise;
  std::optional<std::vector<int64_t>> kernel;
  std::optional<std::vector<int64_t>> stride;
  std::optional<int64_t> min_macs;
  std::optional<int64_t> max_macs;
  std::string where;  // "rules.yaml:3:5" or "--matmul=dnnl", for messages
};

// Parses the YAML text of a rule file; `path` prefixes every error
// ("rules.yaml:4:7: unknown condition 'grups' (conditions: ...)").
Result<std::vector<DispatchRule>> ParseDispatchRules(const std::string& yaml, const std::string& path);
// Reads and parses a rule file.
Result<std::vector<DispatchRule>> ReadDispatchRules(const std::string& path);

Result<ir::IRModule> DispatchToLibraries(const ir::IRModule& mod, const std::vector<DispatchRule>& rules);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_DISPATCH_LIBRARY_H_
