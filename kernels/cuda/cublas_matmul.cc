// kiln.cublas.matmul*: cuBLASLt on the device's stream, descriptors and
// algorithm cached per problem.
//
// cuBLASLt is column-major and Kiln's tensors row-major, so each call is the
// transposed product: Out^T [N, M] = B^T [N, K] x A^T [K, M], where the
// row-major buffers of B, A and Out are, read column-major, exactly B^T, A^T
// and Out^T (leading dimensions N, K, N); no transpose flags. A per-column
// bias of Out is then cuBLASLt's per-row bias of Out^T (length N), which is
// what its BIAS epilogues add.
#include "kernels/cuda/cublas_matmul.h"

#include <cublasLt.h>

#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "kernels/cuda/cublaslt_api.h"
#include "kernels/kernel_args.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/device_functions.h"

namespace kiln {
namespace kernels {
namespace cuda {

using ::kiln::cuda::CudaDevice;

bool EpilogueHasBias(CublasEpilogue e) {
  return e == CublasEpilogue::kBias || e == CublasEpilogue::kBiasRelu || e == CublasEpilogue::kBiasGelu;
}

const char* CublasMatmulName(CublasEpilogue e) {
  switch (e) {
    case CublasEpilogue::kNone: return "kiln.cublas.matmul";
    case CublasEpilogue::kRelu: return "kiln.cublas.matmul_relu";
    case CublasEpilogue::kGelu: return "kiln.cublas.matmul_gelu";
    case CublasEpilogue::kBias: return "kiln.cublas.matmul_bias";
    case CublasEpilogue::kBiasRelu: return "kiln.cublas.matmul_bias_relu";
    case CublasEpilogue::kBiasGelu: return "kiln.cublas.matmul_bias_gelu";
  }
  return "kiln.cublas.matmul?";
}

Result<CublasMatmulProblem> CheckCublasMatmulArgs(CublasEpilogue e, Span<const Any> args, Tensor* a, Tensor* b,
                                                  Tensor* bias, Tensor* out) {
  const char* fn = CublasMatmulName(e);
  const bool has_bias = EpilogueHasBias(e);
  KILN_RETURN_IF_ERROR(CheckArgCount(fn, args, has_bias ? 4 : 3, has_bias ? "(A, B, Bias, Out)" : "(A, B, Out)"));
  KILN_ASSIGN_OR_RETURN(*a, TensorArg(fn, args, 0, "A"));
  KILN_ASSIGN_OR_RETURN(*b, TensorArg(fn, args, 1, "B"));
  if (has_bias) {
    KILN_ASSIGN_OR_RETURN(*bias, TensorArg(fn, args, 2, "Bias"));
  }
  KILN_ASSIGN_OR_RETURN(*out, TensorArg(fn, args, has_bias ? 3 : 2, "Out"));
  const struct {
    const char* name;
    const Tensor* t;
  } all[] = {{"A", a}, {"B", b}, {"Out", out}, {"Bias", bias}};
  for (const auto& arg : all) {
    if (arg.t == bias && !has_bias) continue;
    KILN_RETURN_IF_ERROR(CheckDType(fn, arg.name, *arg.t, DType::Float32()));
    KILN_RETURN_IF_ERROR(CheckCompact(fn, arg.name, *arg.t));
  }
  if (a->ndim() < 2) {
    return InvalidArgument(StrFormat("%s: A must have rank >= 2 ([..., M, K]), got rank %d (%s)", fn, a->ndim(),
                                     a->TypeString().c_str()));
  }
  if (b->ndim() < 2) {
    return InvalidArgument(StrFormat("%s: B must have rank >= 2 ([K, N] or [batch..., K, N]), got rank %d (%s)", fn,
                                     b->ndim(), b->TypeString().c_str()));
  }
  const std::vector<int64_t>& as = a->shape();
  const std::vector<int64_t>& bs = b->shape();
  CublasMatmulProblem p;
  p.k = as.back();
  p.n = bs.back();
  if (bs[bs.size() - 2] != p.k) {
    return InvalidArgument(StrFormat("%s: A has K=%lld but B has K=%lld", fn, static_cast<long long>(p.k),
                                     static_cast<long long>(bs[bs.size() - 2])));
  }
  std::vector<int64_t> out_shape;
  if (b->ndim() == 2) {
    // One matmul: A's leading dimensions are rows.
    out_shape.assign(as.begin(), as.end() - 1);
    p.m = ShapeNumElements(Span<const int64_t>(as.data(), as.size() - 1));
  } else {
    // A strided batch over B's leading dimensions; A matches them or is one
    // matrix for all.
    if (a->ndim() != 2 && a->ndim() != b->ndim()) {
      return InvalidArgument(StrFormat("%s: a batched B %s needs A of rank 2 or %d, got %s", fn,
                                       b->TypeString().c_str(), b->ndim(), a->TypeString().c_str()));
    }
    for (int i = 0; a->ndim() == b->ndim() && i + 2 < b->ndim(); ++i) {
      if (as[i] != bs[i]) {
        return InvalidArgument(StrFormat("%s: A %s and B %s differ in batch dimension %d (no broadcasting)", fn,
                                         a->TypeString().c_str(), b->TypeString().c_str(), i));
      }
    }
    out_shape.assign(bs.begin(), bs.end() - 2);
    p.m = as[as.size() - 2];
    out_shape.push_back(p.m);
    p.batch = ShapeNumElements(Span<const int64_t>(bs.data(), bs.size() - 2));
    p.a_batch_stride = a->ndim() == 2 ? 0 : p.m * p.k;
    p.b_batch_stride = p.k * p.n;
    p.out_batch_stride = p.m * p.n;
  }
  out_shape.push_back(p.n);
  KILN_RETURN_IF_ERROR(CheckShape(fn, "Out", *out, out_shape));
  if (has_bias) {
    const int64_t bias_shape[] = {p.n};
    KILN_RETURN_IF_ERROR(CheckShape(fn, "Bias", *bias, bias_shape));
  }
  if (p.batch > INT32_MAX) {
    return InvalidArgument(StrFormat("%s: a batch of %lld matmuls; cuBLASLt takes at most %d", fn,
                                     static_cast<long long>(p.batch), INT32_MAX));
  }
  if (p.k == 0 && has_bias && p.m > 0 && p.n > 0 && p.batch > 0) {
    // cuBLASLt refuses an empty sum, and without it there is no kernel here
    // to broadcast the bias.
    return InvalidArgument(StrFormat("%s: K = 0 with a bias is not supported", fn));
  }
  return p;
}

namespace {

constexpr uint64_t kMaxWorkspaceBytes = 32ull << 20;  // what cuBLAS asks for on Hopper
constexpr size_t kMaxPlans = 512;                     // distinct problems cached per binding

// The largest power of two (up to 256) dividing the address: cuBLASLt's
// heuristic assumes 256-byte alignment unless told less, and the VM's
// tensors start at 64-byte boundaries inside larger blocks.
uint32_t Alignment(const void* p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  if (v == 0) return 256;
  uintptr_t low = v & (~v + 1);
  return static_cast<uint32_t>(low > 256 ? 256 : low);
}

cublasLtEpilogue_t LtEpilogue(CublasEpilogue e) {
  switch (e) {
    case CublasEpilogue::kNone: return CUBLASLT_EPILOGUE_DEFAULT;
    case CublasEpilogue::kRelu: return CUBLASLT_EPILOGUE_RELU;
    case CublasEpilogue::kGelu: return CUBLASLT_EPILOGUE_GELU;
    case CublasEpilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case CublasEpilogue::kBiasRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case CublasEpilogue::kBiasGelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// The descriptors of one problem and the algorithm the heuristic chose.
struct Plan {
  explicit Plan(const CublasLtApi* a) : api(a) {}
  ~Plan() {
    if (pref) api->cublasLtMatmulPreferenceDestroy(pref);
    if (lt_out) api->cublasLtMatrixLayoutDestroy(lt_out);
    if (lt_a) api->cublasLtMatrixLayoutDestroy(lt_a);
    if (lt_b) api->cublasLtMatrixLayoutDestroy(lt_b);
    if (desc) api->cublasLtMatmulDescDestroy(desc);
  }
  const CublasLtApi* api;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t lt_b = nullptr;    // cuBLASLt's A: the B tensor read as B^T [N, K]
  cublasLtMatrixLayout_t lt_a = nullptr;    // cuBLASLt's B: the A tensor read as A^T [K, M]
  cublasLtMatrixLayout_t lt_out = nullptr;  // C and D: Out^T [N, M]
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;
};

// (batch, m, k, n, A shared, alignments of A, B, Out).
using PlanKey = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, uint32_t, uint32_t, uint32_t>;

class Binding {
 public:
  Binding(const CublasLtApi* api, CudaDevice* device, CublasEpilogue e, bool tf32, cublasLtHandle_t handle)
      : api_(api), device_(device), epilogue_(e), tf32_(tf32), handle_(handle) {}
  ~Binding() {
    plans_.clear();
    if (device_->MakeCurrent().ok()) api_->cublasLtDestroy(handle_);
  }

  Status Call(Span<const Any> args, Any* ret) {
    *ret = Any();
    const char* fn = CublasMatmulName(epilogue_);
    Tensor a, b, bias, out;
    KILN_ASSIGN_OR_RETURN(CublasMatmulProblem p, CheckCublasMatmulArgs(epilogue_, args, &a, &b, &bias, &out));
    if (p.batch == 0 || p.m == 0 || p.n == 0) return Status::Ok();
    KILN_RETURN_IF_ERROR(device_->MakeCurrent());
    if (p.k == 0) {  // an empty sum: zeros, and relu(0) = gelu(0) = 0 (a bias was refused above)
      return device_->Memset(reinterpret_cast<uint64_t>(out.raw_data()), 0, out.NumBytes());
    }
    std::lock_guard<std::mutex> lock(mu_);
    PlanKey key{p.batch, p.m, p.k, p.n, p.a_batch_stride == 0 && p.batch > 1, Alignment(a.raw_data()),
                Alignment(b.raw_data()), Alignment(out.raw_data())};
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      if (plans_.size() >= kMaxPlans) plans_.clear();  // symbolic shapes without end: start over
      Result<std::unique_ptr<Plan>> plan = MakePlan(p, key);
      if (!plan.ok()) return plan.TakeStatus().Annotate(fn);
      it = plans_.emplace(key, std::move(plan).value()).first;
    }
    const Plan& plan = *it->second;
    if (EpilogueHasBias(epilogue_)) {
      // The pointer is part of the descriptor, read when the call is enqueued.
      const void* ptr = bias.raw_data();
      KILN_CUBLAS_RETURN_IF_ERROR(*api_,
                                  api_->cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                                       &ptr, sizeof(ptr)),
                                  "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    }
    uint64_t workspace = 0;
    if (plan.workspace > 0) {
      KILN_ASSIGN_OR_RETURN(workspace, device_->Allocate(plan.workspace));
    }
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t s = api_->cublasLtMatmul(handle_, plan.desc, &alpha, b.raw_data(), plan.lt_b, a.raw_data(),
                                           plan.lt_a, &beta, out.raw_data(), plan.lt_out, out.raw_data(),
                                           plan.lt_out, &plan.algo, reinterpret_cast<void*>(workspace),
                                           plan.workspace, static_cast<cudaStream_t>(device_->stream()));
    // Stream-ordered: a later allocation on the stream may reuse it.
    if (workspace != 0) device_->Free(workspace);
    if (s != CUBLAS_STATUS_SUCCESS) return CublasCheck(*api_, s, "cublasLtMatmul").Annotate(fn);
    return Status::Ok();
  }

 private:
  Result<std::unique_ptr<Plan>> MakePlan(const CublasMatmulProblem& p, const PlanKey& key) {
    auto plan = std::make_unique<Plan>(api_);
    const CublasLtApi& api = *api_;
    const cublasComputeType_t compute = tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    KILN_CUBLAS_RETURN_IF_ERROR(api, api.cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F),
                                "cublasLtMatmulDescCreate");
    const cublasLtEpilogue_t epilogue = LtEpilogue(epilogue_);
    KILN_CUBLAS_RETURN_IF_ERROR(api,
                                api.cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                                   sizeof(epilogue)),
                                "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    if (EpilogueHasBias(epilogue_)) {
      const int64_t bias_stride = 0;  // one bias for every matmul of a batch
      KILN_CUBLAS_RETURN_IF_ERROR(api,
                                  api.cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                                     &bias_stride, sizeof(bias_stride)),
                                  "cublasLtMatmulDescSetAttribute(BIAS_BATCH_STRIDE)");
    }
    struct {
      cublasLtMatrixLayout_t* layout;
      uint64_t rows, cols;
      int64_t ld, stride;
    } layouts[] = {{&plan->lt_b, static_cast<uint64_t>(p.n), static_cast<uint64_t>(p.k), p.n, p.b_batch_stride},
                   {&plan->lt_a, static_cast<uint64_t>(p.k), static_cast<uint64_t>(p.m), p.k, p.a_batch_stride},
                   {&plan->lt_out, static_cast<uint64_t>(p.n), static_cast<uint64_t>(p.m), p.n, p.out_batch_stride}};
    for (const auto& l : layouts) {
      KILN_CUBLAS_RETURN_IF_ERROR(api, api.cublasLtMatrixLayoutCreate(l.layout, CUDA_R_32F, l.rows, l.cols, l.ld),
                                  "cublasLtMatrixLayoutCreate");
      if (p.batch == 1) continue;
      const int32_t count = static_cast<int32_t>(p.batch);
      KILN_CUBLAS_RETURN_IF_ERROR(api,
                                  api.cublasLtMatrixLayoutSetAttribute(*l.layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                                       &count, sizeof(count)),
                                  "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      KILN_CUBLAS_RETURN_IF_ERROR(
          api,
          api.cublasLtMatrixLayoutSetAttribute(*l.layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &l.stride,
                                               sizeof(l.stride)),
          "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
    }
    KILN_CUBLAS_RETURN_IF_ERROR(api, api.cublasLtMatmulPreferenceCreate(&plan->pref), "cublasLtMatmulPreferenceCreate");
    const uint64_t max_workspace = kMaxWorkspaceBytes;
    KILN_CUBLAS_RETURN_IF_ERROR(api,
                                api.cublasLtMatmulPreferenceSetAttribute(
                                    plan->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                    sizeof(max_workspace)),
                                "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
    // cuBLASLt's A is our B, its B our A; C and D are Out.
    const struct {
      cublasLtMatmulPreferenceAttributes_t attr;
      uint32_t bytes;
    } aligns[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, std::get<6>(key)},
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, std::get<5>(key)},
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, std::get<7>(key)},
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, std::get<7>(key)}};
    for (const auto& al : aligns) {
      KILN_CUBLAS_RETURN_IF_ERROR(
          api, api.cublasLtMatmulPreferenceSetAttribute(plan->pref, al.attr, &al.bytes, sizeof(al.bytes)),
          "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
    }
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    KILN_CUBLAS_RETURN_IF_ERROR(api,
                                api.cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->lt_b, plan->lt_a,
                                                                   plan->lt_out, plan->lt_out, plan->pref, 1, &result,
                                                                   &found),
                                "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      return NotFound(StrFormat("cuBLASLt has no algorithm for %lld x [%lld, %lld] x [%lld, %lld]",
                                static_cast<long long>(p.batch), static_cast<long long>(p.m),
                                static_cast<long long>(p.k), static_cast<long long>(p.k),
                                static_cast<long long>(p.n)));
    }
    plan->algo = result.algo;
    plan->workspace = result.workspaceSize;
    return plan;
  }

  const CublasLtApi* api_;
  CudaDevice* device_;
  const CublasEpilogue epilogue_;
  const bool tf32_;
  cublasLtHandle_t handle_;
  std::mutex mu_;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;  // guarded by mu_
};

