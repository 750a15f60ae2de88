# Thin wrapper over CMake; README.md's Quick start is `make demo` and `make test`.
BUILD ?= build
BUILD_RUNTIME ?= build-runtime-only
JOBS ?= 2
CMAKE_FLAGS ?=

.PHONY: all setup configure build demo test test-runtime-only clean

all: build

setup:
	@bash scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > $(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

# Every test of the full build, then the runtime alone without LLVM, yaml-cpp or
# the compiler (what an edge deployment links).
test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory test-runtime-only

test-runtime-only: setup
	@cmake -S . -B $(BUILD_RUNTIME) -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_WITH_LLVM=OFF > $(BUILD_RUNTIME).configure.log 2>&1 || (cat $(BUILD_RUNTIME).configure.log; exit 1)
	@cmake --build $(BUILD_RUNTIME) -j $(JOBS)
	@ctest --test-dir $(BUILD_RUNTIME) --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD_RUNTIME) $(BUILD).configure.log $(BUILD_RUNTIME).configure.log
