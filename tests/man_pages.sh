#!/usr/bin/env bash
# The man pages in docs/man are hand-written; this keeps them true to the
# programs. It fails when:
#  - groff or man warns about a page;
#  - a page's version (.TH) is not the project's (CMakeLists.txt);
#  - a daemon option of `stria-X --print-template` has no entry in
#    stria-X(8), or the entry lacks its default, range or "Required";
#  - a client.conf option (conf/client.conf.example) has none in stria(1);
#  - a command of `stria help`, or an option or subcommand of
#    `stria CMD --help`, is not in stria(1) under that command;
#  - an option of `stria-fuse --help` or `mount.stria --help` is not in
#    stria-fuse(8) or mount.stria(8).
# The pages are rendered to plain ASCII, one line per paragraph and without
# hyphenation, and searched there, so the check is on what a reader sees.
set -euo pipefail
BUILD=${BUILD:?BUILD must point at the build directory}
cd "$(dirname "$0")/.."
MAN=docs/man
T=$(mktemp -d "${TMPDIR:-/tmp}/stria-man.XXXXXX")
trap 'rm -rf "$T"' EXIT
rc=0
bad() {
    echo "FAIL: $*"
    rc=1
}

command -v groff >/dev/null || { echo "groff is missing (Debian: groff-base)"; exit 1; }

render() { groff -man -Tascii -rLL=250n -rHY=0 -P-cbou "$1" 2>/dev/null; }

# block FILE REGEX [SECTION]: the entry whose line matches REGEX (an ERE,
# matched after the indentation) and everything indented deeper below it,
# joined on one line with single spaces; only within SECTION if given.
block() {
    awk -v re="$2" -v sec="${3:-}" '
        /^[A-Z]/ { insec = (sec == "" || $0 == sec) }
        !found && insec && $0 ~ "^ +" re { found = 1; match($0, /^ +/); ind = RLENGTH; print; next }
        found {
            if ($0 ~ /^ *$/) { print; next }
            match($0, /^ */)
            if (RLENGTH <= ind) exit
            print
        }' "$1" | tr -s ' \n' '  '
}

# has_word TEXT WORD: WORD (an option such as -c or --repair) as a word.
has_word() {
    grep -qE -- "(^|[^A-Za-z0-9_-])$(sed 's/[.[\*^$]/\\&/g' <<<"$2")([^A-Za-z0-9_-]|$)" <<<"$1"
}

