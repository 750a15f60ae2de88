// kiln.cublas.matmul*. Without a GPU: the argument checks (each message
// fired), cuBLASLt's loading and its errors, the registrations. With a GPU
// (skipped otherwise; KILN_REQUIRE_GPU=1 makes that a failure): every
// variant through CudaGpuLinker::ResolvePacked, as a loaded program calls
// it, against a float64 matmul on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "kernels/cuda/cublas_matmul.h"
#include "kernels/cuda/cublaslt_api.h"
#include "kernels/kernel_test_util.h"
#include "runtime/cuda/device_functions.h"
#include "runtime/cuda/gpu_linker.h"

namespace kiln {
namespace kernels {
namespace cuda {
namespace {

using testing::MakeTensor;
using testing::Zeros;

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

Status Check(CublasEpilogue e, std::vector<Any> args) {
  Tensor a, b, bias, out;
  return CheckCublasMatmulArgs(e, Span<const Any>(args.data(), args.size()), &a, &b, &bias, &out).status();
}

Result<CublasMatmulProblem> Problem(CublasEpilogue e, std::vector<Any> args) {
  Tensor a, b, bias, out;
  return CheckCublasMatmulArgs(e, Span<const Any>(args.data(), args.size()), &a, &b, &bias, &out);
}

void ExpectError(const Status& s, const std::string& message) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.message(), message);
}

const CublasEpilogue kAll[] = {CublasEpilogue::kNone, CublasEpilogue::kRelu,     CublasEpilogue::kGelu,
                               CublasEpilogue::kBias, CublasEpilogue::kBiasRelu, CublasEpilogue::kBiasGelu};

TEST(CublasMatmulArgs, OneMatmulFlattensTheRowsOfA) {
  auto p = Problem(CublasEpilogue::kNone, {Zeros({2, 3, 5}), Zeros({5, 7}), Zeros({2, 3, 7})});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->batch, 1);
  EXPECT_EQ(p->m, 6);
  EXPECT_EQ(p->k, 5);
  EXPECT_EQ(p->n, 7);
}

TEST(CublasMatmulArgs, BatchedBIsAStridedBatch) {
  auto p = Problem(CublasEpilogue::kBias, {Zeros({2, 4, 3, 5}), Zeros({2, 4, 5, 7}), Zeros({7}), Zeros({2, 4, 3, 7})});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->batch, 8);
  EXPECT_EQ(p->m, 3);
  EXPECT_EQ(p->a_batch_stride, 15);
  EXPECT_EQ(p->b_batch_stride, 35);
  EXPECT_EQ(p->out_batch_stride, 21);
  // A rank-2 A is shared by every matmul of the batch.
  auto shared = Problem(CublasEpilogue::kNone, {Zeros({3, 5}), Zeros({4, 5, 7}), Zeros({4, 3, 7})});
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(shared->batch, 4);
  EXPECT_EQ(shared->a_batch_stride, 0);
}

