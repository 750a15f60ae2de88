// Reading and writing NumPy .npy files (format versions 1.0 and 2.0).
//
// Supported: little-endian (or byte-order-free) data in C order, of dtype
// float32, float64, int32, int64, int8, uint8 and bool ('|b1', one byte per
// element, 0 or 1). Everything else is refused with a message naming what was
// found: Fortran order, big-endian data, other dtypes, format version 3.
//
// Failures: kNotFound (file missing), kDataLoss (bad magic, malformed header,
// truncated data), kUnimplemented (valid .npy that Kiln does not read),
// kInvalidArgument (writing a tensor of an unsupported dtype or layout).
// Messages start with the file path when there is one.
//
// Thread-safe: the functions keep no state.
#ifndef KILN_TOOLS_COMMON_NPY_H_
#define KILN_TOOLS_COMMON_NPY_H_

#include <cstddef>
#include <string>

#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace tools {

// Parses a whole .npy image from memory into a new owned tensor (the data is
// copied, so `data` may go away afterwards). `name` prefixes error messages.
Result<Tensor> ParseNpy(const void* data, size_t size, const std::string& name = "npy");
Result<Tensor> ReadNpyFile(const std::string& path);

// Serializes a compact CPU tensor as .npy: version 1.0 unless the header needs
// 2.0; the header is padded so the data starts at a multiple of 64 bytes.
Result<std::string> SerializeNpy(const Tensor& tensor);
Status WriteNpyFile(const Tensor& tensor, const std::string& path);

// The numpy descriptor for a dtype ("<f4", "|b1"); kInvalidArgument if .npy I/O
// does not support it.
Result<std::string> NpyDescriptor(DType dtype);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_NPY_H_
