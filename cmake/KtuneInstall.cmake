# Installation and the exported CMake package (find_package(ktune)): ktune::plugin_api (the
# plugin ABI header) in ktuneTargets; the run-time client ktune::client with what it links
# (ktune::core, ktune::compile, ktune::store) in ktuneClientTargets; the tuner library
# ktune::tuner and ktune::builtin_kernels in ktuneTunerTargets. The installed headers are
# exactly those of these targets' include roots.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ktune_header_dirs ${PROJECT_SOURCE_DIR}/plugins/include/ktune)
foreach(layer core compile store client kernels strategies backends replay loop eval report)
  list(APPEND ktune_header_dirs ${PROJECT_SOURCE_DIR}/tuner/${layer}/include/ktune)
endforeach()
install(DIRECTORY ${ktune_header_dirs} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ktune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Shipped recordings and the replay jobs with the restrictions of known recorded spaces; the
# binary looks for them at <prefix>/share/ktune (tuner/replay/replay.cpp).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/db/recordings/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ktune/recordings)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/replay/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ktune/configs/replay)
install(TARGETS ktune_plugin_api EXPORT ktuneTargets)
install(TARGETS ktune_core ktune_process ktune_compile ktune_store ktune_client
        EXPORT ktuneClientTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS ktune_kernels ktune_strategies ktune_backends ktune_replay ktune_loop ktune_eval
                ktune_report ktune_tuner ktune_builtin_kernels
        EXPORT ktuneTunerTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

install(EXPORT ktuneTargets NAMESPACE ktune:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktune)
install(EXPORT ktuneClientTargets NAMESPACE ktune:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktune)
install(EXPORT ktuneTunerTargets NAMESPACE ktune:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktune)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ktuneConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ktuneConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktune)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ktuneConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ktuneConfig.cmake ${PROJECT_BINARY_DIR}/ktuneConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/ktuneKernelPlugin.cmake
              ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktune)
