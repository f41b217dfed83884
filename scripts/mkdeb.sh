#!/usr/bin/env bash
# The Debian package of Stria, from a build directory (`make deb`):
#   scripts/mkdeb.sh BUILD [OUTDIR]   ->  OUTDIR/stria_VERSION_ARCH.deb (OUTDIR: BUILD)
#
# `cmake --install BUILD --prefix /usr --strip` into a staging root, then
# Debian's own tools: dpkg-shlibdeps for the libraries the binaries link
# (Depends), dpkg-deb to build. No debhelper: the package is one binary
# package with no source package. It holds the binaries, libstria and
# stria.h, the man pages, the systemd units (/lib/systemd/system) and the
# config templates and unit examples (/usr/share/doc/stria/examples). It
# enables and starts nothing: the units need /etc/stria/*.conf first
# (docs/operations.md, "On real nodes"). VERSION is the project's
# (CMakeLists.txt), or $DEB_VERSION. The last line printed is the .deb's path.
set -euo pipefail
umask 022
[ $# -ge 1 ] || { echo "usage: $0 BUILD [OUTDIR]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
out=$(mkdir -p "${2:-$build}" && cd "${2:-$build}" && pwd)
for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture; do
    command -v $tool >/dev/null || { echo "mkdeb: $tool is missing (Debian: dpkg-dev)" >&2; exit 1; }
done

version=${DEB_VERSION:-$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")}
[ -n "$version" ] || { echo "mkdeb: no project version in $build/CMakeCache.txt" >&2; exit 1; }
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
deb="$out/stria_${version}_${arch}.deb"

work=$(mktemp -d "$out/mkdeb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"
chmod 0755 "$root"

DESTDIR="$root" cmake --install "$build" --prefix /usr --strip >"$work/install.log" ||
    { cat "$work/install.log" >&2; exit 1; }
for f in usr/bin/stria usr/bin/stria-mgmtd usr/bin/stria-metad usr/bin/stria-stord \
    usr/bin/stria-fuse usr/sbin/mount.stria; do
    [ -x "$root/$f" ] || { echo "mkdeb: $f was not built (stria-fuse needs libfuse3-dev)" >&2; exit 1; }
done

# libstria in the multiarch directory, as Debian's libraries are.
if [ -n "$multiarch" ] && [ -e "$root/usr/lib/libstria.so.0" ]; then
    mkdir -p "$root/usr/lib/$multiarch"
    mv "$root"/usr/lib/libstria.so* "$root/usr/lib/$multiarch/"
fi
libdir=$(dirname "$(find "$root/usr/lib" -name 'libstria.so.0' | head -n 1)")
# Man pages compressed, as Debian policy wants them.
find "$root/usr/share/man" -type f -name '*.[18]' -exec gzip -9n {} +
# /etc/stria, where the configs and the key go (none is shipped: they name
# the cluster's hosts, so there are no conffiles).
install -d -m 0755 "$root/etc/stria"

# Depends: the packages of the shared libraries the binaries link
# (libfuse3-3, liblmdb0, libcurl4, libxml2, libssl3, libisal2, libc6...),
# found by dpkg-shlibdeps; libstria is our own. fuse3 for fusermount3
# (unmounting, the units' ExecStartPre).
mkdir -p "$work/src/debian"
printf 'Source: stria\n\nPackage: stria\nArchitecture: any\n' >"$work/src/debian/control"
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O -l"$libdir" --ignore-missing-info \
    "$root"/usr/bin/* "$root"/usr/sbin/mount.stria "$libdir"/libstria.so.0 2>"$work/shlibdeps.err") ||
    { cat "$work/shlibdeps.err" >&2; exit 1; }
depends=$(sed -n 's/^shlibs:Depends=//p' <<<"$shlibs")
[ -n "$depends" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
depends="$depends, fuse3"

install -d -m 0755 "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: stria
Version: $version
Architecture: $arch
Maintainer: ${DEB_MAINTAINER:-Stria developers <stria@localhost>}
Installed-Size: $size
Depends: $depends
Recommends: openssl
Section: admin
Priority: optional
Description: parallel file system for AI training clusters
 Stria runs entirely in user space: a management service (stria-mgmtd),
 metadata services (stria-metad, the namespace in LMDB) and storage
 services (stria-stord, file data striped over object storage targets)
 over TCP, the native client library libstria, a FUSE mount (stria-fuse,
 mount.stria) and one command-line tool (stria). Directories can be
 linked to S3 buckets.
 .
 The systemd units stria-mgmtd, stria-metad, stria-stord and
 stria-fuse@MOUNTPOINT run a node's share of a cluster from the
 configuration files in /etc/stria (templates in
 /usr/share/doc/stria/examples); nothing is enabled or started at install.
EOF
# libstria's soname, for packages built against it.
printf 'libstria 0 stria (>= %s)\n' "$version" >"$root/DEBIAN/shlibs"
printf 'activate-noawait ldconfig\n' >"$root/DEBIAN/triggers"

# Maintainer scripts: systemd learns of new or removed units, when it is
# the running init (not in a container or chroot without it). Daemons are
# not restarted on upgrade: restart them a node at a time.
cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null || true
fi
exit 0
EOF
cat >"$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
# On removal (not on upgrade) the mounts go first, then the daemons.
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    systemctl stop 'stria-fuse@*.service' >/dev/null 2>&1 || true
    systemctl stop stria-stord.service stria-metad.service stria-mgmtd.service >/dev/null 2>&1 || true
fi
exit 0
EOF
cat >"$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
case "$1" in
remove|purge)
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload >/dev/null || true
    fi
    ;;
esac
# Purge: the links `systemctl enable` made to units that are gone now.
if [ "$1" = purge ] && [ -d /etc/systemd/system ]; then
    find /etc/systemd/system -name 'stria-*.service' -xtype l -delete 2>/dev/null || true
fi
exit 0
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | LC_ALL=C sort -z |
    xargs -0 md5sum >DEBIAN/md5sums)
chmod 0644 "$root"/DEBIAN/{control,md5sums,shlibs,triggers}

dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
