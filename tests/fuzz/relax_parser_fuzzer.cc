// libFuzzer harness for the .relax parser (see fuzz_targets.h).
#include <string>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"
#include "tests/fuzz/fuzz_targets.h"

namespace kiln {
namespace fuzz {

int FuzzRelaxParser(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  Result<ir::IRModule> parsed = text::ParseModule(source, "fuzz.relax");
  if (!parsed.ok()) return 0;
  Result<ir::IRModule> normalized = relax::InferStructInfo(*parsed);
  if (!normalized.ok()) return 0;
  (void)text::PrintModule(*normalized);
  return 0;
}

}  // namespace fuzz
}  // namespace kiln

#ifdef KILN_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kiln::fuzz::FuzzRelaxParser(data, size);
}
#endif
