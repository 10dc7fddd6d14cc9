#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The UCT suite (test/gtest/uct) with rc_srq on its rdma-core path: under
# srq-run --verbs soft0 is a libibverbs device and rc_srq opens it through
# rdma-core, as it opens an HCA (reachability, address packing, async and
# SRQ limit events through ibv_get_async_event, RNR handling on that path).
# The tests of the built-in soft0's internals skip there.
#
set -u
run=${SRQ_RUN:?}
builddir=${SRQ_TEST_BUILDDIR:?}
# the plugin with the test hooks, as the suite's own run has it
export SRQ_RUN_PLUGIN="$builddir/test/plugin/.libs/libuct_srq.so"
export SRQ_RUN_VERBS_LIB="$builddir/.libs/libsrq_ibv.so"
exec "$run" --verbs "$builddir/test/gtest/uct/srq_uct_gtest" "$@"
