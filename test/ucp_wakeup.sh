#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# UCX's own example ucp_hello_world (libucx-dev ships its source) over
# rc_srq, in the modes that sleep on UCX's wakeup API: -w (ucp_worker_wait)
# and -f (the worker's event fd, ucp_worker_arm and poll), on the built-in
# soft0 and through libibverbs (srq-run --verbs); -b (busy polling) beside
# them as the control. Both processes must finish and the client must
# print the server's message; a sleeper nobody wakes is ended by the bound
# and fails its run. SRQ_WAKEUP_RUNS runs per mode and path (default 3).
#
set -u
run=${SRQ_RUN:?}
runs=${SRQ_WAKEUP_RUNS:-3}
limit=${SRQ_WAKEUP_TIMEOUT:-30}
src=/usr/share/doc/libucx-dev/examples/ucp_hello_world.c
fail=0
server=""
rc=0 src_rc=0 # the last run's client and server status
tmp=$(mktemp -d)

cleanup() {
    if [ -n "$server" ]; then
        kill -9 "$server" 2>/dev/null
        wait "$server" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# shellcheck source=result.sh
. "$(dirname "$0")/result.sh"

# libucx-dev is installed by contrib/install-deps: its absence is a failure
if [ ! -f "$src" ] || ! ${CC:-cc} -O2 -o "$tmp/hello" "$src" -lucp -lucs \
        >"$tmp/cc.out" 2>&1; then
    result "ucp_hello_world builds from $src" 0 "$(cat "$tmp/cc.out" 2>/dev/null)"
    exit 1
fi

# One run: server and client of mode $1 over $2 ("" or --verbs). The
# client retries while the server is not listening yet; a port another
# program holds (the server cannot listen) is no failure of ours: another
# port is tried
hello() {
    local mode=$1 verbs=$2 port attempt tries
    for tries in 1 2 3; do
        port=$(( 20000 + ($$ * 13 + RANDOM) % 30000 ))
        UCX_TLS=rc_srq,self "$run" $verbs timeout "$limit" "$tmp/hello" \
            "-$mode" -p "$port" >"$tmp/server.out" 2>&1 &
        server=$!
        for attempt in $(seq 1 30); do
            UCX_TLS=rc_srq,self "$run" $verbs timeout "$limit" "$tmp/hello" \
                "-$mode" -p "$port" -n 127.0.0.1 >"$tmp/client.out" 2>&1
            rc=$?
            grep -qi "failed to open client socket\|failed to client_connect" \
                "$tmp/client.out" || break
            kill -0 "$server" 2>/dev/null || break
            sleep 0.2
        done
        wait "$server"
        src_rc=$?
        server=""
        grep -qi "failed to open server socket" "$tmp/server.out" || break
    done
    [ $rc -eq 0 ] && [ $src_rc -eq 0 ] &&
        grep -q "UCP TEST SUCCESS" "$tmp/client.out"
}

for verbs in "" --verbs; do
    path=${verbs:+libibverbs}
    path=${path:-built-in}
    for mode in w f b; do
        ok=0 hung=0 failed=""
        for i in $(seq 1 "$runs"); do
            if hello "$mode" "$verbs"; then
                ok=$((ok + 1))
            else
                if [ $rc -eq 124 ] || [ $src_rc -eq 124 ]; then
                    hung=$((hung + 1))
                fi
                failed="client rc $rc, server rc $src_rc
--- client:
$(tail -15 "$tmp/client.out")
--- server:
$(tail -15 "$tmp/server.out")"
            fi
        done
        result "ucp_hello_world -$mode over rc_srq ($path)" \
            "$([ $ok -eq "$runs" ] && echo 1)" \
            "$ok of $runs runs completed, $hung hung past ${limit}s${failed:+
$failed}"
    done
done
exit $fail
