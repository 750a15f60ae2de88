// kiln-run end to end: writes a small .vmfb with the writer, runs it through
// RunToolMain and checks what a user would see.
#include "tools/common/run_tool.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/writer/vmfb_program.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/npy.h"
#include "runtime/registry.h"
#include "tools/common/inline_tensor.h"
#include "tools/common/prepared_call.h"
#include "vm/assembler.h"
#include "vm/module.h"

namespace kiln {
namespace tools {
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

constexpr char kAddOne[] = "test.run_tool.add_one";

// out = x + 1 for float32 tensors (destination passing).
Status AddOne(Span<const Any> args, Any*) {
  if (args.size() != 2) return InvalidArgument("add_one takes 2 arguments");
  KILN_ASSIGN_OR_RETURN(Tensor x, args[0].AsTensor());
  KILN_ASSIGN_OR_RETURN(Tensor y, args[1].AsTensor());
  for (int64_t i = 0; i < x.NumElements(); ++i) y.data<float>()[i] = x.data<float>()[i] + 1;
  return Status::Ok();
}

ValueInfo Float23(const std::string& name) {
  ValueInfo v;
  v.name = name;
  v.dtype = DType::Float32();
  v.ndim = 2;
  v.dims = {"2", "3"};
  return v;
}

// main(x: float32[2, 3]) -> x + 1; pair(x) -> (x + 1, 7); graphed(x) = main with a static graph.
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
                 callable(CallableKind::kPacked, kAddOne)};
  ConstantValue ctx;
  ctx.kind = ConstantKind::kString;
  ctx.string_value = "main: argument x";
  p.constants = {ctx};
  auto emit = [](vm::Assembler& a) {
    a.Call(-1, 0, {Reg(0), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(0)});
    a.Call(-1, 1, {Reg(0), Const(0), Imm(2), Imm(0), Imm(2), Imm(0), Imm(3)});
    a.Call(1, 2, {Imm(2), Imm(0), Imm(2), Imm(0), Imm(3)});
    a.Call(2, 3, {Reg(1), Imm(kDLFloat), Imm(32), Imm(1)});
    a.Call(-1, 5, {Reg(0), Reg(2)});
  };
  FunctionInfo main_fn;
  main_fn.name = "main";
  main_fn.params = {Float23("x")};
  main_fn.results = {Float23("y")};
  main_fn.register_count = 4;
  vm::Assembler a;
  emit(a);
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
  emit(b);
  b.Call(3, 4, {Reg(2), Imm(7)});
  b.Ret(3);
  pair_fn.code = b.Finish();
  // "graphed": main's bytecode plus a one-node static graph add_one(x, y).
  FunctionInfo graphed_fn = main_fn;
  graphed_fn.name = "graphed";
  compiler::GraphArgInfo x_arg;
  x_arg.kind = compiler::GraphArgKind::kInput;
  x_arg.dtype = DType::Float32();
  x_arg.shape = {2, 3};
  compiler::GraphArgInfo y_arg = x_arg;
  y_arg.kind = compiler::GraphArgKind::kOutput;
  compiler::GraphInfo graph;
  graph.function = "graphed";
  graph.inputs = {x_arg};
  graph.outputs = {y_arg};
  compiler::GraphNodeInfo node;
  node.callable = 5;
  node.args = {x_arg, y_arg};
  graph.nodes = {node};
  p.graphs = {graph};
  // "echo"(n: int) -> n: a non-tensor parameter.
  FunctionInfo echo_fn;
  echo_fn.name = "echo";
  ValueInfo n;
  n.name = "n";
  n.kind = ValueKind::kPrim;
  n.dtype = DType::Int64();
  n.ndim = 0;
  echo_fn.params = {n};
  echo_fn.results = {n};
  echo_fn.register_count = 1;
  vm::Assembler e;
  e.Ret(0);
  echo_fn.code = e.Finish();
  p.functions = {main_fn, pair_fn, graphed_fn, echo_fn};
  return p;
}

class RunToolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Status r = RegisterGlobalFunction(kAddOne, AddOne, /*allow_override=*/true);
    ASSERT_TRUE(r.ok()) << r.ToString();
    dir_ = new std::string(::testing::TempDir());
    Status s = compiler::WriteVmfbFile(MakeProgram(), *dir_ + "kiln_run_test.vmfb");
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  static void TearDownTestSuite() {
    std::remove((*dir_ + "kiln_run_test.vmfb").c_str());
    delete dir_;
    RemoveGlobalFunction(kAddOne);
  }

  int Main(std::vector<std::string> args) { return MainOn(*dir_ + "kiln_run_test.vmfb", std::move(args)); }
  int MainOn(const std::string& vmfb, std::vector<std::string> args) {
    args.insert(args.begin(), {"kiln-run", vmfb});
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream o, e;
    int rc = RunToolMain(static_cast<int>(argv.size()), argv.data(), o, e);
    out_ = o.str();
    err_ = e.str();
    return rc;
  }

  static std::string* dir_;
  std::string out_, err_;
};

