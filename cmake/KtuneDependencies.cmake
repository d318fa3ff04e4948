# Finds every third-party dependency once, from Debian packages (see scripts/install-deps.sh).
include_guard(GLOBAL)

find_package(Threads REQUIRED)
find_package(CUDAToolkit 12.0 REQUIRED)         # NVRTC and the static CUDA runtime; no driver needed to build
# NVRTC without the driver: CMake's CUDA::nvrtc also links the libcuda stub, and the ktune binary
# must start on machines that have no driver at all.
# Installed binaries find NVRTC where the toolkit keeps it.
set(CMAKE_INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
if(NOT TARGET ktune_nvrtc)
  add_library(ktune_nvrtc SHARED IMPORTED GLOBAL)
  set_target_properties(ktune_nvrtc PROPERTIES
    IMPORTED_LOCATION "${CUDA_nvrtc_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
endif()
find_package(SQLite3 REQUIRED)
find_package(SQLiteCpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(tomlplusplus 3 REQUIRED)
find_package(fmt 8 REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
# zlib (Debian zlib1g-dev) reads and writes gzip-compressed recordings (Kernel Tuner caches).
find_package(ZLIB REQUIRED)
# xxHash (Debian libxxhash-dev) is used header-only for content hashes.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)

# Embedded CPython for the Optuna strategies. Debian's /usr/bin/python3 is the default, since
# python3-optuna installs there; pass -DPython3_EXECUTABLE=... to embed another one.
if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 3.8 COMPONENTS Interpreter Development.Embed
  OPTIONAL_COMPONENTS Development.Module)
find_package(pybind11 2.6 CONFIG QUIET)

if(KTUNE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(KTUNE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
