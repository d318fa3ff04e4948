# Installs ktune from BUILD_DIR into a scratch prefix under WORK, then configures and builds the
# example plugin (plugins/example) against it with find_package(ktune), as a user would.
# Run with: cmake -DBUILD_DIR=... -DEXAMPLE_DIR=... -DWORK=... -DGENERATOR=... -DCXX=... -P <this>
file(REMOVE_RECURSE "${WORK}")
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()
run("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK}/prefix")
run("configure" ${CMAKE_COMMAND} -S "${EXAMPLE_DIR}" -B "${WORK}/build" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${WORK}/prefix" "-DCMAKE_CXX_COMPILER=${CXX}")
run("build" ${CMAKE_COMMAND} --build "${WORK}/build")
if(NOT EXISTS "${WORK}/build/libsaxpy.so")
  message(FATAL_ERROR "the build made no ${WORK}/build/libsaxpy.so")
endif()
message(STATUS "built ${WORK}/build/libsaxpy.so against the installed ktune")
