// GoogleTest driver for the C tests of kiln.h (c_api_test.c): writes the test
// module with the .vmfb writer, then runs each C test on it. Also checks, from
// C++ threads, that one module serves concurrent contexts through the C API.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "capi/kiln.h"
#include "compiler/writer/vmfb_program.h"
#include "compiler/writer/vmfb_writer.h"
#include "tests/capi/c_api_test.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

using compiler::CallableInfo;
using compiler::CallableKind;
using compiler::ConstantKind;
using compiler::ConstantValue;
using compiler::FunctionInfo;
using compiler::ValueInfo;
using compiler::ValueKind;
using compiler::VmfbProgram;
using vm::Const;
using vm::Imm;
using vm::Reg;

enum Callables { kCheckTensor, kMatchShape, kMakeShape, kAllocTensor, kMakeTuple, kAddOne };

ValueInfo Float23(const std::string& name) {
  ValueInfo v;
  v.name = name;
  v.kind = ValueKind::kTensor;
  v.dtype = DType::Float32();
  v.ndim = 2;
  v.dims = {"2", "3"};
  return v;
}

// Registers 0: x, 1: shape, 2: out, 3: tuple. Checks x against float32[2, 3],
// allocates out, calls add_one(x, out) in destination-passing style.
void EmitAddOne(vm::Assembler& a) {
  a.Call(-1, kCheckTensor, {Reg(0), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(0)});
  a.Call(-1, kMatchShape, {Reg(0), Const(0), Imm(2), Imm(0), Imm(2), Imm(0), Imm(3)});
  a.Call(1, kMakeShape, {Imm(2), Imm(0), Imm(2), Imm(0), Imm(3)});
  a.Call(2, kAllocTensor, {Reg(1), Imm(kDLFloat), Imm(32), Imm(1)});
  a.Call(-1, kAddOne, {Reg(0), Reg(2)});
}

VmfbProgram MakeProgram() {
  VmfbProgram p;
  auto callable = [](CallableKind kind, const std::string& name) {
    CallableInfo c;
    c.kind = kind;
    c.name = name;
    return c;
  };
  p.callables = {callable(CallableKind::kBuiltin, "vm.builtin.check_tensor"),
                 callable(CallableKind::kBuiltin, "vm.builtin.match_shape"),
                 callable(CallableKind::kBuiltin, "vm.builtin.make_shape"),
                 callable(CallableKind::kBuiltin, "vm.builtin.alloc_tensor"),
                 callable(CallableKind::kBuiltin, "vm.builtin.make_tuple"),
                 callable(CallableKind::kPacked, KILN_CAPI_TEST_FUNCTION)};
  ConstantValue ctx;
  ctx.kind = ConstantKind::kString;
  ctx.string_value = "main: argument x";
  p.constants = {ctx};

  FunctionInfo main_fn;
  main_fn.name = "main";
  main_fn.params = {Float23("x")};
  main_fn.results = {Float23("y")};
  main_fn.register_count = 4;
  vm::Assembler a;
  EmitAddOne(a);
  a.Ret(2);
  main_fn.code = a.Finish();

  FunctionInfo pair_fn = main_fn;
  pair_fn.name = "pair";
  ValueInfo seven;
  seven.name = "seven";
  seven.kind = ValueKind::kPrim;
  seven.dtype = DType::Int64();
  seven.ndim = 0;
  pair_fn.results = {Float23("y"), seven};
  vm::Assembler b;
  EmitAddOne(b);
  b.Call(3, kMakeTuple, {Reg(2), Imm(7)});
  b.Ret(3);
  pair_fn.code = b.Finish();

  // "graphed": main's bytecode plus a static graph of one node, add_one(x, y).
  FunctionInfo graphed_fn = main_fn;
  graphed_fn.name = "graphed";
  compiler::GraphArgInfo x_arg;
  x_arg.kind = compiler::GraphArgKind::kInput;
  x_arg.index = 0;
  x_arg.dtype = DType::Float32();
  x_arg.shape = {2, 3};
  compiler::GraphArgInfo y_arg = x_arg;
  y_arg.kind = compiler::GraphArgKind::kOutput;
  compiler::GraphInfo graph;
  graph.function = "graphed";
  graph.inputs = {x_arg};
  graph.outputs = {y_arg};
  compiler::GraphNodeInfo node;
  node.callable = kAddOne;
  node.args = {x_arg, y_arg};
  graph.nodes = {node};
  p.graphs = {graph};

  p.functions = {main_fn, pair_fn, graphed_fn};
  return p;
}

class CApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(::testing::TempDir() + "kiln_capi_test.vmfb");
    Status s = compiler::WriteVmfbFile(MakeProgram(), *path_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  static void TearDownTestSuite() {
    std::remove(path_->c_str());
    delete path_;
    path_ = nullptr;
  }
  static std::string* path_;
  char err_[2048] = {0};
};

std::string* CApiTest::path_ = nullptr;

TEST_F(CApiTest, VersionAndStatus) { EXPECT_EQ(kiln_capi_test_version_and_status(err_, sizeof err_), 0) << err_; }

TEST_F(CApiTest, Tensors) { EXPECT_EQ(kiln_capi_test_tensors(err_, sizeof err_), 0) << err_; }

TEST_F(CApiTest, MissingFunctionFailsLoad) {
  EXPECT_EQ(kiln_capi_test_missing_function_fails_load(path_->c_str(), err_, sizeof err_), 0) << err_;
}

TEST_F(CApiTest, InvokeFromFile) {
  EXPECT_EQ(kiln_capi_test_invoke_from_file(path_->c_str(), err_, sizeof err_), 0) << err_;
}

TEST_F(CApiTest, InvokeFromBuffer) {
  EXPECT_EQ(kiln_capi_test_invoke_from_buffer(path_->c_str(), err_, sizeof err_), 0) << err_;
}

TEST_F(CApiTest, Executors) {
  EXPECT_EQ(kiln_capi_test_executors(path_->c_str(), err_, sizeof err_), 0) << err_;
}

TEST_F(CApiTest, Threads) { EXPECT_EQ(kiln_capi_test_threads(path_->c_str(), err_, sizeof err_), 0) << err_; }

TEST_F(CApiTest, Errors) { EXPECT_EQ(kiln_capi_test_errors(path_->c_str(), err_, sizeof err_), 0) << err_; }

// One module, one context per thread, through the C API only.
TEST_F(CApiTest, ConcurrentContextsShareOneModule) {
  ASSERT_EQ(kiln_capi_test_register(err_, sizeof err_), 0) << err_;
  kiln_module_t* module = nullptr;
  kiln_status_t* s = kiln_module_load_file(path_->c_str(), &module);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  int calls_before = kiln_capi_test_add_one_calls();
  constexpr int kThreads = 4, kCalls = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      kiln_context_t* context = nullptr;
      if (kiln_status_t* e = kiln_context_create(module, &context)) {
        kiln_status_free(e);
        failures.fetch_add(1);
        return;
      }
      for (int i = 0; i < kCalls; ++i) {
        float x[6];
        for (int k = 0; k < 6; ++k) x[k] = static_cast<float>(t * 1000 + i * 10 + k);
        int64_t shape[2] = {2, 3};
        kiln_tensor_t* input = nullptr;
        kiln_outputs_t* outputs = nullptr;
        const kiln_tensor_t* y = nullptr;
        void* data = nullptr;
        kiln_status_t* e = kiln_tensor_wrap(x, shape, 2, KILN_DTYPE_FLOAT32, &input);
        if (!e) e = kiln_context_invoke(context, "main", &input, 1, &outputs);
        if (!e) e = kiln_outputs_get(outputs, 0, &y);
        if (!e) e = kiln_tensor_data(y, &data);
        if (e) {
          kiln_status_free(e);
          failures.fetch_add(1);
        } else {
          for (int k = 0; k < 6; ++k) {
            if (static_cast<float*>(data)[k] != x[k] + 1) failures.fetch_add(1);
          }
        }
        kiln_outputs_release(outputs);
        kiln_tensor_release(input);
      }
      kiln_context_release(context);
    });
  }
  for (auto& th : threads) th.join();
  kiln_module_release(module);
  kiln_capi_test_unregister();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(kiln_capi_test_add_one_calls() - calls_before, kThreads * kCalls);
}

}  // namespace
}  // namespace kiln
