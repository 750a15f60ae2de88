// User design spaces written in C++: a registered function that applies
// primitives and sampling instructions to a tir::Schedule (as the text form
// of space_text.h does, with the full C++ API). kiln-tune --space NAME picks
// one by name; a program links its spaces in and registers them at start-up:
//
//   static bool registered = kiln::tune::RegisterSpace("mm_tiles", [](kiln::tir::Schedule* sch) {
//     KILN_ASSIGN_OR_RETURN(auto c, sch->GetBlock("C"));
//     ...
//     return kiln::Status::Ok();
//   });
//
// The function must leave every decision to the schedule's sampling
// instructions (its generator is seeded per point), so a point's trace
// replays. Registration is thread-safe; names are unique.
#ifndef KILN_COMPILER_TUNE_SPACE_REGISTRY_H_
#define KILN_COMPILER_TUNE_SPACE_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule/schedule.h"
#include "runtime/status.h"

namespace kiln {
namespace tune {

using SpaceFunction = std::function<Status(tir::Schedule*)>;

// Returns true (for use in a static initializer); false when `name` is
// empty, a built-in space's name (all, default, generic) or taken.
bool RegisterSpace(const std::string& name, SpaceFunction fn);
// Empty when no space of that name is registered.
SpaceFunction FindSpace(const std::string& name);
std::vector<std::string> RegisteredSpaceNames();

// One point of a registered space: a schedule created with `seed`, the
// function applied. Fails with the function's status, prefixed by the name.
Result<tir::Schedule> ApplyRegisteredSpace(const ir::PrimFunc& func, const std::string& name, uint64_t seed);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_SPACE_REGISTRY_H_