std::string* RunToolTest::dir_ = nullptr;

TEST_F(RunToolTest, PrintsOutputs) {
  ASSERT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6"}), 0) << err_;
  EXPECT_EQ(out_, "output 0: float32[2, 3]\n[[2, 3, 4],\n [5, 6, 7]]\n");
  EXPECT_EQ(err_, "");
}

TEST_F(RunToolTest, TupleOutputs) {
  ASSERT_EQ(Main({"--function=pair", "--input=2x3xf32=random:1", "--threads=2"}), 0) << err_;
  EXPECT_NE(out_.find("output 0: float32[2, 3]\n"), std::string::npos) << out_;
  EXPECT_NE(out_.find("output 1: int 7\n"), std::string::npos) << out_;
}

TEST_F(RunToolTest, NpyInputAndOutput) {
  std::string in = *dir_ + "kiln_run_in.npy", out = *dir_ + "kiln_run_out.npy";
  Result<Tensor> x = ParseInlineTensor("2x3xf32=random:7");
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE(WriteNpyFile(*x, in).ok());
  ASSERT_EQ(Main({"--input=@" + in, "--output=@" + out}), 0) << err_;
  EXPECT_EQ(out_, "output 0: tensor float32[2, 3] -> " + out + "\n");
  Result<Tensor> y = ReadNpyFile(out);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ASSERT_EQ(y->shape(), x->shape());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y->data<float>()[i], x->data<float>()[i] + 1);
  std::remove(in.c_str());
  std::remove(out.c_str());
}

TEST_F(RunToolTest, RepeatPrintsTiming) {
  ASSERT_EQ(Main({"--input=2x3xf32=random:3", "--repeat=5"}), 0) << err_;
  EXPECT_NE(out_.find("time per call over 5 calls: median "), std::string::npos) << out_;
  EXPECT_NE(out_.find(" ms, mean "), std::string::npos) << out_;
}

TEST_F(RunToolTest, Executors) {
  for (const char* executor : {"--executor=auto", "--executor=vm", "--executor=graph"}) {
    ASSERT_EQ(Main({"--function=graphed", executor, "--input=2x3xf32=1,2,3,4,5,6", "--repeat=3"}), 0)
        << executor << ": " << err_;
    EXPECT_EQ(out_.rfind("output 0: float32[2, 3]\n[[2, 3, 4],\n [5, 6, 7]]\ntime per call over 3 calls", 0), 0u)
        << executor << ": " << out_;
  }
  // The engine shows in the shape error: the graph checks whole shapes.
  EXPECT_EQ(Main({"--function=graphed", "--input=2x4xf32=random:1"}), 1);
  EXPECT_EQ(err_, "kiln-run: error: graphed: input x: expected float32[2, 3], got float32[2, 4]\n");
  EXPECT_EQ(Main({"--function=graphed", "--executor=vm", "--input=2x4xf32=random:1"}), 1);
  EXPECT_EQ(err_, "kiln-run: error: main: argument x, dimension 1: expected 3, got 4\n");
  EXPECT_EQ(Main({"--executor=graph", "--input=2x3xf32=random:1"}), 1);
  EXPECT_EQ(err_, "kiln-run: error: function 'main' has no static graph (try --executor=vm)\n");
}

