// libFuzzer harness for the .vmfb loader (see fuzz_targets.h).
#include <memory>
#include <vector>

#include "runtime/vmfb_loader.h"
#include "tests/fuzz/fuzz_targets.h"
#include "vm/module.h"

namespace kiln {
namespace fuzz {

int FuzzVmfbLoader(const uint8_t* data, size_t size) {
  // An exact-size heap copy: ASan then catches any read past the end.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size > 0) std::copy(data, data + size, copy.get());
  FileBytes bytes{copy.get(), size, nullptr};
  (void)PeekVmfbInfo(bytes);
  DecodeOptions verify;
  verify.verify_weights = true;
  (void)DecodeVmfb(bytes, verify);
  Result<Program> program = DecodeVmfb(bytes);
  if (!program.ok() || !program->native_libraries.empty()) return 0;
  vm::LoadOptions options;
  options.num_threads = 1;
  auto module = vm::Module::LoadBuffer(copy.get(), size, options);
  if (!module.ok()) return 0;
  for (const std::string& name : (*module)->FunctionNames()) (void)(*module)->GetSignature(name);
  std::unique_ptr<vm::Context> context = (*module)->CreateContext();
  return 0;
}

}  // namespace fuzz
}  // namespace kiln

#ifdef KILN_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kiln::fuzz::FuzzVmfbLoader(data, size);
}
#endif
