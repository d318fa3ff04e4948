#!/usr/bin/env bash
# Installs the Debian packages ktune builds against (run as root, or with sudo available).
# The CUDA toolkit (nvcc, NVRTC, headers, runtime) is expected under /usr/local/cuda already.
set -euo pipefail
pkgs=(
  cmake ninja-build g++ pkg-config
  libboost-program-options-dev libsqlite3-dev libsqlitecpp-dev
  nlohmann-json3-dev libtomlplusplus-dev libfmt-dev
  python3-dev pybind11-dev python3-optuna python3-numpy python3-scipy python3-venv python3-pip python3-pandas
  postgresql python3-psycopg2 python3-sqlalchemy redis-server python3-redis
  libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev libxxhash-dev
  chromium clang-format clang libclang-rt-14-dev universal-ctags
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
