#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Few file descriptors left: uct_md_open and uct_iface_open of rc_srq, in a
# fresh process (UCX's async thread not yet started) with exactly N
# descriptors left, for every N from 0 to what an open needs, give a clean
# error or succeed, and leave no descriptor open (test/tools/uct_fd_budget).
# UCX 1.13 aborts when its async thread cannot start: the plugin must see
# that coming. On the built-in soft0, in both receive modes, and on soft0
# through libibverbs (the rdma-core path). The shared receive queue's
# interface registers one descriptor more with the async thread (the
# handshake's timer) than a per-QP one: it may need that one descriptor
# more, not the room for a thread that runs already.
#
set -u
builddir=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
tool="$builddir/test/tools/uct_fd_budget"
fail=0

# check LABEL RUN_ARGS... : every budget, until one opens everything (in
# $opened)
check() {
    local label=$1 n out rc
    opened=
    shift
    for n in $(seq 0 64); do
        out=$(UCX_SRQ_SOFT=y "$run" "$@" "$tool" "$n" 2>&1)
        rc=$?
        if [ $rc != 0 ]; then
            echo "FAIL: $label: $n descriptors left: exit $rc"
            tail -5 <<<"$out"
            fail=1
            return
        fi
        case "$out" in *opened*) opened=$n; break ;; esac
    done
    if [ -z "$opened" ]; then
        echo "FAIL: $label: no open succeeded with up to 64 descriptors"
        fail=1
    else
        echo "PASS: $label: clean errors below $opened descriptors, nothing left open"
    fi
}

check "soft0, SRQ"
srq=$opened
UCX_RC_SRQ_SRQ=n check "soft0, SRQ=n"
if [ -n "$srq" ] && [ -n "$opened" ] && [ "$srq" -gt $((opened + 1)) ]; then
    echo "FAIL: soft0, SRQ: needs $srq descriptors, SRQ=n $opened: more than its timer's one"
    fail=1
fi
check "soft0 via libibverbs" --verbs
exit $fail
