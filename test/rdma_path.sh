#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# rc_srq on its rdma-core path, the one real HCAs take: srq-run --verbs
# makes soft0 a libibverbs device, the plugin's built-in listing steps
# aside, and rc_srq opens soft0 through rdma-core exactly as it opens an
# HCA. The ucx_perftest tests (test/perftest.sh) and the MPI and OpenSHMEM
# jobs (test/mpi.sh) run there, and every rc_srq interface's counters line
# must say it took that path. (The UCT suite runs there too:
# test/uct_gtest_ibv.sh.)
#
set -u
run=${SRQ_RUN:?}
builddir=${SRQ_TEST_BUILDDIR:?}
dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-rdma-path.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# the tests call "$SRQ_RUN CMD...": this one adds --verbs
printf '#!/bin/sh\nexec "%s" --verbs "$@"\n' "$run" >"$work/srq-run"
chmod +x "$work/srq-run"

fail=0
SRQ_RUN="$work/srq-run" SRQ_TEST_PATH=rdma-core "$dir/perftest.sh" || fail=1
SRQ_RUN="$work/srq-run" SRQ_TEST_PATH=rdma-core \
    SRQ_TEST_MPI_OUT="$builddir/test/mpi_rdma" "$dir/mpi.sh" || fail=1
exit $fail
