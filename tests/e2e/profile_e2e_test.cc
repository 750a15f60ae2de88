// Profiling (runtime/profiler.h) of the MLP of examples/mlp.relax: on the VM
// and on the graph executor, through the C++ API and the C API. The table
// lists every kernel with its call count; the Chrome trace parses and holds
// one event per executed kernel.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "capi/kiln.h"
#include "graph_executor/graph_session.h"
#include "runtime/profiler.h"
#include "runtime/registry.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/json_check.h"
#include "vm/opcodes.h"

namespace kiln {
namespace e2e {
namespace {

using testing_json::Value;

std::string StaticMlpSource() {
  std::string src = std::regex_replace(ReadFile("examples/mlp.relax"), std::regex(R"(\"n\")"), "1");
  return std::regex_replace(src, std::regex(R"(\n\s*n = T.int64\(\))"), "");
}

// Kernel calls per call of `function` by name, read from its bytecode (the
// MLP has no branches, so every Call runs once).
std::map<std::string, int> KernelCallsInBytecode(const vm::Module& module, const std::string& function) {
  std::shared_ptr<const LinkedProgram> linked = module.linked_program();
  const Program& p = linked->program;
  std::map<std::string, int> calls;
  int32_t f = p.FindFunction(function);
  EXPECT_GE(f, 0);
  if (f < 0) return calls;
  for (uint64_t pc = p.functions[f].code_begin; pc < p.functions[f].code_end;) {
    int64_t op = p.code[pc++];
    if (op == static_cast<int64_t>(vm::Opcode::kCall)) {
      int64_t callable = p.code[pc + 1], nargs = p.code[pc + 2];
      if (linked->callables[callable].kind == CallableKind::kKernel) ++calls[linked->callables[callable].name];
      pc += 3 + nargs;
    } else {
      pc += vm::OpcodeOperandCount(op);
    }
  }
  return calls;
}

// Kernel events of a parsed trace, counted by name.
std::map<std::string, int> KernelEvents(const Value& trace) {
  std::map<std::string, int> out;
  const Value* events = trace.Get("traceEvents");
  EXPECT_NE(events, nullptr);
  if (events == nullptr) return out;
  for (const Value& e : events->array) {
    EXPECT_EQ(e.Get("ph")->string, "X");
    EXPECT_GE(e.Get("dur")->number, 0.0);
    if (e.Get("cat")->string == "kernel") ++out[e.Get("name")->string];
  }
  return out;
}

Value ParseTrace(const std::string& json) {
  Value doc;
  std::string error;
  EXPECT_TRUE(testing_json::ParseJson(json, &doc, &error)) << error;
  return doc;
}

struct Weights {
  Tensor w0 = RandomTensor({128, 784}, 1), b0 = RandomTensor({128}, 2);
  Tensor w1 = RandomTensor({10, 128}, 3), b1 = RandomTensor({10}, 4);
};

TEST(ProfileE2E, VmProfileListsEveryKernelWithItsCountAndTraceHasOneEventPerKernelCall) {
  auto module = CompileAndLoad(ReadFile("examples/mlp.relax"), "examples/mlp.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::map<std::string, int> per_call = KernelCallsInBytecode(**module, "main");
  ASSERT_FALSE(per_call.empty());

  Weights w;
  Tensor x = RandomTensor({1, 784}, 5);
  std::vector<Any> args = {Any(x), Any(w.w0), Any(w.b0), Any(w.w1), Any(w.b1)};
  std::unique_ptr<vm::Context> context = (*module)->CreateContext();
  Any result;
  ASSERT_TRUE(context->Invoke("main", args, &result).ok());  // not profiled

  Profiler profiler;
  context->set_profiler(&profiler);
  constexpr int kCalls = 3;
  for (int i = 0; i < kCalls; ++i) {
    Status s = context->Invoke("main", args, &result);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_LE(MaxAbsDiff(result.tensor(), ReferenceMlp(x, w.w0, w.b0, w.w1, w.b1)), 1e-4f);

  // The table: one row per kernel with its count, with the shapes.
  std::vector<ProfileRow> rows = profiler.Summary();
  std::map<std::string, int64_t> counted;
  for (const ProfileRow& r : rows) {
    if (std::strcmp(r.category, kProfileKernel) == 0) {
      counted[r.name] += r.count;
      EXPECT_NE(r.shapes.find("float32["), std::string::npos) << r.name;
    }
    if (std::strcmp(r.category, kProfileInvoke) == 0) {
      EXPECT_EQ(r.count, kCalls);
    }
  }
  for (const auto& kv : per_call) EXPECT_EQ(counted[kv.first], kCalls * kv.second) << kv.first;
  EXPECT_EQ(counted.size(), per_call.size());
  std::string table = profiler.FormatTable();
  EXPECT_NE(table.find("profile: 3 invocations"), std::string::npos) << table;
  for (const auto& kv : per_call) EXPECT_NE(table.find(kv.first), std::string::npos) << table;
  EXPECT_NE(table.find("float32[1, 784]"), std::string::npos) << table;

  // The trace: one kernel event per executed kernel call.
  std::map<std::string, int> traced = KernelEvents(ParseTrace(profiler.ChromeTraceJson()));
  for (const auto& kv : per_call) EXPECT_EQ(traced[kv.first], kCalls * kv.second) << kv.first;
  EXPECT_EQ(traced.size(), per_call.size());

  // Off again: nothing more is recorded.
  size_t events = profiler.num_events();
  context->set_profiler(nullptr);
  ASSERT_TRUE(context->Invoke("main", args, &result).ok());
  EXPECT_EQ(profiler.num_events(), events);
}

TEST(ProfileE2E, GraphExecutorTimesEveryNode) {
  auto module = CompileAndLoad(StaticMlpSource(), "static_mlp.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  ASSERT_TRUE((*module)->HasStaticGraph("main"));
  auto session = graph_executor::GraphSession::Create(*module, "main");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  const ProgramGraph& graph = (*module)->linked_program()->program.graphs[0];
  std::map<std::string, int> per_run;
  for (const ProgramGraphNode& n : graph.nodes) ++per_run[(*module)->linked_program()->callables[n.callable].name];

  Weights w;
  Tensor x = RandomTensor({1, 784}, 6);
  std::vector<Tensor> inputs = {x, w.w0, w.b0, w.w1, w.b1};
  std::vector<Tensor> outputs = (*session)->NewOutputs().value();
  Profiler profiler;
  (*session)->set_profiler(&profiler);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE((*session)->Run(inputs, outputs).ok());
  EXPECT_LE(MaxAbsDiff(outputs[0], ReferenceMlp(x, w.w0, w.b0, w.w1, w.b1)), 1e-4f);

  std::map<std::string, int> traced = KernelEvents(ParseTrace(profiler.ChromeTraceJson()));
  EXPECT_EQ(traced.size(), per_run.size());
  for (const auto& kv : per_run) EXPECT_EQ(traced[kv.first], 2 * kv.second) << kv.first;
  std::string table = profiler.FormatTable();
  EXPECT_NE(table.find("profile: 2 invocations"), std::string::npos) << table;
  bool node_location = false;
  for (const ProfileEvent& e : profiler.Events()) node_location |= e.at == "main node 0";
  EXPECT_TRUE(node_location);

  // The same through a context whose executor is the graph.
  vm::ContextOptions options;
  options.executor = vm::Executor::kGraph;
  auto context = (*module)->CreateContext(options);
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  Profiler context_profiler;
  (*context)->set_profiler(&context_profiler);
  std::vector<Any> args(inputs.begin(), inputs.end());
  Any result;
  ASSERT_TRUE((*context)->Invoke("main", args, &result).ok());
  traced = KernelEvents(ParseTrace(context_profiler.ChromeTraceJson()));
  for (const auto& kv : per_run) EXPECT_EQ(traced[kv.first], kv.second) << kv.first;
}

TEST(ProfileE2E, FunctionHandlesCallWithoutNamesAndRefuseOtherModules) {
  auto module = CompileAndLoad(ReadFile("examples/mlp.relax"), "examples/mlp.relax");
  auto other = CompileAndLoad(ReadFile("examples/mlp.relax"), "examples/mlp.relax");
  ASSERT_TRUE(module.ok() && other.ok());
  auto handle = (*module)->LookupFunction("main");
  ASSERT_TRUE(handle.ok()) << handle.status().ToString();
  Weights w;
  Tensor x = RandomTensor({2, 784}, 7);
  std::vector<Any> args = {Any(x), Any(w.w0), Any(w.b0), Any(w.w1), Any(w.b1)};
  std::unique_ptr<vm::Context> context = (*module)->CreateContext();
  Any result;
  Status s = context->Invoke(*handle, args, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_LE(MaxAbsDiff(result.tensor(), ReferenceMlp(x, w.w0, w.b0, w.w1, w.b1)), 1e-4f);

  auto missing = (*module)->LookupFunction("mian");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no function named 'mian' in module; it has: main"), std::string::npos)
      << missing.status().message();

  std::unique_ptr<vm::Context> other_context = (*other)->CreateContext();
  s = other_context->Invoke(*handle, args, &result);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("the function handle is not one of this context's module"), std::string::npos)
      << s.message();
  s = context->Invoke(vm::FunctionHandle(), args, &result);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

// The C API: enable, table, trace, reset; errors before enabling; handles
// of another module.
TEST(ProfileE2E, CApiProfilesAndWritesATrace) {
  auto bytes = CompileToBytes(StaticMlpSource(), "static_mlp.relax");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  void* buffer = std::aligned_alloc(64, (bytes->size() + 63) / 64 * 64);
  std::memcpy(buffer, bytes->data(), bytes->size());
  kiln_module_t* module = nullptr;
  ASSERT_EQ(kiln_module_load_buffer(buffer, bytes->size(), &module), nullptr);
  const kiln_function_t* main_fn = nullptr;
  ASSERT_EQ(kiln_module_lookup_function(module, "main", &main_fn), nullptr);
  std::map<std::string, int> per_call;
  {
    // Kernels per call on the VM, from the bytecode.
    auto m = vm::Module::LoadBuffer(buffer, bytes->size());
    ASSERT_TRUE(m.ok());
    per_call = KernelCallsInBytecode(**m, "main");
  }

  Weights w;
  Tensor x = RandomTensor({1, 784}, 8);
  std::vector<Tensor> host = {x, w.w0, w.b0, w.w1, w.b1};
  std::vector<kiln_tensor_t*> inputs;
  for (const Tensor& t : host) {
    kiln_tensor_t* h = nullptr;
    ASSERT_EQ(kiln_tensor_wrap(const_cast<void*>(t.raw_data()), t.shape().data(), static_cast<int32_t>(t.ndim()),
                               KILN_DTYPE_FLOAT32, &h),
              nullptr);
    inputs.push_back(h);
  }

  for (kiln_executor_t executor : {KILN_EXECUTOR_VM, KILN_EXECUTOR_GRAPH}) {
    SCOPED_TRACE(executor == KILN_EXECUTOR_VM ? "vm" : "graph");
    kiln_context_t* context = nullptr;
    ASSERT_EQ(kiln_context_create_with_executor(module, executor, &context), nullptr);
    const char* table = nullptr;
    kiln_status_t* s = kiln_context_profile_table(context, &table);
    EXPECT_EQ(kiln_status_code(s), KILN_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(std::string(kiln_status_message(s)).find("profiling was never enabled"), std::string::npos);
    kiln_status_free(s);
    s = kiln_context_write_trace(context, "unused.json");
    EXPECT_EQ(kiln_status_code(s), KILN_STATUS_FAILED_PRECONDITION);
    kiln_status_free(s);

    ASSERT_EQ(kiln_context_enable_profiling(context, 1), nullptr);
    for (int i = 0; i < 2; ++i) {
      kiln_outputs_t* outputs = nullptr;
      ASSERT_EQ(kiln_context_invoke_function(context, main_fn, inputs.data(), inputs.size(), &outputs), nullptr);
      kiln_outputs_release(outputs);
    }
    ASSERT_EQ(kiln_context_profile_table(context, &table), nullptr);
    EXPECT_NE(std::string(table).find("profile: 2 invocations"), std::string::npos) << table;
    std::string path = ::testing::TempDir() + "kiln_profile_e2e_trace.json";
    ASSERT_EQ(kiln_context_write_trace(context, path.c_str()), nullptr);
    std::map<std::string, int> traced = KernelEvents(ParseTrace(ReadFile(path)));
    std::remove(path.c_str());
    if (executor == KILN_EXECUTOR_VM) {
      for (const auto& kv : per_call) EXPECT_EQ(traced[kv.first], 2 * kv.second) << kv.first;
    } else {
      EXPECT_FALSE(traced.empty());
    }
    s = kiln_context_write_trace(context, "/nonexistent-dir/trace.json");
    EXPECT_EQ(kiln_status_code(s), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kiln_status_message(s)).find("/nonexistent-dir/trace.json"), std::string::npos);
    kiln_status_free(s);

    // Reset forgets; disabled records nothing.
    ASSERT_EQ(kiln_context_reset_profile(context), nullptr);
    ASSERT_EQ(kiln_context_enable_profiling(context, 0), nullptr);
    kiln_outputs_t* outputs = nullptr;
    ASSERT_EQ(kiln_context_invoke(context, "main", inputs.data(), inputs.size(), &outputs), nullptr);
    kiln_outputs_release(outputs);
    ASSERT_EQ(kiln_context_profile_table(context, &table), nullptr);
    EXPECT_NE(std::string(table).find("profile: 0 invocations"), std::string::npos) << table;
    kiln_context_release(context);
  }

  // A function of another module is refused.
  kiln_module_t* other = nullptr;
  ASSERT_EQ(kiln_module_load_buffer(buffer, bytes->size(), &other), nullptr);
  kiln_context_t* other_context = nullptr;
  ASSERT_EQ(kiln_context_create(other, &other_context), nullptr);
  kiln_outputs_t* outputs = nullptr;
  kiln_status_t* s = kiln_context_invoke_function(other_context, main_fn, inputs.data(), inputs.size(), &outputs);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_status_message(s)).find("function 'main' is not of this context's module"),
            std::string::npos)
      << kiln_status_message(s);
  kiln_status_free(s);
  EXPECT_EQ(outputs, nullptr);

  kiln_context_release(other_context);
  kiln_module_release(other);
  for (kiln_tensor_t* t : inputs) kiln_tensor_release(t);
  kiln_module_release(module);
  std::free(buffer);
}

// Calls of bytecode functions and packed functions are events too; a
// function's event covers the events of what it ran.
TEST(ProfileE2E, FunctionAndPackedCallsAreRecordedAroundWhatTheyRun) {
  ASSERT_TRUE(RegisterGlobalFunction(
                  "test.profile.copy",
                  [](Span<const Any> args, Any* ret) -> Status {
                    *ret = args[0];
                    return Status::Ok();
                  },
                  /*allow_override=*/true)
                  .ok());
  const char* src = R"(# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def double(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        with R.dataflow():
            y = R.add(x, x)
            R.output(y)
        return y

    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        cls = Module
        y = cls.double(x)
        z = R.call_packed("test.profile.copy", y, sinfo_args=(R.Tensor((2,), dtype="float32"),))
        return z
)";
  auto module = CompileAndLoad(src, "calls.relax");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::unique_ptr<vm::Context> context = (*module)->CreateContext();
  Profiler profiler;
  context->set_profiler(&profiler);
  Tensor x = RandomTensor({2}, 9);
  Any result;
  Status s = context->Invoke("main", {Any(x)}, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();

  const ProfileEvent* function = nullptr;
  const ProfileEvent* packed = nullptr;
  std::vector<ProfileEvent> events = profiler.Events();
  for (const ProfileEvent& e : events) {
    if (std::strcmp(e.category, kProfileFunction) == 0 && e.name == "double") function = &e;
    if (std::strcmp(e.category, kProfilePacked) == 0 && e.name == "test.profile.copy") packed = &e;
  }
  ASSERT_NE(function, nullptr) << profiler.FormatTable();
  ASSERT_NE(packed, nullptr) << profiler.FormatTable();
  EXPECT_EQ(function->shapes, "float32[2] -> float32[2]");
  EXPECT_EQ(function->at.rfind("main@", 0), 0u) << function->at;
  EXPECT_EQ(packed->shapes, "float32[2] -> float32[2]");
  // The kernel of `double` ran inside the event of its call.
  bool nested_kernel = false;
  for (const ProfileEvent& e : events) {
    if (std::strcmp(e.category, kProfileKernel) == 0 && e.at.rfind("double@", 0) == 0) {
      nested_kernel = e.start_ns >= function->start_ns &&
                      e.start_ns + e.duration_ns <= function->start_ns + function->duration_ns;
    }
  }
  EXPECT_TRUE(nested_kernel) << profiler.FormatTable();
  RemoveGlobalFunction("test.profile.copy");
}

// Null handles and pointers in the profiling and by-handle entry points are
// statuses naming the parameter.
TEST(ProfileE2E, CApiNullArgumentsAreStatuses) {
  auto expect_null = [](kiln_status_t* s, const char* what) {
    EXPECT_EQ(kiln_status_code(s), KILN_STATUS_INVALID_ARGUMENT) << what;
    EXPECT_NE(std::string(kiln_status_message(s)).find(std::string(what) + " is NULL"), std::string::npos)
        << kiln_status_message(s);
    kiln_status_free(s);
  };
  kiln_outputs_t* outputs = nullptr;
  const char* table = "unchanged";
  expect_null(kiln_context_invoke_function(nullptr, nullptr, nullptr, 0, &outputs), "context");
  expect_null(kiln_context_invoke_function(nullptr, nullptr, nullptr, 0, nullptr), "out_outputs");
  expect_null(kiln_context_enable_profiling(nullptr, 1), "context");
  expect_null(kiln_context_reset_profile(nullptr), "context");
  expect_null(kiln_context_profile_table(nullptr, &table), "context");
  EXPECT_EQ(table, nullptr);
  expect_null(kiln_context_profile_table(nullptr, nullptr), "out_table");
  expect_null(kiln_context_write_trace(nullptr, "x.json"), "context");
}

}  // namespace
}  // namespace e2e
}  // namespace kiln
