// Tests of capi/kiln.hpp, the header-only C++ wrapper over kiln.h: RAII and
// move-only handles, Result/Status instead of exceptions, calls with tensors
// and values, instances, introspection. It includes no Kiln C++ header, as a
// user of libkiln would.
#include "capi/kiln.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using kiln::api::Context;
using kiln::api::Function;
using kiln::api::Instance;
using kiln::api::Module;
using kiln::api::Outputs;
using kiln::api::Result;
using kiln::api::Status;
using kiln::api::Tensor;
using kiln::api::Value;

static_assert(!std::is_copy_constructible<Tensor>::value && std::is_nothrow_move_constructible<Tensor>::value,
              "handles are move-only");
static_assert(!std::is_copy_constructible<Module>::value && !std::is_copy_constructible<Context>::value &&
                  !std::is_copy_constructible<Value>::value && !std::is_copy_constructible<Outputs>::value &&
                  !std::is_copy_constructible<Instance>::value,
              "handles are move-only");

// The model's C function (tests/capi_c/test_model.h): out = 2 * x.
kiln_status_t* Scale(void*, const kiln_args_t* args, kiln_result_t*) {
  const kiln_tensor_t* x = nullptr;
  const kiln_tensor_t* out = nullptr;
  if (kiln_status_t* s = kiln_args_get_tensor(args, 0, &x)) return s;
  if (kiln_status_t* s = kiln_args_get_tensor(args, 1, &out)) return s;
  void* xd = nullptr;
  void* od = nullptr;
  int64_t n = 0;
  kiln_status_free(kiln_tensor_data(x, &xd));
  kiln_status_free(kiln_tensor_data(out, &od));
  kiln_status_free(kiln_tensor_element_count(x, &n));
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(od)[i] = 2 * static_cast<const float*>(xd)[i];
  return nullptr;
}

class CppWrapperTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(kiln::api::RegisterFunction("test.capi_c.scale", Scale, nullptr).ok()); }
  static void TearDownTestSuite() { kiln::api::UnregisterFunction("test.capi_c.scale"); }

  static Tensor Filled(const std::vector<int64_t>& shape, float start) {
    Result<Tensor> t = Tensor::Create(shape, KILN_DTYPE_FLOAT32);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    for (int64_t i = 0; i < t->element_count(); ++i) t->data<float>()[i] = start + static_cast<float>(i);
    return std::move(t).value();
  }
};

TEST_F(CppWrapperTest, LoadIntrospectAndInvoke) {
  Result<Module> module = Module::LoadFile(KILN_CAPI_C_MODEL);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<std::string> names;
  for (const Function& f : module->Functions()) names.push_back(f.name());
  EXPECT_NE(std::find(names.begin(), names.end(), "values"), names.end());

  Result<Function> main_fn = module->Lookup("main");
  ASSERT_TRUE(main_fn.ok());
  std::vector<kiln::api::ValueInfo> params = main_fn->params();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].name, "x");
  EXPECT_EQ(params[0].kind, KILN_VALUE_TENSOR);
  EXPECT_EQ(params[0].dtype, KILN_DTYPE_FLOAT32);
  EXPECT_EQ(params[0].dims, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(params[0].dim_names, (std::vector<std::string>{"n", "4"}));
  ASSERT_EQ(main_fn->results().size(), 1u);
  EXPECT_EQ(main_fn->results()[0].kind, KILN_VALUE_TENSOR);

  Result<Context> context = Context::Create(*module);
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  Tensor x = Filled({3, 4}, 0);
  Tensor y = Filled({3, 4}, 10);
  Result<Outputs> by_name = context->Invoke("main", {x, y});
  ASSERT_TRUE(by_name.ok()) << by_name.status().ToString();
  ASSERT_EQ(by_name->size(), 1u);
  Result<Tensor> sum = by_name->tensor(0);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(sum->data<float>()[11], 11.0f + 21.0f);

  std::vector<Tensor> inputs;
  inputs.push_back(std::move(x));
  inputs.push_back(std::move(y));
  Result<Outputs> by_handle = context->Invoke(*main_fn, inputs);
  ASSERT_TRUE(by_handle.ok());
  EXPECT_EQ(by_handle->tensor(0)->data<float>()[0], 10.0f);

  // The registered C function, through the wrapper.
  Tensor small = Filled({2, 3}, 1);
  Result<Outputs> scaled = context->Invoke("scaled", {small});
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  EXPECT_EQ(scaled->tensor(0)->data<float>()[5], 12.0f);
}

