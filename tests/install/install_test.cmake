# cmake --install the build tree into a scratch prefix, then build and run a consumer
# project against it with find_package(shardflow), compiled by the compiler that built the tree
# (a sanitized tree's libraries need that compiler's sanitizer runtime).
set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
foreach(step
    "${CMAKE_COMMAND};--install;${BUILD_DIR};--prefix;${prefix}"
    "${CMAKE_COMMAND};-S;${SOURCE_DIR};-B;${WORK}/build;-G;Ninja;-DCMAKE_BUILD_TYPE=Release;-DCMAKE_PREFIX_PATH=${prefix};-DCMAKE_CXX_COMPILER=${CXX}"
    "${CMAKE_COMMAND};--build;${WORK}/build"
    "${WORK}/build/consumer")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${step}\n${out}\n${err}")
  endif()
endforeach()
if(NOT out MATCHES "epoch: 2 step: 4, loss is [0-9.]+\nconsumer ok")
  message(FATAL_ERROR "unexpected consumer output:\n${out}")
endif()
