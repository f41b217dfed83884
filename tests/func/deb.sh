#!/usr/bin/env bash
# The Debian package (`make deb`, scripts/mkdeb.sh) and the systemd units it
# installs, as far as a machine without systemd as PID 1 allows:
#  1. the package: its control data (version, architecture, Depends naming
#     the package of every shared library the binaries link, as this
#     machine resolves them), its maintainer scripts (systemctl only when
#     systemd runs), its files (binaries, units, mount.fuse.stria, libstria,
#     a man page for every program), all owned by root;
#  2. the units, `systemd-analyze verify`-clean (when systemd-analyze is
#     here) with their /usr/bin binaries taken from the package;
#  3. a cluster run from the extracted package exactly as the units say:
#     each unit's ExecStart (and Environment, EnvironmentFile, ExecStartPre,
#     LimitNOFILE, User's HOME, specifiers), with the configs a user writes
#     in /etc/stria (under the extracted root, loopback ports, temporary data
#     dirs), in systemd's clean environment and working directory, and its
#     NOTIFY_SOCKET answered as systemd would for Type=notify: READY=1 from
#     the unit's main process. stria-stord and stria-metad start before
#     stria-mgmtd, as nodes boot in any order, and must register by
#     themselves. A file goes through `stria` from the package, then through
#     stria-fuse@.service's mount and the mnt-stria.mount example's
#     (mount.fuse.stria, as mount(8) would run it), when /dev/fuse can be
#     used; stops are SIGTERM, as systemctl stop sends, and must end in
#     exit 0 with STOPPING=1 and the mounts gone. A bad config exits 2,
#     which the units do not restart (RestartPreventExitStatus=2);
#  4. the same under a real systemd, since PID 1 here is not systemd: a
#     container (systemd-nspawn) booted from this system through an overlay
#     whose writes go to a tmpfs, with loopback only: dpkg -i, /etc/stria,
#     systemctl enable --now, files through stria and stria-fuse@, kill -9
#     (Restart=), a bad config (no restart), dpkg -r. Skipped, loudly,
#     where it cannot run.
# Nothing is installed into this machine's /: the package is extracted
# with dpkg-deb -x, or installed into the container's overlay.
. "$(dirname "$0")/lib.sh"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
for tool in dpkg-deb dpkg-shlibdeps python3 openssl; do
    command -v $tool >/dev/null || { echo "SKIP: $tool is missing (Debian: dpkg-dev, python3, openssl)"; exit 77; }
done
if [ "$(ps -o comm= -p 1 2>/dev/null)" = systemd ]; then
    echo "note: systemd is PID 1 here, but this test never installs into / nor starts real units"
else
    echo "note: PID 1 is $(ps -o comm= -p 1 2>/dev/null || echo '?'), not systemd: the units are run by this test as systemd would"
fi

ROOT="$T/root"
UNITS="$ROOT/lib/systemd/system"
PIDS=()      # every process this test started from the package
MOUNTS=()    # every mount point it mounted

CT_TEARDOWN=true
deb_teardown() {
    local rc=$? p m i
    set +e
    $CT_TEARDOWN
    for m in ${MOUNTS[@]+"${MOUNTS[@]}"}; do
        if awk -v m="$m" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; then
            timeout -k 2 10 fusermount3 -uz "$m" >/dev/null 2>&1 || umount -l "$m" 2>/dev/null
        fi
    done
    for p in ${PIDS[@]+"${PIDS[@]}"}; do kill "$p" 2>/dev/null; done
    for p in ${PIDS[@]+"${PIDS[@]}"}; do
        for i in $(seq 50); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$p" 2>/dev/null
    done
    if [ $rc -ne 0 ] && [ -d "$T/log" ]; then
        echo "---- logs (test failed) ----"
        tail -n 20 "$T"/log/* 2>/dev/null
    fi
    (exit $rc)
    teardown
}
trap deb_teardown EXIT

# ---- 1. the package ----
step "build the package"
version=$(sed -nE 's/^project\(stria VERSION ([0-9.]+).*/\1/p' "$SRC/CMakeLists.txt")
arch=$(dpkg --print-architecture)
deb=$("$SRC/scripts/mkdeb.sh" "$BUILD" "$T/out" | tail -n 1)
[ "$deb" = "$T/out/stria_${version}_${arch}.deb" ] || fail "mkdeb made '$deb', want stria_${version}_${arch}.deb"

step "control data"
dpkg-deb -I "$deb" >"$T/info"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = stria ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version), want $version"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture: $(field Architecture)"
depends=$(field Depends)
# Package names of Depends, without versions or alternatives' bars.
depnames=" $(tr ',|' '\n\n' <<<"$depends" | sed -E 's/\(.*\)//; s/ //g' | grep . | tr '\n' ' ')"
for p in libc6 libfuse3-3 liblmdb0 libcurl4 libxml2 libssl3 libisal2 fuse3; do
    [[ $depnames == *" $p "* ]] || fail "Depends lacks $p: $depends"
