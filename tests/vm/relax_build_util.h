// Helpers of the VM tests that compile .relax text and run it: build a
// module (parse, legalize, default schedules, VM code, native kernels, load),
// make inputs, call main, compare results bit for bit.
#ifndef KILN_TESTS_VM_RELAX_BUILD_UTIL_H_
#define KILN_TESTS_VM_RELAX_BUILD_UTIL_H_

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/native_codegen.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/relax/vm_codegen.h"
#include "compiler/text/text.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/lower_blocks.h"
#include "runtime/allocator.h"
#include "tests/vm/test_util.h"

namespace kiln {
namespace testing {

// parse -> normalize -> legalize -> lower TIR -> VM code -> kernels -> load.
inline Result<std::shared_ptr<const vm::Module>> Build(const std::string& src, const relax::VMCodegenOptions& options) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(src, "t.relax"));
  KILN_ASSIGN_OR_RETURN(mod, relax::InferStructInfo(mod));
  KILN_ASSIGN_OR_RETURN(mod, relax::LegalizeOps(mod, relax::LegalizeOptions{}));
  std::vector<ir::PrimFunc> prims;
  for (auto& e : mod.entries) {
    if (!e.prim) continue;
    e.prim = tir::ApplyDefaultSchedule(tir::LowerBlocks(e.prim), 2);
    prims.push_back(e.prim);
  }
  compiler::VmfbProgram program;
  KILN_RETURN_IF_ERROR(relax::GenerateVMCode(mod, &program, options));
  KILN_ASSIGN_OR_RETURN(codegen::NativeLibraryBuild lib, codegen::BuildNativeLibrary(prims, codegen::CodegenOptions{}));
  compiler::NativeLibraryInfo info;
  info.target.triple = lib.triple;
  info.target.cpu = lib.cpu;
  info.target.features = lib.features;
  info.kernel_names = lib.kernel_names;
  info.bytes = std::move(lib.shared_object);
  program.target = info.target;
  program.native_libraries.push_back(std::move(info));
  return testing::Load(testing::Serialize(program));
}

inline relax::VMCodegenOptions Planned(std::map<std::string, int64_t> bounds = {}) {
  relax::VMCodegenOptions o;
  o.memory.upper_bounds = std::move(bounds);
  return o;
}

inline relax::VMCodegenOptions Unplanned() {
  relax::VMCodegenOptions o;
  o.plan_memory = false;
  return o;
}

inline Tensor Random(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>((seed >> 40) % 2000) / 1000.0f - 1.0f;
  }
  return t;
}

// Invokes main; the allocations the call made go to *allocations.
inline Result<Tensor> RunMain(vm::Context* ctx, std::vector<Any> args, uint64_t* allocations = nullptr) {
  Any out;
  uint64_t before = DefaultCpuAllocationCount();
  KILN_RETURN_IF_ERROR(ctx->Invoke("main", args, &out));
  if (allocations) *allocations = DefaultCpuAllocationCount() - before;
  if (!out.is_tensor()) return Internal("main returned " + out.Describe());
  return out.tensor();
}

inline void ExpectSame(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.NumElements(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
}

}  // namespace testing
}  // namespace kiln

#endif  // KILN_TESTS_VM_RELAX_BUILD_UTIL_H_
