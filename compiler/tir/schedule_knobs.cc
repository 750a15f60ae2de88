#include "compiler/tir/schedule_knobs.h"

#include <cstdlib>
#include <cstring>

namespace kiln {
namespace tir {

ScheduleKnobs KnobsFromFunc(const ir::PrimFunc& func) {
  ScheduleKnobs knobs;
  const auto* root = ir::As<ir::BlockRealizeNode>(func->body);
  if (root == nullptr) return knobs;
  const size_t n = strlen(kKnobAnnotationPrefix);
  for (const auto& kv : root->block.annotations) {
    if (kv.first.compare(0, n, kKnobAnnotationPrefix) != 0) continue;
    char* end = nullptr;
    long long v = strtoll(kv.second.c_str(), &end, 10);
    if (kv.second.empty() || *end != '\0') continue;
    knobs.values[kv.first.substr(n)] = v;
  }
  return knobs;
}

}  // namespace tir
}  // namespace kiln
