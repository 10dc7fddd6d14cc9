#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# UCX's own ib transports, unmodified, on soft0 through libibverbs
# (srq-run --verbs), beside rc_srq on the same device:
#  - ucx_info -d lists rc_verbs, ud_verbs and rc_srq on soft0:1, each once
#    (the plugin's built-in soft0 steps aside: rc_srq opens soft0 through
#    rdma-core, its path on real HCAs);
#  - ucx_perftest between two processes: am_lat, am_bw, put_bw, get over
#    rc_verbs, am_lat/am_bw over ud_verbs, and the same over rc_srq;
#  - UCP tag_lat/tag_bw with UCX_TLS=rc_verbs,ud_verbs,self;
#  - MPI programs (point-to-point, collectives) under Open MPI and MPICH
#    with UCX_TLS=rc_verbs,ud_verbs,self.
# Every run must complete and print its result; times are printed, not
# judged.
#
set -u
run=${SRQ_RUN:?}
builddir=${SRQ_TEST_BUILDDIR:?}
src=$(cd "$(dirname "$0")" && pwd)
iters=${SRQ_PERFTEST_ITERS:-2000}
pair="$src/../contrib/perftest-pair"
export PERFTEST_RUN="$run --verbs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail=0

# shellcheck source=result.sh
. "$(dirname "$0")/result.sh"

out=$("$run" --verbs timeout 120 ucx_info -d 2>&1)
for tl in rc_verbs ud_verbs rc_srq; do
    n=$(awk -v tl="$tl" '$2 == "Transport:" && $3 == tl {t = 1; next}
                         t && $2 == "Device:" {if ($3 == "soft0:1") c++; t = 0}
                         END {print c + 0}' <<<"$out")
    result "ucx_info -d lists $tl on soft0:1 once" "$([ "$n" = 1 ] && echo 1)" \
        "listed $n times"
done

# also when the built-in soft0 is asked for explicitly
out=$(UCX_SRQ_SOFT=y "$run" --verbs timeout 120 ucx_info -d -t rc_srq 2>&1)
n=$(grep -c "Device: soft0:1" <<<"$out")
result "UCX_SRQ_SOFT=y: rc_srq on soft0:1 once" "$([ "$n" = 1 ] && echo 1)" \
    "listed $n times"

perf() { # NAME ucx_perftest-arguments...
    local name=$1 o rc; shift
    o=$("$pair" -n "$iters" -w 100 -f -v "$@" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q "^$iters,[0-9.]*," <<<"$o"; then
        result "$name" 1 "$(grep "^$iters," <<<"$o" | tail -1)"
    else
        result "$name" 0 "rc=$rc $o"
    fi
}

for tl in rc_verbs rc_srq; do
    d=(-x "$tl" -d soft0:1)
    perf "$tl am_lat short" -t am_lat -D short "${d[@]}"
    perf "$tl am_bw bcopy"  -t am_bw  -D bcopy "${d[@]}" -s 4096
    perf "$tl am_bw zcopy"  -t am_bw  -D zcopy "${d[@]}" -s 4096
    perf "$tl put_bw zcopy" -t put_bw -D zcopy "${d[@]}" -s 65536
    perf "$tl get zcopy"    -t get    -D zcopy "${d[@]}" -s 65536
done
d=(-x ud_verbs -d soft0:1)
perf "ud_verbs am_lat short" -t am_lat -D short "${d[@]}"
perf "ud_verbs am_bw bcopy"  -t am_bw  -D bcopy "${d[@]}" -s 1024

export UCX_TLS=rc_verbs,ud_verbs,self
perf "ucp tag_lat (rc_verbs,ud_verbs)" -t tag_lat
perf "ucp tag_bw (rc_verbs,ud_verbs)"  -t tag_bw -s 65536

# MPI over UCX's transports on soft0: the same programs as test/mpi.sh
mkdir -p "$builddir/test/mpi_verbs"
mpi_job() { # NAME LAUNCHER-AND-OPTIONS... PROGRAM
    local name=$1 o rc; shift
    o=$("$run" --verbs timeout 300 "$@" 2>&1)
    rc=$?
    result "$name" "$([ $rc -eq 0 ] && echo 1)" \
        "$( [ $rc -eq 0 ] && echo ok || echo "rc=$rc $o")"
}
for p in p2p coll; do
    exe="$builddir/test/mpi_verbs/$p"
    if mpicc.openmpi -O2 -pthread -I"$src/mpi" -o "$exe" "$src/mpi/$p.c"; then
        mpi_job "Open MPI $p np=4 (rc_verbs,ud_verbs)" mpirun.openmpi -np 4 \
            --oversubscribe --mca pml ucx --mca osc ucx --mca btl self \
            -x UCX_TLS "$exe"
    else
        result "build $p (Open MPI)" 0 "mpicc.openmpi failed"
    fi
    if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
        if mpicc.mpich -O2 -pthread -I"$src/mpi" -o "$exe.mpich" "$src/mpi/$p.c" 2>/dev/null; then
            mpi_job "MPICH $p np=4 (rc_verbs,ud_verbs)" mpiexec.mpich -n 4 \
                "$exe.mpich"
        else
            result "build $p (MPICH)" 0 "mpicc.mpich failed"
        fi
    fi
done
exit $fail
