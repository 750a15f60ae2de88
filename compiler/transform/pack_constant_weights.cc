#include "compiler/transform/pack_constant_weights.h"

#include <limits>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>

#include "compiler/ir/op_pattern.h"
#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/te_builder.h"
#include "compiler/tir/conv_batch_peel.h"
#include "compiler/tir/conv_channel_lanes.h"
#include "compiler/tir/conv_schedule.h"
#include "compiler/transform/conv_rewrite_util.h"
#include "compiler/transform/expr_mutator.h"

namespace kiln {
namespace transform {
namespace {

// `v`, or 0 where it is subnormal (|v| < FLT_MIN). Trained weights can be
// full of them (PP-OCRv4's squeeze-excitation 1 x 1 convolutions: 14781 of
// 120 x 480 below 1e-20, down to 1e-44), and every FMA that reads one takes
// a microcode assist: that 480 -> 120 convolution on a 1 x 1 plane took
// 600 us in the model against 19 us with random weights (kernel profile,
// 1 thread). A subnormal weight changes no product by more than FLT_MIN
// times the input, below float32's resolution of any normal sum.
ir::PrimExpr FlushSubnormal(const ir::PrimExpr& v) {
  using relax::elem::Bin;
  ir::PrimExpr tiny = relax::elem::Const(DType::Float32(), std::numeric_limits<float>::min());
  ir::PrimExpr neg_tiny = relax::elem::Const(DType::Float32(), -std::numeric_limits<float>::min());
  ir::PrimExpr sub = Bin(ir::TirKind::kAnd, Bin(ir::TirKind::kLT, v, tiny), Bin(ir::TirKind::kGT, v, neg_tiny));
  return relax::elem::Select(sub, relax::elem::Const(DType::Float32(), 0.0), v);
}

// The PrimFunc W[O, I, KH, KW] -> P[O / b, I, KH, KW, b],
// P[ob, i, ky, kx, l] = W[ob * b + l, i, ky, kx], subnormals flushed to 0.
Result<ir::PrimFunc> PackingKernel(const std::string& name, const std::vector<int64_t>& w, int64_t b) {
  te::FuncBuilder fb(name);
  auto dims = [](const std::vector<int64_t>& v) {
    std::vector<ir::PrimExpr> out;
    for (int64_t d : v) out.push_back(ir::PrimExpr(d));
    return out;
  };
  te::Tensor in = fb.Input("W", dims(w), DType::Float32());
  te::Tensor out = fb.Compute("W_packed", dims({w[0] / b, w[1], w[2], w[3], b}), DType::Float32(),
                              [&](const te::Indices& i) {
                                ir::PrimExpr v = in({i[0] * ir::PrimExpr(b) + i[4], i[1], i[2], i[3]});
                                return FlushSubnormal(v);
                              });
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, fb.Build({out}));
  auto nf = std::make_shared<ir::PrimFuncNode>(*f);
  nf->attrs[ir::kOpPatternAttr].kind = ir::AttrValue::Kind::kInt;
  nf->attrs[ir::kOpPatternAttr].i = static_cast<int64_t>(ir::OpPattern::kInjective);
  return ir::PrimFunc(nf);
}

// Whether the schedule that takes a convolution of data `e` (float32 NCHW)
// and output `out` reads a packed weight. Static but for the batch: tir::
// ScheduleConvsPeelingBatch schedules it image by image with the static
// kernel, which does -- unless the peel leaves its window to the symbolic
// schedule (tir::LargeWindowKeepsSymbolic of `channels` per group and
// `taps`; left in OIHW as before). A symbolic height or width: the symbolic schedule
// (conv_symbolic_schedule.h), whose tiles read the weight of 8 output
// channels of a tap from one 32-byte block, where OIHW had them C * KH * KW
// floats apart (PP-OCRv4 det at 256 x 320, 1 thread, kernel profile, min of
// 4 alternating runs: its 384 -> 384 pointwise convs on 8 x 10 96.5 -> 89.8
// and 93.9 -> 89.1 us, 192 -> 192 on 16 x 20 about 5 % faster, the model
// 2.6 % faster) -- except one output row of a
// symbolic width, which the 1-D dot schedule (conv_dot_schedule.h) takes
// with an OIHW weight only, and a weight of one block of output channels
// (O == b: the packed nest reads W[0, .., o], which the symbolic matcher
// does not take as W[o / b, .., o % b]; PP-OCR cls's 3 -> 8 stem conv became
// a naive nest, 1.8x the model's time). Static channels either way.
bool ScheduleReadsPacked(const ir::Expr& e, const ir::StructInfo& out, int64_t channels, int64_t taps,
                         int64_t out_channels) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(e->struct_info);
  if (!t || !t->has_shape || !t->has_dtype || t->dtype != DType::Float32() || t->shape.size() != 4) return false;
  if (!relax::ConstDim(t->shape[1])) return false;
  const bool symbolic_plane = !relax::ConstDim(t->shape[2]) || !relax::ConstDim(t->shape[3]);
  if (!symbolic_plane) return relax::ConstDim(t->shape[0]) || !tir::LargeWindowKeepsSymbolic(channels, taps);
  if (out_channels <= tir::kConvWeightBlock) return false;
  const auto* o = ir::SInfoAs<ir::TensorSInfo>(out);
  if (!o || !o->has_shape || o->shape.size() != 4) return false;
  std::optional<int64_t> ho = relax::ConstDim(o->shape[2]);
  return !(ho && *ho == 1 && !relax::ConstDim(o->shape[3]));
}

// Whether the conv of data `e` and output `out` (weight shape `ws`) takes
// the channel-lane kernel by its rule (conv_channel_lanes.h), which reads a
// weight packed in blocks of 16 output channels: static but for the batch
// (which tir::ScheduleConvsPeelingBatch peels; ScheduleReadsPacked has
// checked that it does not keep the conv symbolic).
bool ChannelLanesTake(const ir::Expr& e, const ir::StructInfo& out, const std::vector<int64_t>& ws, int64_t groups) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(e->struct_info);
  const auto* o = ir::SInfoAs<ir::TensorSInfo>(out);
  if (!t || !o || !t->has_shape || !o->has_shape || t->shape.size() != 4 || o->shape.size() != 4) return false;
  for (size_t d = 1; d < 4; ++d)
    if (!relax::ConstDim(t->shape[d]) || !relax::ConstDim(o->shape[d])) return false;
  return tir::ChannelLanesRuleTakes(ws[0], ws[1], ws[2], ws[3], *relax::ConstDim(o->shape[2]),
                                    *relax::ConstDim(o->shape[3]), groups);
}

