#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The verbs conformance suite (test/gtest/verbs) against soft0 through
# libibverbs (srq-run --verbs): there soft0 is an rdma-core device, reached
# by the ordinary verbs calls as any HCA is, so every generic test runs on
# it; the tests of soft internals (statistics, test hooks, segments) skip.
#
set -u
run=${SRQ_RUN:?}
builddir=${SRQ_TEST_BUILDDIR:?}
exec "$run" --verbs "$builddir/test/gtest/verbs/srq_verbs_gtest" "$@"
