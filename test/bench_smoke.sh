#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The benchmark programs run end to end (never timed: they print, and
# this only checks that they did): rx_memory, progress_cost and incast_rate
# for rc_srq and, through srq-run --verbs, UCX's rc_verbs on soft0:1, each
# with two peers or senders; every phase line is printed with its fields,
# rc_srq's connections all came up; copy_floor (no transport) in both
# modes, its message check seen to fail; bench/mpi_level's MPI and
# OpenSHMEM points over rc_srq, its data check seen to fail; and no
# benchmark process outlives its run.
#
set -u
run=${SRQ_RUN:?}
builddir=${SRQ_TEST_BUILDDIR:?}
fail=0
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_smoke.XXXXXX")
export BENCH_PID_LOG="$work/pids"

cleanup() {
    local pid
    for pid in $(cat "$BENCH_PID_LOG" 2>/dev/null); do
        grep -qs -e rx_memory -e progress_cost -e incast_rate -e copy_floor \
            "/proc/$pid/cmdline" && kill -KILL "$pid" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=result.sh
. "$(dirname "$0")/result.sh"

# bench TL PROG ARGS...: run a benchmark program of the build tree
bench() {
    local tl=$1 prog=$2 verbs=()
    shift 2
    case $tl in *_verbs) verbs=(--verbs) ;; esac
    timeout -k 5 120 "$run" ${verbs[@]+"${verbs[@]}"} "$builddir/bench/$prog" -t "$tl" "$@" 2>&1
}
# has LINE KEY...: every KEY=<number> is in LINE
has() {
    local line=$1 k; shift
    for k in "$@"; do
        [[ " $line " =~ \ $k=[0-9.]+\  ]] || return 1
    done
}

for tl in rc_srq rc_verbs; do
    out=$(bench "$tl" rx_memory -f 200 -w 50 -q 500 2); rc=$?
    ok=$([ $rc = 0 ] && echo 1)
    for ph in base open connected idle flood quiet; do
        line=$(grep "^rxmem .* phase=$ph " <<<"$out")
        has "$line" peers rss hwm anon shmem || ok=0
        if [ "$tl" = rc_srq ] && [ "$ph" != base ]; then
            has "$line" held held_peak depth rnr || ok=0
        fi
    done
    [ "$tl" = rc_srq ] && ! grep -q "phase=quiet .* conns=2 conns_failed=0" <<<"$out" && ok=0
    result "rx_memory $tl: every phase printed" "${ok:-0}" \
        "$([ "${ok:-0}" = 1 ] && grep "phase=quiet" <<<"$out" | cut -c1-120 || echo "$out")"

    out=$(bench "$tl" progress_cost -s 2 -m 2 2); rc=$?
    line=$(grep "^progress " <<<"$out")
    result "progress_cost $tl: printed" \
        "$([ $rc = 0 ] && has "$line" conns ns_median ns_min calls && echo 1)" "$out"

    out=$(bench "$tl" incast_rate 2 200); rc=$?
    line=$(grep "^incast " <<<"$out")
    result "incast_rate $tl: printed, every message counted" \
        "$([ $rc = 0 ] && has "$line" rate rss hwm && [[ $line == *" msgs=400 "* ]] && echo 1)" "$out"
done

# copy_floor (no transport): both modes print their rate, and its check of
# every message's number fails a run whose message 500 carries a wrong one
for mode in peek place; do
    out=$(timeout -k 5 60 "$builddir/bench/copy_floor" -m $mode -s 4096 -n 20000 2>&1); rc=$?
    line=$(grep "^copy_floor " <<<"$out")
    result "copy_floor $mode: printed, every message checked" \
        "$([ $rc = 0 ] && has "$line" mr us && [[ $line == *" msgs=20000 "* ]] && echo 1)" "$out"
done
out=$(timeout -k 5 60 "$builddir/bench/copy_floor" -m place -s 64 -n 20000 -x 500 2>&1); rc=$?
result "copy_floor: a message out of place fails the run" \
    "$([ $rc = 1 ] && grep -q "message 500 carries number 501" <<<"$out" && echo 1)" "rc=$rc $out"

