# sf_layer(NAME DEPS...): a library from every .cc in the current folder (recursively).
function(sf_layer name)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  add_library(${name} ${srcs})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/shardflow>)
  target_link_libraries(${name} PUBLIC ${ARGN})
  if(SHARDFLOW_SANITIZE)
    # A program linking a sanitized library needs the sanitizer's runtime, installed ones too.
    target_link_options(${name} INTERFACE -fsanitize=${SHARDFLOW_SANITIZE})
  endif()
  set_target_properties(${name} PROPERTIES EXPORT_NAME ${name})
  install(TARGETS ${name} EXPORT shardflowTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  get_filename_component(layer ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shardflow/${layer}
          FILES_MATCHING PATTERN "*.h")
endfunction()

# sf_example(NAME): one single-file program examples/NAME.cc linked to the whole library.
function(sf_example name)
  add_executable(${name} ${name}.cc)
  target_link_libraries(${name} PRIVATE shardflow CLI11::CLI11)
endfunction()
