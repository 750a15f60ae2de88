#include "tests/onnx_conformance/runner.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/onnx/onnx_importer.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/any.h"
#include "tests/onnx_conformance/tensor_proto.h"
#include "vm/module.h"

namespace kiln {
namespace conformance {

namespace fs = std::filesystem;

namespace {

// dir/prefix_0.pb, dir/prefix_1.pb, ... in index order (not name order: _10 after _9).
std::vector<std::string> NumberedFiles(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> files;
  for (int i = 0;; ++i) {
    fs::path p = fs::path(dir) / (prefix + "_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p.string());
  }
  return files;
}

// A result value as a tensor: shapes (a folded Shape operator) become int64
// vectors and scalars 0-d tensors, as ONNX would hold them.
Result<Tensor> AsTensor(const Any& value) {
  if (value.is_tensor()) return value.tensor();
  if (value.is_shape()) {
    const std::vector<int64_t>& dims = value.shape_dims();
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty({static_cast<int64_t>(dims.size())}, DType::Int64()));
    std::copy(dims.begin(), dims.end(), t.data<int64_t>());
    return t;
  }
  if (value.is_int()) {
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty({}, DType::Int64()));
    *t.data<int64_t>() = value.int_value();
    return t;
  }
  return InvalidArgument("result is " + value.Describe() + ", not a tensor");
}

Result<std::shared_ptr<const vm::Module>> CompileAndLoad(const std::string& model_path,
                                                         const std::map<std::string, Tensor>& bound,
                                                         int num_threads) {
  onnx::ImportOptions import_options;
  import_options.input_values = bound;
  Result<ir::IRModule> mod = onnx::ImportFile(model_path, import_options);
  if (!mod.ok()) {
    // The test's name says which model; keep the reason short.
    std::string message = mod.status().message();
    if (message.rfind(model_path + ": ", 0) == 0) message = message.substr(model_path.size() + 2);
    return Status(mod.status().code(), "import: " + message);
  }
  driver::CompileOptions options;
  options.num_threads_hint = num_threads;
  Result<compiler::VmfbProgram> program = driver::CompileModule(mod.value(), options);
  if (!program.ok()) return Status(program.status()).Annotate("compile");
  Result<std::vector<uint8_t>> bytes = compiler::SerializeVmfb(program.value());
  if (!bytes.ok()) return Status(bytes.status()).Annotate("serialize");
  // The loader borrows constants in place and wants the 64-byte alignment a
  // mapped file has; a vector's storage does not promise it.
  const size_t size = bytes.value().size();
  void* owned = std::aligned_alloc(64, (size + 63) / 64 * 64);
  if (!owned) return ResourceExhausted("load: out of memory");
  std::memcpy(owned, bytes.value().data(), size);
  vm::LoadOptions load_options;
  load_options.num_threads = num_threads;
  Result<std::shared_ptr<const vm::Module>> module = vm::Module::LoadOwnedBuffer(
      owned, size, [](const void*, void* user) { std::free(user); }, owned, load_options);
  if (!module.ok()) return Status(module.status()).Annotate("load");
  return module;
}

// Calls main with `args` and compares its results with data_dir/output_K.pb.
Status RunDataSet(vm::Context& context, std::vector<Any> args, const std::string& data_dir,
                  const Tolerance& tolerance) {
  const std::vector<std::string> outputs = NumberedFiles(data_dir, "output");
  if (outputs.empty()) return DataLoss(data_dir + ": no output_0.pb");
  Any result;
  Status st = context.Invoke("main", Span<const Any>(args.data(), args.size()), &result);
  if (!st.ok()) return st.Annotate("run");
  std::vector<Any> fields;
  if (outputs.size() > 1 && result.is_tuple()) {
    fields = result.tuple_fields();
  } else {
    fields.push_back(result);
  }
  if (fields.size() != outputs.size()) {
    return InvalidArgument(StrFormat("run: %zu results, the test expects %zu", fields.size(), outputs.size()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string what = "output " + std::to_string(i);
    KILN_ASSIGN_OR_RETURN(Tensor expected, ReadTensorProtoFile(outputs[i]));
    Result<Tensor> got = AsTensor(fields[i]);
    if (!got.ok()) return Status(got.status()).Annotate(what);
    KILN_RETURN_IF_ERROR(CompareTensors(got.value(), expected, tolerance, what));
  }
  return Status::Ok();
}

}  // namespace

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kOutOfScope: return "out of scope";
  }
  return "?";
}

Status RunNodeTestInProcess(const NodeTestCase& test, const RunOptions& options) {
  if (test.data_sets.empty()) return DataLoss(test.dir + ": no test_data_set_N folder");
  KILN_CHECK(test.bind_as_constant.size() == test.inputs.size());
  std::vector<bool> bind_as_constant = test.bind_as_constant;
  if (options.inputs_as_defined) bind_as_constant.assign(bind_as_constant.size(), false);
  const bool binds = std::find(bind_as_constant.begin(), bind_as_constant.end(), true) != bind_as_constant.end();
  const std::string model_path = (fs::path(test.dir) / "model.onnx").string();
  std::shared_ptr<const vm::Module> module;
  std::unique_ptr<vm::Context> context;
  std::unique_ptr<vm::Context> graph_context;  // when main has a static graph
  for (const std::string& data_dir : test.data_sets) {
    const std::vector<std::string> files = NumberedFiles(data_dir, "input");
    if (files.size() != test.inputs.size()) {
      return DataLoss(StrFormat("%s: %zu input files, the graph has %zu inputs", data_dir.c_str(), files.size(),
                                test.inputs.size()));
    }
    std::map<std::string, Tensor> bound;
    std::vector<Any> args;
    for (size_t i = 0; i < files.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Tensor t, ReadTensorProtoFile(files[i]));
      if (bind_as_constant[i]) {
        bound.emplace(test.inputs[i], std::move(t));
      } else {
        args.emplace_back(std::move(t));
      }
    }
    // Bound operands are part of the program: compile again for each data set.
    if (!module || binds) {
      KILN_ASSIGN_OR_RETURN(module, CompileAndLoad(model_path, bound, options.num_threads));
      context = module->CreateContext();
      graph_context.reset();
      if (module->HasStaticGraph("main")) {
        vm::ContextOptions graph_options;
        graph_options.executor = vm::Executor::kGraph;
        Result<std::unique_ptr<vm::Context>> made = module->CreateContext(graph_options);
        if (!made.ok()) return Status(made.status()).Annotate("graph executor");
        graph_context = std::move(made.value());
      }
    }
    Status st = RunDataSet(*context, args, data_dir, options.tolerance);
    if (st.ok() && graph_context) {
      st = RunDataSet(*graph_context, std::move(args), data_dir, options.tolerance);
      if (!st.ok()) st.Annotate("graph executor");
    }
    if (!st.ok()) {
      if (test.data_sets.size() > 1) st.Annotate(fs::path(data_dir).filename().string());
      return st;
    }
  }
  return Status::Ok();
}

