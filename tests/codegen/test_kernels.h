// PrimFuncs built with the IR constructors, and the plumbing to run a built
// kernel library (write the .so to a temp file, dlopen it, look kernels up
// through kiln_kernel_query), shared by the codegen tests.
#ifndef KILN_TESTS_CODEGEN_TEST_KERNELS_H_
#define KILN_TESTS_CODEGEN_TEST_KERNELS_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/native_codegen.h"
#include "compiler/ir/tir.h"
#include "kernels/kiln_kernel_abi.h"
#include "runtime/status.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace codegen_test {

// add(A: f32[n], B: f32[n], C: f32[n]): C[i] = A[i] + B[i]
ir::PrimFunc MakeAdd();
// relu(X: f32[n, m], Y: f32[n, m]): Y = max(X, 0)
ir::PrimFunc MakeRelu();
// The MLC course's linear0 with blocks, T.init and alloc_buffer:
// Z = X @ W^T + B, X: f32[batch, 784], W: f32[128, 784], B: f32[128],
// Z: f32[batch, 128]; batch is the literal 1 or the variable n.
ir::PrimFunc MakeLinear0(bool symbolic_batch);
// scale(A: f32[n], C: f32[n], k: int64): C[i] = A[i] * float(k) + select(i % 2 == 0, 1, 0)
ir::PrimFunc MakeScale();
// iota(A: f32[n], n: int64): A[i] = float(i); n is both a scalar param and A's dim
ir::PrimFunc MakeIota();
// floor_ops(A: i32[n], B: i32[n], D: i32[n], M: i32[n]): D = floordiv(A, B), M = floormod(A, B)
ir::PrimFunc MakeFloorOps();
// big_tmp(A: f32[n], C: f32[n]): T = alloc f32[n] (workspace); T[i] = A[i] * 2; C[i] = T[n-1-i] + T[i]
ir::PrimFunc MakeWorkspaceUser();

// LowerBlocks then ApplyDefaultSchedule on each.
std::vector<ir::PrimFunc> Prepare(const std::vector<ir::PrimFunc>& funcs, int threads_hint);

// A shared object loaded with dlopen from a temporary file (removed again).
class LoadedLibrary {
 public:
  static Result<std::unique_ptr<LoadedLibrary>> Load(const std::vector<uint8_t>& so);
  ~LoadedLibrary();
  const kiln_kernel_library* table() const { return table_; }
  kiln_kernel_fn Find(const std::string& name) const;  // nullptr when absent
  void* Symbol(const std::string& name) const;

 private:
  void* handle_ = nullptr;
  const kiln_kernel_library* table_ = nullptr;
};

// An env that forwards to MakeKernelEnv(pool) and records set_error messages.
class CapturingEnv {
 public:
  explicit CapturingEnv(ThreadPool* pool);
  const kiln_kernel_env* env() const { return &env_; }
  const std::string& last_error() const { return last_error_; }
  int32_t last_num_tasks() const { return last_num_tasks_; }
  int workspace_allocs() const { return workspace_allocs_; }
  void set_fail_allocations(bool fail) { fail_allocations_ = fail; }

 private:
  static int32_t ParallelFor(void* ctx, int32_t n, kiln_task_fn fn, void* closure);
  static void* Alloc(void* ctx, uint64_t nbytes, uint64_t align);
  static void Free(void* ctx, void* p);
  static void SetError(void* ctx, const char* msg);
  kiln_kernel_env base_;
  kiln_kernel_env env_;
  std::string last_error_;
  int32_t last_num_tasks_ = 0;
  int workspace_allocs_ = 0;
  bool fail_allocations_ = false;
};

// Parses `source` (a module of PrimFuncs in TVMScript text), prepares every
// PrimFunc (LowerBlocks, ApplyDefaultSchedule with 1 thread), builds and loads
// the library.
Result<std::unique_ptr<LoadedLibrary>> BuildText(const std::string& source,
                                                 const codegen::CodegenOptions& options = {});
// A module with one elementwise kernel per entry: `name` maps A: in_dtype[n]
// (and B: in_dtype[n] when `expr` mentions B[i]) to C: out_dtype[n] with
// C[i] = expr, in a T.vectorized loop (or T.serial when !vectorized).
struct ElementwiseKernel {
  std::string name, expr, in_dtype, out_dtype;
  bool vectorized = true;
};
std::string ElementwiseModule(const std::vector<ElementwiseKernel>& kernels);
// Runs kernel `name` of `lib` on tensors (inputs then the output, all of
// the same length); returns 0 or the kernel's status, with its message.
int RunKernel(const LoadedLibrary& lib, const std::string& name, const std::vector<Tensor>& tensors,
              std::string* error = nullptr);

// Tensors for kernel arguments.
Tensor MakeTensor(std::vector<int64_t> shape, DType dtype = DType::Float32());
void FillRandom(const Tensor& t, uint32_t seed);
kiln_kernel_arg TensorArg(const Tensor& t);
float MaxAbsDiff(const float* a, const float* b, int64_t n);

}  // namespace codegen_test
}  // namespace kiln

#endif  // KILN_TESTS_CODEGEN_TEST_KERNELS_H_
