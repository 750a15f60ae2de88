// Internal to kernels/cuda: cuBLASLt, opened with dlopen on first use.
//
// Nothing links libcublasLt (540 MB, and absent on most machines): the
// library is opened the first time a cuBLAS kernel is bound to a device, and
// the entry points used are resolved with dlsym into a table typed from the
// toolkit's cublasLt.h, which is used at build time only (KILN_WITH_CUDA).
// $KILN_CUBLASLT names the library to open instead of libcublasLt.so.13,
// then libcublasLt.so (tests force the missing-library path with it, and a
// GPU machine may point it at a copy outside the loader's path).
//
// Thread-safe: the table is loaded once and immutable after.
#ifndef KILN_KERNELS_CUDA_CUBLASLT_API_H_
#define KILN_KERNELS_CUDA_CUBLASLT_API_H_

#include <cublasLt.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace kernels {
namespace cuda {

#define KILN_CUBLASLT_FUNCTIONS(X)         \
  X(cublasLtGetVersion)                    \
  X(cublasLtCreate)                        \
  X(cublasLtDestroy)                       \
  X(cublasLtMatmulDescCreate)              \
  X(cublasLtMatmulDescDestroy)             \
  X(cublasLtMatmulDescSetAttribute)        \
  X(cublasLtMatrixLayoutCreate)            \
  X(cublasLtMatrixLayoutDestroy)           \
  X(cublasLtMatrixLayoutSetAttribute)      \
  X(cublasLtMatmulPreferenceCreate)        \
  X(cublasLtMatmulPreferenceDestroy)       \
  X(cublasLtMatmulPreferenceSetAttribute)  \
  X(cublasLtMatmulAlgoGetHeuristic)        \
  X(cublasLtMatmul)

struct CublasLtApi {
#define KILN_CUBLASLT_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUBLASLT_FUNCTIONS(KILN_CUBLASLT_MEMBER)
#undef KILN_CUBLASLT_MEMBER
  // Optional (error names only).
  decltype(&::cublasLtGetStatusName) cublasLtGetStatusName = nullptr;
  decltype(&::cublasLtGetStatusString) cublasLtGetStatusString = nullptr;
  size_t version = 0;    // cublasLtGetVersion(): 10000 * major + 100 * minor + patch
  std::string library;   // the name it was opened by
};

// The libraries tried, in order: $KILN_CUBLASLT alone when set, else
// libcublasLt.so.13 and libcublasLt.so.
std::vector<std::string> CublasLtLibraryNames();

// Opens the first of `names` that loads and resolves the table from it.
// Errors (kFailedPrecondition):
//   "cuBLAS not found: libcublasLt.so.13: <dlerror>; libcublasLt.so: <dlerror>"
//   "cuBLAS not found: libm.so.6 is not cuBLASLt (no cublasLtMatmul in it)"
// Each call opens again; CublasLt() keeps the first outcome.
Result<std::unique_ptr<CublasLtApi>> OpenCublasLt(const std::vector<std::string>& names);

// The process's table (OpenCublasLt(CublasLtLibraryNames()) once), or why
// there is none.
Result<const CublasLtApi*> CublasLt();

// "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)".
std::string CublasErrorText(const CublasLtApi& api, cublasStatus_t status, const char* what);
// OK for CUBLAS_STATUS_SUCCESS; else kInternal (kResourceExhausted for
// CUBLAS_STATUS_ALLOC_FAILED) with CublasErrorText.
Status CublasCheck(const CublasLtApi& api, cublasStatus_t status, const char* what);

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln

#define KILN_CUBLAS_RETURN_IF_ERROR(api, call, what) \
  KILN_RETURN_IF_ERROR(::kiln::kernels::cuda::CublasCheck((api), (call), (what)))

#endif  // KILN_KERNELS_CUDA_CUBLASLT_API_H_
