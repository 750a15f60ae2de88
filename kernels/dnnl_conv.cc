// kiln.dnnl.conv2d through oneDNN's C API: NCHW data, OIHW weights (groups as
// goihw), plain layouts in and out so the call needs no reorders; primitives
// are cached by problem.
#include <array>
#include <cstring>
#include <memory>

#include "kernels/dnnl_common.h"
#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_threads.h"
#include "kernels/kernel_args.h"
#include "runtime/registry.h"

namespace kiln {
namespace kernels {
namespace {

constexpr const char* kFn = "kiln.dnnl.conv2d";
constexpr const char* kSignature = "(X, W, Attrs, Out)";

// n, c, h, w, o, kh, kw, the 9 attributes, threads.
using Key = std::array<int64_t, 17>;

struct ConvPrimitive : DnnlPrimitive {
  dnnl_memory_desc_t src_md, wei_md, dst_md;
};

DnnlPrimitiveCache<Key, ConvPrimitive>& Cache() {
  static auto* cache = new DnnlPrimitiveCache<Key, ConvPrimitive>(kDnnlConvCacheCapacity);  // never destroyed
  return *cache;
}

// The problem of one call, checked.
struct ConvProblem {
  int64_t n, c, h, w;    // X
  int64_t o, kh, kw;     // W is [o, c / groups, kh, kw]
  int64_t oh, ow;        // Out is [n, o, oh, ow]
  DnnlConvAttrs a;
};

Result<ConvProblem> CheckArgs(Span<const Any> args, Tensor* x, Tensor* w, Tensor* out) {
  KILN_RETURN_IF_ERROR(CheckArgCount(kFn, args, 4, kSignature));
  KILN_ASSIGN_OR_RETURN(*x, TensorArg(kFn, args, 0, "X"));
  KILN_ASSIGN_OR_RETURN(*w, TensorArg(kFn, args, 1, "W"));
  KILN_ASSIGN_OR_RETURN(Tensor attrs, TensorArg(kFn, args, 2, "Attrs"));
  KILN_ASSIGN_OR_RETURN(*out, TensorArg(kFn, args, 3, "Out"));
  KILN_RETURN_IF_ERROR(CheckDType(kFn, "X", *x, DType::Float32()));
  KILN_RETURN_IF_ERROR(CheckDType(kFn, "W", *w, DType::Float32()));
  KILN_RETURN_IF_ERROR(CheckDType(kFn, "Attrs", attrs, DType::Int64()));
  KILN_RETURN_IF_ERROR(CheckDType(kFn, "Out", *out, DType::Float32()));
  const int64_t attr_shape[] = {kDnnlConvAttrCount};
  KILN_RETURN_IF_ERROR(CheckShape(kFn, "Attrs", attrs, attr_shape));
  KILN_RETURN_IF_ERROR(CheckCompact(kFn, "Attrs", attrs));
  const char* names[] = {"X", "W", "Out"};
  const Tensor* ts[] = {x, w, out};
  for (int i = 0; i < 3; ++i) {
    if (ts[i]->ndim() != 4) {
      return InvalidArgument(StrFormat("%s: %s must have rank 4, got shape %s", kFn, names[i],
                                       ShapeToString(ts[i]->shape()).c_str()));
    }
    KILN_RETURN_IF_ERROR(CheckCompact(kFn, names[i], *ts[i]));
  }
  ConvProblem p;
  std::memcpy(&p.a, attrs.raw_data(), sizeof(p.a));
  const DnnlConvAttrs& a = p.a;
  p.n = x->shape()[0], p.c = x->shape()[1], p.h = x->shape()[2], p.w = x->shape()[3];
  p.o = w->shape()[0], p.kh = w->shape()[2], p.kw = w->shape()[3];
  p.oh = out->shape()[2], p.ow = out->shape()[3];
  if (a.stride_h < 1 || a.stride_w < 1 || a.dilation_h < 1 || a.dilation_w < 1 || a.groups < 1 || a.pad_top < 0 ||
      a.pad_left < 0 || a.pad_bottom < 0 || a.pad_right < 0) {
    return InvalidArgument(StrFormat("%s: Attrs must have strides, dilations and groups >= 1 and paddings >= 0", kFn));
  }
  if (p.c % a.groups != 0 || p.o % a.groups != 0 || w->shape()[1] != p.c / a.groups) {
    return InvalidArgument(StrFormat("%s: X has %lld channels and W shape %s, which does not fit groups=%lld", kFn,
                                     static_cast<long long>(p.c), ShapeToString(w->shape()).c_str(),
                                     static_cast<long long>(a.groups)));
  }
  int64_t want_h = (p.h + a.pad_top + a.pad_bottom - (a.dilation_h * (p.kh - 1) + 1)) / a.stride_h + 1;
  int64_t want_w = (p.w + a.pad_left + a.pad_right - (a.dilation_w * (p.kw - 1) + 1)) / a.stride_w + 1;
  const int64_t want[] = {p.n, p.o, want_h, want_w};
  if (want_h < 1 || want_w < 1) {
    return InvalidArgument(StrFormat("%s: the window (%lldx%lld, dilation %lldx%lld) is larger than the padded input", kFn,
                                     static_cast<long long>(p.kh), static_cast<long long>(p.kw),
                                     static_cast<long long>(a.dilation_h), static_cast<long long>(a.dilation_w)));
  }
  KILN_RETURN_IF_ERROR(CheckShape(kFn, "Out", *out, want));
  return p;
}

Result<std::shared_ptr<const ConvPrimitive>> CreatePrimitive(dnnl_engine_t engine, const ConvProblem& q) {
  auto p = std::make_shared<ConvPrimitive>();
  const DnnlConvAttrs& a = q.a;
  const dnnl_dims_t src = {q.n, q.c, q.h, q.w};
  const dnnl_dims_t dst = {q.n, q.o, q.oh, q.ow};
  KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->src_md, 4, src, dnnl_f32, dnnl_nchw));
  KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->dst_md, 4, dst, dnnl_f32, dnnl_nchw));
  if (a.groups == 1) {
    const dnnl_dims_t wei = {q.o, q.c, q.kh, q.kw};
    KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->wei_md, 4, wei, dnnl_f32, dnnl_oihw));
  } else {
    // The same bytes as OIHW, seen as [groups, O/groups, I/groups, KH, KW].
    const dnnl_dims_t wei = {a.groups, q.o / a.groups, q.c / a.groups, q.kh, q.kw};
    KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->wei_md, 5, wei, dnnl_f32, dnnl_goihw));
  }
  const dnnl_dims_t strides = {a.stride_h, a.stride_w};
  const dnnl_dims_t dilates = {a.dilation_h - 1, a.dilation_w - 1};  // oneDNN counts the gaps
  const dnnl_dims_t pad_l = {a.pad_top, a.pad_left};
  const dnnl_dims_t pad_r = {a.pad_bottom, a.pad_right};
  dnnl_convolution_desc_t desc;
  KILN_DNNL_CALL(dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct,
                                                            &p->src_md, &p->wei_md, nullptr, &p->dst_md, strides,
                                                            dilates, pad_l, pad_r));
  KILN_ASSIGN_OR_RETURN(DnnlAttrGuard attr, DnnlUserScratchpadAttr(kFn));
  dnnl_primitive_desc_t pd = nullptr;
  KILN_DNNL_CALL(dnnl_primitive_desc_create(&pd, &desc, attr.get(), engine, nullptr));
  std::unique_ptr<dnnl_primitive_desc, dnnl_status_t (*)(dnnl_primitive_desc_t)> pd_guard(
      pd, dnnl_primitive_desc_destroy);
  KILN_RETURN_IF_ERROR(DnnlFinishPrimitive(kFn, pd, p.get()));
  return std::shared_ptr<const ConvPrimitive>(std::move(p));
}

}  // namespace