TEST(CublasMatmulArgs, EveryMistakeIsNamed) {
  const CublasEpilogue kNone = CublasEpilogue::kNone, kBias = CublasEpilogue::kBias;
  ExpectError(Check(kNone, {Zeros({2, 3}), Zeros({3, 4})}),
              "kiln.cublas.matmul: expected 3 arguments (A, B, Out), got 2");
  ExpectError(Check(kBias, {Zeros({2, 3}), Zeros({3, 4}), Zeros({2, 4})}),
              "kiln.cublas.matmul_bias: expected 4 arguments (A, B, Bias, Out), got 3");
  ExpectError(Check(kNone, {Any(int64_t{1}), Zeros({3, 4}), Zeros({2, 4})}),
              "kiln.cublas.matmul: argument 0 (A) must be a tensor, got " + Any(int64_t{1}).Describe());
  ExpectError(Check(kNone, {Zeros({2, 3}), Zeros({3, 4}, DType::Int32()), Zeros({2, 4})}),
              "kiln.cublas.matmul: B has dtype int32, expected float32");
  Tensor strided = Zeros({2, 3});
  testing::SetStrides(strided, {1, 2});
  ExpectError(Check(kNone, {strided, Zeros({3, 4}), Zeros({2, 4})}),
              "kiln.cublas.matmul: A must be compact row-major, got shape [2, 3] with strides [1, 2]");
  ExpectError(Check(kNone, {Zeros({3}), Zeros({3, 4}), Zeros({4})}),
              "kiln.cublas.matmul: A must have rank >= 2 ([..., M, K]), got rank 1 (float32[3])");
  ExpectError(Check(kNone, {Zeros({2, 3}), Zeros({3}), Zeros({2})}),
              "kiln.cublas.matmul: B must have rank >= 2 ([K, N] or [batch..., K, N]), got rank 1 (float32[3])");
  ExpectError(Check(kNone, {Zeros({2, 3}), Zeros({4, 5}), Zeros({2, 5})}), "kiln.cublas.matmul: A has K=3 but B has K=4");
  ExpectError(Check(kNone, {Zeros({2, 2, 3}), Zeros({2, 2, 3, 4}), Zeros({2, 2, 2, 4})}),
              "kiln.cublas.matmul: a batched B float32[2, 2, 3, 4] needs A of rank 2 or 4, got float32[2, 2, 3]");
  ExpectError(Check(kNone, {Zeros({3, 2, 3}), Zeros({2, 3, 4}), Zeros({2, 2, 4})}),
              "kiln.cublas.matmul: A float32[3, 2, 3] and B float32[2, 3, 4] differ in batch dimension 0 (no "
              "broadcasting)");
  ExpectError(Check(kNone, {Zeros({2, 3}), Zeros({3, 4}), Zeros({2, 5})}),
              "kiln.cublas.matmul: Out has shape [2, 5], expected [2, 4]");
  ExpectError(Check(kBias, {Zeros({2, 3}), Zeros({3, 4}), Zeros({3}), Zeros({2, 4})}),
              "kiln.cublas.matmul_bias: Bias has shape [3], expected [4]");
  ExpectError(Check(kBias, {Zeros({2, 0}), Zeros({0, 4}), Zeros({4}), Zeros({2, 4})}),
              "kiln.cublas.matmul_bias: K = 0 with a bias is not supported");
  // Without a bias an empty sum is fine (zeros), and so is an empty output.
  EXPECT_TRUE(Check(kNone, {Zeros({2, 0}), Zeros({0, 4}), Zeros({2, 4})}).ok());
  EXPECT_TRUE(Check(kBias, {Zeros({0, 0}), Zeros({0, 4}), Zeros({4}), Zeros({0, 4})}).ok());
}

