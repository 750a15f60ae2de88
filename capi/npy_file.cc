// kiln.h's .npy helpers: the runtime's reader and writer (runtime/npy.h)
// behind C handles.
#include <new>
#include <string>

#include "capi/c_api_internal.h"
#include "capi/kiln.h"
#include "runtime/npy.h"

using kiln::capi::FromStatus;
using kiln::capi::NoMemory;

extern "C" {

kiln_status_t* kiln_tensor_read_npy(const char* path, kiln_tensor_t** out_tensor) {
  KILN_CAPI_REQUIRE(out_tensor);
  *out_tensor = nullptr;
  KILN_CAPI_REQUIRE(path);
  kiln::Result<kiln::Tensor> read = kiln::ReadNpyFile(path);
  if (!read.ok()) return FromStatus(read.status());
  kiln_tensor_t* t = new (std::nothrow) kiln_tensor_t;
  if (t == nullptr) return NoMemory(__func__);
  t->tensor = std::move(read).value();
  *out_tensor = t;
  return nullptr;
}

kiln_status_t* kiln_tensor_write_npy(const kiln_tensor_t* tensor, const char* path) {
  KILN_CAPI_REQUIRE(tensor);
  KILN_CAPI_REQUIRE(path);
  kiln::Status s = kiln::WriteNpyFile(tensor->tensor, path);
  if (!s.ok()) {
    s.Annotate(__func__);
    return FromStatus(s);
  }
  return nullptr;
}

}  // extern "C"