Status DnnlConv2d(Span<const Any> args, Any* ret) {
  Tensor x, w, out;
  KILN_ASSIGN_OR_RETURN(ConvProblem q, CheckArgs(args, &x, &w, &out));
  if (out.NumElements() == 0) return Status::Ok();
  if (q.c == 0 || q.kh == 0 || q.kw == 0) {  // an empty sum; oneDNN rejects zero-sized reductions
    std::memset(out.raw_data(), 0, out.NumBytes());
    return Status::Ok();
  }
  DnnlThreadScope threads;
  KILN_ASSIGN_OR_RETURN(dnnl_engine_t engine, DnnlCpuEngine(kFn));
  const DnnlConvAttrs& a = q.a;
  const Key key = {q.n,         q.c,          q.h,           q.w,          q.o,          q.kh,
                   q.kw,        a.stride_h,   a.stride_w,    a.pad_top,    a.pad_left,   a.pad_bottom,
                   a.pad_right, a.dilation_h, a.dilation_w,  a.groups,     threads.num_threads()};
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ConvPrimitive> p,
                        Cache().Get(key, [&] { return CreatePrimitive(engine, q); }));
  return DnnlExecute(kFn, engine, *p,
                     {{DNNL_ARG_SRC, &p->src_md, x.raw_data()},
                      {DNNL_ARG_WEIGHTS, &p->wei_md, w.raw_data()},
                      {DNNL_ARG_DST, &p->dst_md, out.raw_data()}});
}

size_t DnnlConvCacheSize() { return Cache().size(); }

KILN_REGISTER_GLOBAL("kiln.dnnl.conv2d", DnnlConv2d);

}  // namespace kernels
}  // namespace kiln
