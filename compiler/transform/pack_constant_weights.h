// Pass: pack-constant-weights — give constant convolution weights the
// blocked layout the generated kernel reads (TVM's AlterOpLayout idea).
//
//   y = R.nn.conv2d(x, W)             W: a constant (O, I, KH, KW), float32
// becomes, with b = tir::kConvWeightBlock (the micro-kernel's output rows),
//   pw = R.call_tir(cls.pack_weight_oihw<b>o, (W,), out_sinfo=R.Tensor((O / b, I, KH, KW, b)))
//   y  = R.nn.conv2d(x, pw, ..., kernel_layout="OIHW<b>o")
// with pack_weight_oihw<b>o a PrimFunc added to the module (one per weight
// shape): pw[ob, i, ky, kx, l] = W[ob * b + l, i, ky, kx]. fold-constant,
// which runs next, evaluates that call (it runs call_tir on constants), so
// the packed weight is computed once at compile time, and the conv schedule
// reads the b weights of one tap from b * 4 contiguous bytes instead of from
// b rows C * KH * KW * 4 bytes apart. When nothing folds it, the call runs
// per call and the result is the same.
//
// Rewritten: conv2d calls whose weight is a constant (directly, or a
// variable bound to one in the same function) with the default layouts
// (data and out NCHW, kernel OIHW), float32 data and weight, no out_dtype,
// static weight shape, data channels static, and output channels per group
// a multiple of b; data static but for its batch (the static kernel, image
// by image) or of symbolic height or width (the symbolic conv schedule),
// not one output row of symbolic width (the 1-D dot schedule: OIHW only).
// Anything else (weights that are inputs, depthwise, NHWC ...) is left alone.
//
// Pre: normalized and flattened (A-normal form); bind-params ran.
// Post: normalized. Run before fold-constant. No failures of its own
// (an internal error building the packing kernel is returned).
#ifndef KILN_COMPILER_TRANSFORM_PACK_CONSTANT_WEIGHTS_H_
#define KILN_COMPILER_TRANSFORM_PACK_CONSTANT_WEIGHTS_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> PackConstantWeights(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_PACK_CONSTANT_WEIGHTS_H_
