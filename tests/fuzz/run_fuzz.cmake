# ctest's fuzz.<name>.run: copies the checked-in corpus CORPUS into WORK/corpus and fuzzes it
# for 10 seconds with FUZZER, so the checked-in corpus is never written. A finding is left in
# WORK as crash-*/leak-*/timeout-*/oom-* and fails the test.
foreach(v FUZZER CORPUS WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzz.cmake: -D${v}=... is required")
  endif()
endforeach()
file(MAKE_DIRECTORY ${WORK}/corpus)
file(COPY ${CORPUS}/ DESTINATION ${WORK}/corpus)
execute_process(COMMAND ${FUZZER} -max_total_time=10 -rss_limit_mb=2048 -timeout=10 -artifact_prefix=${WORK}/
                        ${WORK}/corpus
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER}: a finding (exit ${rc}); the input is in ${WORK}/ (tests/fuzz/README.md says what to do)")
endif()
