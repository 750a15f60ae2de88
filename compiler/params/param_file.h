// Parameter files: the weights `kiln-compile --params FILE` binds to a
// function's parameters (bind_params.h).
//
// Formats, chosen by content (not by the file name):
// - .npz, numpy's savez / savez_compressed: a zip archive of .npy entries,
//   STORED or DEFLATED, zip64 records accepted. An entry "w0.npy" gives the
//   tensor "w0". Each entry is parsed by the .npy reader kiln-run uses
//   (runtime/npy.h), so the dtypes and layouts are the same: float16/32/64,
//   int8/16/32/64, uint8/16/32/64, bool and bfloat16 ('<V2'), C order,
//   little-endian.
// - .safetensors: an 8-byte little-endian header length, a JSON header
//   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//   "__metadata__": {...}}, then the data (offsets relative to its start).
//   dtypes F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL.
//
// Result: the tensors in file order (zip directory order; JSON key order),
// each an owned, compact CPU tensor (the data is copied out of the file).
//
// Failures name the file and, when one is at fault, the entry:
//   kNotFound    the file cannot be read;
//   kDataLoss    truncated or corrupt data (bad magic, a zip record or an
//                entry running past the end, a CRC mismatch, malformed JSON,
//                data_offsets out of range or not matching shape and dtype);
//   kUnimplemented valid files Kiln does not read (an unsupported dtype or
//                compression method, Fortran order, encrypted entries);
//   kInvalidArgument two tensors with the same name, an entry not ending in
//                ".npy".
//
// Thread-safe: the functions keep no state.
#ifndef KILN_COMPILER_PARAMS_PARAM_FILE_H_
#define KILN_COMPILER_PARAMS_PARAM_FILE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace params {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};
using ParamList = std::vector<NamedTensor>;

// Reads `path`: a zip ("PK\3\4" or an empty archive) is read as .npz,
// anything else as .safetensors.
Result<ParamList> ReadParamFile(const std::string& path);

// The parsers over an image in memory; `file` labels the messages.
Result<ParamList> ParseNpz(const void* data, size_t size, const std::string& file);
Result<ParamList> ParseSafetensors(const void* data, size_t size, const std::string& file);

}  // namespace params
}  // namespace kiln

#endif  // KILN_COMPILER_PARAMS_PARAM_FILE_H_
