// kiln.ref.matmul: the reference float32 matmul.
#include <algorithm>
#include <vector>

#include "kernels/kernel_args.h"
#include "kernels/ref_kernels.h"
#include "runtime/registry.h"

namespace kiln {
namespace kernels {

Status RefMatmul(Span<const Any> args, Any* ret) {
  Tensor a, b, out;
  KILN_ASSIGN_OR_RETURN(MatmulDims d, CheckMatmulArgs("kiln.ref.matmul", args, &a, &b, &out));
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  // Sums are accumulated in double: the oracle should be more accurate than the
  // kernels it judges. Each row is summed in a buffer and stored at the end, so
  // the result is right even when Out aliases A (possible when K == N).
  std::vector<double> row(static_cast<size_t>(d.n));
  for (int64_t i = 0; i < d.rows; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    const float* arow = pa + i * d.k;
    // i-k-j order: the inner loop walks B and the row contiguously.
    for (int64_t k = 0; k < d.k; ++k) {
      const double aik = arow[k];
      const float* brow = pb + k * d.n;
      for (int64_t j = 0; j < d.n; ++j) row[j] += aik * brow[j];
    }
    for (int64_t j = 0; j < d.n; ++j) po[i * d.n + j] = static_cast<float>(row[j]);
  }
  return Status::Ok();
}

KILN_REGISTER_GLOBAL("kiln.ref.matmul", RefMatmul);

}  // namespace kernels
}  // namespace kiln
