#!/usr/bin/env bash
# Special files through the mount, made the way a shell user makes them:
# mkfifo with a writer and a reader process passing data through it, mknod
# of character and block devices with their numbers, a Unix socket bound in
# the mount with a client process connecting; then chmod, chown, touch -d,
# ln, mv and rm on each, the result compared with the same commands on a
# local directory, and ls -l showing each type. Last, posix_compare's
# special-file cases (fifo, devices, socket, special_rename) against a
# local directory. Before MKNOD the mount answered EPERM to all of these.
. "$(dirname "$0")/lib.sh"
if ! fuse_usable; then
    echo "SKIPPED: FUSE not usable here: $FUSE_WHY"
    exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: FUSE not usable here: this test needs root (mknod of devices, allow_other)"
    exit 77
fi

cluster_up --no-mount
mount_stria "$T/mnt" allow_other,default_permissions
M="$T/mnt/sp"
L="$T/local/sp"
mkdir -p "$M" "$L"

step "mkfifo: a writer process and a reader process pass 1 MiB through it"
mkfifo -m 0640 "$M/p"
[ "$(stat -c '%F %a' "$M/p")" = "fifo 640" ] || fail "mkfifo: $(stat -c '%F %a' "$M/p")"
head -c 1048576 /dev/urandom >"$T/data"
timeout 20 sh -c "cat '$T/data' >'$M/p'" &
writer=$!
timeout 20 cat "$M/p" >"$T/got" || fail "the reader failed"
wait $writer || fail "the writer failed"
cmp "$T/data" "$T/got" || fail "the FIFO changed the data"
# Both ends in one shell pipeline the other way round: the reader first.
timeout 20 sh -c "cat '$M/p' >'$T/got2'" &
reader=$!
echo "second message" >"$M/p"
wait $reader || fail "the second reader failed"
[ "$(cat "$T/got2")" = "second message" ] || fail "second message: $(cat "$T/got2")"

step "mknod c and b: type, mode and device number kept"
mknod -m 0600 "$M/null" c 1 3
mknod -m 0660 "$M/blk" b 254 300
[ "$(stat -c '%F %a %t:%T' "$M/null")" = "character special file 600 1:3" ] ||
    fail "char device: $(stat -c '%F %a %t:%T' "$M/null")"
[ "$(stat -c '%F %a %t:%T' "$M/blk")" = "block special file 660 fe:12c" ] ||
    fail "block device: $(stat -c '%F %a %t:%T' "$M/blk")"
chmod 0711 "$T" # so that a user reaches the mount
mkdir -m 1777 "$M/pub"
err=$(setpriv --reuid=65534 --regid=65534 --clear-groups mknod "$M/pub/c" c 1 3 2>&1) &&
    fail "a user made a device"
grep -q "Operation not permitted" <<<"$err" || fail "a user's mknod c: $err"
setpriv --reuid=65534 --regid=65534 --clear-groups mkfifo "$M/pub/p" || fail "a user's mkfifo"
[ "$(stat -c '%U %F' "$M/pub/p")" = "nobody fifo" ] || fail "user fifo: $(stat -c '%U %F' "$M/pub/p")"
rm "$M/pub/p"
rmdir "$M/pub"

step "a Unix socket bound in the mount; a client process connects"
timeout 30 python3 - "$M/sock" <<'EOF'
import os, socket, sys
path = sys.argv[1]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.settimeout(10)
srv.bind(path)
srv.listen(1)
pid = os.fork()
if pid == 0:
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(10)
        c.connect(path)
        c.sendall(b"ping")
        ok = c.recv(4) == b"pong"
        os._exit(0 if ok else 1)
    except Exception as e:
        print("client:", e, file=sys.stderr)
        os._exit(2)
conn, _ = srv.accept()
conn.settimeout(10)
got = conn.recv(4)
conn.sendall(b"pong")
_, status = os.waitpid(pid, 0)
if got != b"ping" or status != 0:
    sys.exit("server got %r, client status %d" % (got, status))
EOF
[ "$(stat -c '%F' "$M/sock")" = "socket" ] || fail "socket: $(stat -c '%F' "$M/sock")"

step "ls -l shows each type"
types=$(ls -l "$M" | awk 'NR > 1 { print substr($1, 1, 1) $NF }' | sort | tr '\n' ' ')
[ "$types" = "bblk cnull pp ssock " ] || fail "ls -l: $types"

step "chmod, chown, touch -d, ln, mv, rm: as on a local directory"
# The same commands on both; mknod and the socket again for the local side.
mkfifo -m 0640 "$L/p"
mknod -m 0600 "$L/null" c 1 3
mknod -m 0660 "$L/blk" b 254 300
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$L/sock"
for d in "$M" "$L"; do
    chmod 0604 "$d/p"
    chmod 0620 "$d/sock"
    chown 1234:5678 "$d/null"
    chown 42 "$d/sock"
    for n in p null blk sock; do
        touch -h -d '2001-02-03 04:05:06.5' "$d/$n"
    done
    ln "$d/p" "$d/p2"
    ln "$d/null" "$d/null2"
    mv "$d/blk" "$d/blk2"
    mv "$d/sock" "$d/null2" # a socket over a device's second name
    mkdir "$d/sub"
    mv "$d/p2" "$d/sub/p3"
done
# Everything but the directories (whose times are now, on each side).
describe() {
    (cd "$1" && find . -mindepth 1 ! -type d -exec stat -c '%n %F %a %h %t:%T %u:%g %.9Y %.9X' {} + |
        sort)
}
if [ "$(describe "$M")" != "$(describe "$L")" ]; then
    diff <(describe "$L") <(describe "$M") || true
    fail "the mount differs from a local directory"
fi
for d in "$M" "$L"; do
    rm "$d/p" "$d/null" "$d/blk2" "$d/null2" "$d/sub/p3"
    rmdir "$d/sub"
done
[ -z "$(ls -A "$M")" ] || fail "left after rm: $(ls -A "$M")"

step "posix_compare's special-file cases"
timeout -k 10 300 "$BUILD/tests/posix_compare" "$T/mnt/x" "$T/local/x" fifo devices socket \
    special_rename || fail "posix_compare found differences"
echo PASS
