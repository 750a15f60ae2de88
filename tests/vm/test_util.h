// Shared helpers for the VM, loader and graph-executor tests: tensors,
// test packed functions, the test kernel library, and hand-assembled programs.
#ifndef KILN_TESTS_VM_TEST_UTIL_H_
#define KILN_TESTS_VM_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/writer/vmfb_program.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace testing {

Tensor F32(std::vector<int64_t> shape, std::vector<float> values);
std::vector<float> Values(const Tensor& t);

// Registers "test.add" (DPS: a, b, out; out = a + b, float32, checks shapes)
// once per process.
void RegisterTestFunctions();
// Bytes of the test kernel library (tests/vm/test_kernels.c).
std::vector<uint8_t> TestKernelLibrary();
compiler::NativeLibraryInfo TestKernelLibraryInfo();

std::vector<uint8_t> Serialize(const compiler::VmfbProgram& program);
// Loads a copy of `bytes` that the module owns.
Result<std::shared_ptr<const vm::Module>> Load(const std::vector<uint8_t>& bytes,
                                               const vm::LoadOptions& options = {});

// Callable indices of AddProgram().
enum AddProgramCallables { kCheckTensor = 0, kMatchShape, kMakeShape, kAllocTensor, kTestAdd, kNumAddCallables };

// main(x: float32[n, 4], y: float32[n, 4]) -> float32[n, 4]: checks both
// arguments, binds n from x, allocates the result with make_shape and calls
// "test.add".
compiler::VmfbProgram AddProgram();

// The callables AddProgram uses, for building other programs.
std::vector<compiler::CallableInfo> StandardCallables();
compiler::ConstantValue StringConstant(const std::string& s);

}  // namespace testing
}  // namespace kiln

#endif  // KILN_TESTS_VM_TEST_UTIL_H_
