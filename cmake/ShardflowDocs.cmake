# The API reference (docs/api_reference.md): `cmake --build build --target docs` writes HTML to
# build/docs/api/html, and the `docs` test fails on any Doxygen warning. Only when doxygen is
# installed. Its input is the umbrella header and every header the umbrella includes, read
# from the umbrella's #include lines, so a header added there is documented and checked.
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "doxygen not found: no `docs` target")
  return()
endif()

set(SF_UMBRELLA ${PROJECT_SOURCE_DIR}/shardflow/shardflow.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${SF_UMBRELLA})
file(STRINGS ${SF_UMBRELLA} sf_includes REGEX "^#include <shardflow/.*\\.h>")
set(sf_headers ${SF_UMBRELLA})
foreach(line IN LISTS sf_includes)
  string(REGEX REPLACE "^#include <(shardflow/.*\\.h)>.*" "\\1" header "${line}")
  list(APPEND sf_headers ${PROJECT_SOURCE_DIR}/${header})
endforeach()
list(APPEND sf_headers ${PROJECT_SOURCE_DIR}/docs/api_mainpage.md)
list(JOIN sf_headers " \\\n                         " SF_DOCS_INPUT)

# The `docs` target prints warnings as it goes; the test's run writes them to a log it reads.
set(SF_DOCS_OUTPUT_DIR ${PROJECT_BINARY_DIR}/docs/api)
set(SF_DOCS_WARN_LOG "")
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/docs/Doxyfile @ONLY)
set(SF_DOCS_OUTPUT_DIR ${PROJECT_BINARY_DIR}/docs/check)
set(SF_DOCS_WARN_LOG ${PROJECT_BINARY_DIR}/docs/check/warnings.log)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/docs/Doxyfile.check @ONLY)

add_custom_target(docs
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/docs/api
  COMMAND Doxygen::doxygen ${PROJECT_BINARY_DIR}/docs/Doxyfile
  COMMAND ${CMAKE_COMMAND} -E echo "API reference: ${PROJECT_BINARY_DIR}/docs/api/html/index.html"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "Doxygen: the API reference"
  VERBATIM)

if(SHARDFLOW_BUILD_TESTS)
  add_test(NAME docs.doxygen_no_warnings
           COMMAND ${CMAKE_COMMAND} -DDOXYGEN=${DOXYGEN_EXECUTABLE}
                   -DDOXYFILE=${PROJECT_BINARY_DIR}/docs/Doxyfile.check
                   -DWARN_LOG=${SF_DOCS_WARN_LOG}
                   -P ${PROJECT_SOURCE_DIR}/cmake/check_doxygen.cmake
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(docs.doxygen_no_warnings PROPERTIES LABELS docs TIMEOUT 300)
endif()