done
for s in postinst prerm postrm; do
    grep -q "^ .* $s " "$T/info" || fail "no $s in the package"
done
mkdir -p "$T/control"
dpkg-deb -e "$deb" "$T/control"
for s in postinst prerm postrm; do
    sh -n "$T/control/$s" || fail "$s is not valid sh"
    # systemctl only where systemd is the running init.
    if grep -q systemctl "$T/control/$s"; then
        grep -q '\[ -d /run/systemd/system \]' "$T/control/$s" || fail "$s runs systemctl without checking that systemd runs"
    fi
done
grep -q 'daemon-reload' "$T/control/postinst" || fail "postinst does not reload systemd"
grep -hv '^ *#' "$T/control/"post* "$T/control/prerm" | grep -qE 'systemctl (enable|start|restart)' &&
    fail "a maintainer script enables, starts or restarts units; the docs say none does"

step "files"
dpkg-deb -c "$deb" >"$T/contents"
awk '$2 != "root/root" { print; bad = 1 } END { exit bad }' "$T/contents" || fail "files not owned by root/root"
want=(./usr/bin/stria ./usr/bin/stria-mgmtd ./usr/bin/stria-metad ./usr/bin/stria-stord
    ./usr/bin/stria-fuse ./usr/sbin/mount.stria ./usr/include/stria/stria.h
    ./lib/systemd/system/stria-mgmtd.service ./lib/systemd/system/stria-metad.service
    ./lib/systemd/system/stria-stord.service ./lib/systemd/system/stria-fuse@.service
    ./usr/share/man/man1/stria.1.gz ./usr/share/doc/stria/examples/mgmtd.conf.example
    ./usr/share/doc/stria/examples/metad.conf.example ./usr/share/doc/stria/examples/stord.conf.example
    ./usr/share/doc/stria/examples/client.conf.example ./usr/share/doc/stria/examples/mnt-stria.mount
    ./usr/share/doc/stria/examples/stord.env.example)
for f in "${want[@]}"; do
    grep -qE " $(sed 's/[.[\*^$]/\\&/g' <<<"$f")( |$)" "$T/contents" || fail "the package lacks $f"
done
grep -q ' ./usr/sbin/mount.fuse.stria -> mount.stria$' "$T/contents" || fail "no mount.fuse.stria -> mount.stria"
grep -qE ' ./usr/lib/[a-z0-9_-]+/libstria\.so\.0 -> libstria\.so\.' "$T/contents" || fail "no libstria.so.0 in a multiarch dir"
grep -q ' ./etc/stria/.' "$T/contents" && fail "the package ships files in /etc/stria (it should ship no conffile)"

