# Shared by bench/run.sh and bench/bench_fuse.sh (sourced; BUILD is set).

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else printf "-" }'
}

# bench_dir NAME: a fresh temporary directory in TMP, the cluster's place in
# CL, and HOME inside it: `stria up` links ~/.config/stria/client.conf to
# the new cluster, and that must stay away from the user's own.
bench_dir() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    CL="$TMP/cluster"
    export HOME="$TMP/home"
    mkdir -p "$HOME"
}

# bench_remove WHO: stop the cluster in CL (saying so on failure, as WHO)
# and remove TMP.
bench_remove() {
    if [ -d "$CL" ] && ! "$BUILD/stria" down --dir "$CL" >"$TMP/down.out" 2>&1; then
        echo "$1: stria down --dir $CL failed:" >&2
        cat "$TMP/down.out" >&2
    fi
    rm -rf "$TMP"
}
