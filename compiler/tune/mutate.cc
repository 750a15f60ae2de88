#include "compiler/tune/mutate.h"

#include <vector>

namespace kiln {
namespace tune {

namespace {

constexpr int kMaxTries = 16;

std::vector<int64_t> PrimeFactors(int64_t n) {
  std::vector<int64_t> f;
  for (int64_t p = 2; p * p <= n; ++p)
    for (; n % p == 0; n /= p) f.push_back(p);
  if (n > 1) f.push_back(n);
  return f;
}

int64_t Uniform(std::mt19937_64* rng, int64_t n) { return static_cast<int64_t>((*rng)() % static_cast<uint64_t>(n)); }

}  // namespace

std::vector<int64_t> MutateTile(const std::vector<int64_t>& tile, int64_t max_innermost, std::mt19937_64* rng) {
  const int64_t n = static_cast<int64_t>(tile.size());
  std::vector<int64_t> from;
  for (int64_t i = 0; i < n; ++i)
    if (tile[i] > 1) from.push_back(i);
  if (from.empty() || n < 2) return tile;
  for (int tries = 0; tries < kMaxTries; ++tries) {
    int64_t src = from[Uniform(rng, static_cast<int64_t>(from.size()))];
    int64_t dst = Uniform(rng, n - 1);
    if (dst >= src) ++dst;
    std::vector<int64_t> primes = PrimeFactors(tile[src]);
    int64_t p = primes[Uniform(rng, static_cast<int64_t>(primes.size()))];
    std::vector<int64_t> t = tile;
    t[src] /= p;
    t[dst] *= p;
    if (t.back() > max_innermost) continue;
    return t;
  }
  return tile;
}

Result<tir::Schedule> MutateTrace(const ir::PrimFunc& func, const tir::Trace& trace, std::mt19937_64* rng) {
  std::vector<size_t> sampling;
  for (size_t i = 0; i < trace.instructions().size(); ++i) {
    const tir::Instruction& inst = trace.instructions()[i];
    if (!inst.is_sampling()) continue;
    // A categorical of one candidate cannot change.
    if (inst.name == "sample_categorical" && !inst.inputs.empty() && inst.inputs[0].ints.size() < 2) continue;
    sampling.push_back(i);
  }
  if (sampling.empty()) return NotFound("mutate: the trace has no decision that can change");
  for (int tries = 0; tries < kMaxTries; ++tries) {
    size_t i = sampling[Uniform(rng, static_cast<int64_t>(sampling.size()))];
    const tir::Instruction& inst = trace.instructions()[i];
    std::vector<int64_t> d = inst.decision;
    if (inst.name == "sample_perfect_tile") {
      int64_t max_inner = inst.inputs.size() > 2 ? inst.inputs[2].i : 0;
      d = MutateTile(inst.decision, max_inner > 0 ? max_inner : INT64_MAX, rng);
    } else if (inst.name == "sample_categorical") {
      int64_t n = static_cast<int64_t>(inst.inputs[0].ints.size());
      int64_t k = Uniform(rng, n - 1);
      d = {k >= inst.decision[0] ? k + 1 : k};
    } else {
      // Locations: kInlineLoopId (-2), kRootLoopId (-1), then loops 0..; the
      // number of legal loops is not in the trace, replay tells.
      int64_t cur = inst.decision.empty() ? -1 : inst.decision[0];
      int64_t k = Uniform(rng, cur + 5) - 2;
      if (k == cur) continue;
      d = {k};
    }
    if (d == inst.decision) continue;
    tir::Trace t = trace;
    t.SetDecision(i, d);
    Result<tir::Schedule> sch = tir::Schedule::Replay(func, t);
    if (sch.ok()) return sch;
  }
  return NotFound("mutate: no mutation of the trace replays");
}

}  // namespace tune
}  // namespace kiln
