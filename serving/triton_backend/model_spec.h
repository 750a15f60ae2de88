// model_spec.h: what libtriton_kiln.so serves, read from a model's Triton configuration
// and checked against the Kiln function it names, once, when the model loads.
//
// The configuration (config.pbtxt, as the JSON Triton hands the backend) names the inputs
// and outputs with their data types and dims, max_batch_size, and the parameters that
// `python -m kiln.triton export --backend kiln` writes: kiln_function (default "main"),
// kiln_threads (default 1; 0: Kiln's default). Inputs are matched to the function's
// parameters by name; outputs to the call's outputs by position. With max_batch_size > 0
// the config's dims leave out the batch dimension, which every input and output of the
// function must start with (the backend concatenates requests along it).
//
// No Triton function is called here (only its data-type enum is used), so the unit test
// links without a server. Thread-compatible.
#ifndef KILN_SERVING_TRITON_BACKEND_MODEL_SPEC_H_
#define KILN_SERVING_TRITON_BACKEND_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "capi/kiln.h"
#include "serving/triton_backend/json_value.h"
#include "serving/triton_backend/triton_api.h"

namespace kiln::triton {

struct TensorSpec {
  std::string name;
  TRITONSERVER_DataType triton_dtype = TRITONSERVER_TYPE_INVALID;
  kiln_dtype_t kiln_dtype = 0;
  size_t element_size = 0;
  std::vector<int64_t> dims;  // as configured: without the batch dimension when batching
};

struct ModelSpec {
  std::string function = "main";
  int32_t threads = 1;
  int64_t max_batch_size = 0;       // > 0: requests are batched along the first dimension
  std::string vmfb_file = "model.vmfb";  // in the version folder
  std::vector<TensorSpec> inputs;   // in the function's parameter order
  std::vector<TensorSpec> outputs;  // in the call's output order
};

// Triton's type for a Kiln dtype (TRITONSERVER_TYPE_INVALID when Triton has none) and back.
TRITONSERVER_DataType TritonDtype(kiln_dtype_t dtype);
kiln_dtype_t KilnDtype(TRITONSERVER_DataType dtype);
// "TYPE_FP32" -> TRITONSERVER_TYPE_FP32 (config spelling); INVALID when unknown.
TRITONSERVER_DataType TritonDtypeFromConfig(const std::string& name);
// "TYPE_FP32" etc., for messages (the server's TRITONSERVER_DataTypeString is not
// available to the unit test).
const char* ConfigDtypeName(TRITONSERVER_DataType dtype);
// "float32" etc., for messages.
std::string KilnDtypeName(kiln_dtype_t dtype);

// Reads the settings and the input/output lists of `config`. False with `error` set when
// the configuration is malformed or names a type Kiln has no counterpart for.
bool ReadModelConfig(const JsonValue& config, ModelSpec* out, std::string* error);

// Checks `spec` (from ReadModelConfig) against `function` and orders spec->inputs as its
// parameters. False with `error` naming the model, the tensor and what differs.
bool MatchFunction(const std::string& model_name, const kiln_function_t* function, ModelSpec* spec,
                   std::string* error);

}  // namespace kiln::triton

#endif  // KILN_SERVING_TRITON_BACKEND_MODEL_SPEC_H_
