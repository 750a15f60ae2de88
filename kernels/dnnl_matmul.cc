// kiln.dnnl.matmul through oneDNN's C API, with primitives cached by shape.
#include <cstring>
#include <memory>
#include <tuple>

#include "kernels/dnnl_common.h"
#include "kernels/dnnl_kernels.h"
#include "kernels/dnnl_threads.h"
#include "kernels/kernel_args.h"
#include "runtime/registry.h"

namespace kiln {
namespace kernels {
namespace {

constexpr const char* kFn = "kiln.dnnl.matmul";

// A cached primitive and the memory descriptors it was created for.
struct MatmulPrimitive : DnnlPrimitive {
  dnnl_memory_desc_t a_md, b_md, c_md;
};

// (rows, K, N, threads).
using Key = std::tuple<int64_t, int64_t, int64_t, int>;

DnnlPrimitiveCache<Key, MatmulPrimitive>& Cache() {
  static auto* cache = new DnnlPrimitiveCache<Key, MatmulPrimitive>(kDnnlMatmulCacheCapacity);  // never destroyed
  return *cache;
}

Result<std::shared_ptr<const MatmulPrimitive>> CreatePrimitive(dnnl_engine_t engine, const MatmulDims& d) {
  auto p = std::make_shared<MatmulPrimitive>();
  const dnnl_dims_t a_dims = {d.rows, d.k};
  const dnnl_dims_t b_dims = {d.k, d.n};
  const dnnl_dims_t c_dims = {d.rows, d.n};
  KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->a_md, 2, a_dims, dnnl_f32, dnnl_ab));
  KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->b_md, 2, b_dims, dnnl_f32, dnnl_ab));
  KILN_DNNL_CALL(dnnl_memory_desc_init_by_tag(&p->c_md, 2, c_dims, dnnl_f32, dnnl_ab));
  dnnl_matmul_desc_t desc;
  KILN_DNNL_CALL(dnnl_matmul_desc_init(&desc, &p->a_md, &p->b_md, nullptr, &p->c_md));
  KILN_ASSIGN_OR_RETURN(DnnlAttrGuard attr, DnnlUserScratchpadAttr(kFn));
  dnnl_primitive_desc_t pd = nullptr;
  KILN_DNNL_CALL(dnnl_primitive_desc_create(&pd, &desc, attr.get(), engine, nullptr));
  std::unique_ptr<dnnl_primitive_desc, dnnl_status_t (*)(dnnl_primitive_desc_t)> pd_guard(
      pd, dnnl_primitive_desc_destroy);
  KILN_RETURN_IF_ERROR(DnnlFinishPrimitive(kFn, pd, p.get()));
  return std::shared_ptr<const MatmulPrimitive>(std::move(p));
}

}  // namespace

Status DnnlMatmul(Span<const Any> args, Any* ret) {
  Tensor a, b, out;
  KILN_ASSIGN_OR_RETURN(MatmulDims d, CheckMatmulArgs(kFn, args, &a, &b, &out));
  if (d.rows == 0 || d.n == 0) return Status::Ok();
  if (d.k == 0) {  // an empty sum; oneDNN rejects zero-sized reductions
    std::memset(out.raw_data(), 0, out.NumBytes());
    return Status::Ok();
  }
  // The session's thread count, with Kiln's idle workers parked, for both
  // creating and running the primitive.
  DnnlThreadScope threads;
  KILN_ASSIGN_OR_RETURN(dnnl_engine_t engine, DnnlCpuEngine(kFn));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const MatmulPrimitive> p,
                        Cache().Get(Key{d.rows, d.k, d.n, threads.num_threads()},
                                    [&] { return CreatePrimitive(engine, d); }));
  return DnnlExecute(kFn, engine, *p,
                     {{DNNL_ARG_SRC, &p->a_md, a.raw_data()},
                      {DNNL_ARG_WEIGHTS, &p->b_md, b.raw_data()},
                      {DNNL_ARG_DST, &p->c_md, out.raw_data()}});
}

size_t DnnlMatmulCacheSize() { return Cache().size(); }

KILN_REGISTER_GLOBAL("kiln.dnnl.matmul", DnnlMatmul);

}  // namespace kernels
}  // namespace kiln
