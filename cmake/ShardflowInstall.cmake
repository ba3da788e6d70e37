# `cmake --install` puts headers (include/shardflow/...), libraries, a CMake package so that
# find_package(shardflow) gives shardflow::shardflow, and a pkg-config file (shardflow.pc).
include(CMakePackageConfigHelpers)
install(TARGETS shardflow EXPORT shardflowTargets)
install(EXPORT shardflowTargets NAMESPACE shardflow:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardflow)
configure_package_config_file(cmake/shardflowConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/shardflowConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardflow)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/shardflowConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/shardflowConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/shardflowConfigVersion.cmake
              cmake/FindCAF.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardflow)
install(FILES shardflow/shardflow.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shardflow)

# The libraries are static, so the .pc file lists what they link (libzmq, libsodium and CAF
# included); a sanitized tree's programs need its sanitizer runtime too.
set(SF_PC_SANITIZE "")
if(SHARDFLOW_SANITIZE)
  set(SF_PC_SANITIZE " -fsanitize=${SHARDFLOW_SANITIZE}")
endif()
# The prefix is found from the .pc file's own place, so `cmake --install --prefix P` works for
# any P chosen after configuring.
file(RELATIVE_PATH SF_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(cmake/shardflow.pc.in ${CMAKE_CURRENT_BINARY_DIR}/shardflow.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/shardflow.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
