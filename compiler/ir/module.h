// IRModule: the Relax functions and TIR PrimFuncs of one program, by name, in
// the order they were added (printing order).
#ifndef KILN_COMPILER_IR_MODULE_H_
#define KILN_COMPILER_IR_MODULE_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/relax.h"
#include "compiler/ir/tir.h"

namespace kiln {
namespace ir {

struct ModuleEntry {
  std::string name;
  Function relax;   // exactly one of relax / prim is set
  PrimFunc prim;
};

class IRModule {
 public:
  std::string name = "Module";  // the class name in the text form
  std::vector<ModuleEntry> entries;

  const ModuleEntry* Find(const std::string& n) const {
    for (const auto& e : entries)
      if (e.name == n) return &e;
    return nullptr;
  }
  Function FindRelax(const std::string& n) const {
    const ModuleEntry* e = Find(n);
    return e ? e->relax : nullptr;
  }
  PrimFunc FindPrim(const std::string& n) const {
    const ModuleEntry* e = Find(n);
    return e ? e->prim : nullptr;
  }
  // Replaces the entry named like `f`, or appends it.
  void Add(const std::string& n, Function f);
  void Add(const std::string& n, PrimFunc f);
  // A name not yet used in the module: base, base1, base2, ...
  std::string UniqueName(const std::string& base) const;
};

}  // namespace ir
}  // namespace kiln

#endif  // KILN_COMPILER_IR_MODULE_H_