# bench/mpi_level (bench/mpi-level's program): every MPI and OpenSHMEM
# operation prints a number over rc_srq, and its data check fails a run
# whose ping-pong carries a wrong pattern
if command -v mpicc.openmpi >/dev/null && command -v oshcc >/dev/null; then
    src="$(dirname "$0")/../bench/mpi_level.c"
    mpicc.openmpi -O2 -o "$work/mpi_level" "$src" &&
        oshcc -O2 -DSRQ_SHMEM -o "$work/shmem_level" "$src"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpi_run() { # NP LAUNCHER PROGRAM OPS [ENV=VALUE]
        local np=$1 launcher=$2 prog=$3 ops=$4 mca=(--mca osc ucx)
        [ "$launcher" = oshrun ] && mca=(--mca spml ucx --mca osc ^rdma)
        env UCX_TLS=rc_srq,self ${5:-} timeout -k 5 120 "$run" "$launcher" -np "$np" \
            --oversubscribe --mca pml ucx --mca btl self "${mca[@]}" -x UCX_TLS \
            ${5:+-x "${5%%=*}"} "$work/$prog" "$ops" 8,4096 50 2>&1
    }
    out=$(mpi_run 2 mpirun.openmpi mpi_level pp_lat,pp_bw,put_lat,put_bw,get_lat,get_bw); rc=$?
    out2=$(mpi_run 2 oshrun shmem_level shmem_put_lat,shmem_get_lat); rc2=$?
    out3=$(mpi_run 4 mpirun.openmpi mpi_level a2a); rc3=$?
    n=$(printf '%s\n' "$out" "$out2" "$out3" | grep -cE '^mpi op=[a-z_0-9]+ size=(8|4096) value=[0-9.]+ unit=(us|MBps)$')
    result "mpi_level: 18 points printed over rc_srq (MPI, OpenSHMEM, alltoall)" \
        "$([ $rc = 0 ] && [ $rc2 = 0 ] && [ $rc3 = 0 ] && [ "$n" = 18 ] && echo 1)" \
        "rc=$rc/$rc2/$rc3 points=$n $out $out2 $out3"
    # bench/tag-offload's: the receiver's CPU per message (tag matching
    # on) and the many-to-one unexpected bandwidth
    out=$(mpi_run 2 mpirun.openmpi mpi_level rx_cpu UCX_RC_SRQ_TM_ENABLE=y); rc=$?
    out2=$(mpi_run 4 mpirun.openmpi mpi_level unexp_bw); rc2=$?
    n=$(printf '%s\n' "$out" "$out2" | grep -cE '^mpi op=(rx_cpu|unexp_bw) size=(8|4096) value=[0-9.]+ unit=(us|MBps)$')
    result "mpi_level: rx_cpu (tag matching on) and unexp_bw print 4 points" \
        "$([ $rc = 0 ] && [ $rc2 = 0 ] && [ "$n" = 4 ] && echo 1)" \
        "rc=$rc/$rc2 points=$n $out $out2"
    out=$(mpi_run 2 mpirun.openmpi mpi_level pp_lat MPI_LEVEL_WRONG=1); rc=$?
    result "mpi_level: a wrong byte fails the run" \
        "$([ $rc != 0 ] && grep -q "pp_lat: byte 0 of 8 is wrong" <<<"$out" && echo 1)" "rc=$rc $out"
fi

# bench/tag-offload, quick: every variant measured (no n/a), and the
# offloaded MPI run's receives matched by the device
if command -v mpicc.openmpi >/dev/null; then
    out=$(QUICK=1 SIZES=65536 BUILD_DIR=$builddir timeout -k 5 600 \
          "$(dirname "$0")/../bench/tag-offload" 2>&1); rc=$?
    na=$(grep -c '^| 65536 |.*n/a' <<<"$out")
    tm=$(awk -F'|' '$2 ~ /pp/ { print $4 + 0 }' <<<"$out")
    result "tag-offload: 6 tables of every variant, device-matched receives with offload" \
        "$([ $rc = 0 ] && [ "$(grep -c '^| 65536 |' <<<"$out")" = 6 ] && [ "$na" = 0 ] &&
           [ "${tm:-0}" -gt 0 ] && echo 1)" "rc=$rc n/a rows=$na tm_matched=$tm $out"
fi

left=""
for pid in $(cat "$BENCH_PID_LOG" 2>/dev/null); do
    grep -qs -e rx_memory -e progress_cost -e incast_rate -e copy_floor \
        "/proc/$pid/cmdline" && left="$left $pid"
done
result "no benchmark process left behind" "$([ -z "$left" ] && echo 1)" "left:$left"
exit $fail
