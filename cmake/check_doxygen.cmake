# The `docs` test: runs Doxygen on the public headers (DOXYFILE) and fails if it warned,
# printing the first warnings. Warnings go to WARN_LOG; a warning about the configuration
# itself comes before the log is open and goes to stderr, so both are read.
# cmake -DDOXYGEN=... -DDOXYFILE=... -DWARN_LOG=... -P check_doxygen.cmake
get_filename_component(out_dir ${WARN_LOG} DIRECTORY)
file(REMOVE_RECURSE ${out_dir})
file(MAKE_DIRECTORY ${out_dir})
execute_process(COMMAND ${DOXYGEN} ${DOXYFILE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen ${DOXYFILE} failed (exit ${rc}):\n${out}${err}")
endif()
set(warnings "")
if(EXISTS ${WARN_LOG})
  file(READ ${WARN_LOG} warnings)
endif()
string(APPEND warnings "${err}")
string(STRIP "${warnings}" warnings)
if(NOT warnings STREQUAL "")
  string(REGEX MATCHALL "warning:" hits "${warnings}")
  list(LENGTH hits count)
  string(LENGTH "${warnings}" length)
  if(length GREATER 3000)
    string(SUBSTRING "${warnings}" 0 3000 warnings)
    string(APPEND warnings "\n... (the rest in ${WARN_LOG})")
  endif()
  # NOTICE prints the lines as they are; FATAL_ERROR would re-wrap them.
  message(NOTICE "${warnings}")
  message(FATAL_ERROR "Doxygen printed ${count} warning(s) for the public headers: every "
                      "public declaration needs a /// comment (docs/api_reference.md)")
endif()
message(STATUS "Doxygen: no warnings")
