// FileBytes: the bytes of a .vmfb (or any file) with whoever keeps them alive.
// MapFile memory-maps a file read-only; the mapping lives as long as any copy
// of `owner` (tensors borrowing weights hold one).
//
// Thread-safe: the mapping is read-only.
#ifndef KILN_RUNTIME_MAPPED_FILE_H_
#define KILN_RUNTIME_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/status.h"

namespace kiln {

struct FileBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<void> owner;  // may be null for borrowed caller memory
};

// Maps `path` read-only. kNotFound when it cannot be opened; an empty file
// gives an empty FileBytes (the loader then reports it as too small).
Result<FileBytes> MapFile(const std::string& path);

// Reads a whole file into memory (for tests and tools that edit bytes).
Result<std::string> ReadFileToString(const std::string& path);

}  // namespace kiln

#endif  // KILN_RUNTIME_MAPPED_FILE_H_
