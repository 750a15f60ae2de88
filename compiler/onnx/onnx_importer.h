// The ONNX importer: a ModelProto (opsets 7 to 17 of the default domain)
// becomes an IRModule with one Relax function (`main` unless renamed).
//
// Contract:
// - Parameters are the graph inputs that are not initializers, in graph order;
//   the result is the graph output (one) or a tuple of the outputs (several).
// - Initializers (typed fields, raw_data, external data resolved relative to
//   the model's folder) and Constant nodes become Relax constants.
// - Graph inputs named in `input_values` become constants instead.
// - A dim_param becomes a symbolic int64 variable of that name (one variable
//   per name). A dimension the model leaves unknown (-1, 0, "?", or neither a
//   name nor a value) becomes a variable of its own named "<input>_dim<i>"
//   (input_dims.h). `fixed_dims` replaces a variable by a value, named as in
//   the IR ("batch", "x_dim2") or by input and position ("x:2"); a key that
//   names nothing, a position out of range, a static dimension given another
//   value or two values for one variable are errors naming the key.
// - Shape subgraphs (Shape, Gather, Concat, Slice, Unsqueeze, arithmetic on
//   int64 values, ConstantOfShape, Range, Size, ...) are evaluated here when
//   their inputs are known, so the program does no shape arithmetic on tensors.
// - Every problem (unsupported operator, attribute value, opset, dtype, bad
//   input) is collected; the import fails once with all of them listed, each
//   naming the node (name or index), its op_type, the opset and the problem.
#ifndef KILN_COMPILER_ONNX_ONNX_IMPORTER_H_
#define KILN_COMPILER_ONNX_ONNX_IMPORTER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "compiler/ir/module.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace onnx {

struct ImportOptions {
  std::map<std::string, int64_t> fixed_dims;  // dim name or "input:position" -> value
  std::string function_name = "main";
  // Graph inputs given values at import time: they become constants (and
  // known values for shape folding), not parameters of `main`. For models
  // whose shape operands (Reshape's shape, Slice's starts, TopK's K, ...)
  // arrive as graph inputs. A name that is no graph input is an error.
  std::map<std::string, Tensor> input_values;
  // An If whose branches give different ranks has what follows it imported
  // once per branch (compiler/onnx/if_tail.cc); at most this many nodes are
  // imported a second time that way in the whole model (nested splits
  // multiply), more is an error naming the If.
  int64_t if_tail_limit = 4096;
};

// Reads model.onnx (external-data tensors are resolved relative to the file's folder).
Result<ir::IRModule> ImportFile(const std::string& path, const ImportOptions& options);
// Same for a serialized ModelProto in memory; external data relative to `base_dir`.
Result<ir::IRModule> ImportBuffer(const void* data, size_t size, const std::string& base_dir,
                                  const ImportOptions& options);

}  // namespace onnx
}  // namespace kiln

#endif  // KILN_COMPILER_ONNX_ONNX_IMPORTER_H_
