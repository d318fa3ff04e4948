# Installs ktune from BUILD_DIR into a scratch prefix under WORK, builds the histogram example
# (examples/histogram: ktune_add_kernel_plugin, a generator, file inputs) against it as a user
# would, then checks it with the installed ktune on the no-GPU path: `check` over the file job
# (its .npy input and expected histogram checked against the buffers, every parameter changing
# the CUBIN or the launch) and over the generated input, and `compile` of one configuration.
# Run with: cmake -DBUILD_DIR=... -DEXAMPLE_DIR=... -DWORK=... -DGENERATOR=... -DCXX=... -P <this>
file(REMOVE_RECURSE "${WORK}")
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY "${WORK}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()
file(MAKE_DIRECTORY "${WORK}")
run("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK}/prefix")
run("configure" ${CMAKE_COMMAND} -S "${EXAMPLE_DIR}" -B "${WORK}/build" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${WORK}/prefix" "-DCMAKE_CXX_COMPILER=${CXX}")
run("build" ${CMAKE_COMMAND} --build "${WORK}/build")
set(plugin "${WORK}/build/libhistogram.so")
if(NOT EXISTS "${plugin}")
  message(FATAL_ERROR "the build made no ${plugin}")
endif()
set(ENV{KTUNE_CACHE_DIR} "${WORK}/cache")
set(ktune "${WORK}/prefix/bin/ktune")
foreach(job text skewed)
  run("ktune check (${job}.toml)" ${ktune} check --plugin "${plugin}" --arch sm_90
      --config "${EXAMPLE_DIR}/${job}.toml")
  if(NOT out MATCHES "parameter 'items_per_thread' +changes the (code|launch)")
    message(FATAL_ERROR "ktune check (${job}.toml) does not say items_per_thread matters:\n${out}")
  endif()
  foreach(needle "0 errors, 0 warnings" "parameter 'items_per_thread'")
    string(FIND "${out}" "${needle}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "ktune check (${job}.toml) does not say '${needle}':\n${out}")
    endif()
  endforeach()
  if(job STREQUAL "text" AND NOT out MATCHES "inputs +data file\\(")
    message(FATAL_ERROR "ktune check (text.toml) does not name the input file:\n${out}")
  endif()
endforeach()
run("ktune compile" ${ktune} compile histogram --plugin "${plugin}" --arch sm_90
    -s items_per_thread=8,replicas=4)
message(STATUS "built and checked ${plugin} against the installed ktune:\n${out}")
