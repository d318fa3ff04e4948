# Installs ktune from BUILD_DIR into a scratch prefix under WORK and runs a Kernel Tuner script
# (tune_kernel) with the installed Python package alone, without a GPU (CUDA_VISIBLE_DEVICES
# empty): it must replay the recording shipped in the prefix (<prefix>/share/ktune/recordings),
# as the installed ktune binary finds it, not look in the source tree the build came from. The
# recording is one that only the installed tree holds.
# Run with: cmake -DBUILD_DIR=... -DPYTHON=... -DWORK=... -P <this>
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK}/prefix"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed (${rc}):\n${out}\n${err}")
endif()
# The package's folder, wherever KTUNE_PYTHON_INSTALL_DIR put it.
file(GLOB_RECURSE interface "${WORK}/prefix/interface.py")
list(FILTER interface INCLUDE REGEX "/ktune/interface\\.py$")
list(LENGTH interface found)
if(NOT found EQUAL 1)
  message(FATAL_ERROR "expected one ktune/interface.py under ${WORK}/prefix: ${interface}")
endif()
get_filename_component(package "${interface}" DIRECTORY)
get_filename_component(package_root "${package}" DIRECTORY)

# A Kernel Tuner cache of vector_add (problem_size 10000), shipped under the canonical name;
# block_size_x 512 is the fastest.
set(cache "")
foreach(entry 128:0.40 256:0.30 512:0.25 1024:0.35)
  string(REPLACE ":" ";" entry "${entry}")
  list(GET entry 0 bs)
  list(GET entry 1 t)
  if(NOT cache STREQUAL "")
    string(APPEND cache ", ")
  endif()
  string(APPEND cache "\"${bs}\": {\"block_size_x\": ${bs}, \"time\": ${t}, "
                      "\"times\": [${t}, ${t}, ${t}], \"compile_time\": 10.0}")
endforeach()
file(WRITE "${WORK}/prefix/share/ktune/recordings/vector_add-Installed_GPU-problem_size=10000.json"
  "{\"version\": \"1.0\", \"device_name\": \"Installed GPU\", \"kernel_name\": \"vector_add\", "
  "\"problem_size\": 10000, \"tune_params_keys\": [\"block_size_x\"], "
  "\"tune_params\": {\"block_size_x\": [128, 256, 512, 1024]}, \"objective\": \"time\", "
  "\"cache\": {${cache}}}")

file(WRITE "${WORK}/tune.py" [=[
import numpy
import ktune

KERNEL = """
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
n = 10000
a = numpy.random.randn(n).astype(numpy.float32)
b = numpy.random.randn(n).astype(numpy.float32)
arguments = [numpy.zeros_like(a), a, b, numpy.int32(n)]
results, env = ktune.tune_kernel("vector_add", KERNEL, n, arguments,
                                 {"block_size_x": [128, 256, 512, 1024]}, db="tune.db", quiet=True)
print("replayed", len(results), "configurations measured on", env["device_name"])
print("best block_size_x", env["best_config"]["block_size_x"])
]=])
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=KTUNE_RECORDINGS --unset=KTUNE_REPLAY_JOBS
          --unset=KTUNE_EXECUTABLE --unset=KTUNE_DB --unset=PYTHONHOME
          "PYTHONPATH=${package_root}" "CUDA_VISIBLE_DEVICES=" "KTUNE_CACHE_DIR=${WORK}/cache"
          "${PYTHON}" "${WORK}/tune.py"
  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tune_kernel with the installed package failed (${rc}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "replayed 4 configurations measured on Installed GPU")
  message(FATAL_ERROR "the installed recording was not replayed:\n${out}\n${err}")
endif()
if(NOT out MATCHES "best block_size_x 512")
  message(FATAL_ERROR "unexpected best:\n${out}\n${err}")
endif()
message(STATUS "tune_kernel through the installed package:\n${out}")