TEST_F(CppWrapperTest, ValuesInAndOut) {
  Result<Module> module = Module::LoadFile(KILN_CAPI_C_MODEL);
  ASSERT_TRUE(module.ok());
  Result<Context> context = Context::Create(*module, {KILN_EXECUTOR_VM, 1, nullptr});
  ASSERT_TRUE(context.ok());
  EXPECT_EQ(context->num_threads(), 1);
  Tensor x = Filled({2, 4}, 0);
  Result<Value> xv = Value::FromTensor(x);
  Result<Value> s = Value::Shape({2, 4});
  Result<Value> p = Value::Int(7);
  Result<Value> f = Value::Float(1.5);
  ASSERT_TRUE(xv.ok() && s.ok() && p.ok() && f.ok());
  Result<Outputs> out = context->InvokeValues(*module->Lookup("values"), {&*xv, &*s, &*p, &*f});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  Result<Value> nested = out->value(1);
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(nested->kind(), KILN_VALUE_TUPLE);
  EXPECT_EQ(*nested->TupleSize(), 2u);
  EXPECT_EQ(*nested->Field(0)->AsShape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(*nested->Field(1)->AsInt(), 7);
  EXPECT_EQ(*out->value(2)->AsFloat(), 1.5);
  Result<Tensor> back = out->value(0)->AsTensor();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->raw_data(), x.raw_data());

  // Wrong kinds and indexes are statuses, not exceptions.
  EXPECT_EQ(nested->AsInt().status().code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(nested->Field(5).status().code(), KILN_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(out->tensor(1).status().code(), KILN_STATUS_INVALID_ARGUMENT);
  Result<Value> tuple = Value::Tuple({&*p, &*f});
  ASSERT_TRUE(tuple.ok());
  EXPECT_EQ(*tuple->TupleSize(), 2u);
  EXPECT_EQ(Value::Tuple({&*p, nullptr}).status().code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Value::Shape({-1}).status().code(), KILN_STATUS_INVALID_ARGUMENT);
}

TEST_F(CppWrapperTest, ErrorsAreStatuses) {
  Result<Module> missing = Module::LoadFile("/nonexistent/x.vmfb");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/x.vmfb"), std::string::npos);
  Result<Module> module = Module::LoadFile(KILN_CAPI_C_MODEL);
  ASSERT_TRUE(module.ok());
  Result<Function> nope = module->Lookup("nope");
  EXPECT_EQ(nope.status().code(), KILN_STATUS_NOT_FOUND);
  EXPECT_NE(nope.status().ToString().find("NOT_FOUND: no function 'nope'"), std::string::npos);
  Result<Context> context = Context::Create(*module);
  ASSERT_TRUE(context.ok());
  Tensor x = Filled({2, 5}, 0);
  Result<Outputs> wrong = context->Invoke("main", {x, x});
  EXPECT_EQ(wrong.status().code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(wrong.status().message().find("main: argument x"), std::string::npos) << wrong.status().message();
  EXPECT_EQ(context->Invoke("main", {x}).status().code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Context::Create(*module, {KILN_EXECUTOR_AUTO, -1, nullptr}).status().code(),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Tensor::Create({-2}, KILN_DTYPE_FLOAT32).status().code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(context->ProfileTable().status().code(), KILN_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(context->EnableProfiling(true).ok());
  Tensor row = Filled({1, 4}, 0);
  ASSERT_TRUE(context->Invoke("main", {row, row}).ok());
  EXPECT_NE(context->ProfileTable()->find("main"), std::string::npos);
}

TEST_F(CppWrapperTest, ValueOfFailedResultAborts) {
  Result<Module> missing = Module::LoadFile("/nonexistent/y.vmfb");
  EXPECT_DEATH((void)missing.value(), "value\\(\\) of a failed result: NOT_FOUND");
}

TEST_F(CppWrapperTest, MovesTransferOwnership) {
  int released = 0;
  static float buffer[4] = {1, 2, 3, 4};
  {
    Result<Tensor> wrapped = Tensor::WrapWithRelease(
        buffer, {4}, KILN_DTYPE_FLOAT32, [](void* user, void*) { ++*static_cast<int*>(user); }, &released);
    ASSERT_TRUE(wrapped.ok());
    Tensor a = std::move(wrapped).value();
    Tensor b = std::move(a);
    EXPECT_FALSE(static_cast<bool>(a));  // NOLINT: checking the moved-from state
    Result<Tensor> c = b.Share();
    ASSERT_TRUE(c.ok());
    b = Tensor();
    EXPECT_EQ(released, 0);
    EXPECT_EQ(c->data<float>()[3], 4.0f);
  }
  EXPECT_EQ(released, 1);

  // DLPack out and back in: the same storage, kept alive by the export.
  Tensor t = Filled({2, 2}, 5);
  void* data = t.raw_data();
  Result<DLManagedTensor*> exported = t.ToDLPack();
  ASSERT_TRUE(exported.ok());
  t = Tensor();
  Result<Tensor> imported = Tensor::FromDLPack(*exported);
  ASSERT_TRUE(imported.ok());
  EXPECT_EQ(imported->raw_data(), data);
  EXPECT_EQ(imported->data<float>()[3], 8.0f);
}

namespace {
int g_log_lines = 0;
void CountLog(void* user, kiln_log_level_t, const char*) { ++g_log_lines; }
}  // namespace

TEST_F(CppWrapperTest, Instance) {
  kiln::api::InstanceOptions options;
  options.num_threads = 1;
  options.log = CountLog;
  options.min_level = KILN_LOG_DEBUG;
  Result<Instance> instance = Instance::Create(options);
  ASSERT_TRUE(instance.ok()) << instance.status().ToString();
  EXPECT_EQ(instance->num_threads(), 1);
  Result<Module> module = instance->LoadModule(KILN_CAPI_C_MODEL);
  ASSERT_TRUE(module.ok());
  Result<Context> context = instance->CreateContext(*module);
  ASSERT_TRUE(context.ok());
  EXPECT_EQ(context->num_threads(), 1);
  EXPECT_GE(g_log_lines, 3);  // instance, module, context
  EXPECT_EQ(instance->CreateContext(*module, {KILN_EXECUTOR_AUTO, 2, nullptr}).status().code(),
            KILN_STATUS_INVALID_ARGUMENT);
  options.num_threads = -5;
  Result<Instance> bad = Instance::Create(options);
  EXPECT_EQ(bad.status().code(), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(bad.status().message().find("num_threads is -5"), std::string::npos);
}

}  // namespace
