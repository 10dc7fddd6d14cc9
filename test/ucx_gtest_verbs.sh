#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# UCX's own UCT test suite over UCX's own ib transports, rc_verbs and
# ud_verbs, on soft0 served through libibverbs (srq-run --verbs), as on an
# HCA: the generic UCT tests and UCX's uct/ib tests of those transports
# (test_rc, test_ud, test_ud_ds, test_ud_timer, test_ud_pending, test_ib,
# test_ib_md, test_ib_xfer, ...), built by test/ucx_gtest.sh from the
# source of the installed UCX. 0 failed; a skip is the suite's own, printed
# with its reason; a failure known and not fixed is listed in
# test/ucx_gtest.known under its transport ("ud_verbs:GLOB") and not run.
# (rc_srq runs the generic tests in test/ucx_gtest.sh; UCX's uct/ib tests
# are not instantiated for it: they read uct_ib_iface_t, which rc_srq's
# interface is not.)
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
fail=0
for tl in rc_verbs ud_verbs; do
    "$here/ucx_gtest.sh" --verbs --tl "$tl" || fail=1
done
exit $fail