namespace {

// Runs the test in a forked child; the child sends back one byte (1: pass) and
// the failure message through a pipe.
CaseResult RunIsolated(const NodeTestCase& test, const RunOptions& options) {
  CaseResult r;
  int fds[2];
  if (pipe(fds) != 0) {
    r.detail = "runner: pipe() failed";
    return r;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    r.detail = "runner: fork() failed";
    return r;
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(options.timeout_seconds));
    Status st = RunNodeTestInProcess(test, options);
    std::string msg = std::string(1, st.ok() ? '\1' : '\0') + (st.ok() ? "" : st.message());
    const char* p = msg.data();
    size_t left = msg.size();
    while (left > 0) {
      ssize_t n = write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    r.detail = sig == SIGALRM ? StrFormat("timed out after %d s", options.timeout_seconds)
                              : StrFormat("crashed with signal %d (%s)", sig, strsignal(sig));
    return r;
  }
  if (msg.empty() || WEXITSTATUS(wstatus) != 0) {
    r.detail = StrFormat("the test process exited with status %d without a result", WEXITSTATUS(wstatus));
    return r;
  }
  if (msg[0] == '\1') {
    r.outcome = Outcome::kPass;
  } else {
    r.detail = msg.substr(1);
  }
  return r;
}

}  // namespace

CaseResult RunNodeTest(const NodeTestCase& test, const RunOptions& options) {
  if (!test.out_of_scope.empty()) {
    CaseResult r;
    r.outcome = Outcome::kOutOfScope;
    r.detail = test.out_of_scope;
    return r;
  }
  auto start = std::chrono::steady_clock::now();
  CaseResult r;
  if (options.isolate) {
    r = RunIsolated(test, options);
  } else {
    Status st = RunNodeTestInProcess(test, options);
    r.outcome = st.ok() ? Outcome::kPass : Outcome::kFail;
    r.detail = st.ok() ? "" : st.message();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace conformance
}  // namespace kiln