dpkg-deb -x "$deb" "$ROOT"
LIBDIR=$(dirname "$(find "$ROOT/usr/lib" -name libstria.so.0)")
export LD_LIBRARY_PATH="$LIBDIR" # what ldconfig's cache does for an installed package
# Every program has its man page.
for f in "$ROOT"/usr/bin/* "$ROOT"/usr/sbin/*; do
    n=$(basename "$f")
    [ "$n" = mount.fuse.stria ] && n=mount.stria
    ls "$ROOT"/usr/share/man/man[18]/"$n".[18].gz >/dev/null 2>&1 || fail "no man page for $n"
done
# Every shared library a program links itself (NEEDED; what those link is
# their packages' business) comes from a package in Depends, or from this
# one.
for f in "$ROOT"/usr/bin/* "$ROOT/usr/sbin/mount.stria" "$LIBDIR/libstria.so.0"; do
    ldd "$f" >"$T/ldd" || fail "ldd $f"
    grep -q 'not found' "$T/ldd" && { cat "$T/ldd"; fail "$f: a library is not found"; }
    for lib in $(readelf -d "$f" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p'); do
        # "lib => /path (addr)", or "/path (addr)" for the dynamic loader.
        path=$(awk -v l="$lib" '$1 == l && $2 == "=>" { print $3 } $1 ~ ("/" l "$") { print $1 }' "$T/ldd" | head -n 1)
        [ -n "$path" ] || fail "$f: ldd does not resolve $lib"
        case $path in "$ROOT"/*) continue ;; esac
        pkg=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1) ||
            pkg=$(dpkg -S "$(realpath "$path")" 2>/dev/null | head -n 1 | cut -d: -f1) || true
        [ -n "$pkg" ] || fail "$f links $path, which no package owns"
        [[ $depnames == *" $pkg "* ]] || fail "$f links $lib of $pkg, which Depends does not name ($depends)"
    done
done
"$ROOT/usr/bin/stria" --version | grep -qx "stria $version" || fail "stria --version: $("$ROOT/usr/bin/stria" --version)"

# ---- 2. the units ----
# unit_get UNIT KEY: the values of KEY= in UNIT, one a line.
unit_get() { sed -nE "s/^$2=(.*)$/\1/p" "$1"; }
if command -v systemd-analyze >/dev/null; then
    step "systemd-analyze verify"
    # The host's systemd checks them (targets, the /bin tools of
    # ExecStartPre); the /usr/bin binaries they name are the package's.
    mkdir -p "$T/verify"
    for u in "$UNITS"/*.service "$ROOT/usr/share/doc/stria/examples/mnt-stria.mount"; do
        sed -E "s#(^Exec[A-Za-z]*=[-@:+!]*)/usr/(s?bin)/#\1$ROOT/usr/\2/#" "$u" >"$T/verify/$(basename "$u")"
    done
    # Documentation=man:... must name the package's own pages.
    man=--man=no
    command -v man >/dev/null && man=--man=yes
    for u in "$T"/verify/*; do
        out=$(MANPATH="$ROOT/usr/share/man" systemd-analyze verify $man "$u" 2>&1) ||
            fail "systemd-analyze verify $(basename "$u"): $out"
        [ -z "$out" ] || fail "systemd-analyze verify $(basename "$u"): $out"
    done
    for u in stria-mgmtd stria-metad stria-stord; do
        echo "  $(systemd-analyze security --offline=yes "$T/verify/$u.service" 2>/dev/null | grep 'Overall exposure' || true)"
    done
else
    echo "SKIPPED PART: systemd-analyze is missing (Debian: systemd); the units are not verified"
fi

# ---- 3. a cluster from the units ----
mkdir -p "$T/log" "$T/data" "$ROOT/var/log"
pmgmt=$(free_port 27400) || fail "no free port"
pmeta=$(free_port 27501) || fail "no free port"
postd=$(free_port 27602) || fail "no free port"

step "the configs a user writes in /etc/stria"
E="$ROOT/etc/stria"
openssl rand -hex 32 >"$E/cluster.key"
chmod 600 "$E/cluster.key"
cat >"$E/mgmtd.conf" <<EOF
# The management service, as docs/operations.md says (loopback here).
listen = 127.0.0.1:$pmgmt
key_file = $E/cluster.key
data_dir = $ROOT/var/lib/stria/mgmt
fsname = debtest
EOF
cat >"$E/metad.conf" <<EOF
listen = 127.0.0.1:$pmeta
mgmt = 127.0.0.1:$pmgmt
key_file = $E/cluster.key
mdt = 0:$T/data/mdt0
heartbeat_ms = 200
EOF
cat >"$E/stord.conf" <<EOF
listen = 127.0.0.1:$postd
mgmt = 127.0.0.1:$pmgmt
key_file = $E/cluster.key
ost = 0:$T/data/ost0
ost = 1:$T/data/ost1
heartbeat_ms = 200
EOF
cp "$ROOT/usr/share/doc/stria/examples/stord.env.example" "$E/stord.env"
echo "AWS_ACCESS_KEY_ID=STRIA-DEB-TEST" >>"$E/stord.env"
chmod 600 "$E/stord.env"
cat >"$E/client.conf" <<EOF
mgmt = 127.0.0.1:$pmgmt
key_file = $E/cluster.key
EOF
CONF="$E/client.conf"
stria() { "$ROOT/usr/bin/stria" --conf "$CONF" "$@"; }

# The receiving end of $NOTIFY_SOCKET: prints "PID MESSAGE" per datagram,
# with the sender's pid from its credentials, as systemd checks it
# (NotifyAccess=main).
cat >"$T/notify.py" <<'EOF'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(sys.argv[1])
s.settimeout(float(sys.argv[2]))
try:
    while True:
        msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
        pid = [struct.unpack("iII", d)[0] for l, t, d in anc if t == socket.SCM_CREDENTIALS]
        print(pid[0] if pid else "?", msg.decode().replace("\n", " "), flush=True)
except socket.timeout:
    pass
EOF

# inroot WORD: a path a unit names, taken inside the extracted root: the
# package's own files, and /etc/stria, /var/lib/stria, /var/log.
inroot() {
    local w=$1
    if [[ $w == /* ]] && [ -e "$ROOT$w" ] && [[ $w == /usr/* || $w == /lib/* ]]; then
        w="$ROOT$w"
    fi
    w=${w//\/etc\/stria\//$ROOT\/etc\/stria\/}
    w=${w//\/var\/lib\/stria/$ROOT\/var\/lib\/stria}
    w=${w//\/var\/log\//$ROOT\/var\/log\/}
    printf '%s' "$w"
}

# subst STRING FROM TO: every FROM in STRING replaced by TO, literally
# (instances hold backslashes: \x2d).
subst() {
    local s=$1 out=""
    while [[ $s == *"$2"* ]]; do
        out+="${s%%"$2"*}$3"
        s=${s#*"$2"}
    done
    printf '%s' "$out$s"
}

# unit_env UNIT INSTANCE: the environment systemd gives the unit's
# processes (Environment=, then EnvironmentFile=, User='s HOME), one
# NAME=VALUE a line; a later line overrides an earlier one.
unit_env() {
    local u=$1 inst=$2 line f opt user
    echo "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    user=$(unit_get "$u" User)
    if [ -n "$user" ]; then
        echo "HOME=$(getent passwd "$user" | cut -d: -f6)"
        echo "USER=$user"
        echo "LOGNAME=$user"
    fi
    while read -r line; do
        [ -n "$line" ] && xargs -n 1 <<<"$line"
    done < <(unit_get "$u" Environment)
    while read -r f; do
        [ -n "$f" ] || continue
        opt=false
        [[ $f == -* ]] && opt=true && f=${f#-}
        f=$(inroot "$(subst "$f" %i "$inst")")
        if [ -f "$f" ]; then
            grep -E '^[A-Za-z_][A-Za-z0-9_]*=' "$f" || true
        elif ! $opt; then
            fail "$(basename "$u"): EnvironmentFile $f is missing"
        fi
    done < <(unit_get "$u" EnvironmentFile)
}

# expand WORD ENVFILE: ${NAME} in WORD from the environment in ENVFILE.
expand() {
    local w=$1 out="" name
    while [[ $w =~ ^([^$]*)\$\{([A-Za-z_][A-Za-z0-9_]*)\}(.*)$ ]]; do
        out+=${BASH_REMATCH[1]}
        name=${BASH_REMATCH[2]}
        w=${BASH_REMATCH[3]}
        out+=$(sed -n "s/^$name=//p" "$2" | tail -n 1)
    done
    printf '%s' "$out$w"
}

# unit_cmd UNIT KEY INSTANCE ENVFILE: the command line of KEY (ExecStart...)
# as systemd runs it, one word a line: split, then specifiers (%i the
# instance, %f its unescaped path), ${NAME} from the unit's environment,
# and paths inside the root. A leading '-' stays on the first word.
unit_cmd() {
    local u=$1 key=$2 inst=$3 envf=$4 line f w
    line=$(unit_get "$u" "$key")
    f="/$(sed 's/-/\//g; s/\\x2d/-/g' <<<"$inst")"
    while IFS= read -r w; do
        [ -n "$w" ] || continue
        w=$(subst "$w" %i "$inst")
        w=$(subst "$w" %f "$f")
        inroot "$(expand "$w" "$envf")"
        echo
    done < <(xargs -n 1 <<<"$line")
}

# alive PID: the process runs (a zombie does not count).
alive() {
    local st
    st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [[ $st != Z* ]]
}

# unit_start UNIT [INSTANCE]: run UNIT as systemd would; NAME_PID is set
# to its main pid. The command and what it logs are in $T/log.
declare -A MAINPID
unit_start() {
    local u="$UNITS/$1" inst=${2:-} name=$1 envf cmd pre first nofile npid
    [ -f "$u" ] || fail "no unit $1 in the package"
    [ "$(unit_get "$u" Type)" = notify ] || fail "$1: Type= is not notify"
    [ "$(unit_get "$u" ExecStart | wc -l)" -eq 1 ] || fail "$1: not exactly one ExecStart"
    [ -n "$inst" ] && name="${1%@.service}@$inst.service"
    envf="$T/$name.env"
    unit_env "$u" "$inst" >"$envf"
    # ExecStartPre, in order; '-': its failure is ignored.
    while read -r pre; do
        [ -n "$pre" ] || continue
        mapfile -t cmd < <(unit_cmd <(echo "ExecStartPre=$pre") ExecStartPre "$inst" "$envf")
        first=${cmd[0]}
        if [[ $first == -* ]]; then
            cmd[0]=${first#-}
            (cd / && env -i $(cat "$envf") "${cmd[@]}") >>"$T/log/$name" 2>&1 || true
        else
            (cd / && env -i $(cat "$envf") "${cmd[@]}") >>"$T/log/$name" 2>&1 || fail "$name: ExecStartPre ${cmd[*]} failed"
        fi
    done < <(unit_get "$u" ExecStartPre)
    mapfile -t cmd < <(unit_cmd "$u" ExecStart "$inst" "$envf")
    [[ ${cmd[0]} == "$ROOT"/usr/* ]] || fail "$name: ExecStart runs ${cmd[0]}, not a program of the package"
    [ -x "${cmd[0]}" ] || fail "$name: ${cmd[0]} is not executable"
    echo "${cmd[*]}" >"$T/log/$name.cmd"
    nofile=$(unit_get "$u" LimitNOFILE)
    rm -f "$T/$name.sock"
    python3 "$T/notify.py" "$T/$name.sock" 120 >"$T/$name.notify" 2>&1 &
    npid=$!
    PIDS+=("$npid")
    wait_for 10 test -S "$T/$name.sock" || fail "the notify socket of $name did not appear"
    (
        cd /
        if [ -n "$nofile" ]; then ulimit -n "$nofile" 2>/dev/null || ulimit -Sn "$(ulimit -Hn)"; fi
        exec env -i $(cat "$envf") NOTIFY_SOCKET="$T/$name.sock" "${cmd[@]}"
    ) </dev/null >>"$T/log/$name" 2>&1 &
    MAINPID[$name]=$!
    PIDS+=("${MAINPID[$name]}")
    # Type=notify: started once the main process says READY=1.
    wait_for 30 grep -q "^${MAINPID[$name]} READY=1" "$T/$name.notify" ||
        fail "$name: no READY=1 from its main process (pid ${MAINPID[$name]}): $(cat "$T/$name.notify")"
    echo "  $name: READY=1 from pid ${MAINPID[$name]}: ${cmd[*]}"
}

# unit_stop NAME: systemctl stop: SIGTERM to the main process, which must
# say STOPPING=1 and exit 0 within 10 s.
unit_stop() {
    local name=$1 pid=${MAINPID[$1]} rc=0
    kill -TERM "$pid"
    wait_for 10 bash -c "$(declare -f alive); ! alive $pid" || fail "$name did not stop within 10 s of SIGTERM"
    wait "$pid" || rc=$?
    [ $rc -eq 0 ] || fail "$name exited $rc after SIGTERM (systemd would mark it failed)"
    grep -q "^$pid STOPPING=1" "$T/$name.notify" || fail "$name: no STOPPING=1"
}

step "a bad config exits 2, which the units do not restart"
for d in mgmtd metad stord; do
    grep -qx 'RestartPreventExitStatus=2' "$UNITS/stria-$d.service" || fail "stria-$d.service restarts after exit 2"
    grep -qx 'Restart=on-failure' "$UNITS/stria-$d.service" || fail "stria-$d.service: no Restart=on-failure"
    echo "listen = 127.0.0.1:1" >"$T/bad.conf"
    set +e
    "$ROOT/usr/bin/stria-$d" --config "$T/bad.conf" 2>/dev/null
    code=$?
    set -e
    [ $code -eq 2 ] || fail "stria-$d with a config lacking required options exited $code, want 2"
done

step "storage and metadata first: they serve before the management service exists"
unit_start stria-stord.service
unit_start stria-metad.service
grep -q "AWS_ACCESS_KEY_ID=STRIA-DEB-TEST" <(tr '\0' '\n' <"/proc/${MAINPID[stria-stord.service]}/environ") ||
    fail "stria-stord does not have the AWS_* of /etc/stria/stord.env"
grep -q "^HOME=/" <(tr '\0' '\n' <"/proc/${MAINPID[stria-stord.service]}/environ") ||
    fail "stria-stord has no HOME (where ~/.aws/credentials is looked for)"
nofile=$(unit_get "$UNITS/stria-stord.service" LimitNOFILE)
if (ulimit -n "$nofile") 2>/dev/null; then
    [ "$(awk '/Max open files/ { print $4 }' "/proc/${MAINPID[stria-stord.service]}/limits")" = "$nofile" ] ||
        fail "stria-stord's open files limit is not the unit's LimitNOFILE=$nofile"
else
    echo "  (LimitNOFILE=$nofile cannot be set here: the hard limit is $(ulimit -Hn); the daemons run with that)"
fi
sleep 1
unit_start stria-mgmtd.service
online() { [ "$(stria status 2>/dev/null | grep -c ' online ')" -eq 3 ]; }
wait_for 30 online || { stria status || true; fail "the MDT and the two OSTs are not online 30 s after stria-mgmtd started"; }
stria status | sed 's/^/  /'

step "stria from the package writes and reads a file"
head -c 3000000 /dev/urandom >"$T/in"
stria mkdir /deb
# The MDT learns of the OSTs at its next heartbeat after they are online
# (heartbeat_ms); until then a create finds no OST (ENOSPC).
wait_for 10 stria cp "$T/in" stria:/deb/file || stria cp "$T/in" stria:/deb/file
stria cp stria:/deb/file "$T/back"
cmp "$T/in" "$T/back" || fail "the file read back differs"

# ---- mounts ----
fuse_ok=true
if [ "$(id -u)" -ne 0 ]; then
    fuse_ok=false
    why="not root (the units mount as root)"
elif [ ! -e /dev/fuse ] || ! (: <>/dev/fuse) 2>/dev/null; then
    fuse_ok=false
    why="/dev/fuse cannot be used"
elif ! command -v fusermount3 >/dev/null; then
    fuse_ok=false
    why="fusermount3 is missing (package fuse3)"
fi
is_mounted() { awk -v m="$1" '$2 == m && $3 == "fuse.stria" { f = 1 } END { exit !f }' /proc/self/mounts; }
if $fuse_ok; then
    step "stria-fuse@.service mounts"
    mnt="$T/mnt"
    # The instance is the escaped mount point, as systemd-escape --path says.
    inst=$(sed -E 's/-/\\x2d/g; s#^/##; s#/#-#g' <<<"$mnt")
    if command -v systemd-escape >/dev/null; then
        [ "$(systemd-escape --path "$mnt")" = "$inst" ] || fail "instance $inst, systemd-escape says $(systemd-escape --path "$mnt")"
    fi
    MOUNTS+=("$mnt")
    unit_start stria-fuse@.service "$inst"
    fname="stria-fuse@$inst.service"
    is_mounted "$mnt" || fail "READY=1 but $mnt is not a fuse.stria mount"
    cmp "$T/in" "$mnt/deb/file" || fail "the file read through the mount differs"
    head -c 1000000 /dev/urandom >"$T/in2"
    cp "$T/in2" "$mnt/deb/file2"
    stria cp stria:/deb/file2 "$T/back2"
    cmp "$T/in2" "$T/back2" || fail "a file written through the mount differs through stria"
    unit_stop "$fname"
    is_mounted "$mnt" && fail "$mnt is still mounted after stria-fuse@ stopped"

    step "the mnt-stria.mount example, through mount.fuse.stria as mount(8) runs it"
    u="$ROOT/usr/share/doc/stria/examples/mnt-stria.mount"
    [ "$(unit_get "$u" Type)" = fuse.stria ] || fail "mnt-stria.mount: Type is not fuse.stria"
    [ "$(readlink "$ROOT/usr/sbin/mount.fuse.stria")" = mount.stria ] || fail "no mount.fuse.stria link"
    mnt2="$T/mnt2"
    mkdir -p "$mnt2"
    MOUNTS+=("$mnt2")
    what=$(inroot "$(unit_get "$u" What)")
    opts=$(inroot "$(unit_get "$u" Options)")
    (cd / && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
        "$ROOT/usr/sbin/mount.fuse.stria" "$what" "$mnt2" -o "$opts" -t fuse.stria) >"$T/log/mount" 2>&1 ||
        fail "mount.fuse.stria $what $mnt2 -o $opts: $(cat "$T/log/mount")"
    is_mounted "$mnt2" || fail "mount.fuse.stria returned but $mnt2 is not mounted"
    cmp "$T/in2" "$mnt2/deb/file2" || fail "the file read through the .mount differs"
    [ -f "$ROOT/var/log/stria-fuse.log" ] || fail "the mount's log=/var/log/stria-fuse.log was not opened"
    fpid=$(pgrep -f "^$ROOT/usr/bin/stria-fuse .*$mnt2\$" | head -n 1 || true)
    [ -n "$fpid" ] && PIDS+=("$fpid")
    umount "$mnt2" || fail "umount $mnt2"
    [ -z "$fpid" ] || wait_for 10 bash -c "$(declare -f alive); ! alive $fpid" || fail "stria-fuse of $mnt2 still runs after umount"
else
    echo "SKIPPED PART: the mounts (stria-fuse@.service, mnt-stria.mount): $why"
fi

step "systemctl stop: the daemons"
unit_stop stria-stord.service
for o in ost0 ost1; do
    [ -e "$T/data/$o/clean" ] || fail "$o is not marked clean after stria-stord stopped"
done
unit_stop stria-metad.service
unit_stop stria-mgmtd.service

# ---- 4. the package under a real systemd ----
# A container (systemd-nspawn) booted from this machine's own system,
# through an overlay whose writes go to a tmpfs: dpkg -i, the configs,
# `systemctl enable --now` of every unit, files through stria and the
# mount, a kill -9 that Restart= answers, a bad config it does not, and
# dpkg -r. Its network is private (loopback only); / is never written.
container_why=""
if [ "$(id -u)" -ne 0 ]; then
    container_why="not root"
elif ! command -v systemd-nspawn >/dev/null; then
    container_why="systemd-nspawn is missing (Debian: systemd-container)"
elif [ ! -x /lib/systemd/systemd ]; then
    container_why="this system has no systemd to boot"
elif grep -q '^STRIA_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt"; then
    container_why="a sanitizer build (LeakSanitizer's ptrace is what the units' SystemCallFilter forbids)"
fi
if [ -z "$container_why" ]; then
    step "a container with systemd as PID 1: dpkg -i, systemctl enable --now, ..., dpkg -r"
    CT="$T/ct"
    mkdir -p "$CT/ovl" "$CT/root"
    had_nspawn_run=false
    [ -e /run/systemd/nspawn ] && had_nspawn_run=true
    ct_teardown() {
        umount "$CT/root" 2>/dev/null || umount -l "$CT/root" 2>/dev/null
        umount "$CT/ovl" 2>/dev/null || umount -l "$CT/ovl" 2>/dev/null
        $had_nspawn_run || rm -rf /run/systemd/nspawn 2>/dev/null
        true
    }
    CT_TEARDOWN=ct_teardown
    if mount -t tmpfs -o size=1g,mode=0755 tmpfs "$CT/ovl" && mkdir -p "$CT/ovl/up" "$CT/ovl/work" &&
        mount -t overlay overlay -o "lowerdir=/,upperdir=$CT/ovl/up,workdir=$CT/ovl/work" "$CT/root"; then
        R="$CT/root"
        cp "$deb" "$R/root/stria.deb"
        rm -f "$R/root/stria-result"
        cat >"$R/root/stria-test.sh" <<'EOS'
#!/bin/bash
# Runs as the unit stria-test.service, the only unit the container boots to.
exec >/root/stria-result 2>&1
trap 'echo "EXIT $?"; systemctl poweroff --no-block' EXIT
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
wait_for() {
    local end=$((SECONDS + $1)); shift
    until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || return 1; sleep 0.2; done
}
show() { systemctl status --no-pager "$@" || true; journalctl --no-pager -n 30 -u "$1" || true; }
echo "PID 1: $(ps -o comm= -p 1), $(systemctl --version | head -n 1)"
[ "$(ps -o comm= -p 1)" = systemd ] || fail "PID 1 is not systemd"

echo "== dpkg -i"
dpkg -i /root/stria.deb
systemctl cat stria-mgmtd.service >/dev/null || fail "systemd does not know the units after dpkg -i"
for u in stria-mgmtd stria-metad stria-stord; do
    [ "$(systemctl is-enabled $u.service 2>&1)" = disabled ] || fail "$u is enabled by the package"
    [ "$(systemctl is-active $u.service 2>&1)" = inactive ] || fail "$u is started by the package"
done
# (Unless dpkg is told to leave man pages out, as slim images do.)
if ! grep -rqs 'path-exclude.*/usr/share/man' /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d; then
    man -w stria-stord >/dev/null || fail "man stria-stord finds no page"
