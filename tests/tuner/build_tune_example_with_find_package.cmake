# Installs ktune from BUILD_DIR into a scratch prefix under WORK, builds the library example
# (examples/tuner) against it with find_package(ktune COMPONENTS tuner), as a program that links
# ktune::tuner would, and runs it on a shipped recording: it must tune as `ktune tune` does.
# Run with: cmake -DBUILD_DIR=... -DEXAMPLE_DIR=... -DRECORDING=... -DWORK=... -DGENERATOR=...
#           -DCXX=... -P <this>
file(REMOVE_RECURSE "${WORK}")
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()
run("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK}/prefix")
run("configure" ${CMAKE_COMMAND} -S "${EXAMPLE_DIR}" -B "${WORK}/build" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${WORK}/prefix" "-DCMAKE_CXX_COMPILER=${CXX}")
run("build" ${CMAKE_COMMAND} --build "${WORK}/build")
run("tune_job" "${WORK}/build/tune_job" reduce --budget 40 --db "${WORK}/r.db" --replay "${RECORDING}")
if(NOT last_out MATCHES "reduce \\[n=268435456\\] on NVIDIA H100 80GB HBM3 \\(replayed\\): 40 trials, run 1 finished")
  message(FATAL_ERROR "unexpected output:\n${last_out}")
endif()
if(NOT last_out MATCHES "best block_size=")
  message(FATAL_ERROR "no best:\n${last_out}")
endif()
# The database it wrote is ktune's: the installed CLI reads it.
run("ktune best" "${WORK}/prefix/bin/ktune" best reduce --problem n=2**28 --arch sm_90 --db "${WORK}/r.db")
message(STATUS "tune_job through the installed ktune::tuner:\n${last_out}")
