// Null handles and null pointers in every C API entry point that takes one
// (issue 5 §6): each returns KILN_STATUS_INVALID_ARGUMENT with a message,
// never crashes; every release accepts NULL. Afterwards the same module and
// context run a correct call.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "capi/kiln.h"
#include "tests/vm/test_util.h"

namespace kiln {
namespace {

struct NullCase {
  const char* name;
  std::function<kiln_status_t*()> call;
};

class CapiNullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = testing::Serialize(testing::AddProgram());
    ASSERT_EQ(kiln_module_load_buffer(bytes_.data(), bytes_.size(), &module_), nullptr);
    ASSERT_EQ(kiln_context_create(module_, &context_), nullptr);
    int64_t shape[2] = {1, 4};
    ASSERT_EQ(kiln_tensor_wrap(x_, shape, 2, KILN_DTYPE_FLOAT32, &tx_), nullptr);
    ASSERT_EQ(kiln_tensor_wrap(y_, shape, 2, KILN_DTYPE_FLOAT32, &ty_), nullptr);
    ASSERT_EQ(kiln_module_lookup_function(module_, "main", &main_), nullptr);
  }
  void TearDown() override {
    kiln_tensor_release(tx_);
    kiln_tensor_release(ty_);
    kiln_context_release(context_);
    kiln_module_release(module_);
  }

  void ExpectInvalid(const NullCase& c) {
    kiln_status_t* s = c.call();
    ASSERT_NE(s, nullptr) << c.name << " accepted a null argument";
    EXPECT_EQ(kiln_status_code(s), KILN_STATUS_INVALID_ARGUMENT) << c.name << ": " << kiln_status_message(s);
    EXPECT_NE(std::string(kiln_status_message(s)), "") << c.name;
    kiln_status_free(s);
  }

  void ExpectCorrectCall() {
    kiln_tensor_t* inputs[2] = {tx_, ty_};
    kiln_outputs_t* outputs = nullptr;
    kiln_status_t* s = kiln_context_invoke(context_, "main", inputs, 2, &outputs);
    ASSERT_EQ(s, nullptr) << kiln_status_message(s);
    const kiln_tensor_t* out = nullptr;
    ASSERT_EQ(kiln_outputs_get(outputs, 0, &out), nullptr);
    void* data = nullptr;
    ASSERT_EQ(kiln_tensor_data(out, &data), nullptr);
    const float* f = static_cast<const float*>(data);
    EXPECT_EQ(std::vector<float>(f, f + 4), (std::vector<float>{11, 22, 33, 44}));
    kiln_outputs_release(outputs);
  }

  std::vector<uint8_t> bytes_;
  kiln_module_t* module_ = nullptr;
  kiln_context_t* context_ = nullptr;
  const kiln_function_t* main_ = nullptr;
  alignas(64) float x_[4] = {1, 2, 3, 4};
  alignas(64) float y_[4] = {10, 20, 30, 40};
  kiln_tensor_t* tx_ = nullptr;
  kiln_tensor_t* ty_ = nullptr;
};

