# SPDX-License-Identifier: BSD-3-Clause
# bench/lib.sh - what the benchmark scripts share (sourced, not run).
#
#   bench_init NAME   finds srq-run and the build tree, makes a work
#                     directory, and sets traps so that whatever happens
#                     (failure, Ctrl-C) every process started by bench_run
#                     is ended (the soft device's shared memory is in
#                     memfds: it goes with its processes)
#   bench_run OUT LIMIT_S [--verbs] CMD...
#                     runs CMD under srq-run (with --verbs: srq-run --verbs,
#                     soft0 a libibverbs device) in a process group of its
#                     own, at most LIMIT_S seconds; stdout to OUT, stderr to
#                     OUT.err; returns CMD's status
#   bench_dev TL      the device a transport is measured on: soft0:1 for
#                     rc_srq and UCX's verbs transports, memory for the
#                     shared-memory ones, lo for tcp
#   bench_verbs TL    "--verbs" where TL needs soft0 as a libibverbs device
#                     (UCX's rc_verbs, ud_verbs, ...): bench_run's option
#   bench_kv KEY      the value of KEY=... in each line of stdin ("n/a")
#   bench_median      the median of the numbers on stdin ("n/a": none)
#   bench_ratio A B   A/B with 2 decimals, n/a where either is n/a or B is 0
#
# Environment the scripts share:
#   BUILD_DIR  build tree with the benchmark programs (default ./build)
#   SRQ_RUN    srq-run to use (default: BUILD_DIR's, with that tree's
#              plugin; else srq-run from PATH)
#
# The benchmark programs log their pids to $BENCH_PID_LOG (bench_proc.h):
# one that escaped its process group is still found, and nobody else's.

bench_init() {
    BENCH_NAME=$1
    BENCH_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    BENCH_BUILD=${BUILD_DIR:-$BENCH_HERE/../build}
    if [ -n "${SRQ_RUN:-}" ]; then
        BENCH_SRQ_RUN=$SRQ_RUN
    elif [ -x "$BENCH_BUILD/contrib/srq-run" ]; then
        BENCH_SRQ_RUN=$BENCH_BUILD/contrib/srq-run
        export SRQ_RUN_PLUGIN=${SRQ_RUN_PLUGIN:-$BENCH_BUILD/.libs/libuct_srq.so}
    elif command -v srq-run >/dev/null; then
        BENCH_SRQ_RUN=srq-run
    else
        echo "$BENCH_NAME: no srq-run (build in $BENCH_BUILD, or install)" >&2
        exit 2
    fi
    # every background job gets a process group of its own: killing the
    # group takes the benchmark's own children along
    set -m
    BENCH_WORK=$(mktemp -d "${TMPDIR:-/tmp}/$BENCH_NAME.XXXXXX")
    export BENCH_PID_LOG="$BENCH_WORK/pids"
    BENCH_JOBS=()
    trap bench_finish EXIT
    trap 'echo "$BENCH_NAME: interrupted" >&2; exit 130' INT TERM
}

# bench_prog NAME: the path of a benchmark program of the build tree
bench_prog() {
    local p="$BENCH_BUILD/bench/$1"
    if [ ! -x "$p" ]; then
        echo "$BENCH_NAME: $p not built (make in $BENCH_BUILD)" >&2
        exit 2
    fi
    echo "$p"
}

bench_run() {
    local out=$1 limit=$2 pid rc
    local -a run=("$BENCH_SRQ_RUN")
    shift 2
    if [ "${1:-}" = --verbs ]; then
        run+=(--verbs)
        shift
    fi
    timeout -k 5 "$limit" "${run[@]}" "$@" >"$out" 2>"$out.err" &
    pid=$!
    BENCH_JOBS+=("$pid")
    wait "$pid"
    rc=$?
    # reaped: its pid may be reused, never signal it again
    BENCH_JOBS=("${BENCH_JOBS[@]/$pid}")
    return $rc
}

bench_dev() {
    case $1 in
        rc_srq|*_verbs|*_mlx5) echo soft0:1 ;;
        tcp) echo lo ;;
        *) echo memory ;;
    esac
}

bench_verbs() {
    case $1 in *_verbs|*_mlx5) echo --verbs ;; esac
}

bench_kv() {
    awk -v k="$1" '{
        v = "n/a"
        for (i = 1; i <= NF; ++i) {
            if (index($i, k "=") == 1) { v = substr($i, length(k) + 2) }
        }
        print v
    }'
}

bench_median() {
    grep -E '^-?[0-9.]+(e[-+]?[0-9]+)?$' | sort -g |
        awk '{ v[NR] = $1 } END {
            if (NR == 0) print "n/a"
            else if (NR % 2) print v[(NR + 1) / 2]
            else print (v[NR / 2] + v[NR / 2 + 1]) / 2
        }'
}

bench_ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "n/a" || b == "n/a" || a == "" || b == "" || b + 0 == 0) print "n/a"
        else printf "%.2f", a / b
    }'
}

# --- cleanup -------------------------------------------------------------

bench_kill_jobs() {
    local p alive deadline=$(( SECONDS + 3 ))
    for p in ${BENCH_JOBS[@]+"${BENCH_JOBS[@]}"}; do
        kill -TERM -- "-$p" 2>/dev/null
    done
    # TERM lets them close their devices; whatever hangs gets KILL
    while [ $SECONDS -lt $deadline ]; do
        alive=0
        for p in ${BENCH_JOBS[@]+"${BENCH_JOBS[@]}"}; do
            kill -0 -- "-$p" 2>/dev/null && alive=1
        done
        [ $alive = 0 ] && break
        sleep 0.1
    done
    for p in ${BENCH_JOBS[@]+"${BENCH_JOBS[@]}"}; do
        kill -KILL -- "-$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    BENCH_JOBS=()
}

bench_finish() {
    local pid procs="" ours
    bench_kill_jobs
    # a benchmark process of ours that outlived its job (it left the
    # process group): its pid is logged, and it still runs a benchmark
    ours=$(cat "$BENCH_PID_LOG" 2>/dev/null | tr '\n' ' ')
    for pid in $ours; do
        if grep -qs -e rx_memory -e incast_rate -e progress_cost "/proc/$pid/cmdline"; then
            procs="$procs $pid"
            kill -KILL "$pid" 2>/dev/null
        fi
    done
    [ -n "${BENCH_KEEP:-}" ] && echo "$BENCH_NAME: kept $BENCH_WORK" >&2 || rm -rf "$BENCH_WORK"
    [ -z "$procs" ] || echo "$BENCH_NAME: processes left behind and killed:$procs" >&2
}
