// Reading and writing NumPy .npy files (format versions 1.0 and 2.0).
//
// Supported: little-endian (or byte-order-free) data in C order, of every
// dtype Kiln computes in: float16/32/64 ('<f2', '<f4', '<f8'), int8/16/32/64,
// uint8/16/32/64, bool ('|b1', one byte per element, 0 or 1) and bfloat16.
// NumPy has no bfloat16: Kiln writes it as '<V2', which is what np.save
// writes for an ml_dtypes.bfloat16 array (np.load gives 2-byte voids: view
// them as ml_dtypes.bfloat16, or as '<u2' for the raw bits), and reads '<V2'
// and '|V2' as bfloat16. Bits saved as '<u2' read as uint16; kiln-run takes
// such a file for a bfloat16 parameter (tools/common/prepared_call.h).
// Everything else is refused with a message naming what was found: Fortran
// order, big-endian data, other dtypes, format version 3.
//
// Part of the runtime (no compiler needed) because the C API reads and writes
// .npy too (kiln_tensor_read_npy).
//
// Failures: kNotFound (file missing), kDataLoss (bad magic, malformed header,
// truncated data), kUnimplemented (valid .npy that Kiln does not read),
// kInvalidArgument (writing a tensor of an unsupported dtype or layout).
// Messages start with the file path when there is one.
//
// Thread-safe: the functions keep no state.
#ifndef KILN_RUNTIME_NPY_H_
#define KILN_RUNTIME_NPY_H_

#include <cstddef>
#include <string>

#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {

// Parses a whole .npy image from memory into a new owned tensor (the data is
// copied, so `data` may go away afterwards). `name` prefixes error messages.
Result<Tensor> ParseNpy(const void* data, size_t size, const std::string& name = "npy");
Result<Tensor> ReadNpyFile(const std::string& path);

// Serializes a compact CPU tensor as .npy: version 1.0 unless the header needs
// 2.0; the header is padded so the data starts at a multiple of 64 bytes.
Result<std::string> SerializeNpy(const Tensor& tensor);
Status WriteNpyFile(const Tensor& tensor, const std::string& path);

// The numpy descriptor written for a dtype ("<f4", "|b1", "<V2" for
// bfloat16); kInvalidArgument if .npy I/O does not support it.
Result<std::string> NpyDescriptor(DType dtype);

}  // namespace kiln

#endif  // KILN_RUNTIME_NPY_H_
