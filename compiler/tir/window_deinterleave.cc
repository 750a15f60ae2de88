#include "compiler/tir/window_deinterleave.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "compiler/arith/simplify.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers


std::optional<int64_t> At(const PrimExpr& e, const VarNode* x, int64_t v) {
  return arith::AsConstInt(arith::Simplify(Substitute(e, VarMap{{x, I64(v)}})));
}

Buffer LocalBuffer(const std::string& name, int64_t len, DType dtype) {
  auto node = std::make_shared<BufferNode>();
  node->name = name;
  node->data = MakeVar(name + "_data", HandleType());
  node->dtype = dtype;
  node->shape = {I64(len)};
  node->scope = "local";
  return node;
}

// One input row the taps read (a buffer and its indices but the last), and
// per column parity the range of half-row indices j (column 2j + parity) the
// row's outputs need: [lo, valid) for the real outputs, [lo, padded) for
// the lanes of the rounded-up row.
struct Row {
  Buffer buf;
  std::vector<PrimExpr> lead;
  int64_t lo[2] = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()};
  int64_t valid[2] = {0, 0}, padded[2] = {0, 0};
  Buffer half[2];
};

struct Access {
  size_t row;
  int parity;
  int64_t off;  // column 2 * (xr + off) + parity
};

class ReplaceLoadNodes : public StmtExprMutator {
 public:
  std::unordered_map<const BufferLoadNode*, PrimExpr> with;
  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<BufferLoadNode>()) {
      auto it = with.find(l);
      if (it != with.end()) return it->second;
    }
    return StmtExprMutator::MutateExpr(e);
  }
};

}  // namespace

Stmt DeinterleavedInterior(const Buffer& out, const std::vector<PrimExpr>& idx, const VarNode* x, int64_t x_lo,
                           int64_t x_hi, const PrimExpr& value, int64_t max_columns) {
  const int64_t n = x_hi - x_lo;
  if (n < kMinDeinterleaveColumns || n > max_columns) return nullptr;
  const int64_t n16 = (n + 15) / 16 * 16;
  std::vector<Row> rows;
  std::unordered_map<const BufferLoadNode*, Access> accesses;
  BufferRefs refs;
  refs.VisitExpr(value);
  for (const BufferLoadNode* l : refs.load_nodes) {
    if (accesses.count(l)) continue;
    bool uses = false;
    for (const PrimExpr& i : l->indices) uses = uses || Uses(i, {x});
    if (!uses) continue;
    for (size_t d = 0; d + 1 < l->indices.size(); ++d)
      if (Uses(l->indices[d], {x})) return nullptr;
    const PrimExpr& last = l->indices.back();
    auto c0 = At(last, x, 0), c1 = At(last, x, 1), c2 = At(last, x, 2);
    if (!c0 || !c1 || !c2 || *c1 - *c0 != 2 || *c2 - *c1 != 2) return nullptr;
    // 2 * x + c0 at every x of the interior (checked, not assumed).
    for (int64_t xv = x_lo; xv < x_hi; ++xv) {
      auto cv = At(last, x, xv);
      if (!cv || *cv != *c0 + 2 * xv) return nullptr;
    }
    int64_t b = *c0 + 2 * x_lo;  // column of output x_lo
    if (b < 0) return nullptr;
    std::vector<PrimExpr> lead(l->indices.begin(), l->indices.end() - 1);
    size_t r = 0;
    for (; r < rows.size(); ++r) {
      if (rows[r].buf->data.get() != l->buffer->data.get() || rows[r].lead.size() != lead.size()) continue;
      bool same = true;
      for (size_t d = 0; d < lead.size() && same; ++d) same = arith::CanProveEqual(rows[r].lead[d], lead[d]);
      if (same) break;
    }
    if (r == rows.size()) {
      rows.emplace_back();
      rows.back().buf = l->buffer;
      rows.back().lead = lead;
    }
    int parity = static_cast<int>(b & 1);
    int64_t off = b >> 1;
    Row& row = rows[r];
    row.lo[parity] = std::min(row.lo[parity], off);
    row.valid[parity] = std::max(row.valid[parity], off + n);
    row.padded[parity] = std::max(row.padded[parity], off + n16);
    accesses[l] = Access{r, parity, off};
  }
  if (accesses.empty()) return nullptr;

  std::vector<Stmt> fills;
  std::vector<Buffer> allocs;
  for (size_t r = 0; r < rows.size(); ++r) {
    Row& row = rows[r];
    bool used[2] = {row.valid[0] > 0, row.valid[1] > 0};
    for (int p = 0; p < 2; ++p) {
      if (!used[p]) continue;
      row.half[p] = LocalBuffer(row.buf->name + (p ? "_odd" : "_even"), row.padded[p] - row.lo[p], row.buf->dtype);
      allocs.push_back(row.half[p]);
    }
    // half[p][j - lo] = X[.., 2j + p] for j in [from, to), one loop for the
    // parities given (both: one interleaved pair of loads and stores).
    auto fill = [&](const std::vector<int>& parities, int64_t from, int64_t to, ForKind kind) {
      if (to <= from) return;
      Var j = MakeVar("j");
      std::vector<Stmt> stores;
      for (int p : parities) {
        std::vector<PrimExpr> at = row.lead;
        at.push_back((PrimExpr(j) + I64(from)) * I64(2) + I64(p));
        stores.push_back(Store(row.half[p], Load(row.buf, at), {PrimExpr(j) + I64(from - row.lo[p])}));
      }
      fills.push_back(std::make_shared<ForNode>(j, I64(0), I64(to - from), kind, Seq(stores)));
    };
    if (used[0] && used[1]) {
      int64_t lo = std::max(row.lo[0], row.lo[1]), hi = std::min(row.valid[0], row.valid[1]);
      if (hi > lo) {
        fill({0, 1}, lo, hi, ForKind::kVectorized);
        for (int p = 0; p < 2; ++p) {
          fill({p}, row.lo[p], lo, ForKind::kSerial);
          fill({p}, hi, row.valid[p], ForKind::kSerial);
        }
        continue;
      }
    }
    for (int p = 0; p < 2; ++p)
      if (used[p]) fill({p}, row.lo[p], row.valid[p], ForKind::kVectorized);
  }

  Var xr = MakeVar("xr");
  ReplaceLoadNodes replace;
  for (const auto& kv : accesses) {
    const Row& row = rows[kv.second.row];
    int p = kv.second.parity;
    replace.with[kv.first] = Load(row.half[p], {PrimExpr(xr) + I64(kv.second.off - row.lo[p])});
  }
  PrimExpr v = replace.MutateExpr(value);
  if (Uses(v, {x})) return nullptr;  // x left outside the loads
  Buffer line = LocalBuffer(out->name + "_row", n16, out->dtype);
  allocs.push_back(line);
  Stmt compute = std::make_shared<ForNode>(xr, I64(0), I64(n16), ForKind::kVectorized, Store(line, v, {PrimExpr(xr)}));
  Var xc = MakeVar("xc");
  std::vector<PrimExpr> at;
  for (const PrimExpr& i : idx) at.push_back(Substitute(i, VarMap{{x, PrimExpr(xc) + I64(x_lo)}}));
  Stmt copy = std::make_shared<ForNode>(xc, I64(0), I64(n), ForKind::kVectorized,
                                        Store(out, Load(line, {PrimExpr(xc)}), at));
  fills.push_back(compute);
  fills.push_back(copy);
  Stmt body = Seq(fills);
  for (size_t a = allocs.size(); a-- > 0;) body = std::make_shared<AllocateNode>(allocs[a], body);
  return body;
}

}  // namespace tir
}  // namespace kiln
