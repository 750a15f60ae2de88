// triton_api.h: the part of Triton Inference Server's C APIs that libtriton_kiln.so uses,
// declared here from the API's documentation (the server's "TRITONSERVER" API and the
// backend "TRITONBACKEND" API) because the nvidia-pytriton wheel ships the server and its
// libraries but no headers.
//
// Every function below is defined by libtritonserver.so, which the tritonserver process
// has loaded before it dlopens a backend; the backend library leaves them undefined and
// the dynamic linker binds them to the server's definitions (so the backend links no
// Triton library). The TRITONBACKEND_* entry points the server calls are declared at the
// end; backend.cc defines them.
//
// Versions: written against backend API 1.19 (Triton 2.51, the nvidia-pytriton 0.7.0
// wheel, which reports 1.19: see the backend's start-up log line). Only functions present since backend API 1.0 are used
// (kMinBackendApiMinor in backend.cc), so an older 1.x server serves too; a server whose
// major version differs is refused at TRITONBACKEND_Initialize. The enum values are
// part of the ABI: their order is the documented one and must not change here.
#ifndef KILN_SERVING_TRITON_BACKEND_TRITON_API_H_
#define KILN_SERVING_TRITON_BACKEND_TRITON_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_TRITONBACKEND_API_MAJOR 1
#define KILN_TRITONBACKEND_API_MINOR 19

// ---- Server API: errors, messages, data types, logging -------------------------------

typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONSERVER_Message TRITONSERVER_Message;

// An error's code (the documented order of TRITONSERVER_Error_Code).
typedef enum {
  TRITONSERVER_ERROR_UNKNOWN = 0,
  TRITONSERVER_ERROR_INTERNAL = 1,
  TRITONSERVER_ERROR_NOT_FOUND = 2,
  TRITONSERVER_ERROR_INVALID_ARG = 3,
  TRITONSERVER_ERROR_UNAVAILABLE = 4,
  TRITONSERVER_ERROR_UNSUPPORTED = 5,
  TRITONSERVER_ERROR_ALREADY_EXISTS = 6,
  TRITONSERVER_ERROR_CANCELLED = 7,
} TRITONSERVER_Error_Code;

// A tensor element type (the documented order of TRITONSERVER_DataType; BF16 came last).
typedef enum {
  TRITONSERVER_TYPE_INVALID = 0,
  TRITONSERVER_TYPE_BOOL = 1,
  TRITONSERVER_TYPE_UINT8 = 2,
  TRITONSERVER_TYPE_UINT16 = 3,
  TRITONSERVER_TYPE_UINT32 = 4,
  TRITONSERVER_TYPE_UINT64 = 5,
  TRITONSERVER_TYPE_INT8 = 6,
  TRITONSERVER_TYPE_INT16 = 7,
  TRITONSERVER_TYPE_INT32 = 8,
  TRITONSERVER_TYPE_INT64 = 9,
  TRITONSERVER_TYPE_FP16 = 10,
  TRITONSERVER_TYPE_FP32 = 11,
  TRITONSERVER_TYPE_FP64 = 12,
  TRITONSERVER_TYPE_BYTES = 13,
  TRITONSERVER_TYPE_BF16 = 14,
} TRITONSERVER_DataType;

typedef enum {
  TRITONSERVER_MEMORY_CPU = 0,
  TRITONSERVER_MEMORY_CPU_PINNED = 1,
  TRITONSERVER_MEMORY_GPU = 2,
} TRITONSERVER_MemoryType;

typedef enum {
  TRITONSERVER_LOG_INFO = 0,
  TRITONSERVER_LOG_WARN = 1,
  TRITONSERVER_LOG_ERROR = 2,
  TRITONSERVER_LOG_VERBOSE = 3,
} TRITONSERVER_LogLevel;

// Flags of TRITONBACKEND_RequestRelease and TRITONBACKEND_ResponseSend.
enum { TRITONSERVER_REQUEST_RELEASE_ALL = 1 };
enum { TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1 };

// A new error owned by the caller (the server, when a backend returns or sends it).
TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* msg);
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error);
// Borrowed from `error`.
const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error);
// `base` is borrowed from `message`, `byte_size` bytes, not necessarily NUL-terminated.
TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message* message, const char** base,
                                                        size_t* byte_size);
TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message* message);
TRITONSERVER_Error* TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char* filename, int line,
                                            const char* msg);

// ---- Backend API: the objects the server hands a backend -----------------------------

typedef struct TRITONBACKEND_Backend TRITONBACKEND_Backend;
typedef struct TRITONBACKEND_Model TRITONBACKEND_Model;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;

