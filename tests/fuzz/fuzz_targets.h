// The libFuzzer harnesses' bodies, as plain functions: the fuzzer binaries
// (built with clang and -fsanitize=fuzzer, `make fuzz`) call them from
// LLVMFuzzerTestOneInput, and kiln_fuzz_replay_test calls them on every
// checked-in regression input and seed under ctest.
//
// Contract of each: any bytes in, returns 0, never crashes, never reads
// outside [data, data + size), never leaks.
#ifndef KILN_TESTS_FUZZ_FUZZ_TARGETS_H_
#define KILN_TESTS_FUZZ_FUZZ_TARGETS_H_

#include <cstddef>
#include <cstdint>

namespace kiln {
namespace fuzz {

// Peeks at the header, decodes and verifies the file, also with the weights'
// checksum; when it holds no native library, loads it as a vm::Module
// (bytecode verifier, name resolution) and creates a call context. Files with
// a native library are never linked: a fuzzer can learn to write a matching
// checksum, and the machine code behind it is not safe to load.
int FuzzVmfbLoader(const uint8_t* data, size_t size);

// Parses the bytes as .relax text, infers struct info, prints the result.
int FuzzRelaxParser(const uint8_t* data, size_t size);

}  // namespace fuzz
}  // namespace kiln

#endif  // KILN_TESTS_FUZZ_FUZZ_TARGETS_H_
