#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The plugin must refuse to register under a UCX other than the one it was
# built for: one clear error line, no rc_srq, no crash.
#
# A fake UCX installation is made in a temporary directory: the real libuct,
# libucs and libucm (symlinks) beside a libucp.so.0 that reports 1.99.0. A
# UCT-only program run from there under srq-run must not see
# component "srq"; run normally, it must.
#
set -u
builddir=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
list="$builddir/test/tools/uct_list"
fake=$(mktemp -d "${TMPDIR:-/tmp}/srq-vguard.XXXXXX")
trap 'rm -rf "$fake"' EXIT
fail=0

libdir=$(dirname "$(ldd "$list" | awk '/libuct\.so/ {print $3}')")
for l in libuct.so.0 libucs.so.0 libucm.so.0; do
    ln -s "$libdir/$l" "$fake/$l"
done
${CC:-cc} -shared -fPIC -Wl,-soname,libucp.so.0 -o "$fake/libucp.so.0" \
    "$(dirname "$0")/tools/fake_ucp_version.c" || { echo "FAIL: cannot build the fake libucp"; exit 1; }

# 1. matching UCX: the component is there
out=$("$run" "$list" 2>&1)
if grep -q '^srq soft0 rc_srq soft0:1$' <<<"$out"; then
    echo "PASS: matching UCX registers srq/rc_srq on soft0:1"
else
    echo "FAIL: matching UCX: rc_srq on soft0:1 not listed"; echo "$out"; fail=1
fi

# 2. mismatched UCX: refused with a clear message, and the program still works
out=$(LD_LIBRARY_PATH="$fake" "$run" "$list" 2>&1); rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL: the program failed (rc=$rc) under a mismatched UCX"; echo "$out"; fail=1
elif grep -q '^srq' <<<"$out"; then
    echo "FAIL: srq registered under a mismatched UCX"; echo "$out"; fail=1
elif ! grep -q 'plugin built for UCX [0-9.]* but the running UCX is 1.99.0' <<<"$out"; then
    echo "FAIL: no clear version-mismatch message"; echo "$out"; fail=1
elif ! grep -q '^self' <<<"$out"; then
    echo "FAIL: UCX's own components vanished"; echo "$out"; fail=1
else
    echo "PASS: mismatched UCX refused: $(grep -o 'plugin built for.*' <<<"$out" | head -1)"
fi
exit $fail
