// What a kiln.Module and a kiln.Context own, shared by the objects made from
// them (functions, bound functions, output tensors) through shared_ptr.
#pragma once

#include <kiln/kiln.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln_python {

struct ModuleState {
  kiln_module_t* module = nullptr;
  // The bytes a module was loaded from (kiln_module_load_buffer borrows them;
  // output tensors may point into its constants). Null for a file.
  // 64-byte aligned (as a mapped file is): kernels take constants in place
  // and check their alignment.
  std::shared_ptr<const uint8_t> bytes;
  std::vector<kiln_context_t*> idle_contexts;  // guarded by the GIL

  ~ModuleState() {
    for (kiln_context_t* context : idle_contexts) kiln_context_release(context);
    kiln_module_release(module);
  }
};

struct ContextState {
  std::shared_ptr<ModuleState> module;
  kiln_context_t* context = nullptr;
  // A kiln_context_t is thread-compatible; Python threads sharing one
  // kiln.Context take turns (the wait happens without the GIL).
  std::mutex mutex;

  ~ContextState() { kiln_context_release(context); }
};

// A declared parameter or result (kiln_value_info_t), copied out of the module.

}  // namespace kiln_python
