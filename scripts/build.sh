#!/usr/bin/env bash
# Sets up and builds ktune: installs the Debian packages it needs (if missing), configures with
# CMake and builds everything into ./build (or $KTUNE_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build=${KTUNE_BUILD_DIR:-build}
python=${Python3_EXECUTABLE:-/usr/bin/python3}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$python"
fi
cmake --build "$build" -j"$(nproc)"
