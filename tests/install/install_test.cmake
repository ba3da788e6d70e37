# cmake --install the build tree into a scratch prefix, then build and run a consumer project
# against it twice: with find_package(shardflow) and with pkg-config, compiled by the compiler
# that built the tree (a sanitized tree's libraries need that compiler's sanitizer runtime).
set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})

function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(expect_trained what)
  if(NOT out MATCHES "epoch: 2 step: 4, loss is [0-9.]+\nconsumer ok")
    message(FATAL_ERROR "unexpected output of the ${what} consumer:\n${out}")
  endif()
endfunction()

run_step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

run_step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/build -G Ninja -DCMAKE_BUILD_TYPE=Release
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX})
run_step(${CMAKE_COMMAND} --build ${WORK}/build)
run_step(${WORK}/build/consumer)
expect_trained("find_package")

file(GLOB_RECURSE pc_file ${prefix}/shardflow.pc)
if(NOT pc_file)
  message(FATAL_ERROR "no shardflow.pc under ${prefix}")
endif()
get_filename_component(pc_dir ${pc_file} DIRECTORY)
find_program(PKG_CONFIG pkg-config REQUIRED)
run_step(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir} ${PKG_CONFIG} --cflags --libs shardflow)
separate_arguments(flags UNIX_COMMAND "${out}")
run_step(${CXX} ${SOURCE_DIR}/main.cc -I${SOURCE_DIR} ${flags} -o ${WORK}/consumer_pc)
run_step(${WORK}/consumer_pc)
expect_trained("pkg-config")
