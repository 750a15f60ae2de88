# With KILN_WITH_LLVM (the default), stops the configure at once, before any
# target, when a library the compiler builds against is missing, with one
# message that says what to install and how to build the runtime alone. Without
# it the first sign was find_package(LLVM ... REQUIRED) failing deep inside
# compiler/codegen, which `pip install ./python` shows as a page of CMake output.
function(kiln_check_compiler_deps)
  set(missing)
  find_package(LLVM 19.1 CONFIG QUIET HINTS /usr/lib/llvm-19/lib/cmake/llvm)
  if(NOT LLVM_FOUND)
    list(APPEND missing "LLVM 19 (llvm-19-dev)")
  elseif(NOT EXISTS ${LLVM_LIBRARY_DIR}/liblldELF.a)
    # compiler/codegen links lld's archives by path, beside LLVM's libraries.
    list(APPEND missing "lld 19 (liblld-19-dev)")
  endif()
  find_package(yaml-cpp QUIET)
  if(NOT yaml-cpp_FOUND)
    list(APPEND missing "yaml-cpp (libyaml-cpp-dev)")
  endif()
  if(missing)
    list(JOIN missing ", " missing_text)
    message(FATAL_ERROR
      "Kiln's compiler (KILN_WITH_LLVM=ON, the default) needs ${missing_text}: scripts/setup.sh "
      "(or `make setup`) installs them on Debian 12. To build the runtime alone, without the "
      "compiler: cmake -DKILN_WITH_LLVM=OFF, or for the Python package "
      "`pip install ./python --config-settings=cmake.define.KILN_WITH_LLVM=OFF` "
      "(kiln.load and calls work; kiln.compile and kiln.tune raise kiln.UnimplementedError).")
  endif()
endfunction()

if(KILN_WITH_LLVM)
  kiln_check_compiler_deps()
endif()