TEST_F(RunToolTest, Errors) {
  EXPECT_EQ(Main({"--function=nope", "--input=f32=1"}), 1);
  EXPECT_EQ(err_.rfind("kiln-run: error: no function 'nope' in '", 0), 0u) << err_;
  EXPECT_NE(err_.find("(it has: main, pair, graphed, echo)\n"), std::string::npos) << err_;

  EXPECT_EQ(Main({}), 1);
  EXPECT_EQ(err_, "kiln-run: error: function 'main' takes 1 inputs, got 0 --input flags\n");

  EXPECT_EQ(Main({"--input=2x4xf32=random:1"}), 1);
  EXPECT_EQ(err_, "kiln-run: error: main: argument x, dimension 1: expected 3, got 4\n");

  EXPECT_EQ(Main({"--input=2x3xi32=random:1"}), 1);
  EXPECT_EQ(err_, "kiln-run: error: main: argument x: expected dtype float32, got int32\n");

  EXPECT_EQ(Main({"--input=2x3xf32=random:1", "--output=@a.npy", "--output=@b.npy"}), 1);
  EXPECT_EQ(err_, "kiln-run: error: 2 --output flags, but 'main' returned 1 outputs\n");

  EXPECT_EQ(Main({"--function=pair", "--input=2x3xf32=random:1", "--output=@" + *dir_ + "p0.npy",
                  "--output=@" + *dir_ + "p1.npy"}),
            1);
  EXPECT_EQ(err_, "kiln-run: error: output 1 is not a tensor (int 7); it cannot be saved as .npy\n");
  std::remove((*dir_ + "p0.npy").c_str());

  EXPECT_EQ(Main({"--input=2x3xf32=random:1", "--output=@/nonexistent/dir/y.npy"}), 1);
  EXPECT_EQ(err_, "kiln-run: error: output 0: cannot open '/nonexistent/dir/y.npy' for writing\n");
}

