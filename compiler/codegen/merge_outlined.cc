#include "compiler/codegen/merge_outlined.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "compiler/codegen/llvm_headers.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <llvm/IR/InstrTypes.h>
#include <llvm/IR/StructuralHash.h>
#include <llvm/Transforms/Utils/FunctionComparator.h>
#pragma GCC diagnostic pop

namespace kiln {
namespace codegen {
namespace {

// An internal definition that no externally visible function calls: a
// kernel calls only its @k.body (and cold error helpers shared by all
// kernels); the outlined loops are called from bodies and tasks, and the
// tasks are only passed to env->parallel_for.
bool IsCandidate(const llvm::Function& f) {
  if (f.isDeclaration() || !f.hasLocalLinkage()) return false;
  for (const llvm::User* u : f.users()) {
    const auto* call = llvm::dyn_cast<llvm::CallBase>(u);
    if (call != nullptr && call->getCalledFunction() == &f && !call->getFunction()->hasLocalLinkage()) return false;
  }
  return true;
}

}  // namespace

size_t MergeIdenticalOutlinedFunctions(llvm::Module* module) {
  size_t removed = 0;
  // A task is the same as another only once their loops are one function
  // (the comparator compares callees by identity): repeat until nothing
  // merges.
  for (bool changed = true; changed;) {
    changed = false;
    llvm::GlobalNumberState numbers;
    std::map<uint64_t, std::vector<llvm::Function*>> by_hash;
    for (llvm::Function& f : *module)
      if (IsCandidate(f)) by_hash[llvm::StructuralHash(f, /*DetailedHash=*/false)].push_back(&f);
    std::vector<std::pair<llvm::Function*, llvm::Function*>> same;  // (duplicate, kept)
    for (auto& [hash, fns] : by_hash) {
      std::vector<llvm::Function*> kept;
      for (llvm::Function* f : fns) {
        llvm::Function* match = nullptr;
        for (llvm::Function* k : kept) {
          if (llvm::FunctionComparator(k, f, &numbers).compare() == 0) {
            match = k;
            break;
          }
        }
        if (match != nullptr) same.emplace_back(f, match);
        else kept.push_back(f);
      }
    }
    for (auto& [dup, keep] : same) {
      dup->replaceAllUsesWith(keep);
      dup->eraseFromParent();
      ++removed;
      changed = true;
    }
  }
  return removed;
}

}  // namespace codegen
}  // namespace kiln
