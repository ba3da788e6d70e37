# sf_export_library(NAME): what every shardflow library shares. Headers are included as
# <shardflow/LAYER/x.h> from the source root (build) or the include root (installed), so
# nothing in a user's project can shadow them; C++20 is a usage requirement, since the headers
# need it. The library joins the exported set and installs.
function(sf_export_library name)
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${name} PUBLIC cxx_std_20)
  if(SHARDFLOW_SANITIZE)
    # A program linking a sanitized library needs the sanitizer's runtime, installed ones too.
    target_link_options(${name} INTERFACE -fsanitize=${SHARDFLOW_SANITIZE})
  endif()
  set_target_properties(${name} PROPERTIES EXPORT_NAME ${name})
  install(TARGETS ${name} EXPORT shardflowTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# sf_install_headers(): the current layer folder's headers (subfolders too) under
# include/shardflow/LAYER.
function(sf_install_headers)
  get_filename_component(layer ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shardflow/${layer}
          FILES_MATCHING PATTERN "*.h")
endfunction()

# sf_layer(NAME DEPS...): a library from every .cc in the current folder (recursively).
function(sf_layer name)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  add_library(${name} ${srcs})
  target_link_libraries(${name} PUBLIC ${ARGN})
  sf_export_library(${name})
  sf_install_headers()
endfunction()

# sf_example(NAME): one single-file program examples/NAME.cc linked to the whole library.
# Like the tests, at -O1: a program's own code is its options and wiring, the work is the
# library's, and -O3 only slows the build.
function(sf_example name)
  add_executable(${name} ${name}.cc)
  target_link_libraries(${name} PRIVATE shardflow CLI11::CLI11)
  target_compile_options(${name} PRIVATE -O1)
endfunction()