# ---- every page: clean under groff and man, and the project's version ----
version=$(sed -nE 's/^project\(stria VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || bad "no version in CMakeLists.txt's project()"
for p in "$MAN"/*.[18]; do
    w=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
    [ -z "$w" ] || bad "groff warns about $p: $w"
    w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
    [ -z "$w" ] || bad "man warns about $p: $w"
    grep -q "^\.TH .* \"Stria $version\"" "$p" || bad "$p: .TH does not say \"Stria $version\""
    render "$p" >"$T/$(basename "$p").txt"
done

# conf_options FILE PAGE PROGRAM: every option of a commented template
# (`#name = default`, or `name = ` when required, after a comment that may
# say "range LO..HI") has an entry "name = ..." in PAGE with them.
conf_options() {
    local file=$1 page=$2 prog=$3 name def optional range line b
    range=""
    while IFS= read -r line; do
        if [[ $line =~ ^#\ .*range\ (-?[0-9]+\.\.-?[0-9]+) ]]; then
            range=${BASH_REMATCH[1]}
            continue
        fi
        [[ $line =~ ^(#?)([a-z0-9_]+)\ =\ ?(.*)$ ]] || continue
        optional=${BASH_REMATCH[1]}
        name=${BASH_REMATCH[2]}
        def=${BASH_REMATCH[3]}
        b=$(block "$page" "$name = ")
        if [ -z "$b" ]; then
            bad "$prog option $name has no entry in $(basename "$page" .txt)"
        else
            if [ -n "$optional" ] && [ -n "$def" ] && ! grep -qF "Default: $def. " <<<"$b "; then
                bad "$(basename "$page" .txt): $name: no 'Default: $def'"
            fi
            if [ -z "$optional" ] && ! grep -q "Required" <<<"$b"; then
                bad "$(basename "$page" .txt): $name: not said to be Required"
            fi
            if [ -n "$range" ] && ! grep -qF -- "$range" <<<"$b"; then
                bad "$(basename "$page" .txt): $name: no range $range"
            fi
        fi
        range=""
    done <"$file"
}

# ---- the daemons: their option tables ----
for d in mgmtd metad stord; do
    "$BUILD/stria-$d" --print-template >"$T/$d.template"
    n=$(grep -cE '^#?[a-z0-9_]+ = ' "$T/$d.template")
    [ "$n" -ge 5 ] || bad "stria-$d --print-template lists only $n options"
    conf_options "$T/$d.template" "$T/stria-$d.8.txt" "stria-$d"
    for o in --config --set --print-template --help; do
        "$BUILD/stria-$d" --help | grep -q -- "$o" || bad "stria-$d --help lacks $o"
        has_word "$(cat "$T/stria-$d.8.txt")" "$o" || bad "stria-$d.8 lacks $o"
    done
done

# ---- client.conf, in stria(1) ----
conf_options conf/client.conf.example "$T/stria.1.txt" client.conf

# ---- stria(1): commands, their options and subcommands ----
"$BUILD/stria" help >"$T/help"
cmds=$(sed -n '/^Commands:/,/^$/p' "$T/help" | sed -nE 's/^  ([a-z][a-z-]*) .*/\1/p')
[ "$(wc -w <<<"$cmds")" -ge 10 ] || bad "stria help lists only: $cmds"
for o in $(sed -n '/^Global options:/,/^$/p' "$T/help" | grep -oE -- '(^| )--?[a-z][a-z-]*'); do
    has_word "$(cat "$T/stria.1.txt")" "$o" || bad "stria.1 lacks the global option $o"
done
for c in $cmds; do
    b=$(block "$T/stria.1.txt" "stria $c( |$)" COMMANDS)
    if [ -z "$b" ]; then
        bad "stria.1 has no entry 'stria $c' (docs/man/stria.1, COMMANDS)"
        continue
    fi
    h=$("$BUILD/stria" "$c" --help 2>&1) || true
    # Option lines: the usage (and its continuation), and lines that start
    # with an option, a bracket or the command's own name.
    opts=$(awk -v c="$c" 'NR == 1 || /^ +(-|\[)/ || $1 == c' <<<"$h" |
        grep -oE -- '(^|[ [|(])--?[A-Za-z][A-Za-z-]*' | sed -E 's/^[ [|(]//' | sort -u || true)
    for o in $opts; do
        has_word "$b" "$o" || bad "stria.1: 'stria $c' lacks $o (stria $c --help has it)"
    done
    # Subcommands: a|b|c right after the command in the usage line.
    subs=$(head -n 1 <<<"$h" | sed -nE "s/^[Uu]sage: stria $c ([a-z]+(\|[a-z]+)+).*/\1/p" | tr '|' ' ' || true)
    for s in $subs; do
        grep -qE "(^| )$c $s( |$)" <<<"$b" || bad "stria.1: 'stria $c' lacks '$c $s'"
    done
done

# ---- stria-fuse(8) and mount.stria(8) ----
"$BUILD/stria-fuse" --help >"$T/fuse.help"
fopts=$(sed -nE 's/^  ([a-z0-9_]+)=.*/\1/p' "$T/fuse.help")
[ "$(wc -w <<<"$fopts")" -ge 10 ] || bad "stria-fuse --help lists only: $fopts"
for o in $fopts; do
    [ -n "$(block "$T/stria-fuse.8.txt" "$o=" "MOUNT OPTIONS")" ] || bad "stria-fuse.8 has no entry for $o="
done
for o in $(grep -oE -- '^  -[a-z]' "$T/fuse.help" | tr -d ' '); do
    [ -n "$(block "$T/stria-fuse.8.txt" "$o( |$)")" ] || bad "stria-fuse.8 has no entry for $o"
done
"$BUILD/mount.stria" --help >"$T/mount.help"
for o in $(grep -oE -- '^  -[a-z-]+' "$T/mount.help" | tr -d ' '); do
    [ -n "$(block "$T/mount.stria.8.txt" "$o( |,|$)")" ] || bad "mount.stria.8 has no entry for $o"
done
# The options it drops for mount(8): "... mean something to mount(8): a, b, ...".
dropped=$(tr '\n' ' ' <"$T/mount.help" | sed -nE 's/.*something to mount\(8\): ([^.]*)\..*/\1/p' | tr -d ',')
[ -n "$dropped" ] || bad "cannot find the dropped options in mount.stria --help"
for o in $dropped; do
    has_word "$(cat "$T/mount.stria.8.txt")" "$o" || bad "mount.stria.8 does not say it drops $o"
done

[ $rc -eq 0 ] && echo PASS
exit $rc
