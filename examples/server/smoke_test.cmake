# kiln-server smoke test (cmake -P): runs the server briefly in each feeding
# mode and checks that it succeeds and prints a complete report; and that bad
# input fails with a message.
foreach(var SERVER MODEL)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "smoke_test.cmake needs -D${var}=...")
  endif()
endforeach()

function(expect_report name)
  execute_process(COMMAND ${SERVER} ${MODEL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  INPUT_FILE ${INPUT})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: kiln-server exited with ${rc}\n${out}\n${err}")
  endif()
  foreach(line "requests: +[0-9]+ served, 0 failed" "throughput: +[0-9.]+ requests/s"
               "latency ms: +p50 +[0-9.]+ +p90 +[0-9.]+ +p99 +[0-9.]+ +max +[0-9.]+" "call ms: +p50")
    if(NOT out MATCHES "${line}")
      message(FATAL_ERROR "${name}: the report has no line matching '${line}':\n${out}")
    endif()
  endforeach()
  message(STATUS "${name}:\n${out}")
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

set(INPUT /dev/null)
expect_report("requests" --workers=2 --threads=1 --requests=200 --dim n=1)
if(NOT last_out MATCHES "200 served")
  message(FATAL_ERROR "requests: expected 200 served:\n${last_out}")
endif()
expect_report("seconds" --workers=3 --seconds=0.3 --dim n=2 --executor=vm)
set(stdin_file ${CMAKE_CURRENT_BINARY_DIR}/kiln_server_stdin.txt)
file(WRITE ${stdin_file} "a\nb\nc\nd\ne\n")
set(INPUT ${stdin_file})
expect_report("stdin" --stdin --workers=1)
if(NOT last_out MATCHES "5 served")
  message(FATAL_ERROR "stdin: expected 5 served:\n${last_out}")
endif()

# Failures: a non-zero status and a message naming the problem.
function(expect_failure name pattern)
  execute_process(COMMAND ${SERVER} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  INPUT_FILE /dev/null)
  if(rc EQUAL 0 OR NOT err MATCHES "${pattern}")
    message(FATAL_ERROR "${name}: expected failure matching '${pattern}', got ${rc}\n${out}\n${err}")
  endif()
endfunction()
expect_failure("missing model" "/nonexistent.vmfb" /nonexistent.vmfb)
expect_failure("unknown function" "no function 'nope'" ${MODEL} --function=nope)
expect_failure("bad flag" "unknown flag --frobnicate" ${MODEL} --frobnicate)
expect_failure("bad workers" "--workers=0: expected a positive integer" ${MODEL} --workers=0)