// --verify (issue 19 §3): the weights are hashed only when asked; a file from
// before checksums runs with a note.
TEST_F(RunToolTest, VerifyWeightsAndTheNoteOnOldFiles) {
  VmfbProgram p = MakeProgram();
  ConstantValue w;
  w.kind = ConstantKind::kTensor;
  w.name = "w";
  w.tensor = ParseInlineTensor("8xf32=1,2,3,4,5,6,7,8").value();
  p.constants.push_back(w);  // unused by the code: it only fills the weights segment
  std::vector<uint8_t> bytes = compiler::SerializeVmfb(p).value();
  uint32_t fb_size = bytes[0] | bytes[1] << 8 | bytes[2] << 16 | static_cast<uint32_t>(bytes[3]) << 24;
  bytes[(fb_size + 4 + 63) / 64 * 64 + 9] ^= 0x04;  // the weights start the segments
  std::string damaged = *dir_ + "kiln_run_damaged_weights.vmfb";
  std::FILE* f = std::fopen(damaged.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  EXPECT_EQ(MainOn(damaged, {"--input=2x3xf32=random:1"}), 0) << err_;
  EXPECT_EQ(MainOn(damaged, {"--input=2x3xf32=random:1", "--verify"}), 1);
  EXPECT_EQ(err_.rfind("kiln-run: error: loading '" + damaged + "': loading " + damaged +
                           ": damaged .vmfb: the weights segment (32 bytes) does not match its checksum (xxh3-64 ",
                       0),
            0u)
      << err_;
  ASSERT_EQ(Main({"--input=2x3xf32=random:1", "--verify"}), 0) << err_;
  EXPECT_EQ(out_.find("note:"), std::string::npos) << out_;
  std::remove(damaged.c_str());

  p.format_minor = 0;
  std::string old = *dir_ + "kiln_run_format_1_0.vmfb";
  ASSERT_TRUE(compiler::WriteVmfbFile(p, old).ok());
  ASSERT_EQ(MainOn(old, {"--input=2x3xf32=1,2,3,4,5,6", "--verify"}), 0) << err_;
  EXPECT_EQ(out_, "note: " + old +
                      ": format 1.0 file: its segments carry no checksums (added in 1.1), so damage to its kernels or "
                      "weights cannot be detected; recompile it to add them\n"
                      "output 0: float32[2, 3]\n[[2, 3, 4],\n [5, 6, 7]]\n");
  std::remove(old.c_str());
}

// Every dtype through .npy and kiln-run (issue 19 §4): echo(x) returns its
// argument, so the output file must hold exactly the input's bytes.
TEST_F(RunToolTest, NpyRoundTripOfEveryDtype) {
  const char* types[] = {"f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool"};
  VmfbProgram p = MakeProgram();
  ValueInfo any_tensor;
  any_tensor.name = "x";
  FunctionInfo id;
  id.name = "id";
  id.params = {any_tensor};
  id.results = {any_tensor};
  id.register_count = 1;
  vm::Assembler a;
  a.Ret(0);
  id.code = a.Finish();
  p.functions.push_back(id);
  std::string vmfb = *dir_ + "kiln_run_id.vmfb";
  ASSERT_TRUE(compiler::WriteVmfbFile(p, vmfb).ok());
  for (const char* type : types) {
    SCOPED_TRACE(type);
    std::string in = *dir_ + "kiln_run_id_in.npy", out = *dir_ + "kiln_run_id_out.npy";
    Tensor x = ParseInlineTensor(std::string("2x3x") + type + "=random:5").value();
    ASSERT_TRUE(WriteNpyFile(x, in).ok());
    ASSERT_EQ(MainOn(vmfb, {"--function=id", "--input=@" + in, "--output=@" + out}), 0) << err_;
    EXPECT_EQ(out_, "output 0: tensor " + x.TypeString() + " -> " + out + "\n");
    Tensor y = ReadNpyFile(out).value();
    EXPECT_EQ(y.dtype(), x.dtype());
    EXPECT_EQ(y.shape(), x.shape());
    EXPECT_EQ(std::memcmp(y.raw_data(), x.raw_data(), x.NumBytes()), 0);
    // Printed, and compared with itself through --expected_output.
    ASSERT_EQ(MainOn(vmfb, {"--function=id", "--input=@" + in, "--expected_output=@" + out}), 0) << err_;
    EXPECT_NE(out_.find("output 0: matches"), std::string::npos) << out_;
    EXPECT_EQ(out_.find("not printable"), std::string::npos) << out_;
    std::remove(in.c_str());
    std::remove(out.c_str());
  }
  std::remove(vmfb.c_str());
}

TEST_F(RunToolTest, CudaDeviceWithACpuFileIsAClearError) {
  // This test's module is CPU code: refused before the device is opened, so
  // the same on machines with and without a GPU. (Without a driver, a GPU
  // file fails with "no CUDA driver: ...": kiln_gpu_vmfb_no_driver_test.)
  setenv("KILN_CUDA_DRIVER", "libkiln-no-such-driver.so.1", 1);
  EXPECT_EQ(Main({"--device=cuda", "--input=2x3xf32=random:1"}), 1);
#ifdef KILN_HAVE_CUDA
  EXPECT_EQ(err_.rfind("kiln-run: error: --device=cuda:0: '", 0), 0u) << err_;
  EXPECT_NE(err_.find("' was compiled for the CPU (target '"), std::string::npos) << err_;
  EXPECT_NE(err_.find("compile it with kiln-compile --target=cuda to run it on the GPU\n"), std::string::npos) << err_;
#else
  EXPECT_EQ(err_, "kiln-run: error: --device=cuda: this tool was built without CUDA (KILN_WITH_CUDA=OFF)\n");
#endif
  EXPECT_EQ(out_, "");
}

TEST_F(RunToolTest, DashPrintsEveryValue) {
  ASSERT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6", "--output=-"}), 0) << err_;
  EXPECT_EQ(out_, "output 0: float32[2, 3]\n[[2, 3, 4],\n [5, 6, 7]]\n");
  ASSERT_EQ(Main({"--function=pair", "--input", "2x3xf32=1,2,3,4,5,6", "--output", "-", "--output", "-"}), 0)
      << err_;
  EXPECT_EQ(out_, "output 0: float32[2, 3]\n[[2, 3, 4],\n [5, 6, 7]]\noutput 1: int 7\n");
}

TEST_F(RunToolTest, ExpectedOutputMatches) {
  std::string ref = *dir_ + "kiln_run_ref.npy";
  Result<Tensor> y = ParseInlineTensor("2x3xf32=2,3,4,5,6,7.000001");
  ASSERT_TRUE(y.ok());
  ASSERT_TRUE(WriteNpyFile(*y, ref).ok());
  ASSERT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6", "--expected_output=@" + ref}), 0) << err_;
  EXPECT_NE(out_.find("output 0: matches: all 6 elements match (max |diff| "), std::string::npos) << out_;
  // Inline expected values work too.
  ASSERT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6", "--expected_output=2x3xf32=2,3,4,5,6,7"}), 0) << err_;
  std::remove(ref.c_str());
}

TEST_F(RunToolTest, ExpectedOutputMismatchFailsWithTheWorstElement) {
  EXPECT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6", "--expected_output=2x3xf32=2,3,4.1,5,6,7.5"}), 1);
  EXPECT_EQ(err_,
            "kiln-run: error: output 0: 2 of 6 elements differ (atol 1e-05, rtol 1e-05); the worst at [1, 2]: "
            "got 7, expected 7.5, |diff| 0.5\n");
  EXPECT_NE(out_.find("output 0: MISMATCH: 2 of 6"), std::string::npos) << out_;
  // Wide enough tolerances accept it.
  EXPECT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6", "--expected_output=2x3xf32=2,3,4.1,5,6,7.5", "--atol", "0.6"}), 0)
      << err_;
  EXPECT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6", "--expected_output=2x3xf32=2,3,4.1,5,6,7.5", "--rtol=0.1"}), 0)
      << err_;
}

TEST_F(RunToolTest, ExpectedOutputErrors) {
  EXPECT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6", "--expected_output=3x2xf32=random:1"}), 1);
  EXPECT_EQ(err_, "kiln-run: error: output 0 against --expected_output 1: got float32[2, 3], expected float32[3, 2]\n");
  EXPECT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6", "--expected_output=2x3xf32=1", "--input=x"}), 1);
  EXPECT_EQ(err_.rfind("kiln-run: error: --expected_output 1: inline tensor", 0), 0u) << err_;
  EXPECT_EQ(Main({"--input=2x3xf32=1,2,3,4,5,6", "--expected_output=f32=1", "--expected_output=f32=1"}), 1);
  EXPECT_EQ(err_, "kiln-run: error: 2 --expected_output flags, but 'main' returned 1 outputs\n");
  EXPECT_EQ(Main({"--function=pair", "--input=2x3xf32=1,2,3,4,5,6", "--expected_output=2x3xf32=2,3,4,5,6,7",
                  "--expected_output=i64=7"}),
            1);
  EXPECT_EQ(err_, "kiln-run: error: output 1 is not a tensor (int 7); it cannot be compared\n");
}

TEST_F(RunToolTest, RawBinaryInput) {
  std::string raw = *dir_ + "kiln_run_in.bin";
  float values[6] = {1, 2, 3, 4, 5, 6};
  FILE* f = std::fopen(raw.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(values, sizeof(float), 6, f), 6u);
  std::fclose(f);
  ASSERT_EQ(Main({"--input=2x3xf32=@" + raw}), 0) << err_;
  EXPECT_EQ(out_, "output 0: float32[2, 3]\n[[2, 3, 4],\n [5, 6, 7]]\n");
  EXPECT_EQ(Main({"--input=2x2xf32=@" + raw}), 1);
  EXPECT_EQ(err_, "kiln-run: error: --input 1: inline tensor '2x2xf32=@" + raw + "': '" + raw +
                      "' has 24 bytes, shape [2, 2] of float32 needs 16\n");
  std::remove(raw.c_str());
}

TEST_F(RunToolTest, PrintStatistics) {
  ASSERT_EQ(Main({"--input=2x3xf32=random:3", "--repeat=2", "--print-statistics"}), 0) << err_;
  for (const char* part : {"statistics:\n  load:        ", " ms\n  first call:  ", "  later calls: median ",
                           "  executor:    vm\n", "  peak tensor memory (last call): ", "  peak RSS:    "}) {
    EXPECT_NE(out_.find(part), std::string::npos) << part << " in " << out_;
  }
  ASSERT_EQ(Main({"--function=graphed", "--input=2x3xf32=random:3", "--print-statistics"}), 0) << err_;
  EXPECT_NE(out_.find("  executor:    graph\n"), std::string::npos) << out_;
}

TEST_F(RunToolTest, ScalarArgument) {
  ASSERT_EQ(Main({"--function=echo", "--input=i64=42"}), 0) << err_;
  EXPECT_EQ(out_, "output 0: int 42\n");
}

TEST_F(RunToolTest, RandomInputsFromTheSignature) {
  Result<std::shared_ptr<const vm::Module>> module = vm::Module::LoadFile(*dir_ + "kiln_run_test.vmfb");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  Result<std::vector<Tensor>> inputs = RandomInputs(**module, "main", {}, 5);
  ASSERT_TRUE(inputs.ok()) << inputs.status().ToString();
  ASSERT_EQ(inputs->size(), 1u);
  EXPECT_EQ((*inputs)[0].TypeString(), "float32[2, 3]");
  Result<Tensor> same = ParseInlineTensor("2x3xf32=random:5");
  ASSERT_TRUE(same.ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ((*inputs)[0].data<float>()[i], same->data<float>()[i]);
  Result<std::vector<Tensor>> scalar = RandomInputs(**module, "echo", {}, 5);
  ASSERT_FALSE(scalar.ok());
  EXPECT_EQ(scalar.status().message(),
            "parameter 0 'n' of 'echo' is not a tensor of known rank; give every input with --input");
  EXPECT_EQ(RandomInputs(**module, "nope", {}, 5).status().message(),
            "no function 'nope' (it has: main, pair, graphed, echo)");
}

}  // namespace
}  // namespace tools
}  // namespace kiln