fi

echo "== the configs, then systemctl enable --now"
install -d -m 0755 /etc/stria
openssl rand -hex 32 >/etc/stria/cluster.key
chmod 600 /etc/stria/cluster.key
printf 'listen = 127.0.0.1:7400\nkey_file = /etc/stria/cluster.key\ndata_dir = /var/lib/stria/mgmt\nfsname = nspawn\n' >/etc/stria/mgmtd.conf
printf 'listen = 127.0.0.1:7401\nmgmt = 127.0.0.1:7400\nkey_file = /etc/stria/cluster.key\nmdt = 0:/srv/stria/mdt0\nheartbeat_ms = 200\n' >/etc/stria/metad.conf
printf 'listen = 127.0.0.1:7402\nmgmt = 127.0.0.1:7400\nkey_file = /etc/stria/cluster.key\nost = 0:/srv/stria/ost0\nost = 1:/srv/stria/ost1\nheartbeat_ms = 200\n' >/etc/stria/stord.conf
printf 'mgmt = 127.0.0.1:7400\nkey_file = /etc/stria/cluster.key\n' >/etc/stria/client.conf
systemctl enable --now stria-stord.service stria-metad.service stria-mgmtd.service
for u in stria-mgmtd stria-metad stria-stord; do
    systemctl is-active --quiet $u.service || { show $u.service; fail "$u is not active"; }
