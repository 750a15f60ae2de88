// The work both comparison extensions bind, identical for both: hold a
// module's "main" and a context, call it with tensors, return the output.
// Only the binding layer around it differs (pybind11.cc, nanobind.cc).
#pragma once

#include <kiln/kiln.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace binding_overhead {

// An owned tensor handle.
struct Handle {
  kiln_tensor_t* tensor = nullptr;
  explicit Handle(kiln_tensor_t* t) : tensor(t) {}
  Handle(const Handle&) = delete;
  Handle(Handle&& other) noexcept : tensor(other.tensor) { other.tensor = nullptr; }
  ~Handle() { kiln_tensor_release(tensor); }
};

inline void die(kiln_status_t* status) {
  std::fprintf(stderr, "binding_overhead: %s\n", kiln_status_message(status));
  std::abort();  // a benchmark of fixed inputs: any failure is a broken setup
}

inline Handle make_tensor(std::vector<int64_t> shape) {
  kiln_tensor_t* t = nullptr;
  if (kiln_status_t* s = kiln_tensor_create(shape.data(), static_cast<int32_t>(shape.size()), KILN_DTYPE_FLOAT32, &t)) {
    die(s);
  }
  return Handle(t);
}

class Call {
 public:
  explicit Call(const std::string& path) {
    kiln_context_options_t* options = nullptr;
    kiln_status_t* s = kiln_module_load_file(path.c_str(), &module_);
    if (s == nullptr) s = kiln_module_lookup_function(module_, "main", &function_);
    if (s == nullptr) s = kiln_context_options_create(&options);
    if (s == nullptr) s = kiln_context_options_set_num_threads(options, 1);
    if (s == nullptr) s = kiln_context_options_set_executor(options, KILN_EXECUTOR_VM);
    if (s == nullptr) s = kiln_context_create_with_options(module_, options, &context_);
    kiln_context_options_release(options);
    if (s != nullptr) die(s);
  }
  ~Call() {
    kiln_context_release(context_);
    kiln_module_release(module_);
  }

  // Runs with whatever lock the caller released; returns the output's owned handle.
  kiln_tensor_t* run(kiln_tensor_t* const* inputs, size_t count) {
    kiln_outputs_t* outputs = nullptr;
    const kiln_tensor_t* out = nullptr;
    kiln_tensor_t* owned = nullptr;
    kiln_status_t* s = kiln_context_invoke_function(context_, function_, inputs, count, &outputs);
    if (s == nullptr) s = kiln_outputs_get(outputs, 0, &out);
    if (s == nullptr) s = kiln_tensor_share(out, &owned);
    kiln_outputs_release(outputs);
    if (s != nullptr) die(s);
    return owned;
  }

 private:
  kiln_module_t* module_ = nullptr;
  const kiln_function_t* function_ = nullptr;
  kiln_context_t* context_ = nullptr;
};

}  // namespace binding_overhead
