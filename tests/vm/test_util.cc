#include "tests/vm/test_util.h"

#include <cstring>
#include <mutex>

#include "compiler/writer/vmfb_writer.h"
#include "runtime/mapped_file.h"
#include "runtime/registry.h"
#include "vm/assembler.h"

// Under ASan, let huge allocations from damaged programs in the fuzz tests
// fail with a Status (as they do in production) instead of aborting.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace kiln {
namespace testing {

using compiler::CallableInfo;
using compiler::CallableKind;
using compiler::ConstantKind;
using compiler::ConstantValue;
using compiler::VmfbProgram;
using vm::Const;
using vm::Imm;
using vm::Reg;

Tensor F32(std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  KILN_CHECK(static_cast<int64_t>(values.size()) == t.NumElements(), "F32: %zu values for %s", values.size(), t.TypeString().c_str());
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * 4);
  return t;
}

std::vector<float> Values(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.NumElements()));
  if (!v.empty()) std::memcpy(v.data(), t.raw_data(), v.size() * 4);
  return v;
}

void RegisterTestFunctions() {
  static std::once_flag once;
  std::call_once(once, [] {
    Status s = RegisterGlobalFunction("test.add", [](Span<const Any> args, Any*) -> Status {
      if (args.size() != 3) return InvalidArgument("test.add takes 3 arguments");
      Tensor t[3];
      for (int i = 0; i < 3; ++i) {
        KILN_ASSIGN_OR_RETURN(t[i], args[i].AsTensor());
        if (t[i].dtype() != DType::Float32()) return InvalidArgument("test.add: float32 only");
      }
      if (t[0].shape() != t[2].shape() || t[1].shape() != t[2].shape()) {
        return InvalidArgument("test.add: shapes differ");
      }
      for (int64_t i = 0; i < t[2].NumElements(); ++i) t[2].data<float>()[i] = t[0].data<float>()[i] + t[1].data<float>()[i];
      return Status::Ok();
    });
    KILN_CHECK(s.ok(), "%s", s.ToString().c_str());
  });
}

std::vector<uint8_t> TestKernelLibrary() {
  Result<std::string> bytes = ReadFileToString(KILN_TEST_KERNELS_SO);
  KILN_CHECK(bytes.ok(), "%s", bytes.status().ToString().c_str());
  return std::vector<uint8_t>(bytes->begin(), bytes->end());
}

compiler::NativeLibraryInfo TestKernelLibraryInfo() {
  compiler::NativeLibraryInfo lib;
  lib.target.triple = "x86_64-unknown-linux-gnu";
  lib.target.cpu = "generic";
  lib.kernel_names = {"add_f32", "scale_parallel", "fail_kernel"};
  lib.bytes = TestKernelLibrary();
  return lib;
}

std::vector<uint8_t> Serialize(const VmfbProgram& program) {
  Result<std::vector<uint8_t>> bytes = compiler::SerializeVmfb(program);
  KILN_CHECK(bytes.ok(), "%s", bytes.status().ToString().c_str());
  return std::move(bytes).value();
}

Result<std::shared_ptr<const vm::Module>> Load(const std::vector<uint8_t>& bytes, const vm::LoadOptions& options) {
  // The module owns an exact-size copy, so callers may pass temporaries and
  // ASan sees any read past the end.
  auto* copy = new std::vector<uint8_t>(bytes);
  return vm::Module::LoadOwnedBuffer(
      copy->data(), copy->size(), [](const void*, void* user) { delete static_cast<std::vector<uint8_t>*>(user); },
      copy, options);
}

std::vector<CallableInfo> StandardCallables() {
  std::vector<CallableInfo> c(kNumAddCallables);
  c[kCheckTensor] = {CallableKind::kBuiltin, "vm.builtin.check_tensor"};
  c[kMatchShape] = {CallableKind::kBuiltin, "vm.builtin.match_shape"};
  c[kMakeShape] = {CallableKind::kBuiltin, "vm.builtin.make_shape"};
  c[kAllocTensor] = {CallableKind::kBuiltin, "vm.builtin.alloc_tensor"};
  c[kTestAdd] = {CallableKind::kPacked, "test.add"};
  return c;
}

ConstantValue StringConstant(const std::string& s) {
  ConstantValue c;
  c.kind = ConstantKind::kString;
  c.string_value = s;
  return c;
}

VmfbProgram AddProgram() {
  RegisterTestFunctions();
  VmfbProgram p;
  p.target.triple = "x86_64-unknown-linux-gnu";
  p.callables = StandardCallables();
  p.constants = {StringConstant("main: argument x"), StringConstant("main: argument y")};
  compiler::FunctionInfo f;
  f.name = "main";
  compiler::ValueInfo x;
  x.name = "x";
  x.ndim = 2;
  x.dims = {"n", "4"};
  compiler::ValueInfo y = x;
  y.name = "y";
  f.params = {x, y};
  compiler::ValueInfo r = x;
  r.name = "";
  f.results = {r};
  f.register_count = 4;
  f.shape_heap_size = 1;
  vm::Assembler a;
  a.Call(-1, kCheckTensor, {Reg(0), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(0)});
  a.Call(-1, kCheckTensor, {Reg(1), Imm(2), Imm(kDLFloat), Imm(32), Imm(1), Const(1)});
  a.Call(-1, kMatchShape, {Reg(0), Const(0), Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});  // n -> heap[0]; dim 1 == 4
  a.Call(-1, kMatchShape, {Reg(1), Const(1), Imm(2), Imm(2), Imm(0), Imm(0), Imm(4)});  // dim 0 == heap[0]
  a.Call(2, kMakeShape, {Imm(2), Imm(1), Imm(0), Imm(0), Imm(4)});                      // (n, 4)
  a.Call(3, kAllocTensor, {Reg(2), Imm(kDLFloat), Imm(32), Imm(1)});
  a.Call(-1, kTestAdd, {Reg(0), Reg(1), Reg(3)});
  a.Ret(3);
  f.code = a.Finish();
  p.functions.push_back(f);
  return p;
}

}  // namespace testing
}  // namespace kiln