done
online() { [ "$(stria status | grep -c ' online ')" -eq 3 ]; }
wait_for 30 online || { stria status; fail "targets not online"; }
stria status
head -c 2000000 /dev/urandom >/root/in
stria mkdir /ct
wait_for 10 stria cp /root/in stria:/ct/file || stria cp /root/in stria:/ct/file
stria cp stria:/ct/file /root/back
cmp /root/in /root/back || fail "the file read back differs"
journalctl --no-pager -u stria-stord.service | grep -q 'serving OST0001' || fail "stria-stord logs nowhere in the journal"

if [ -e /dev/fuse ] && (: <>/dev/fuse) 2>/dev/null; then
    echo "== stria-fuse@mnt-stria.service"
    systemctl enable --now stria-fuse@mnt-stria.service || { show stria-fuse@mnt-stria.service; fail "the mount unit did not start"; }
    findmnt -t fuse.stria /mnt/stria || fail "/mnt/stria is not a fuse.stria mount once the unit started"
    cmp /root/in /mnt/stria/ct/file || fail "the file differs through the mount"
    head -c 1000000 /dev/urandom >/root/in2
    cp /root/in2 /mnt/stria/ct/file2
    stria cp stria:/ct/file2 /root/back2
    cmp /root/in2 /root/back2 || fail "a file written through the mount differs"
    systemctl stop stria-fuse@mnt-stria.service
    [ "$(systemctl is-active stria-fuse@mnt-stria.service)" = inactive ] ||
        { show stria-fuse@mnt-stria.service; fail "the mount unit is not inactive after stop"; }
    findmnt /mnt/stria && fail "/mnt/stria is still mounted after stop"