bool Tf32FromEnv() {
  const char* v = std::getenv("KILN_CUBLAS_TF32");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace

Result<PackedFunc> BindCublasMatmul(CublasEpilogue e, CudaDevice* device) {
  KILN_ASSIGN_OR_RETURN(const CublasLtApi* api, CublasLt());
  KILN_RETURN_IF_ERROR(device->MakeCurrent());
  cublasLtHandle_t handle = nullptr;
  KILN_CUBLAS_RETURN_IF_ERROR(*api, api->cublasLtCreate(&handle), "cublasLtCreate");
  auto binding = std::make_shared<Binding>(api, device, e, Tf32FromEnv(), handle);
  return PackedFunc([binding](Span<const Any> args, Any* ret) -> Status { return binding->Call(args, ret); });
}

namespace {
#define KILN_REGISTER_CUBLAS_MATMUL(e) \
  KILN_REGISTER_DEVICE_FUNCTION(CublasMatmulName(e), [](CudaDevice* d) { return BindCublasMatmul(e, d); })
KILN_REGISTER_CUBLAS_MATMUL(CublasEpilogue::kNone);
KILN_REGISTER_CUBLAS_MATMUL(CublasEpilogue::kRelu);
KILN_REGISTER_CUBLAS_MATMUL(CublasEpilogue::kGelu);
KILN_REGISTER_CUBLAS_MATMUL(CublasEpilogue::kBias);
KILN_REGISTER_CUBLAS_MATMUL(CublasEpilogue::kBiasRelu);
KILN_REGISTER_CUBLAS_MATMUL(CublasEpilogue::kBiasGelu);
#undef KILN_REGISTER_CUBLAS_MATMUL
}  // namespace

}  // namespace cuda
}  // namespace kernels
}  // namespace kiln