TEST_F(CapiNullTest, EveryEntryPointRefusesNull) {
  int64_t shape[2] = {1, 4};
  float data[4] = {0};
  kiln_tensor_t* t = nullptr;
  kiln_dtype_t dtype;
  int32_t i32;
  int64_t i64;
  size_t n;
  const int64_t* shape_out;
  void* data_out;
  kiln_module_t* m = nullptr;
  const kiln_function_t* fn = nullptr;
  const char* name;
  kiln_context_t* c = nullptr;
  kiln_context_options_t* o = nullptr;
  kiln_outputs_t* outs = nullptr;
  const kiln_tensor_t* ct = nullptr;
  kiln_value_kind_t kind;
  double f64;
  kiln_tensor_t* inputs[2] = {tx_, ty_};
  kiln_tensor_t* null_inputs[2] = {tx_, nullptr};

  const std::vector<NullCase> cases = {
      {"tensor_wrap data", [&] { return kiln_tensor_wrap(nullptr, shape, 2, KILN_DTYPE_FLOAT32, &t); }},
      {"tensor_wrap shape", [&] { return kiln_tensor_wrap(data, nullptr, 2, KILN_DTYPE_FLOAT32, &t); }},
      {"tensor_wrap out", [&] { return kiln_tensor_wrap(data, shape, 2, KILN_DTYPE_FLOAT32, nullptr); }},
      {"tensor_create shape", [&] { return kiln_tensor_create(nullptr, 2, KILN_DTYPE_FLOAT32, &t); }},
      {"tensor_create out", [&] { return kiln_tensor_create(shape, 2, KILN_DTYPE_FLOAT32, nullptr); }},
      {"tensor_share tensor", [&] { return kiln_tensor_share(nullptr, &t); }},
      {"tensor_share out", [&] { return kiln_tensor_share(tx_, nullptr); }},
      {"tensor_dtype", [&] { return kiln_tensor_dtype(nullptr, &dtype); }},
      {"tensor_dtype out", [&] { return kiln_tensor_dtype(tx_, nullptr); }},
      {"tensor_ndim", [&] { return kiln_tensor_ndim(nullptr, &i32); }},
      {"tensor_ndim out", [&] { return kiln_tensor_ndim(tx_, nullptr); }},
      {"tensor_shape", [&] { return kiln_tensor_shape(nullptr, &shape_out); }},
      {"tensor_shape out", [&] { return kiln_tensor_shape(tx_, nullptr); }},
      {"tensor_element_count", [&] { return kiln_tensor_element_count(nullptr, &i64); }},
      {"tensor_element_count out", [&] { return kiln_tensor_element_count(tx_, nullptr); }},
      {"tensor_byte_size", [&] { return kiln_tensor_byte_size(nullptr, &n); }},
      {"tensor_byte_size out", [&] { return kiln_tensor_byte_size(tx_, nullptr); }},
      {"tensor_data", [&] { return kiln_tensor_data(nullptr, &data_out); }},
      {"tensor_data out", [&] { return kiln_tensor_data(tx_, nullptr); }},
      {"tensor_read_npy path", [&] { return kiln_tensor_read_npy(nullptr, &t); }},
      {"tensor_read_npy out", [&] { return kiln_tensor_read_npy("/nonexistent.npy", nullptr); }},
      {"tensor_write_npy tensor", [&] { return kiln_tensor_write_npy(nullptr, "/tmp/x.npy"); }},
      {"tensor_write_npy path", [&] { return kiln_tensor_write_npy(tx_, nullptr); }},
      {"instance_options_set_verify_weights", [&] { return kiln_instance_options_set_verify_weights(nullptr, 1); }},
      {"module_load_file path", [&] { return kiln_module_load_file(nullptr, &m); }},
      {"module_load_file out", [&] { return kiln_module_load_file("/nonexistent.vmfb", nullptr); }},
      {"module_load_buffer data", [&] { return kiln_module_load_buffer(nullptr, 100, &m); }},
      {"module_load_buffer out", [&] { return kiln_module_load_buffer(bytes_.data(), bytes_.size(), nullptr); }},
      {"module_function_count", [&] { return kiln_module_function_count(nullptr, &n); }},
      {"module_function_count out", [&] { return kiln_module_function_count(module_, nullptr); }},
      {"module_function_at", [&] { return kiln_module_function_at(nullptr, 0, &fn); }},
      {"module_function_at out", [&] { return kiln_module_function_at(module_, 0, nullptr); }},
      {"module_lookup_function module", [&] { return kiln_module_lookup_function(nullptr, "main", &fn); }},
      {"module_lookup_function name", [&] { return kiln_module_lookup_function(module_, nullptr, &fn); }},
      {"module_lookup_function out", [&] { return kiln_module_lookup_function(module_, "main", nullptr); }},
      {"function_name", [&] { return kiln_function_name(nullptr, &name); }},
      {"function_name out", [&] { return kiln_function_name(main_, nullptr); }},
      {"function_param_count", [&] { return kiln_function_param_count(nullptr, &n); }},
      {"function_param_count out", [&] { return kiln_function_param_count(main_, nullptr); }},
      {"function_result_count", [&] { return kiln_function_result_count(nullptr, &n); }},
      {"function_result_count out", [&] { return kiln_function_result_count(main_, nullptr); }},
      {"context_create module", [&] { return kiln_context_create(nullptr, &c); }},
      {"context_create out", [&] { return kiln_context_create(module_, nullptr); }},
      {"context_create_with_executor module",
       [&] { return kiln_context_create_with_executor(nullptr, KILN_EXECUTOR_VM, &c); }},
      {"context_create_with_executor out",
       [&] { return kiln_context_create_with_executor(module_, KILN_EXECUTOR_VM, nullptr); }},
      {"context_options_create out", [&] { return kiln_context_options_create(nullptr); }},
      {"context_options_set_executor", [&] { return kiln_context_options_set_executor(nullptr, KILN_EXECUTOR_VM); }},
      {"context_options_set_num_threads", [&] { return kiln_context_options_set_num_threads(nullptr, 1); }},
      {"context_create_with_options module", [&] { return kiln_context_create_with_options(nullptr, nullptr, &c); }},
      {"context_create_with_options out", [&] { return kiln_context_create_with_options(module_, nullptr, nullptr); }},
      {"context_num_threads", [&] { return kiln_context_num_threads(nullptr, &i32); }},
      {"context_num_threads out", [&] { return kiln_context_num_threads(context_, nullptr); }},
      {"context_invoke context", [&] { return kiln_context_invoke(nullptr, "main", inputs, 2, &outs); }},
      {"context_invoke function", [&] { return kiln_context_invoke(context_, nullptr, inputs, 2, &outs); }},
      {"context_invoke inputs", [&] { return kiln_context_invoke(context_, "main", nullptr, 2, &outs); }},
      {"context_invoke null input", [&] { return kiln_context_invoke(context_, "main", null_inputs, 2, &outs); }},
      {"context_invoke out", [&] { return kiln_context_invoke(context_, "main", inputs, 2, nullptr); }},
      {"outputs_count", [&] { return kiln_outputs_count(nullptr, &n); }},
      {"outputs_get", [&] { return kiln_outputs_get(nullptr, 0, &ct); }},
      {"args_count", [&] { return kiln_args_count(nullptr, &n); }},
      {"args_kind", [&] { return kiln_args_kind(nullptr, 0, &kind); }},
      {"args_get_tensor", [&] { return kiln_args_get_tensor(nullptr, 0, &ct); }},
      {"args_get_int64", [&] { return kiln_args_get_int64(nullptr, 0, &i64); }},
      {"args_get_float64", [&] { return kiln_args_get_float64(nullptr, 0, &f64); }},
      {"result_set_tensor", [&] { return kiln_result_set_tensor(nullptr, tx_); }},
      {"result_set_int64", [&] { return kiln_result_set_int64(nullptr, 1); }},
      {"result_set_float64", [&] { return kiln_result_set_float64(nullptr, 1.0); }},
      {"register_function name", [&] { return kiln_register_function(nullptr, nullptr, nullptr); }},
      {"unregister_function name", [&] { return kiln_unregister_function(nullptr); }},
  };
  for (const NullCase& c : cases) ExpectInvalid(c);
  // Nothing was handed out by a failed call.
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(o, nullptr);
  EXPECT_EQ(outs, nullptr);

  // Releases accept NULL; status accessors accept NULL (OK).
  kiln_tensor_release(nullptr);
  kiln_module_release(nullptr);
  kiln_context_release(nullptr);
  kiln_context_options_release(nullptr);
  kiln_outputs_release(nullptr);
  kiln_status_free(nullptr);
  EXPECT_EQ(kiln_status_code(nullptr), KILN_STATUS_OK);
  EXPECT_NE(kiln_status_message(nullptr), nullptr);

  ExpectCorrectCall();
}

}  // namespace
}  // namespace kiln