else
    echo "SKIPPED PART: /dev/fuse cannot be used in the container"
fi

echo "== kill -9 of stria-stord: Restart=on-failure"
pid=$(systemctl show -P MainPID stria-stord.service)
kill -9 "$pid"
restarted() { [ "$(systemctl show -P NRestarts stria-stord.service)" -ge 1 ] && systemctl is-active --quiet stria-stord.service; }
wait_for 20 restarted || { show stria-stord.service; fail "stria-stord was not restarted after kill -9"; }
wait_for 20 online || fail "the OSTs did not come back online"
stria cp stria:/ct/file /root/back3
cmp /root/in /root/back3 || fail "the file differs after the restart"

echo "== a bad config: exit 2, no restart"
cp /etc/stria/metad.conf /root/metad.conf
echo "this is not a setting" >>/etc/stria/metad.conf
systemctl restart stria-metad.service && fail "stria-metad started with a bad config"
sleep 3
[ "$(systemctl is-active stria-metad.service)" = failed ] || fail "stria-metad is not failed"
[ "$(systemctl show -P NRestarts stria-metad.service)" -eq 0 ] || fail "stria-metad was restarted after exit 2"
cp /root/metad.conf /etc/stria/metad.conf
systemctl reset-failed stria-metad.service
systemctl start stria-metad.service

