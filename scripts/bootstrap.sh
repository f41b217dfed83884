#!/usr/bin/env bash
# Install the Debian packages Stria builds, tests and benchmarks with.
# Only what is missing is installed; safe to run again.
set -euo pipefail
pkgs=(build-essential cmake pkg-config liblmdb-dev libfuse3-dev fuse3 liburing-dev
      libssl-dev libcmocka-dev libisal-dev fio attr clang clang-format iproute2 procps psmisc
      gnuplot-nox glusterfs-server glusterfs-client)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "bootstrap: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
