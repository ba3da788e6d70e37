# SHARDFLOW_SANITIZE and SHARDFLOW_FUZZ: instrument every target of the build (docs/testing.md).
# Sanitizers apply to the whole tree, libraries included, so a bug in a layer is caught by any
# test that reaches it; Debian's CAF, libzmq and OpenBLAS stay uninstrumented (their known
# benign reports are suppressed in tests/sanitizers/).
if(SHARDFLOW_SANITIZE)
  string(REPLACE "," ";" _sf_sanitizers "${SHARDFLOW_SANITIZE}")
  foreach(s IN LISTS _sf_sanitizers)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "SHARDFLOW_SANITIZE: '${s}' is not one of address, undefined, thread, leak")
    endif()
  endforeach()
  if("thread" IN_LIST _sf_sanitizers AND "address" IN_LIST _sf_sanitizers)
    message(FATAL_ERROR "SHARDFLOW_SANITIZE: thread cannot be combined with address")
  endif()
  set(_sf_flags -fsanitize=${SHARDFLOW_SANITIZE} -fno-omit-frame-pointer)
  if("undefined" IN_LIST _sf_sanitizers)
    # A UB report fails the test that caused it instead of scrolling by.
    list(APPEND _sf_flags -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${_sf_flags})
  add_link_options(${_sf_flags})
endif()

if(SHARDFLOW_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "SHARDFLOW_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14")
endif()
