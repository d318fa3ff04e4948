# Installation and the exported CMake package (find_package(ktune)): ktune::plugin_api (the
# plugin ABI header) in ktuneTargets; the run-time client ktune::client with what it links
# (ktune::core, ktune::process, ktune::compile, ktune::store) in ktuneClientTargets; the tuner's
# layers, ktune::tuner over them and ktune::builtin_kernels in ktuneTunerTargets. The installed
# headers are the API alone: the extension points and the client, and what they include.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The API: the plugin ABI and its C++ builder, the registry kernels are added to, strategies,
# backends, run observers, the session that tunes, the run-time client, and ktune's error.
set(ktune_api_headers
  plugins/include/ktune/plugin.h plugins/include/ktune/kernel_desc.hpp
  tuner/kernels/include/ktune/registry.h tuner/strategies/include/ktune/strategy.h
  tuner/backends/include/ktune/backend.h tuner/loop/include/ktune/observer.h
  tuner/loop/include/ktune/session.h tuner/client/include/ktune/client.h
  tuner/core/include/ktune/error.h)
# What they include, and nothing else (the ctest ktune_layering checks that this set is closed
# under #include and holds no header that the API does not reach).
set(ktune_api_dependencies
  tuner/core/include/ktune/device_identity.h tuner/core/include/ktune/device_limits.h
  tuner/core/include/ktune/energy.h
  tuner/core/include/ktune/expr.h tuner/core/include/ktune/problem.h
  tuner/core/include/ktune/problem_set.h tuner/core/include/ktune/selector.h
  tuner/core/include/ktune/space.h tuner/core/include/ktune/status.h
  tuner/core/include/ktune/value.h tuner/compile/include/ktune/compiler.h
  tuner/compile/include/ktune/render.h tuner/store/include/ktune/store.h
  tuner/kernels/include/ktune/instance.h tuner/kernels/include/ktune/job.h
  tuner/kernels/include/ktune/kernel.h tuner/backends/include/ktune/device.h
  tuner/loop/include/ktune/run_summary.h)
set(ktune_installed_headers ${ktune_api_headers} ${ktune_api_dependencies})
list(TRANSFORM ktune_installed_headers PREPEND ${PROJECT_SOURCE_DIR}/)
install(FILES ${ktune_installed_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ktune)
list(JOIN ktune_api_headers "\n" api_lines)
list(JOIN ktune_api_dependencies "\n" dependency_lines)
file(WRITE ${PROJECT_BINARY_DIR}/ktune_installed_headers.txt
  "# the API\n${api_lines}\n# what it includes\n${dependency_lines}\n")
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
