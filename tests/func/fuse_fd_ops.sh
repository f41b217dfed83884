#!/usr/bin/env bash
# Calls on open descriptors through the mount, as real tools make them:
# - times set with futimens() before close() survive the close (cp -p,
#   tar -x, rsync -t), and a file's mtime is that of its last write, not of
#   its close;
# - ftruncate() on a descriptor opened for writing works whatever the
#   file's mode says (a file created with mode 0 and opened O_RDWR), as the
#   kernel checks such calls against how the descriptor was opened.
# Each case runs on a local directory first, which shows the expectation
# holds on this machine's own file system.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: $FUSE_WHY"
    exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: this test needs root (allow_other, a second user)"
    exit 77
fi
FD_OPS="$BUILD/tests/fd_ops"

cluster_up --no-mount
chmod 711 "$T" # the second user reaches the mount and the local directory
mount_stria "$T/m" allow_other,default_permissions
# A second mount sees what the MDT keeps, not what the first one's kernel cached.
mount_stria "$T/m2" allow_other,default_permissions
mkdir -p "$T/local" "$T/m/w"
chmod 1777 "$T/local" "$T/m/w"

failed=""
for d in "$T/local" "$T/m/w"; do
    step "descriptor calls in $d"
    o=""
    [ "$d" = "$T/local" ] || o="$T/m2/w"
    timeout -k 5 60 "$FD_OPS" times-before-close "$d/t1" ${o:+"$o/t1"} || failed="$failed futimens-before-close($d)"
    timeout -k 5 60 "$FD_OPS" write-then-close "$d/t2" ${o:+"$o/t2"} || failed="$failed mtime-at-close($d)"
    timeout -k 5 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$FD_OPS" ftruncate-mode0 "$d/t3" || failed="$failed ftruncate-mode0($d)"
done

step "cp -p keeps the times"
mkdir -p "$T/src"
head -c 300000 /dev/urandom >"$T/src/big"
echo small >"$T/src/small"
touch -m -d '2001-02-03 04:05:06' "$T/src/big" "$T/src/small"
touch -a -d '2002-02-03 04:05:06' "$T/src/big"
cp -p "$T/src/big" "$T/src/small" "$T/m/w/"
for f in big small; do
    want=$(stat -c %Y "$T/src/$f")
    for m in m m2; do
        got=$(stat -c %Y "$T/$m/w/$f")
        [ "$got" = "$want" ] || failed="$failed cp-p($m/w/$f: mtime $got, want $want)"
    done
done
# cp read the source, which moved its atime; it copies the one it found.
want=$(date -d '2002-02-03 04:05:06' +%s)
for m in m m2; do
    got=$(stat -c %X "$T/$m/w/big")
    [ "$got" = "$want" ] || failed="$failed cp-p($m/w/big: atime $got, want $want)"
done

step "tar -x keeps every file's mtime"
mkdir -p "$T/tree/a/b"
for i in $(seq 1 30); do
    head -c $((i * 3001)) /dev/urandom >"$T/tree/a/f$i"
    touch -m -d "2003-01-$(printf %02d $((i % 28 + 1))) 12:00:00" "$T/tree/a/f$i"
done
echo x >"$T/tree/a/b/leaf"
touch -m -d '1999-12-31 23:59:59' "$T/tree/a/b/leaf"
tar -C "$T/tree" -cf "$T/tree.tar" a
mkdir -p "$T/m/w/x"
timeout -k 5 120 tar -C "$T/m/w/x" -xf "$T/tree.tar"
n=0 bad=0
while IFS= read -r f; do
    want=$(stat -c %Y "$T/tree/$f")
    for m in m m2; do
        got=$(stat -c %Y "$T/$m/w/x/$f")
        [ "$got" = "$want" ] || bad=$((bad + 1))
    done
    n=$((n + 1))
done < <(cd "$T/tree" && find a -type f)
[ $n -eq 31 ] || fail "tar -x: checked $n files, want 31"
[ $bad -eq 0 ] || failed="$failed tar-x($bad of $n files, in two mounts, lost their mtime)"
[ -z "$failed" ] || fail "failed:$failed"
echo PASS