typedef enum { TRITONBACKEND_ARTIFACT_FILESYSTEM = 0 } TRITONBACKEND_ArtifactType;

TRITONSERVER_Error* TRITONBACKEND_ApiVersion(uint32_t* major, uint32_t* minor);
TRITONSERVER_Error* TRITONBACKEND_BackendName(TRITONBACKEND_Backend* backend, const char** name);

// Model: name, version, its folder in the repository, the config (JSON; the caller owns
// the message; config_version 1), the backend's per-model state.
TRITONSERVER_Error* TRITONBACKEND_ModelName(TRITONBACKEND_Model* model, const char** name);
TRITONSERVER_Error* TRITONBACKEND_ModelVersion(TRITONBACKEND_Model* model, uint64_t* version);
TRITONSERVER_Error* TRITONBACKEND_ModelRepository(TRITONBACKEND_Model* model,
                                                  TRITONBACKEND_ArtifactType* artifact_type,
                                                  const char** location);
TRITONSERVER_Error* TRITONBACKEND_ModelConfig(TRITONBACKEND_Model* model, uint32_t config_version,
                                              TRITONSERVER_Message** model_config);
TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model* model, void** state);
TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model* model, void* state);

// Instance: its model, the backend's per-instance state, statistics.
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance* instance,
                                                     TRITONBACKEND_Model** model);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance* instance, void** state);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance* instance, void* state);
// Timestamps in ns of a steady clock; exec start <= compute start <= compute end <= exec end.
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance* instance,
                                                                TRITONBACKEND_Request* request, bool success,
                                                                uint64_t exec_start_ns, uint64_t compute_start_ns,
                                                                uint64_t compute_end_ns, uint64_t exec_end_ns);
// batch_size: the sum of the batch sizes of the requests executed together.
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance* instance,
                                                                     uint64_t batch_size, uint64_t exec_start_ns,
                                                                     uint64_t compute_start_ns,
                                                                     uint64_t compute_end_ns, uint64_t exec_end_ns);

// Requests: inputs by name (borrowed until the request is released), the outputs the
// client asked for, release (the backend owns a request from Execute until it releases it).
TRITONSERVER_Error* TRITONBACKEND_RequestInput(TRITONBACKEND_Request* request, const char* name,
                                               TRITONBACKEND_Input** input);
TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request* request, uint32_t* count);
TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request* request, uint32_t index,
                                                    const char** output_name);
TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t release_flags);

// An input's properties (each out-pointer may be NULL) and its data, possibly in several
// buffers. memory_type/memory_type_id: in, the preferred placement; out, the actual one.
TRITONSERVER_Error* TRITONBACKEND_InputProperties(TRITONBACKEND_Input* input, const char** name,
                                                  TRITONSERVER_DataType* datatype, const int64_t** shape,
                                                  uint32_t* dims_count, uint64_t* byte_size,
                                                  uint32_t* buffer_count);
TRITONSERVER_Error* TRITONBACKEND_InputBuffer(TRITONBACKEND_Input* input, uint32_t index, const void** buffer,
                                              uint64_t* buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
                                              int64_t* memory_type_id);

// Responses: one per request, created before any other response of that request; its
// outputs and their buffers are made in sequence; Send passes ownership to the server.
TRITONSERVER_Error* TRITONBACKEND_ResponseNew(TRITONBACKEND_Response** response, TRITONBACKEND_Request* request);
TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response* response, TRITONBACKEND_Output** output,
                                                 const char* name, TRITONSERVER_DataType datatype,
                                                 const int64_t* shape, uint32_t dims_count);
TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output* output, void** buffer,
                                               uint64_t buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
                                               int64_t* memory_type_id);
// error: NULL for a successful response; the server takes ownership of it.
TRITONSERVER_Error* TRITONBACKEND_ResponseSend(TRITONBACKEND_Response* response, uint32_t send_flags,
                                               TRITONSERVER_Error* error);

// ---- The entry points a backend defines (the server looks them up by name) -----------

#define KILN_TRITON_EXPORT __attribute__((visibility("default")))

KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance);
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance);
// Called by one thread at a time per instance; requests[0..request_count) become the
// backend's on success (it must answer and release each), stay the server's on error.
KILN_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                                          TRITONBACKEND_Request** requests,
                                                                          uint32_t request_count);

#ifdef __cplusplus
}
#endif

#endif  // KILN_SERVING_TRITON_BACKEND_TRITON_API_H_