class Packer : public ConvBindingRewriter {
 public:
  // Packing kernels are added to `mod` (one per weight shape).
  explicit Packer(ir::IRModule* mod)
      : kernels_(mod, "pack_weight_oihw" + std::to_string(tir::kConvWeightBlock) + "o",
                 [](const std::string& name, const std::vector<int64_t>& ws) {
                   return PackingKernel(name, ws, tir::kConvWeightBlock);
                 }),
        lane_kernels_(mod, "pack_weight_oihw" + std::to_string(tir::kChannelLaneBlock) + "o",
                      [](const std::string& name, const std::vector<int64_t>& ws) {
                        return PackingKernel(name, ws, tir::kChannelLaneBlock);
                      }) {}

 private:
  bool RewriteConv(const ir::CallExpr& call, const ir::Binding& b, bool dataflow,
                   std::vector<ir::Binding>* out) override {
    const ir::Expr& w = call.args[1];
    std::vector<int64_t> ws;
    if (!ConstantOf(w) || !StaticF32(w, &ws) || ws.size() != 4 || !ScheduleReadsPacked(call.args[0], b.var->struct_info, ws[1], ws[2] * ws[3], ws[0]))
      return false;
    if (!DefaultConvLayoutsF32(call.attrs)) return false;
    int64_t groups = IntAttr(call.attrs, "groups", 1);
    const bool lanes = ChannelLanesTake(call.args[0], b.var->struct_info, ws, groups);
    const int64_t block = lanes ? tir::kChannelLaneBlock : tir::kConvWeightBlock;
    if (groups <= 0 || ws[0] % groups != 0 || (ws[0] / groups) % block != 0) return false;

    auto emit = [&](ir::Expr value) {
      ir::RVar v = ir::MakeRVar(FreshName("packed"), nullptr, dataflow);
      out->push_back(ir::Binding{v, std::move(value), nullptr, b.span});
      return ir::Expr(v);
    };
    std::vector<int64_t> packed_shape = {ws[0] / block, ws[1], ws[2], ws[3], block};
    Result<ir::Expr> pack = (lanes ? lane_kernels_ : kernels_).Call(w, ws, packed_shape);
    if (!pack.ok()) {
      status = pack.status();
      return false;
    }
    ir::Expr packed = emit(*pack);
    ir::AttrMap attrs = call.attrs;
    ir::AttrValue layout;
    layout.kind = ir::AttrValue::Kind::kString;
    layout.s = "OIHW" + std::to_string(block) + "o";
    attrs["kernel_layout"] = layout;
    ir::Expr conv = ir::MakeOpCall("relax.nn.conv2d", {call.args[0], packed}, attrs, call.sinfo_args);
    out->push_back(ir::Binding{b.var, conv, nullptr, b.span});
    return true;
  }

  PackingKernels kernels_, lane_kernels_;
};

}  // namespace

Result<ir::IRModule> PackConstantWeights(const ir::IRModule& mod) { return RewriteRelaxFunctions<Packer>(mod); }

}  // namespace transform
}  // namespace kiln
