// Pass: combine-shared-matmuls — matmuls of one constant weight whose
// inputs do not depend on each other become one matmul over the stacked
// inputs. Each small product streams the whole weight from memory; the
// combined one reads it once for all of them.
//
// The case it is for: a recurrent network unrolled by its exporter (torch's
// LSTM cells in captcha_crnn): at every step the input projection
// x_t @ W_ih is its own Gemm of one row, so the 6.5 MiB weight was read 20
// times per direction. The inputs x_t come from the convolutional part, not
// from the recurrence, so all 20 rows can be multiplied at once.
//
//   y_i = R.matmul(x_i, W)       i = 1..n, x_i all of shape (d0, .., K),
//                                W the same constant (K, N)
// becomes
//   s  = R.concat((expand_dims(x_1, 0), .., expand_dims(x_n, 0)), axis=0)
//   s2 = R.reshape(s, (n * d0 * .., K))
//   p  = R.matmul(s2, W)
//   p3 = R.reshape(p, (n, d0, .., N))
//   y_i = R.take(p3, i - 1, axis=0)
// Inside one dataflow block only. Members are taken in order: a matmul joins
// the group when its input depends on no member already in it (so the
// recurrent product h_t @ W_hh, whose input comes from the step before,
// stays alone). The bindings that the later members' inputs need are moved
// up before the combined matmul (dataflow blocks are pure; these do not
// depend on any member), the others keep their order.
//
// "The same constant": one constant node, or constants of equal dtype, shape
// and bytes (the importer folds each step's transposed weight separately).
// Inputs may have symbolic dimensions (a symbolic batch); all members'
// shapes must be structurally equal. Float32 only.
//
// Pre: normalized, A-normal form, constants folded. Post: normalized.
#ifndef KILN_COMPILER_TRANSFORM_COMBINE_SHARED_MATMULS_H_
#define KILN_COMPILER_TRANSFORM_COMBINE_SHARED_MATMULS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

// Groups of fewer members than this are left alone.
constexpr int kMinCombinedMatmuls = 2;

Result<ir::IRModule> CombineSharedMatmuls(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_COMBINE_SHARED_MATMULS_H_