echo "== dpkg -r"
dpkg -r stria
for p in stria-mgmtd stria-metad stria-stord stria-fuse; do
    pgrep -x "$p" && fail "$p still runs after dpkg -r"
done
systemctl cat stria-mgmtd.service >/dev/null 2>&1 && fail "systemd still has the units after dpkg -r"
echo "RESULT PASS"
EOS
        chmod 755 "$R/root/stria-test.sh"
        cat >"$R/etc/systemd/system/stria-test.service" <<'EOS'
[Unit]
Description=Stria's package test
Wants=network-online.target
After=network-online.target
[Service]
Type=oneshot
ExecStart=/root/stria-test.sh
EOS
        set +e
        (cd / && timeout -k 10 300 systemd-nspawn -D "$R" -b --private-network --register=no --keep-unit \
            --link-journal=no --bind=/dev/fuse -q -- systemd.unit=stria-test.service) >"$T/log/nspawn" 2>&1
        code=$?
        set -e
        if [ ! -f "$R/root/stria-result" ]; then
            tail -n 20 "$T/log/nspawn" | sed 's/^/  /'
            echo "SKIPPED PART: the container did not boot here (systemd-nspawn exited $code)"
        elif ! grep -q '^RESULT PASS' "$R/root/stria-result"; then
            cat "$R/root/stria-result"
            fail "the package under systemd (in the container): $(grep -m1 '^FAIL' "$R/root/stria-result" || echo "no result; nspawn exited $code")"
        else
            grep -E '^(PID 1|==|SKIPPED)' "$R/root/stria-result" | sed 's/^/  /'
        fi
    else
        echo "SKIPPED PART: cannot mount the overlay for the container"
    fi
    ct_teardown
else
    echo "SKIPPED PART: the package under a real systemd: $container_why"
fi
echo PASS
