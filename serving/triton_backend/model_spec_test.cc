#include "serving/triton_backend/model_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "serving/triton_backend/json_value.h"

#ifndef KILN_TRITON_TEST_VMFB
#define KILN_TRITON_TEST_VMFB ""  // no compiler: the test is disabled (CMakeLists.txt)
#endif

namespace kiln::triton {
namespace {

JsonValue Parse(const std::string& text) {
  JsonValue v;
  std::string error;
  EXPECT_TRUE(ParseJson(text.data(), text.size(), &v, &error)) << error;
  return v;
}

std::string ParseError(const std::string& text) {
  JsonValue v;
  std::string error;
  EXPECT_FALSE(ParseJson(text.data(), text.size(), &v, &error));
  return error;
}

// The shape of the JSON Triton serializes a config to (protobuf JSON: int64 as strings).
const char* kConfig = R"({"name":"add","max_batch_size":8,
  "input":[{"name":"y","data_type":"TYPE_FP32","dims":["4"]},{"name":"x","data_type":"TYPE_FP32","dims":["4"]}],
  "output":[{"name":"result","data_type":"TYPE_FP32","dims":["4"]}],
  "parameters":{"kiln_function":{"string_value":"main"},"kiln_threads":{"string_value":"2"}},
  "default_model_filename":""})";

TEST(JsonValueTest, ReadsWhatAConfigHolds) {
  JsonValue v = Parse(R"({"a": [1, -2.5, "x\n\u00e9"], "b": {"c": true, "d": null}, "e": false})");
  ASSERT_EQ(v.kind, JsonValue::Kind::kObject);
  const JsonValue* a = v.Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 3u);
  int64_t i = 0;
  EXPECT_TRUE(a->items[0].AsInt(&i));
  EXPECT_EQ(i, 1);
  EXPECT_DOUBLE_EQ(a->items[1].number, -2.5);
  EXPECT_FALSE(a->items[1].AsInt(&i));
  EXPECT_EQ(a->items[2].text, "x\n\xc3\xa9");
  EXPECT_TRUE(v.Find("b")->Find("c")->boolean);
  EXPECT_EQ(v.Find("b")->Find("d")->kind, JsonValue::Kind::kNull);
  EXPECT_EQ(v.Find("nope"), nullptr);
  JsonValue s = Parse(R"("-1")");
  EXPECT_TRUE(s.AsInt(&i));
  EXPECT_EQ(i, -1);
}

TEST(JsonValueTest, ErrorsSayWhereAndWhat) {
  EXPECT_EQ(ParseError(R"({"a": 1,})"), "expected a member name at byte 8");
  EXPECT_EQ(ParseError(R"([1 2])"), "expected ',' or ']' at byte 3");
  EXPECT_EQ(ParseError(R"("abc)"), "unterminated string at byte 4");
  EXPECT_EQ(ParseError("[1] x"), "unexpected text after the JSON value at byte 4");
  EXPECT_EQ(ParseError(std::string(100, '[')), "nesting too deep at byte 65");
}

TEST(ModelSpecTest, ReadsTheConfig) {
  ModelSpec spec;
  std::string error;
  ASSERT_TRUE(ReadModelConfig(Parse(kConfig), &spec, &error)) << error;
  EXPECT_EQ(spec.max_batch_size, 8);
  EXPECT_EQ(spec.function, "main");
  EXPECT_EQ(spec.threads, 2);
  EXPECT_EQ(spec.vmfb_file, "model.vmfb");
  ASSERT_EQ(spec.inputs.size(), 2u);
  EXPECT_EQ(spec.inputs[0].name, "y");
  EXPECT_EQ(spec.inputs[0].kiln_dtype, KILN_DTYPE_FLOAT32);
  EXPECT_EQ(spec.inputs[0].element_size, 4u);
  EXPECT_EQ(spec.inputs[0].dims, std::vector<int64_t>{4});
  EXPECT_EQ(spec.outputs[0].triton_dtype, TRITONSERVER_TYPE_FP32);
}

std::string ConfigError(const std::string& text) {
  ModelSpec spec;
  std::string error;
  EXPECT_FALSE(ReadModelConfig(Parse(text), &spec, &error));
  return error;
}

TEST(ModelSpecTest, ConfigErrors) {
  EXPECT_EQ(ConfigError(R"({"max_batch_size": -1})"), "max_batch_size must be an integer >= 0");
  EXPECT_EQ(ConfigError(R"({"max_batch_size": 0})"), "the configuration has no input list");
  EXPECT_EQ(ConfigError(R"({"input": [{"name": "x"}]})"),
            "an entry of the input list lacks name, data_type or dims");
  EXPECT_EQ(ConfigError(R"({"input": [{"name": "s", "data_type": "TYPE_STRING", "dims": [1]}]})"),
            "input 's' has data_type TYPE_STRING, which Kiln has no type for");
  EXPECT_EQ(ConfigError(R"({"input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [1.5]}]})"),
            "input 'x' has a dimension that is not an integer");
  EXPECT_EQ(ConfigError(R"({"parameters": {"kiln_threads": {"string_value": "many"}}})"),
            "parameter kiln_threads must be an integer from 0 to 4096, got 'many'");
}

