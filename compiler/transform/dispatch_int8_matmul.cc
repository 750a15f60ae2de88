#include "compiler/transform/dispatch_int8_matmul.h"

#include <string>
#include <utility>
#include <vector>

#include "compiler/transform/conv_rewrite_util.h"
#include "kernels/int8_pack.h"

namespace kiln {
namespace transform {
namespace {

bool Is8Bit(DType t) { return t == DType::UInt8() || t == DType::Int8(); }

// B [K, N] and its zero point (1 or N elements) in the packed kernel's
// layout: Bp and Bterms (see the header). False when either is not a
// constant of the form the kernel takes.
bool PackB(const ir::ConstantExpr* b, const ir::ConstantExpr* zb, Tensor* bp, Tensor* terms) {
  if (!b || !zb || b->data.ndim() != 2 || !Is8Bit(b->data.dtype())) return false;
  if (zb->data.dtype() != b->data.dtype() || zb->data.ndim() > 1) return false;
  const int64_t k = b->data.shape()[0], n = b->data.shape()[1];
  const int64_t count = zb->data.NumElements();
  if (count != 1 && count != n) return false;
  const bool b_unsigned = b->data.dtype() == DType::UInt8();
  const int64_t width = kernels::Int8Blocks(n) * kernels::kInt8BlockN;
  const int64_t bp_shape[] = {kernels::Int8Blocks(n), kernels::Int8K4(k), 64};
  const int64_t terms_shape[] = {2, width};
  Result<Tensor> p = Tensor::Empty(bp_shape, DType::Int8());
  Result<Tensor> t = Tensor::Empty(terms_shape, DType::Int32());
  if (!p.ok() || !t.ok()) return false;
  int32_t* tv = t->data<int32_t>();
  kernels::PackInt8B(b->data.raw_data(), b_unsigned, k, n, p->data<int8_t>(), tv);
  for (int64_t j = 0; j < width; ++j) {
    if (j >= n) {
      tv[width + j] = 0;
      continue;
    }
    const int64_t at = count == 1 ? 0 : j;
    const int32_t z = b_unsigned ? int32_t{zb->data.data<uint8_t>()[at]} : int32_t{zb->data.data<int8_t>()[at]};
    tv[width + j] = z - (b_unsigned ? 128 : 0);
  }
  *bp = std::move(*p);
  *terms = std::move(*t);
  return true;
}

class Int8MatmulDispatcher : public ConvBindingRewriter {
 public:
  explicit Int8MatmulDispatcher(ir::IRModule*) : ConvBindingRewriter("relax.matmul_integer", 4) {}

 private:
  bool RewriteConv(const ir::CallExpr& call, const ir::Binding& b, bool, std::vector<ir::Binding>* out) override {
    const auto* y = ir::SInfoAs<ir::TensorSInfo>(call.struct_info);
    if (!y || !y->has_shape) return false;
    Tensor bp, terms;
    std::vector<ir::Expr> args;
    const char* fn;
    if (PackB(ConstantOf(call.args[1]), ConstantOf(call.args[3]), &bp, &terms)) {
      fn = "kiln.int8.matmul_integer_packed";
      args = {call.args[0], ir::MakeConstant(bp), ir::MakeConstant(terms), call.args[2]};
    } else {
      fn = "kiln.int8.matmul_integer";
      args = {call.args[0], call.args[1], call.args[2], call.args[3]};
    }
    ir::Expr callee = std::make_shared<ir::ExternFuncExpr>(fn);
    callee->struct_info = std::make_shared<ir::ObjectSInfo>();
    std::vector<ir::StructInfo> arg_sinfo;
    for (const auto& a : args) arg_sinfo.push_back(a->struct_info);
    auto tuple = std::make_shared<ir::TupleExpr>(std::move(args));
    tuple->struct_info = std::make_shared<ir::TupleSInfo>(std::move(arg_sinfo));
    ir::Expr packed = ir::MakeOpCall("relax.call_dps_packed", {callee, tuple}, {}, {call.struct_info});
    out->push_back(ir::Binding{b.var, packed, nullptr, b.span});
    return true;
  }
};

}  // namespace

Result<ir::IRModule> DispatchInt8Matmul(const ir::IRModule& mod) {
  return RewriteRelaxFunctions<Int8MatmulDispatcher>(mod);
}

}  // namespace transform
}  // namespace kiln
