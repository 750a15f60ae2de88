/* Runtime instances: options (threads, allocator, logger), modules loaded
 * and contexts created through an instance (its pool, allocator and log),
 * and every error path. */
#include <stdint.h>
#include <stdlib.h>

#include "tests/capi_c/check.h"
#include "tests/capi_c/test_model.h"

/* The log: messages kept in order (single-threaded test). */
#define MAX_LOG 64
static int g_log_count = 0;
static kiln_log_level_t g_log_levels[MAX_LOG];
static char g_log_messages[MAX_LOG][256];

static void record_log(void* user, kiln_log_level_t level, const char* message) {
  ++*(int*)user;
  if (g_log_count < MAX_LOG) {
    g_log_levels[g_log_count] = level;
    snprintf(g_log_messages[g_log_count], sizeof g_log_messages[0], "%s", message);
    ++g_log_count;
  }
}

/* Whether a message at `level` containing `text` was logged. */
static int logged(kiln_log_level_t level, const char* text) {
  for (int i = 0; i < g_log_count; ++i) {
    if (g_log_levels[i] == level && strstr(g_log_messages[i], text) != NULL) return 1;
  }
  return 0;
}

static size_t g_allocations = 0;
static void* counting_allocate(void* user, size_t size, size_t alignment) {
  ++*(size_t*)user;
  return aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
static void plain_free(void* user, void* ptr) {
  (void)user;
  free(ptr);
}

static void test_instance_runs_contexts(void) {
  kiln_instance_options_t* options = NULL;
  kiln_instance_t* instance = NULL;
  kiln_module_t* module = NULL;
  kiln_context_t* context = NULL;
  int calls = 0;
  int32_t threads = 0;
  kiln_allocator_t allocator = {&g_allocations, counting_allocate, plain_free};
  g_log_count = 0;
  test_register_scale();
  CHECK_OK(kiln_instance_options_create(&options));
  CHECK_OK(kiln_instance_options_set_num_threads(options, 2));
  CHECK_OK(kiln_instance_options_set_allocator(options, &allocator));
  CHECK_OK(kiln_instance_options_set_logger(options, record_log, &calls, KILN_LOG_DEBUG));
  CHECK_OK(kiln_instance_create(options, &instance));
  kiln_instance_options_release(options); /* copied */
  CHECK(logged(KILN_LOG_INFO, "instance created: 2 threads, the caller's allocator"));
  CHECK_OK(kiln_instance_num_threads(instance, &threads));
  CHECK(threads == 2);

  CHECK_OK(kiln_instance_load_module_file(instance, test_model_path(), &module));
  CHECK(logged(KILN_LOG_INFO, "loaded '"));
  CHECK_OK(kiln_instance_create_context(instance, module, NULL, &context));
  CHECK(logged(KILN_LOG_DEBUG, "context created"));
  CHECK_OK(kiln_context_num_threads(context, &threads));
  CHECK(threads == 2); /* the instance's pool */
  {
    const int64_t shape[2] = {4, 4};
    kiln_tensor_t* x = test_f32_tensor(shape, 2, 1, 1);
    kiln_tensor_t* in[2] = {x, x};
    kiln_outputs_t* outputs = NULL;
    const kiln_tensor_t* out = NULL;
    g_allocations = 0;
    CHECK_OK(kiln_context_invoke(context, "main", in, 2, &outputs));
    CHECK(g_allocations > 0); /* the instance's allocator */
    CHECK_OK(kiln_outputs_get(outputs, 0, &out));
    CHECK(test_f32_at(out, 15) == 32.0f);
    kiln_outputs_release(outputs);
    /* A failed call is logged as a warning with its message. */
    CHECK_STATUS(kiln_context_invoke(context, "main", in, 1, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "expected 2 inputs");
    CHECK(logged(KILN_LOG_WARNING, "kiln_context_invoke failed: main: expected 2 inputs, got 1"));
    kiln_tensor_release(x);
  }
  /* Handles may go in any order: the context keeps module and instance. */
  kiln_instance_release(instance);
  kiln_module_release(module);
  {
    const int64_t shape[2] = {1, 4};
    kiln_tensor_t* x = test_f32_tensor(shape, 2, 1, 1);
    kiln_tensor_t* in[2] = {x, x};
    kiln_outputs_t* outputs = NULL;
    CHECK_OK(kiln_context_invoke(context, "main", in, 2, &outputs));
    kiln_outputs_release(outputs);
    kiln_tensor_release(x);
  }
  kiln_context_release(context);
  CHECK(calls == g_log_count);
}

static void test_log_levels_and_failures(void) {
  kiln_instance_options_t* options = NULL;
  kiln_instance_t* instance = NULL;
  kiln_module_t* module = NULL;
  kiln_context_t* context = NULL;
  int calls = 0;
  g_log_count = 0;
  test_register_scale();
  CHECK_OK(kiln_instance_options_create(&options));
  CHECK_OK(kiln_instance_options_set_logger(options, record_log, &calls, KILN_LOG_WARNING));
  CHECK_OK(kiln_instance_create(options, &instance));
  kiln_instance_options_release(options);
  CHECK(g_log_count == 0); /* INFO is below the threshold */
  CHECK_STATUS(kiln_instance_load_module_file(instance, "/nonexistent.vmfb", &module), KILN_STATUS_NOT_FOUND,
               "/nonexistent.vmfb");
  CHECK(module == NULL);
  CHECK(logged(KILN_LOG_ERROR, "loading '/nonexistent.vmfb' failed: "));
  {
    size_t size = 0;
    void* data = test_read_file(test_model_path(), &size);
    CHECK(data != NULL);
    CHECK_OK(kiln_instance_load_module_buffer(instance, data, size, &module));
    CHECK_OK(kiln_instance_create_context(instance, module, NULL, &context));
    CHECK(g_log_count == 1); /* neither the load (INFO) nor the context (DEBUG) */
    kiln_context_release(context);
    kiln_module_release(module);
    free(data);
  }
  kiln_instance_release(instance);
  kiln_instance_release(NULL);
}

static void test_defaults_and_context_options(void) {
  kiln_instance_t* instance = NULL;
  kiln_module_t* module = test_load_model();
  kiln_context_options_t* options = NULL;
  kiln_context_t* context = NULL;
  int32_t threads = 0;
  int32_t instance_threads = 0;
  CHECK_OK(kiln_instance_create(NULL, &instance)); /* defaults, no log */
  CHECK_OK(kiln_instance_num_threads(instance, &instance_threads));
  CHECK(instance_threads >= 1);
  /* A module loaded without the instance works with the instance's contexts. */
  CHECK_OK(kiln_context_options_create(&options));
  CHECK_OK(kiln_context_options_set_executor(options, KILN_EXECUTOR_GRAPH));
  CHECK_OK(kiln_instance_create_context(instance, module, options, &context));
  CHECK_OK(kiln_context_num_threads(context, &threads));
  CHECK(threads == instance_threads);
  {
    const int64_t shape[2] = {2, 3};
    kiln_tensor_t* x = test_f32_tensor(shape, 2, 0, 1);
    kiln_outputs_t* outputs = NULL;
    CHECK_OK(kiln_context_invoke(context, "pair", &x, 1, &outputs)); /* on the static graph */
    kiln_outputs_release(outputs);
    kiln_tensor_release(x);
  }
  kiln_context_release(context);
  CHECK_OK(kiln_context_options_set_num_threads(options, 3));
  CHECK_STATUS(kiln_instance_create_context(instance, module, options, &context), KILN_STATUS_INVALID_ARGUMENT,
               "runs on the instance's pool");
  CHECK(context == NULL);
  kiln_context_options_release(options);
  CHECK_STATUS(kiln_instance_create_context(NULL, module, NULL, &context), KILN_STATUS_INVALID_ARGUMENT,
               "instance is NULL");
  CHECK_STATUS(kiln_instance_create_context(instance, NULL, NULL, &context), KILN_STATUS_INVALID_ARGUMENT,
               "module is NULL");
  CHECK_STATUS(kiln_instance_create_context(instance, module, NULL, NULL), KILN_STATUS_INVALID_ARGUMENT,
               "out_context is NULL");
  kiln_instance_release(instance);
  kiln_module_release(module);
}

static void test_argument_errors(void) {
  kiln_instance_options_t* options = NULL;
  kiln_instance_t* instance = NULL;
  kiln_module_t* module = (kiln_module_t*)&module;
  int32_t threads = 7;
  kiln_allocator_t half = {NULL, NULL, plain_free};
  CHECK_OK(kiln_instance_options_create(&options));
  CHECK_STATUS(kiln_instance_options_create(NULL), KILN_STATUS_INVALID_ARGUMENT, "out_options is NULL");
  CHECK_STATUS(kiln_instance_options_set_num_threads(options, -2), KILN_STATUS_INVALID_ARGUMENT, "num_threads is -2");
  CHECK_STATUS(kiln_instance_options_set_num_threads(options, 1025), KILN_STATUS_INVALID_ARGUMENT,
               "use 0 (one per core) to 1024");
  CHECK_STATUS(kiln_instance_options_set_num_threads(NULL, 1), KILN_STATUS_INVALID_ARGUMENT, "options is NULL");
  CHECK_STATUS(kiln_instance_options_set_allocator(options, &half), KILN_STATUS_INVALID_ARGUMENT,
               "needs both an allocate and a free callback");
  CHECK_OK(kiln_instance_options_set_allocator(options, NULL));
  CHECK_STATUS(kiln_instance_options_set_allocator(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "options is NULL");
  CHECK_STATUS(kiln_instance_options_set_logger(options, record_log, NULL, (kiln_log_level_t)4),
               KILN_STATUS_INVALID_ARGUMENT, "unknown log level 4");
  CHECK_STATUS(kiln_instance_options_set_logger(options, record_log, NULL, (kiln_log_level_t)-1),
               KILN_STATUS_INVALID_ARGUMENT, "unknown log level -1");
  CHECK_STATUS(kiln_instance_options_set_logger(NULL, record_log, NULL, KILN_LOG_INFO), KILN_STATUS_INVALID_ARGUMENT,
               "options is NULL");
  CHECK_OK(kiln_instance_options_set_logger(options, NULL, NULL, KILN_LOG_ERROR)); /* logging off */
  CHECK_STATUS(kiln_instance_create(options, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_instance is NULL");
  CHECK_OK(kiln_instance_create(options, &instance));
  kiln_instance_options_release(options);
  kiln_instance_options_release(NULL);
  CHECK_STATUS(kiln_instance_num_threads(NULL, &threads), KILN_STATUS_INVALID_ARGUMENT, "instance is NULL");
  CHECK(threads == 0);
  CHECK_STATUS(kiln_instance_num_threads(instance, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_num_threads is NULL");
  CHECK_STATUS(kiln_instance_load_module_file(NULL, test_model_path(), &module), KILN_STATUS_INVALID_ARGUMENT,
               "instance is NULL");
  CHECK(module == NULL);
  CHECK_STATUS(kiln_instance_load_module_file(instance, NULL, &module), KILN_STATUS_INVALID_ARGUMENT,
               "path is NULL");
  CHECK_STATUS(kiln_instance_load_module_file(instance, test_model_path(), NULL), KILN_STATUS_INVALID_ARGUMENT,
               "out_module is NULL");
  CHECK_STATUS(kiln_instance_load_module_buffer(NULL, "x", 1, &module), KILN_STATUS_INVALID_ARGUMENT,
               "instance is NULL");
  CHECK_STATUS(kiln_instance_load_module_buffer(instance, NULL, 1, &module), KILN_STATUS_INVALID_ARGUMENT,
               "data is NULL");
  CHECK_STATUS(kiln_instance_load_module_buffer(instance, "x", 1, NULL), KILN_STATUS_INVALID_ARGUMENT,
               "out_module is NULL");
  kiln_instance_release(instance);
}

/* A module loaded through an instance gives plain contexts the instance's
 * pool and logger, unless their options ask for a thread count. */
static void test_module_of_instance(void) {
  kiln_instance_options_t* options = NULL;
  kiln_instance_t* instance = NULL;
  kiln_module_t* module = NULL;
  kiln_context_t* context = NULL;
  kiln_context_options_t* context_options = NULL;
  int calls = 0;
  int32_t threads = 0;
  g_log_count = 0;
  test_register_scale();
  CHECK_OK(kiln_instance_options_create(&options));
  CHECK_OK(kiln_instance_options_set_num_threads(options, 2));
  CHECK_OK(kiln_instance_options_set_logger(options, record_log, &calls, KILN_LOG_DEBUG));
  CHECK_OK(kiln_instance_create(options, &instance));
  kiln_instance_options_release(options);
  CHECK_OK(kiln_instance_load_module_file(instance, test_model_path(), &module));
  kiln_instance_release(instance); /* the module keeps it */
  CHECK_OK(kiln_context_create(module, &context));
  CHECK_OK(kiln_context_num_threads(context, &threads));
  CHECK(threads == 2);
  CHECK(logged(KILN_LOG_DEBUG, "context created"));
  {
    kiln_outputs_t* outputs = NULL;
    CHECK_STATUS(kiln_context_invoke(context, "pair", NULL, 0, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "pair: expected 1 inputs, got 0");
    CHECK(logged(KILN_LOG_WARNING, "kiln_context_invoke failed: pair: expected 1 inputs, got 0"));
  }
  kiln_context_release(context);
  CHECK_OK(kiln_context_options_create(&context_options));
  CHECK_OK(kiln_context_options_set_num_threads(context_options, 1));
  CHECK_OK(kiln_context_create_with_options(module, context_options, &context));
  kiln_context_options_release(context_options);
  CHECK_OK(kiln_context_num_threads(context, &threads));
  CHECK(threads == 1);
  kiln_context_release(context);
  kiln_module_release(module);
}

int main(void) {
  RUN_TEST(test_instance_runs_contexts);
  RUN_TEST(test_module_of_instance);
  RUN_TEST(test_log_levels_and_failures);
  RUN_TEST(test_defaults_and_context_options);
  RUN_TEST(test_argument_errors);
  return FINISH();
}
