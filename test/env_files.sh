#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Files named by environment variables: SRQ_VERBS_TRACE (the verbs trace,
# written from its start) and UCX_RC_SRQ_COUNTERS_FILE (appended to at
# interface close). Each is used only when it is a regular file of this
# user reached without a symlink; anything else is refused at once, with
# a message, and left as it was:
#
#   fifo        a FIFO without a reader: no hang (the open used to wait)
#   symlink     a symlink to a file of ours: the target keeps its bytes
#               (the trace used to follow it and truncate the target).
#               Made by us: the kernel's protected_symlinks would refuse
#               another user's in a sticky directory before our check
#   foreign     a regular file of another user, writable by all (root
#               only; in a directory that is not sticky, where the kernel's
#               protected_regular does not step in): untouched
#   directory   refused
#   own         a regular file of ours: used (the trace replaces its
#               contents, the counters append)
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
build=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
. "$src/result.sh"
fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/srq-envfiles.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 1777 "$tmp" # a /tmp of its own: sticky, writable by all
other=65534       # nobody
root=0; [ "$(id -u)" = 0 ] && root=1

# run_with VAR PATH: the program that makes the file's owner open it,
# bounded: a hang is exit 124
run_with() {
    if [ "$1" = SRQ_VERBS_TRACE ]; then
        env SRQ_VERBS_TRACE="$2" UCX_SRQ_SOFT=y timeout -k 5 20 \
            "$run" --verbs ibv_devinfo -d soft0 2>&1
    else
        env UCX_RC_SRQ_COUNTERS_FILE="$2" UCX_SRQ_SOFT=y timeout -k 5 20 \
            "$run" "$build/test/tools/uct_fd_budget" 64 2>&1
    fi
}

for var in SRQ_VERBS_TRACE UCX_RC_SRQ_COUNTERS_FILE; do
    # fifo: without a reader
    mkfifo "$tmp/fifo"
    out=$(run_with $var "$tmp/fifo"); rc=$?
    result "$var fifo" $([ $rc != 124 ] && grep -q "$tmp/fifo" <<<"$out" && echo 1) \
        "exit $rc, refused: $(grep "$tmp/fifo" <<<"$out" | head -1)"

    # symlink, to a file of ours
    echo keep >"$tmp/target"
    ln -s "$tmp/target" "$tmp/link"
    out=$(run_with $var "$tmp/link"); rc=$?
    result "$var symlink" $([ "$(cat "$tmp/target")" = keep ] && echo 1) \
        "exit $rc, the target keeps its bytes: $(grep "$tmp/link" <<<"$out" | head -1)"

    # foreign: another user's regular file, writable by all
    if [ $root = 1 ]; then
        mkdir -m 755 "$tmp/plain"
        echo theirs >"$tmp/plain/foreign"
        chmod 666 "$tmp/plain/foreign"; chown $other "$tmp/plain/foreign"
        out=$(run_with $var "$tmp/plain/foreign"); rc=$?
        result "$var foreign" $([ "$(cat "$tmp/plain/foreign")" = theirs ] && echo 1) \
            "exit $rc, left as it was: $(grep "$tmp/plain/foreign" <<<"$out" | head -1)"
    else
        echo "SKIP: $var foreign: needs root to make a file of another user"
    fi

    # directory
    mkdir "$tmp/dir"
    out=$(run_with $var "$tmp/dir"); rc=$?
    result "$var directory" $([ $rc != 124 ] && grep -q "$tmp/dir" <<<"$out" && echo 1) \
        "exit $rc: $(grep "$tmp/dir" <<<"$out" | head -1)"

    # own: used
    echo old >"$tmp/own"
    out=$(run_with $var "$tmp/own"); rc=$?
    if [ $var = SRQ_VERBS_TRACE ]; then
        ok=$(head -1 "$tmp/own" | grep -q '^# ucx-srq verbs trace' && echo 1)
    else
        ok=$(head -1 "$tmp/own" | grep -q '^old$' && grep -q '^rc_srq ' "$tmp/own" && echo 1)
    fi
    result "$var own" "$ok" "exit $rc, $(wc -l <"$tmp/own") lines written: $out"
    rm -rf "$tmp"/{fifo,target,link,plain,dir,own}
done
exit $fail
