# kiln_install_test: cmake -P install_test.cmake with
#   BUILD_DIR   the Kiln build to install        SOURCE_DIR  the Kiln sources
#   WORK_DIR    scratch (emptied first)          GENERATOR   for the CMake consumer
#   C_COMPILER, CXX_COMPILER                     TOOLS       tools that must be installed
#   LIBDIR      CMAKE_INSTALL_LIBDIR (default lib)
#   SANITIZE    KILN_SANITIZE of the build: consumers are built with it too
#               (an ASan-instrumented libkiln.so needs an ASan executable)
#
# 1. cmake --install BUILD_DIR into WORK_DIR/stage, then move the tree to
#    WORK_DIR/prefix: the package and kiln.pc must not remember where they
#    were installed.
# 2. The installed kiln-compile compiles examples/mlp.relax twice (generated
#    matmul kernels; --matmul=dnnl: oneDNN kernels inside libkiln.so).
# 3. consumer_cmake/ (find_package(Kiln): Kiln::runtime and
#    Kiln::runtime_static; hpp_check.cc when kiln.hpp is installed) and
#    consumer_make/ (Makefile + pkg-config) are built against the prefix and
#    run on both files (mlp_check.c checks the outputs against its own
#    reference).
cmake_minimum_required(VERSION 3.25)

foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR C_COMPILER CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs a command; on failure stops the test with the command and its output.
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "${what} failed (exit ${rc}):\n  ${command}\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(stage ${WORK_DIR}/stage)
set(prefix ${WORK_DIR}/prefix)

# 1. Install, then relocate.
run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${stage})
file(RENAME ${stage} ${prefix})
if(NOT DEFINED LIBDIR)
  set(LIBDIR lib)
endif()
set(expected include/kiln/kiln.h ${LIBDIR}/libkiln.so ${LIBDIR}/cmake/Kiln/KilnConfig.cmake
    ${LIBDIR}/cmake/Kiln/KilnConfigVersion.cmake ${LIBDIR}/pkgconfig/kiln.pc ${LIBDIR}/libkiln_runtime.a)
string(REPLACE "," ";" TOOLS "${TOOLS}")
foreach(tool ${TOOLS})
  list(APPEND expected bin/${tool})
endforeach()
foreach(path ${expected})
  if(NOT EXISTS ${prefix}/${path})
    file(GLOB_RECURSE installed RELATIVE ${prefix} ${prefix}/*)
    list(JOIN installed "\n  " installed)
    message(FATAL_ERROR "not installed: ${path}\ninstalled:\n  ${installed}")
  endif()
endforeach()
file(GLOB sonames ${prefix}/${LIBDIR}/libkiln.so.*)
if(NOT sonames)
  message(FATAL_ERROR "no versioned libkiln.so.* installed")
endif()

# 2. Models, compiled by the installed compiler.
run_step("installed kiln-compile" ${prefix}/bin/kiln-compile ${SOURCE_DIR}/examples/mlp.relax
         -o ${WORK_DIR}/mlp.vmfb)
run_step("installed kiln-compile --matmul=dnnl" ${prefix}/bin/kiln-compile ${SOURCE_DIR}/examples/mlp.relax
         --matmul=dnnl -o ${WORK_DIR}/mlp_dnnl.vmfb)
set(models ${WORK_DIR}/mlp.vmfb ${WORK_DIR}/mlp_dnnl.vmfb)

set(san_flags "")
if(SANITIZE)
  set(san_flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()
set(test_dir ${CMAKE_CURRENT_LIST_DIR})

# 3a. CMake consumer.
set(cm ${WORK_DIR}/consumer_cmake)
file(COPY ${test_dir}/consumer_cmake/CMakeLists.txt ${test_dir}/mlp_check.c ${test_dir}/hpp_check.cc
     DESTINATION ${cm})
run_step("configure of the CMake consumer" ${CMAKE_COMMAND} -S ${cm} -B ${cm}/build -G ${GENERATOR}
         -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
         -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
         "-DCMAKE_C_FLAGS=${san_flags}" "-DCMAKE_CXX_FLAGS=${san_flags}" "-DCMAKE_EXE_LINKER_FLAGS=${san_flags}")
run_step("build of the CMake consumer" ${CMAKE_COMMAND} --build ${cm}/build)
if(EXISTS ${prefix}/include/kiln/kiln.hpp)
  run_step("hpp_check (CMake consumer, installed kiln.hpp)" ${cm}/build/hpp_check)
  message(STATUS "${step_output}")
endif()
foreach(model ${models})
  foreach(exe mlp_check mlp_check_static)
    run_step("${exe} (CMake consumer) on ${model}" ${cm}/build/${exe} ${model})
    message(STATUS "${exe}: ${step_output}")
  endforeach()
endforeach()

# 3b. Makefile + pkg-config consumer.
set(mk ${WORK_DIR}/consumer_make)
file(COPY ${test_dir}/consumer_make/Makefile ${test_dir}/mlp_check.c DESTINATION ${mk})
run_step("make (pkg-config consumer)" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig
         CC=${C_COMPILER} "CFLAGS=${san_flags}" "LDFLAGS=${san_flags}" make -C ${mk})
foreach(model ${models})
  run_step("mlp_check (Makefile consumer) on ${model}" ${mk}/mlp_check ${model})
  message(STATUS "mlp_check (make): ${step_output}")
endforeach()
