/* test_model.h: the model every C test loads (data/capi_c_model.relax,
 * compiled at build time) and the C function it imports.
 *
 *   main(x: f32[n, 4], y: f32[n, 4]) -> f32[n, 4]         x + y
 *   pair(x: f32[2, 3]) -> (x + x, x * x)                   static (has a graph)
 *   values(x: f32[n, 4], s: shape[n, 4], p: int64, f: float64)
 *       -> (x, (s, p), f)                                  nested tuple
 *   scaled(x: f32[2, 3]) -> f32[2, 3]                      calls test.capi_c.scale
 */
#ifndef KILN_TESTS_CAPI_C_TEST_MODEL_H_
#define KILN_TESTS_CAPI_C_TEST_MODEL_H_

#include "capi/kiln.h"

#define TEST_SCALE_FUNCTION "test.capi_c.scale"

/* The compiled model's path. */
const char* test_model_path(void);
/* Registers TEST_SCALE_FUNCTION (out = 2 * x) once per process. */
void test_register_scale(void);
/* Registers the scale function and loads the model; fails the test and
 * returns NULL if that fails. */
kiln_module_t* test_load_model(void);
/* A new f32 tensor of `shape` filled with start, start + step, ... */
kiln_tensor_t* test_f32_tensor(const int64_t* shape, int32_t ndim, float start, float step);
/* Element i of a borrowed f32 tensor (0 and a failed check if unreadable). */
float test_f32_at(const kiln_tensor_t* tensor, int64_t i);
/* Reads a whole file (free() it); NULL on failure. */
void* test_read_file(const char* path, size_t* out_size);

#endif /* KILN_TESTS_CAPI_C_TEST_MODEL_H_ */
