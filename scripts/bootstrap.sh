#!/usr/bin/env bash
# Install the Debian packages Stria builds, tests and benchmarks with, and
# the S3 server of the tests (s3rver, from npm, into tests/s3).
# slurm-wlm and munge are for tests/testbed/slurm.sh, which runs daemons of
# its own with its own settings; the packages' services do not start
# without /etc/slurm/slurm.conf (munged starts, harmless).
# dbench is for bench/bench_dbench.sh (its load file is /usr/share/dbench/client.txt).
# prometheus is for tests/func/prometheus.sh, which runs one of its own on a
# port of its own: the package's service is stopped and disabled here.
# Only what is missing is installed; safe to run again.
set -euo pipefail
pkgs=(build-essential cmake pkg-config liblmdb-dev libfuse3-dev fuse3 liburing-dev
      libssl-dev libcmocka-dev libisal-dev fio dbench attr clang clang-format iproute2 procps psmisc
      gnuplot-nox glusterfs-server glusterfs-client
      libcurl4-openssl-dev libxml2-dev awscli openssl curl python3 openssh-server
      openssh-client dpkg-dev groff-base man-db systemd systemd-container slurm-wlm munge
      prometheus)
# Node only where there is none (a nodesource or nvm one is left alone).
command -v node >/dev/null 2>&1 || pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
    if [[ " ${missing[*]} " == *" prometheus "* ]]; then
        # Not a service here: it would listen on 9090 and keep scraping.
        $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
fi
# s3rver, pinned by tests/s3/package-lock.json.
s3=$(cd "$(dirname "$0")/../tests/s3" && pwd)
if [ ! -x "$s3/node_modules/.bin/s3rver" ]; then
    echo "bootstrap: installing s3rver into $s3/node_modules"
    (cd "$s3" && npm ci --no-audit --no-fund --loglevel=error)
fi
