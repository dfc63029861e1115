#!/usr/bin/env bash
# Installs the Debian packages scratchplan needs to build, test, fuzz and benchmark.
# Nothing is downloaded at build time; this is the only place dependencies come from.
set -euo pipefail
PACKAGES=(
  g++ cmake ninja-build python3
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev
  # The Python package (python/) and its tests, the offline pip install (setuptools backend),
  # and the PyTorch front end.
  python3-dev pybind11-dev python3-numpy python3-pytest python3-sympy
  python3-setuptools python3-venv python3-pip python3-wheel
  python3-torch python3-torchvision python3-torchaudio python3-distributed
  # Picture tests render every SVG (rsvg-convert).
  librsvg2-bin
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
