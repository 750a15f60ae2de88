// transform_layout and storage_align: change how a buffer is laid out;
// every access is rewritten, so the computation is the same.
#include <functional>
#include <memory>
#include <unordered_map>

#include "compiler/arith/simplify.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/tree.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

// The buffer named `name` among parameters and allocations, or null.
Buffer FindBuffer(const PrimFunc& f, const std::string& name, bool* is_param) {
  for (const auto& kv : f->buffer_map)
    if (kv.second->name == name) {
      *is_param = true;
      return kv.second;
    }
  *is_param = false;
  for (const auto& s : sched::CollectBlocks(f->body))
    for (const auto& b : As<BlockRealizeNode>(s)->block.alloc_buffers)
      if (b->name == name) return b;
  return nullptr;
}

// Replaces `from` by `to` everywhere (accesses, regions, allocations,
// buffer_map), mapping indices through `index`.
PrimFunc Rebind(const PrimFunc& f, const Buffer& from, const Buffer& to,
                const std::function<std::vector<PrimExpr>(const std::vector<PrimExpr>&)>& index) {
  Stmt body = sched::RewriteExprs(f->body, [&](const PrimExpr& e) -> PrimExpr {
    const auto* l = e.as<BufferLoadNode>();
    if (l && l->buffer == from) return Load(to, index(l->indices));
    return e;
  });
  body = sched::RewriteStmts(body, [&](const Stmt& s) -> Stmt {
    const auto* st = As<BufferStoreNode>(s);
    if (!st || st->buffer != from) return nullptr;
    return sched::RewriteExprs(Store(to, st->value, index(st->indices)), [&](const PrimExpr& e) -> PrimExpr {
      const auto* l = e.as<BufferLoadNode>();
      if (l && l->buffer == from) return Load(to, index(l->indices));
      return e;
    });
  });
  // Allocations and regions, in every block at any depth.
  std::function<Stmt(const Stmt&)> fix = [&](const Stmt& s) -> Stmt {
    const auto* br = As<BlockRealizeNode>(s);
    if (!br) return nullptr;
    Block b = br->block;
    for (auto& a : b.alloc_buffers)
      if (a == from) a = to;
    for (auto* regions : {&b.reads, &b.writes})
      for (auto& r : *regions)
        if (r.buffer == from) r = sched::FullRegion(to);
    b.body = sched::RewriteStmts(b.body, fix);
    if (b.init) b.init = sched::RewriteStmts(b.init, fix);
    return std::make_shared<BlockRealizeNode>(br->iter_values, br->predicate, std::move(b));
  };
  body = sched::RewriteStmts(body, fix);
  auto copy = std::make_shared<PrimFuncNode>(*f);
  copy->body = body;
  for (auto& kv : copy->buffer_map)
    if (kv.second == from) kv.second = to;
  return copy;
}

// Evaluates an integer expression over `env`; false when it has anything else.
bool Eval(const PrimExpr& e, const std::unordered_map<const VarNode*, int64_t>& env, int64_t* out) {
  if (const auto* i = e.as<IntImmNode>()) return *out = i->value, true;
  if (const auto* v = e.as<VarNode>()) {
    auto it = env.find(v);
    if (it == env.end()) return false;
    return *out = it->second, true;
  }
  if (!IsBinary(e->kind())) return false;
  const auto* b = static_cast<const BinaryNode*>(e.get());
  int64_t x, y;
  if (!Eval(b->a, env, &x) || !Eval(b->b, env, &y)) return false;
  switch (e->kind()) {
    case TirKind::kAdd: *out = x + y; return true;
    case TirKind::kSub: *out = x - y; return true;
    case TirKind::kMul: *out = x * y; return true;
    case TirKind::kFloorDiv: if (!y) return false; *out = arith::FloorDiv(x, y); return true;
    case TirKind::kFloorMod: if (!y) return false; *out = arith::FloorMod(x, y); return true;
    case TirKind::kMin: *out = std::min(x, y); return true;
    case TirKind::kMax: *out = std::max(x, y); return true;
    default: return false;
  }
}

}  // namespace