TEST(ModelSpecTest, DtypesMapBothWays) {
  EXPECT_EQ(TritonDtype(KILN_DTYPE_INT64), TRITONSERVER_TYPE_INT64);
  EXPECT_EQ(TritonDtype(KILN_DTYPE_BFLOAT16), TRITONSERVER_TYPE_BF16);
  EXPECT_EQ(KilnDtype(TRITONSERVER_TYPE_BOOL), KILN_DTYPE_BOOL);
  EXPECT_EQ(KilnDtype(TRITONSERVER_TYPE_BYTES), 0u);
  EXPECT_EQ(TritonDtype(KILN_DTYPE(KILN_DTYPE_CODE_FLOAT, 8, 1)), TRITONSERVER_TYPE_INVALID);
  EXPECT_EQ(KilnDtypeName(KILN_DTYPE_FLOAT16), "float16");
  EXPECT_STREQ(ConfigDtypeName(TRITONSERVER_TYPE_UINT16), "TYPE_UINT16");
}

class MatchFunctionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kiln_status_t* s = kiln_module_load_file(KILN_TRITON_TEST_VMFB, &module_);
    if (s == nullptr) s = kiln_module_lookup_function(module_, "main", &function_);
    ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  }
  void TearDown() override { kiln_module_release(module_); }

  // kConfig with `from` replaced by `to`, matched against main(x, y).
  std::string MatchError(const std::string& from, const std::string& to) {
    std::string text = kConfig;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    ModelSpec spec;
    std::string error;
    EXPECT_TRUE(ReadModelConfig(Parse(text), &spec, &error)) << error;
    EXPECT_FALSE(MatchFunction("add", function_, &spec, &error));
    return error;
  }

  kiln_module_t* module_ = nullptr;
  const kiln_function_t* function_ = nullptr;
};

TEST_F(MatchFunctionTest, OrdersInputsAsParameters) {
  ModelSpec spec;
  std::string error;
  ASSERT_TRUE(ReadModelConfig(Parse(kConfig), &spec, &error)) << error;
  ASSERT_TRUE(MatchFunction("add", function_, &spec, &error)) << error;
  EXPECT_EQ(spec.inputs[0].name, "x");
  EXPECT_EQ(spec.inputs[1].name, "y");
}

TEST_F(MatchFunctionTest, Mismatches) {
  EXPECT_EQ(MatchError(R"({"name":"y","data_type":"TYPE_FP32","dims":["4"]},)", ""),
            "model 'add', function 'main': it takes 2 parameters but the configuration lists 1 inputs");
  EXPECT_EQ(MatchError(R"("name":"y")", R"("name":"z")"),
            "model 'add', function 'main': the configuration has no input named 'y' (parameter 1)");
  EXPECT_EQ(MatchError(R"("name":"x","data_type":"TYPE_FP32")", R"("name":"x","data_type":"TYPE_INT32")"),
            "model 'add', function 'main': parameter 'x' is float32 but the configuration says TYPE_INT32");
  EXPECT_EQ(MatchError(R"("name":"x","data_type":"TYPE_FP32","dims":["4"])",
                       R"("name":"x","data_type":"TYPE_FP32","dims":["4","1"])"),
            "model 'add', function 'main': parameter 'x' has rank 2 but the configuration's dims [4, 1] (plus the "
            "batch dimension) have rank 3");
  EXPECT_EQ(MatchError(R"("max_batch_size":8)", R"("max_batch_size":0)"),
            "model 'add', function 'main': parameter 'x' has rank 2 but the configuration's dims [4] have rank 1");
  EXPECT_EQ(MatchError(R"("name":"x","data_type":"TYPE_FP32","dims":["4"])",
                       R"("name":"x","data_type":"TYPE_FP32","dims":["5"])"),
            "model 'add', function 'main': parameter 'x' has dimension 4 where the configuration says 5");
  EXPECT_EQ(MatchError(R"([{"name":"result","data_type":"TYPE_FP32","dims":["4"]}])",
                       R"([{"name":"r","data_type":"TYPE_FP32","dims":["4"]},{"name":"s","data_type":"TYPE_FP32","dims":["4"]}])"),
            "model 'add', function 'main': it returns one tensor but the configuration lists 2 outputs");
}

}  // namespace
}  // namespace kiln::triton
