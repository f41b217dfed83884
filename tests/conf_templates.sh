#!/usr/bin/env bash
# The commented templates in conf/ are what each daemon's option table
# prints: a new option, a new default or new help text that is not in
# conf/ fails here (regenerate with: stria-X --print-template > conf/X.conf.example).
set -euo pipefail
cd "$(dirname "$0")/.."
rc=0
for d in mgmtd metad stord; do
    if ! diff -u "conf/$d.conf.example" <("$BUILD/stria-$d" --print-template); then
        echo "conf/$d.conf.example is stale"; rc=1
    fi
    # --help lists every option of the table.
    for opt in $(grep -E '^#?[a-z_]+ = ' "conf/$d.conf.example" | sed -E 's/^#?([a-z_]+) = .*/\1/'); do
        "$BUILD/stria-$d" --help | grep -q "^  $opt " || { echo "stria-$d --help lacks $opt"; rc=1; }
    done
    # A garbage config is refused with the file and line named, and exit 2.
    printf 'listen = 127.0.0.1:1\nthis is not a setting\n' > /tmp/garbage-$$.conf
    set +e
    "$BUILD/stria-$d" --config /tmp/garbage-$$.conf 2>/tmp/garbage-$$.err
    code=$?
    set -e
    grep -q "garbage-$$.conf:2" /tmp/garbage-$$.err || { echo "stria-$d: no line number: $(cat /tmp/garbage-$$.err)"; rc=1; }
    [ $code -eq 2 ] || { echo "stria-$d: exit $code on a bad config, want 2"; rc=1; }
    rm -f /tmp/garbage-$$.conf /tmp/garbage-$$.err
done
[ $rc -eq 0 ] && echo PASS
exit $rc
