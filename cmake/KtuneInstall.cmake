# Installation and the exported CMake package (find_package(ktune)).
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/plugins/include/ktune
                  ${PROJECT_SOURCE_DIR}/tuner/include/ktune
                  ${PROJECT_SOURCE_DIR}/db/include/ktune
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ktune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ktune_plugin_api EXPORT ktuneTargets)

install(EXPORT ktuneTargets NAMESPACE ktune:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktune)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ktuneConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ktuneConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktune)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ktuneConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ktuneConfig.cmake ${PROJECT_BINARY_DIR}/ktuneConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktune)
