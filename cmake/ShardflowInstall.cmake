# `cmake --install` puts headers, libraries and a CMake package so that
# find_package(shardflow) gives shardflow::shardflow.
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
install(FILES shardflow.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shardflow)
