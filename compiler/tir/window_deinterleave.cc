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
// per column parity the smallest half-row index (column 2j + parity) a tap
// reads at the row's first output (names the halves).
struct Row {
  Buffer buf;
  std::vector<PrimExpr> lead;
  int64_t lo[2] = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()};
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
    accesses[l] = Access{r, parity, off};
  }
  if (accesses.empty()) return nullptr;

  // One half per (row, parity, offset), filled straight from the input row,
  // H[j] = X[.., 2 (j + off) + parity] for j in [0, n), and read at xr
  // itself (no load straddling the stores that filled it: the header).
  struct Half {
    size_t row;
    int parity;
    int64_t off;
    Buffer buf;
  };
  std::vector<Half> halves;
  auto half_of = [&](const Access& a) -> Buffer {
    for (const Half& h : halves)
      if (h.row == a.row && h.parity == a.parity && h.off == a.off) return h.buf;
    const Row& row = rows[a.row];
    std::string name = row.buf->name + (a.parity ? "_odd" : "_even");
    if (a.off != row.lo[a.parity]) name += "_" + std::to_string(a.off - row.lo[a.parity]);
    halves.push_back(Half{a.row, a.parity, a.off, LocalBuffer(name, n16, row.buf->dtype)});
    return halves.back().buf;
  };
  // In the order of the loads (the accesses map's order is not stable).
  Var xr = MakeVar("xr");
  ReplaceLoadNodes replace;
  for (const BufferLoadNode* l : refs.load_nodes) {
    auto it = accesses.find(l);
    if (it == accesses.end() || replace.with.count(l)) continue;
    replace.with[l] = Load(half_of(it->second), {PrimExpr(xr)});
  }
  std::vector<Stmt> fills;
  std::vector<Buffer> allocs;
  // Halves of the same row and offset fill in one loop (one interleaved
  // pair of loads and stores: a wide load and two shuffles).
  std::vector<char> done(halves.size(), 0);
  for (size_t h = 0; h < halves.size(); ++h) {
    if (done[h]) continue;
    std::vector<size_t> group{h};
    for (size_t o = h + 1; o < halves.size(); ++o)
      if (!done[o] && halves[o].row == halves[h].row && halves[o].off == halves[h].off) group.push_back(o);
    Var j = MakeVar("j");
    std::vector<Stmt> stores;
    for (size_t g : group) {
      done[g] = 1;
      const Row& row = rows[halves[g].row];
      std::vector<PrimExpr> at = row.lead;
      at.push_back((PrimExpr(j) + I64(halves[g].off)) * I64(2) + I64(halves[g].parity));
      stores.push_back(Store(halves[g].buf, Load(row.buf, at), {PrimExpr(j)}));
      allocs.push_back(halves[g].buf);
    }
    fills.push_back(std::make_shared<ForNode>(j, I64(0), I64(n), ForKind::kVectorized, Seq(stores)));
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
