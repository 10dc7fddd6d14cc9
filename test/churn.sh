#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The connection soak, short (contrib/stress-churn): a UCP server and 300
# short-lived clients over rc_srq (8 in 10 flush, 1 in 10 force-close, 1 in
# 10 _exit), on the built-in path and through libibverbs, with a 200 ms
# idle check: every client sends, the server's descriptors and memfd
# mappings come back to where they were, and it holds no connection when
# it closes. The clients' numbers beside tcp's: contrib/stress-churn.
#
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/test/result.sh"
fail=0
for v in "" -V; do
    out=$(BUILD_DIR=${SRQ_TEST_BUILDDIR:?} "$top/contrib/stress-churn" -n 300 -j 4 \
              -x rc_srq,self -i 200ms $v 2>&1)
    result "churn_rc_srq${v:+_ibv}: the server gives back what 300 clients cost" \
        "$(grep -qx '1 passed, 0 failed' <<<"$out" && echo 1)" "$out"
done
exit $fail
