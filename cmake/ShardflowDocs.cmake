# The API reference (docs/api_reference.md): `cmake --build build --target docs` writes HTML to
# build/docs/api/html, and the `docs` test fails on any Doxygen warning. Only when doxygen is
# installed. Its input is the umbrella header and every public header reachable from it,
# so a header that becomes reachable is documented and checked from the next configure on.
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "doxygen not found: no `docs` target")
  return()
endif()

# The input is the umbrella's closure: every header reachable from it through
# `#include <shardflow/...>` lines, so the types a public signature names (Shape, Graph,
# nn::Cell, ...) are documented too. Internal headers are neither documented nor followed:
# `detail/` and `kernels/` folders and the transports' internals (comm/inproc/, comm/mpi/,
# comm/zmq/), except the inproc endpoint a user creates a world of ranks with.
set(sf_internal "/detail/|/kernels/|/comm/(inproc|mpi|zmq)/")
set(sf_public_internal shardflow/comm/inproc/transport.h)
set(sf_todo shardflow/shardflow.h)
set(sf_seen "")
set(sf_headers "")
while(sf_todo)
  list(POP_FRONT sf_todo header)
  if(header IN_LIST sf_seen)
    continue()
  endif()
  list(APPEND sf_seen ${header})
  if(header MATCHES "${sf_internal}" AND NOT header IN_LIST sf_public_internal)
    continue()
  endif()
  set(path ${PROJECT_SOURCE_DIR}/${header})
  if(NOT EXISTS ${path})
    # The compiler names the missing header; the reference just goes without it.
    message(WARNING "API reference: ${header} is included but does not exist")
    continue()
  endif()
  # A header that gains or loses an #include changes the closure: re-configure then.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
  list(APPEND sf_headers ${path})
  file(STRINGS ${path} sf_includes REGEX "^#include <shardflow/.*\\.h>")
  foreach(line IN LISTS sf_includes)
    string(REGEX REPLACE "^#include <(shardflow/.*\\.h)>.*" "\\1" included "${line}")
    list(APPEND sf_todo ${included})
  endforeach()
endwhile()
list(SORT sf_headers)
list(LENGTH sf_headers sf_count)
message(STATUS "API reference: ${sf_count} public headers")
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
