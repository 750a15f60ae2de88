# Project helpers: every target is declared through these, with explicit sources.

# kiln_library(NAME SRCS a.cc b.cc DEPS x y [PRIVATE_DEPS z])
function(kiln_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

# kiln_test(NAME SRCS a_test.cc DEPS lib [LABELS l] [SHARDS n])
function(kiln_test name)
  if(NOT KILN_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "SHARDS" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  # SHARDS N: the suite runs as N ctest tests NAME_I_of_N, each a slice of its
  # tests by GoogleTest's own sharding (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX),
  # so `ctest -j` runs the slices side by side and no slice of a large suite
  # runs near the timeout below (kiln_op_test and the symbolic conv and
  # depthwise schedules took 540-580 s each in `make test` on a 2-core machine
  # at load average 15-20).
  set(tests ${name})
  if(ARG_SHARDS)
    set(tests)
    math(EXPR last "${ARG_SHARDS} - 1")
    foreach(i RANGE ${last})
      math(EXPR k "${i} + 1")
      set(t ${name}_${k}_of_${ARG_SHARDS})
      add_test(NAME ${t} COMMAND ${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
      set_tests_properties(${t} PROPERTIES ENVIRONMENT "GTEST_TOTAL_SHARDS=${ARG_SHARDS};GTEST_SHARD_INDEX=${i}")
      list(APPEND tests ${t})
    endforeach()
  else()
    add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  endif()
  # 600 s: the largest suites take about a minute of CPU each, and `make test`
  # on a 2-core machine that is busy with something else gave them under a
  # fifth of a core (kiln_op_test passed nothing in 300 s at load average 16);
  # a hung test still fails in 10 minutes.
  set_tests_properties(${tests} PROPERTIES TIMEOUT 600)
  if(ARG_LABELS)
    set_tests_properties(${tests} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()

# kiln_tool(NAME SRCS main.cc DEPS lib)
function(kiln_tool name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
endfunction()

# kiln_export_c_api(TARGET): an executable that loads plugins (kiln.h,
# "Plugins") carries every function of the C API, not only those it calls,
# and exports them, so that a plugin's kiln_register_function resolves to this
# process's registry. The archive is linked whole ahead of the normal link
# line (where it may appear again through DEPS without duplicating anything).
function(kiln_export_c_api target)
  target_link_libraries(${target} PRIVATE kiln_c_api)
  target_link_options(${target} PRIVATE
    "LINKER:--whole-archive,$<TARGET_FILE:kiln_c_api>,--no-whole-archive"
    "LINKER:--dynamic-list=${PROJECT_SOURCE_DIR}/capi/kiln.dynlist")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/capi/kiln.dynlist)
endfunction()