TEST(CublasMatmul, EveryVariantIsADeviceFunction) {
  std::vector<std::string> names = ::kiln::cuda::ListDeviceFunctions();
  for (CublasEpilogue e : kAll) {
    EXPECT_NE(std::find(names.begin(), names.end(), CublasMatmulName(e)), names.end()) << CublasMatmulName(e);
  }
  EXPECT_EQ(::kiln::cuda::MakeDeviceFunction("kiln.cublas.no_such", nullptr).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(::kiln::cuda::RegisterDeviceFunction("kiln.cublas.matmul", [](::kiln::cuda::CudaDevice*) {
                 return Result<PackedFunc>(PackedFunc());
               }).ok());
}

TEST(CublasLoad, AMissingLibraryNamesEveryNameTried) {
  Result<std::unique_ptr<CublasLtApi>> r = OpenCublasLt({"libkiln-no-such-cublaslt.so.13", "libkiln-no-such-cublaslt.so"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(StartsWith(r.status().message(), "cuBLAS not found: libkiln-no-such-cublaslt.so.13: ")) << r.status().message();
  EXPECT_NE(r.status().message().find("; libkiln-no-such-cublaslt.so: "), std::string::npos) << r.status().message();
}

TEST(CublasLoad, ALibraryThatIsNotCublasLtIsRefused) {
  Result<std::unique_ptr<CublasLtApi>> r = OpenCublasLt({"libm.so.6"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "cuBLAS not found: libm.so.6 is not cuBLASLt (no cublasLtGetVersion in it)");
}

TEST(CublasLoad, TheRealLibraryResolvesEveryEntryPoint) {
  // Needs no GPU: cuBLASLt loads without a driver.
  Result<std::unique_ptr<CublasLtApi>> r = OpenCublasLt({"libcublasLt.so.13", "libcublasLt.so"});
  if (!r.ok()) GTEST_SKIP() << r.status().ToString();
  EXPECT_GE((*r)->version, 130000u) << (*r)->library;
  EXPECT_NE((*r)->cublasLtGetStatusName, nullptr);
  EXPECT_EQ(CublasErrorText(**r, CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul").rfind("cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED", 0), 0u);
  std::printf("%s: cuBLASLt %zu\n", (*r)->library.c_str(), (*r)->version);
}

// ctest's kiln_cublas_no_library_test sets KILN_CUBLASLT to a library that
// does not exist: the process's table says so.
TEST(NoCublas, TheProcessTableReportsTheMissingLibrary) {
  const char* env = std::getenv("KILN_CUBLASLT");
  if (env == nullptr || *env == '\0') GTEST_SKIP() << "set KILN_CUBLASLT to a missing library (ctest does)";
  EXPECT_EQ(CublasLtLibraryNames(), std::vector<std::string>{env});
  Result<const CublasLtApi*> api = CublasLt();
  if (api.ok()) GTEST_SKIP() << "KILN_CUBLASLT names a cuBLASLt that loads: " << env;
  EXPECT_TRUE(StartsWith(api.status().message(), "cuBLAS not found: " + std::string(env) + ": ")) << api.status().message();
}

// ---- on a GPU ----

bool RequireGpu() {
  const char* env = std::getenv("KILN_REQUIRE_GPU");
  return env != nullptr && std::string(env) == "1";
}

#define OPEN_LINKER_OR_SKIP(var)                                                               \
  auto var##_result = ::kiln::cuda::CudaGpuLinker::Create(0);                                  \
  if (!var##_result.ok()) {                                                                    \
    if (RequireGpu()) FAIL() << "KILN_REQUIRE_GPU=1 but " << var##_result.status().ToString(); \
    GTEST_SKIP() << "no GPU here: " << var##_result.status().ToString();                       \
  }                                                                                            \
  std::shared_ptr<::kiln::cuda::CudaGpuLinker> var = std::move(var##_result).value()

double GeluTanh(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double GeluErf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

// The expected Out of `e` in float64, with gelu as `gelu`.
std::vector<double> Reference(CublasEpilogue e, const Tensor& a, const Tensor& b, const Tensor* bias,
                              const CublasMatmulProblem& p, double (*gelu)(double)) {
  std::vector<double> out(static_cast<size_t>(p.batch * p.m * p.n));
  const float* A = a.data<float>();
  const float* B = b.data<float>();
  for (int64_t q = 0; q < p.batch; ++q)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < p.k; ++l)
          s += double(A[q * p.a_batch_stride + i * p.k + l]) * B[q * p.b_batch_stride + l * p.n + j];
        if (EpilogueHasBias(e)) s += bias->data<float>()[j];
        if (e == CublasEpilogue::kRelu || e == CublasEpilogue::kBiasRelu) s = std::max(s, 0.0);
        if (e == CublasEpilogue::kGelu || e == CublasEpilogue::kBiasGelu) s = gelu(s);
        out[static_cast<size_t>(q * p.out_batch_stride + i * p.n + j)] = s;
      }
  return out;
}

Tensor Random(std::vector<int64_t> shape, uint32_t seed, float scale) {
  Tensor t = testing::RandomTensor(shape, seed);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] *= scale;
  return t;
}

// `host` copied into device memory `offset_floats` past a 256-byte
// boundary (to exercise the alignments the heuristic is told).
Tensor OnDevice(::kiln::cuda::CudaGpuLinker& linker, const Tensor& host, int offset_floats) {
  Allocator* alloc = linker.allocator().get();
  size_t bytes = host.NumBytes() + 256;
  void* block = alloc->Allocate(bytes, 256);
  KILN_CHECK(block != nullptr, "device allocation of %zu bytes failed", bytes);
  std::shared_ptr<void> owner(block, [keep = linker.allocator()](void* p) { keep->Free(p); });
  char* p = static_cast<char*>(block) + 4 * offset_floats;
  Status s = linker.memory()->CopyFromHost(p, host.raw_data(), host.NumBytes());
  KILN_CHECK(s.ok(), "copying to the device: %s", s.ToString().c_str());
  Tensor t = Tensor::Borrow(p, host.shape(), host.dtype(), owner);
  t.object()->dl.device = linker.memory()->device();
  return t;
}

// The values of a device tensor on the host (waits for the stream).
Tensor OnHost(::kiln::cuda::CudaGpuLinker& linker, const Tensor& device) {
  Result<Tensor> t = linker.ToHost(device);
  KILN_CHECK(t.ok(), "copying to the host: %s", t.status().ToString().c_str());
  return std::move(t).value();
}

struct Case {
  std::vector<int64_t> a, b;
  int offset;  // floats past 256-byte alignment, for every tensor
};

TEST(CublasMatmulOnGpu, EveryVariantMatchesTheHost) {
  OPEN_LINKER_OR_SKIP(linker);
  const Case cases[] = {
      {{1, 784}, {784, 128}, 0},   {{64, 128}, {128, 10}, 0},       {{3, 5, 17}, {17, 9}, 1},
      {{4, 33, 65}, {4, 65, 17}, 0}, {{33, 65}, {4, 65, 17}, 2},    {{2, 3, 7, 16}, {2, 3, 16, 5}, 3},
      {{512, 512}, {512, 512}, 0}, {{1, 1}, {1, 1}, 1},
  };
  uint32_t seed = 1;
  for (CublasEpilogue e : kAll) {
    Result<PackedFunc> fn = linker->ResolvePacked(CublasMatmulName(e));
    ASSERT_TRUE(fn.ok()) << fn.status().ToString();
    for (const Case& c : cases) {
      // Products of magnitude ~1 to 4, where tanh-gelu and erf-gelu differ by up to 4e-4.
      float scale = 2.0f / std::sqrt(static_cast<float>(c.a.back()));
      Tensor a = Random(c.a, seed++, scale), b = Random(c.b, seed++, 2.0f), bias = Random({c.b.back()}, seed++, 1.0f);
      Tensor out_host = Zeros({1});
      std::vector<Any> host_args = {a, b};
      if (EpilogueHasBias(e)) host_args.push_back(bias);
      // The output shape from the host-side check (with a placeholder Out).
      std::vector<int64_t> out_shape = c.b.size() == 2 ? c.a : c.b;
      if (c.b.size() != 2) out_shape[out_shape.size() - 2] = c.a[c.a.size() - 2];
      out_shape.back() = c.b.back();
      out_host = Zeros(out_shape);
      host_args.push_back(out_host);
      Result<CublasMatmulProblem> p = Problem(e, host_args);
      ASSERT_TRUE(p.ok()) << p.status().ToString();

      std::vector<Any> args = {OnDevice(*linker, a, c.offset), OnDevice(*linker, b, c.offset)};
      // The bias stays 256-byte aligned: cuBLASLt takes no alignment hint
      // for it (the VM's tensors are 64-byte aligned anyway).
      if (EpilogueHasBias(e)) args.push_back(OnDevice(*linker, bias, 0));
      Tensor out = OnDevice(*linker, out_host, c.offset);
      args.push_back(out);
      Any ret;
      Status s = (*fn)(Span<const Any>(args.data(), args.size()), &ret);
      ASSERT_TRUE(s.ok()) << CublasMatmulName(e) << ": " << s.ToString();
      ASSERT_TRUE(linker->Synchronize().ok());
      Tensor got_host = OnHost(*linker, out);
      std::vector<double> want = Reference(e, a, b, &bias, *p, GeluTanh);
      std::vector<double> want_erf = Reference(e, a, b, &bias, *p, GeluErf);
      // Plain float32 math: within 1e-4 + 1e-4 |want|. gelu: cuBLASLt may
      // evaluate tanh approximately, so 1e-3 + 1e-4 |want|, and it must be
      // nearer the tanh form than the erf form (they differ by up to 4.7e-4
      // around |x| = 2.7), since the compiler sends only gelu_tanh to it.
      const bool gelu = e == CublasEpilogue::kGelu || e == CublasEpilogue::kBiasGelu;
      const double atol = gelu ? 1e-3 : 1e-4;
      double worst = 0, max_tanh = 0, max_erf = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        double got = got_host.data<float>()[i];
        worst = std::max(worst, std::fabs(got - want[i]) / (atol + 1e-4 * std::fabs(want[i])));
        max_tanh = std::max(max_tanh, std::fabs(got - want[i]));
        max_erf = std::max(max_erf, std::fabs(got - want_erf[i]));
      }
      EXPECT_LE(worst, 1.0) << CublasMatmulName(e) << " A " << ShapeToString(c.a) << " B " << ShapeToString(c.b)
                            << ": max |d| " << max_tanh << (gelu ? " (gelu in tanh form)" : "");
      if (gelu && c.a.back() == 512) {  // the largest output: many values near |x| = 2.7
        std::printf("%s 512^3: max |d| to tanh-gelu %.3g, to erf-gelu %.3g\n", CublasMatmulName(e), max_tanh, max_erf);
        EXPECT_LT(max_tanh, max_erf) << CublasMatmulName(e) << " is nearer exact (erf) gelu than gelu_tanh";
      }
    }
  }
}

TEST(CublasMatmulOnGpu, EmptyProblems) {
  OPEN_LINKER_OR_SKIP(linker);
  Result<PackedFunc> fn = linker->ResolvePacked("kiln.cublas.matmul");
  ASSERT_TRUE(fn.ok()) << fn.status().ToString();
  Tensor out = OnDevice(*linker, MakeTensor({2, 3}, std::vector<float>{1, 1, 1, 1, 1, 1}), 0);
  std::vector<Any> args = {OnDevice(*linker, Zeros({2, 0}), 0), OnDevice(*linker, Zeros({0, 3}), 0), out};
  Any ret;
  ASSERT_TRUE((*fn)(Span<const Any>(args.data(), args.size()), &ret).ok());
  ASSERT_TRUE(linker->Synchronize().ok());
  Tensor host = OnHost(*linker, out);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(host.data<float>()[i], 0.0f);
}

}  // namespace
}  // namespace cuda
}  // namespace kernels
}  // namespace kiln
