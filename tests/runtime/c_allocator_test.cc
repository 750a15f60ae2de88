// The C API's caller allocator (kiln_context_options_set_allocator): every
// tensor a context allocates comes from the callbacks, outputs included; a
// NULL from allocate fails the call with RESOURCE_EXHAUSTED and the context
// stays usable; outputs outlive the context and are freed through the
// callbacks; a static call allocates nothing after the first.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "capi/kiln.h"
#include "tests/runtime/runtime_test_util.h"

namespace kiln {
namespace {

struct TestAllocator {
  std::atomic<int> allocations{0}, frees{0};
  std::atomic<bool> fail{false};
  std::atomic<bool> bad_alignment{false};
};

void* TestAllocate(void* user, size_t size, size_t alignment) {
  auto* a = static_cast<TestAllocator*>(user);
  if (alignment < KILN_TENSOR_ALIGNMENT || (alignment & (alignment - 1)) != 0) a->bad_alignment = true;
  if (a->fail) return nullptr;
  a->allocations++;
  return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment + alignment);
}

void TestFree(void* user, void* ptr) {
  static_cast<TestAllocator*>(user)->frees++;
  std::free(ptr);
}

std::string Message(kiln_status_t* s) {
  std::string m = kiln_status_message(s);
  kiln_status_free(s);
  return m;
}

#define ASSERT_KILN_OK(expr)                        \
  do {                                              \
    kiln_status_t* s_ = (expr);                     \
    ASSERT_EQ(s_, nullptr) << Message(s_);          \
  } while (0)

class CAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = std::string(KILN_RUNTIME_TEST_MODELS) + "/two_adds_static.vmfb";
    ASSERT_KILN_OK(kiln_module_load_file(path.c_str(), &module_));
    int64_t shape[2] = {4, 8};
    ASSERT_KILN_OK(kiln_tensor_create(shape, 2, KILN_DTYPE_FLOAT32, &x_));
    void* data = nullptr;
    ASSERT_KILN_OK(kiln_tensor_data(x_, &data));
    for (int i = 0; i < 32; ++i) static_cast<float*>(data)[i] = 0.25f * i - 3.0f;
  }
  void TearDown() override {
    kiln_tensor_release(x_);
    kiln_module_release(module_);
  }
  kiln_context_t* NewContext(kiln_executor_t executor) {
    kiln_context_options_t* options = nullptr;
    EXPECT_EQ(kiln_context_options_create(&options), nullptr);
    kiln_allocator_t a{&allocator_, TestAllocate, TestFree};
    EXPECT_EQ(kiln_context_options_set_allocator(options, &a), nullptr);
    EXPECT_EQ(kiln_context_options_set_executor(options, executor), nullptr);
    kiln_context_t* ctx = nullptr;
    kiln_status_t* s = kiln_context_create_with_options(module_, options, &ctx);
    kiln_context_options_release(options);
    EXPECT_EQ(s, nullptr) << Message(s);
    return ctx;
  }
  void ExpectOutput(kiln_outputs_t* out) {
    const kiln_tensor_t* y = nullptr;
    ASSERT_KILN_OK(kiln_outputs_get(out, 0, &y));
    void *xd = nullptr, *yd = nullptr;
    ASSERT_KILN_OK(kiln_tensor_data(x_, &xd));
    ASSERT_KILN_OK(kiln_tensor_data(y, &yd));
    for (int i = 0; i < 32; ++i) {
      float v = static_cast<float*>(xd)[i];
      ASSERT_EQ(static_cast<float*>(yd)[i], (v + v) * v) << i;
    }
  }

  TestAllocator allocator_;
  kiln_module_t* module_ = nullptr;
  kiln_tensor_t* x_ = nullptr;
};

TEST_F(CAllocatorTest, EverythingComesFromTheCallbacks) {
  for (kiln_executor_t executor : {KILN_EXECUTOR_VM, KILN_EXECUTOR_GRAPH}) {
    SCOPED_TRACE(executor == KILN_EXECUTOR_VM ? "vm" : "graph");
    kiln_context_t* ctx = NewContext(executor);
    ASSERT_NE(ctx, nullptr);
    kiln_outputs_t* out = nullptr;
    ASSERT_KILN_OK(kiln_context_invoke(ctx, "main", &x_, 1, &out));
    ExpectOutput(out);
    kiln_outputs_release(out);
    int after_first = allocator_.allocations;
    EXPECT_GE(after_first, 2);  // the planned storage (or arena) and the output
    for (int i = 0; i < 10; ++i) {
      ASSERT_KILN_OK(kiln_context_invoke(ctx, "main", &x_, 1, &out));
      kiln_outputs_release(out);
    }
    EXPECT_EQ(allocator_.allocations, after_first) << "a static call allocated after the first";
    // An output outlives its context and goes back through the callbacks.
    ASSERT_KILN_OK(kiln_context_invoke(ctx, "main", &x_, 1, &out));
    kiln_context_release(ctx);
    ExpectOutput(out);
    kiln_outputs_release(out);
    EXPECT_EQ(allocator_.allocations, allocator_.frees);
    allocator_.allocations = 0;
    allocator_.frees = 0;
  }
  EXPECT_FALSE(allocator_.bad_alignment);
}

TEST_F(CAllocatorTest, AFailingAllocatorGivesResourceExhaustedAndTheContextRecovers) {
  kiln_context_t* ctx = NewContext(KILN_EXECUTOR_VM);
  ASSERT_NE(ctx, nullptr);
  kiln_outputs_t* out = nullptr;
  allocator_.fail = true;
  kiln_status_t* s = kiln_context_invoke(ctx, "main", &x_, 1, &out);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_RESOURCE_EXHAUSTED);
  std::string m = Message(s);
  EXPECT_NE(m.find("main: vm.builtin.alloc_"), std::string::npos) << m;
  EXPECT_NE(m.find("the caller's allocator (kiln_context_options_set_allocator)"), std::string::npos) << m;
  EXPECT_EQ(out, nullptr);
  allocator_.fail = false;
  ASSERT_KILN_OK(kiln_context_invoke(ctx, "main", &x_, 1, &out));
  ExpectOutput(out);
  kiln_outputs_release(out);
  kiln_context_release(ctx);
  EXPECT_EQ(allocator_.allocations, allocator_.frees);
}

TEST_F(CAllocatorTest, BadAllocatorsAreRefused) {
  kiln_context_options_t* options = nullptr;
  ASSERT_KILN_OK(kiln_context_options_create(&options));
  kiln_allocator_t no_free{&allocator_, TestAllocate, nullptr};
  kiln_status_t* s = kiln_context_options_set_allocator(options, &no_free);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(Message(s).find("the allocator needs both an allocate and a free callback"), std::string::npos);
  s = kiln_context_options_set_allocator(nullptr, &no_free);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_INVALID_ARGUMENT);
  kiln_status_free(s);
  // NULL restores the default.
  ASSERT_KILN_OK(kiln_context_options_set_allocator(options, nullptr));
  kiln_context_options_release(options);
}

}  // namespace
}  // namespace kiln