Status Schedule::TransformLayout(const std::string& buffer_name, const IndexMap& map) {
  const std::string where = "transform_layout: buffer " + buffer_name;
  bool is_param = false;
  Buffer buf = FindBuffer(func_, buffer_name, &is_param);
  if (!buf) return NotFound("transform_layout: no buffer named " + buffer_name + " in " + func_->name);
  if (map.src.size() != buf->shape.size())
    return InvalidArgument(where + " has " + std::to_string(buf->shape.size()) + " dimensions; the index map takes " +
                           std::to_string(map.src.size()));
  if (map.dst.empty()) return InvalidArgument(where + ": the index map gives no index");
  std::vector<int64_t> shape;
  for (const auto& d : buf->shape) {
    auto c = arith::AsConstInt(d);
    if (!c) return InvalidArgument(where + " has a symbolic shape; only static shapes can be transformed");
    shape.push_back(*c);
  }
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  if (total > (int64_t{1} << 22)) return InvalidArgument(where + " is too large to check the index map");
  // New shape: one past the largest index; the map must be injective and
  // non-negative, checked on every index.
  std::vector<int64_t> new_shape(map.dst.size(), 0);
  std::unordered_map<const VarNode*, int64_t> env;
  std::vector<std::vector<int64_t>> images;
  images.reserve(total);
  std::vector<int64_t> cur(shape.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    for (size_t d = 0; d < shape.size(); ++d) env[map.src[d].get()] = cur[d];
    std::vector<int64_t> img(map.dst.size());
    for (size_t d = 0; d < map.dst.size(); ++d) {
      if (!Eval(map.dst[d], env, &img[d]))
        return InvalidArgument(where + ": the index map uses something other than its variables and + - * // % min max");
      if (img[d] < 0) return InvalidArgument(where + ": the index map gives a negative index");
      new_shape[d] = std::max(new_shape[d], img[d] + 1);
    }
    images.push_back(std::move(img));
    for (size_t d = shape.size(); d-- > 0;) {
      if (++cur[d] < shape[d]) break;
      cur[d] = 0;
    }
  }
  std::vector<int64_t> strides(new_shape.size(), 1);
  for (size_t d = new_shape.size(); d-- > 1;) strides[d - 1] = strides[d] * new_shape[d];
  std::vector<bool> hit(static_cast<size_t>(strides[0] * new_shape[0]), false);
  for (const auto& img : images) {
    int64_t flat = 0;
    for (size_t d = 0; d < img.size(); ++d) flat += img[d] * strides[d];
    if (hit[flat]) return InvalidArgument(where + ": the index map is not injective");
    hit[flat] = true;
  }
  auto nb = std::make_shared<BufferNode>(*buf);
  nb->shape.clear();
  for (int64_t d : new_shape) nb->shape.push_back(IntImm(buf->shape[0].dtype(), d));
  nb->strides.clear();
  PrimFunc out = Rebind(func_, buf, nb, [&](const std::vector<PrimExpr>& idx) {
    VarMap m;
    for (size_t d = 0; d < idx.size(); ++d) m[map.src[d].get()] = idx[d];
    std::vector<PrimExpr> r;
    for (const auto& e : map.dst) r.push_back(arith::Simplify(Substitute(e, m)));
    return r;
  });
  func_ = out;
  TraceArg m;
  m.kind = TraceArg::Kind::kIndexMap;
  m.map_src = map.src;
  m.map_dst = map.dst;
  Record("transform_layout", {TraceArg::Str(buffer_name), m}, {}, {}, {});
  (void)is_param;
  return Status::Ok();
}

Status Schedule::StorageAlign(const std::string& buffer_name, int axis, int64_t factor, int64_t offset) {
  const std::string where = "storage_align: buffer " + buffer_name;
  bool is_param = false;
  Buffer buf = FindBuffer(func_, buffer_name, &is_param);
  if (!buf) return NotFound("storage_align: no buffer named " + buffer_name + " in " + func_->name);
  if (is_param) return InvalidArgument(where + " is a function parameter; only allocated buffers can be padded");
  int ndim = static_cast<int>(buf->shape.size());
  if (axis < 0 || axis >= ndim - 1)
    return InvalidArgument(where + ": axis " + std::to_string(axis) + " must be below the last of its " +
                           std::to_string(ndim) + " dimensions");
  if (factor <= 0 || offset < 0 || offset >= factor)
    return InvalidArgument(where + ": need factor > 0 and 0 <= offset < factor");
  std::vector<int64_t> shape;
  for (const auto& d : buf->shape) {
    auto c = arith::AsConstInt(d);
    if (!c) return InvalidArgument(where + " has a symbolic shape");
    shape.push_back(*c);
  }
  int64_t middle = 1;  // dimensions between axis and the last
  for (int d = axis + 1; d < ndim - 1; ++d) middle *= shape[d];
  int64_t last = shape[ndim - 1];
  int64_t limit = last + factor;
  while (last < limit && (last * middle) % factor != offset) ++last;
  if ((last * middle) % factor != offset)
    return InvalidArgument(where + ": no padding of the last dimension gives stride % " + std::to_string(factor) +
                           " == " + std::to_string(offset));
  auto nb = std::make_shared<BufferNode>(*buf);
  nb->shape[ndim - 1] = IntImm(buf->shape[ndim - 1].dtype(), last);
  func_ = Rebind(func_, buf, nb, [](const std::vector<PrimExpr>& idx) { return idx; });
  Record("storage_align", {TraceArg::Str(buffer_name), TraceArg::Int(axis), TraceArg::Int(factor), TraceArg::Int(offset)},
         {}, {}, {});
  return Status::Ok();
}

}  // namespace tir
}  // namespace kiln
