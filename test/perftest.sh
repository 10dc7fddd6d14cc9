#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# ucx_perftest over rc_srq between two processes: the UCT tests (am_lat,
# am_bw with short/bcopy/zcopy, put_lat, put_bw, get) on soft0:1, and the
# UCP tests (tag_lat, tag_bw, ucp_put_bw, ucp_get) with UCX_TLS=rc_srq,self.
# Each must complete and print its result line; times are not judged here
# (bench/ compares them with UCX's own transports).
#
set -u
run=${SRQ_RUN:?}
iters=${SRQ_PERFTEST_ITERS:-2000}
pair="$(dirname "$0")/../contrib/perftest-pair"
export PERFTEST_RUN="$run"
fail=0

# one test: NAME, then ucx_perftest arguments
perf() {
    local name=$1 out rc; shift
    out=$("$pair" -n "$iters" -w 100 -f -v "$@" 2>&1)
    rc=$?
    # the result line (CSV): iterations,lat50,avg_lat,lat,avg_bw,bw,avg_mr,mr
    if [ $rc -eq 0 ] && grep -q "^$iters,[0-9.]*," <<<"$out"; then
        echo "PASS: $name: $(grep "^$iters," <<<"$out" | tail -1)"
    else
        echo "FAIL: $name (rc=$rc)"
        # the lines that say why (a fatal error's reason is printed well
        # before its backtrace), then the end
        echo "$out" | grep -E -i 'error|assert|fatal|failed|timeout' | head -20
        echo "$out" | tail -15
        fail=1
    fi
}

uct=(-x rc_srq -d soft0:1)
perf "am_lat short"   -t am_lat -D short  "${uct[@]}"
perf "am_lat bcopy"   -t am_lat -D bcopy  "${uct[@]}"
perf "am_lat zcopy"   -t am_lat -D zcopy  "${uct[@]}" -s 1024
perf "am_bw short"    -t am_bw  -D short  "${uct[@]}"
perf "am_bw bcopy"    -t am_bw  -D bcopy  "${uct[@]}" -s 4096
perf "am_bw zcopy"    -t am_bw  -D zcopy  "${uct[@]}" -s 4096
perf "put_lat short"  -t put_lat -D short "${uct[@]}"
perf "put_bw bcopy"   -t put_bw -D bcopy  "${uct[@]}" -s 4096
perf "put_bw zcopy"   -t put_bw -D zcopy  "${uct[@]}" -s 1048576
perf "get bcopy"      -t get    -D bcopy  "${uct[@]}" -s 4096
perf "get zcopy"      -t get    -D zcopy  "${uct[@]}" -s 65536

# srq-run prints the counters of every rc_srq interface when asked
out=$(SRQ_RUN_COUNTERS=1 "$pair" -n "$iters" -t am_lat "${uct[@]}" 2>&1)
line=$(grep "^srq-run:   rc_srq soft0:1 pid " <<<"$out" | tail -1)
msgs=$(sed -n 's/.* rx_msgs \([0-9]*\) .*/\1/p' <<<"$line")
if [ "${msgs:-0}" -ge "$iters" ] &&
   grep -qE "rx_queue_peak [1-9][0-9]* .*rx_limit_events [0-9]+ rx_rnr [0-9]+ rx_grows" <<<"$line" &&
   grep -q " path ${SRQ_TEST_PATH:-[a-z-]*}$" <<<"$line"; then
    echo "PASS: SRQ_RUN_COUNTERS: $line"
else
    echo "FAIL: SRQ_RUN_COUNTERS printed no counters for $iters messages"
    echo "$out" | tail -5
    fail=1
fi

export UCX_TLS=rc_srq,self
perf "ucp tag_lat"    -t tag_lat
perf "ucp tag_bw"     -t tag_bw -s 65536
perf "ucp tag_bw rndv" -t tag_bw -s 4194304
perf "ucp_put_bw"     -t ucp_put_bw -s 65536
perf "ucp_get"        -t ucp_get -s 65536
exit $fail
