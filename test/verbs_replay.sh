#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A trace replays: a run of srq-verbs-fuzz through the project API is
# traced (SRQ_VERBS_TRACE; the sanitized build of test/verbs_fuzz.sh, so
# that the tracer runs under ASan/UBSan), srq-verbs-replay turns the trace
# into a C program, the program is built against libibverbs and run on
# soft0 (srq-run --verbs), traced too. Checks:
#
#   replay_build  the generated program compiles (-Wall -Werror)
#   replay_run    it exits 0 and each call returned what the trace recorded
#                 ("0 mismatches")
#   replay_trace  its own trace is the first one: the same calls with the
#                 same arguments and results, in the same order, and each
#                 CQ gave the same completions, in the same order for each
#                 QP (QPs sharing a CQ interleave as they will). Not
#                 compared: how often a poll found nothing (timing), the
#                 SRQ limit a query reports (timing: see normalize), and
#                 ibv_get/ack_async_event, which libibverbs serves itself
#                 from the async fd (the provider's trace never sees them),
#                 and addresses in no traced buffer (the process's own).
#
# Seed 1: its run has a refused ibv_rereg_mr on a quiet machine (seed 3's
# did only under load, where polls that find nothing change the draws),
# and libibverbs reports that refusal as a negative IBV_REREG_MR_ERR_*
# with errno, not as the errno the device returned.
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
build=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
. "$src/result.sh"
fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/srq-replay.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# the fuzzer built with ASan/UBSan (test/verbs_fuzz.sh), so that the tracer
# runs sanitized too
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
SRQ_VERBS_TRACE=$tmp/run.trace timeout -k 10 300 \
    "$build/test/fuzz/srq-verbs-fuzz" --seed 1 --iterations 3 >"$tmp/fuzz.out" 2>&1 ||
    { result replay_build 0 "the traced run failed: $(cat "$tmp/fuzz.out")"; exit 1; }

ok=0
if SRQ_CONTRACTS_PYTHON=$src/../python SRQ_CONTRACTS_DIR=$src/../contracts \
       "$build/tools/srq-verbs-replay" "$tmp/run.trace" -o "$tmp/prog.c" >"$tmp/build.out" 2>&1 &&
   ${CC:-cc} -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" -libverbs >>"$tmp/build.out" 2>&1; then
    ok=1
fi
if [ $ok = 1 ]; then
    result replay_build 1 "$(grep -vc '^#' "$tmp/run.trace") trace lines," \
        "$(wc -l <"$tmp/prog.c") lines of C"
else
    result replay_build 0 "$(cat "$tmp/build.out")"
fi
[ $ok = 1 ] || exit 1

# soft0 served by the sanitized libsrq_ibv.so (srq-run puts the ASan
# runtime first for the sanitized plugin)
out=$(SRQ_RUN_PLUGIN="$build/test/fuzz/plugin/.libs/libuct_srq.so" \
      SRQ_RUN_VERBS_LIB="$build/test/fuzz/.libs/libsrq_ibv.so" \
      SRQ_VERBS_TRACE=$tmp/replay.trace timeout -k 10 300 "$run" --verbs "$tmp/prog" 2>&1)
rc=$?
ok=0
[ $rc -eq 0 ] && grep -q '^replay: [0-9]* calls, 0 mismatches$' <<<"$out" && ok=1
if [ $ok = 1 ]; then
    result replay_run 1 "$(grep '^replay:' <<<"$out")"
else
    result replay_run 0 "exit status $rc: $out"
fi

# An event the trace read and the replay does not get: the replay says so
# and goes on (a get on an empty fd would block for ever), an SRQ's limit
# event left out by timing is a note, not a mismatch (see
# replay_get_async), and no ack is made for an event never read
cat >"$tmp/events.trace" <<'EOT'
ibv_open_device device=soft0 ret=ctx0
ibv_alloc_pd context=ctx0 ret=pd0
ibv_create_srq pd=pd0 srq_init_attr.srq_context=0 srq_init_attr.attr.max_wr=4 srq_init_attr.attr.max_sge=1 srq_init_attr.attr.srq_limit=0 ret=srq0
ibv_get_async_event context=ctx0 ret=0 out.event.element.srq=srq0 out.event.event_type=IBV_EVENT_SRQ_LIMIT_REACHED
ibv_ack_async_event event.element.srq=srq0 event.event_type=IBV_EVENT_SRQ_LIMIT_REACHED
ibv_get_async_event context=ctx0 ret=0 out.event.element.srq=srq0 out.event.event_type=IBV_EVENT_SRQ_ERR
ibv_ack_async_event event.element.srq=srq0 event.event_type=IBV_EVENT_SRQ_ERR
ibv_destroy_srq srq=srq0 ret=0
ibv_dealloc_pd pd=pd0 ret=0
EOT
ok=0
if SRQ_CONTRACTS_PYTHON=$src/../python SRQ_CONTRACTS_DIR=$src/../contracts \
       "$build/tools/srq-verbs-replay" "$tmp/events.trace" -o "$tmp/events.c" >"$tmp/ev.out" 2>&1 &&
   ${CC:-cc} -Wall -Werror -o "$tmp/events" "$tmp/events.c" -libverbs >>"$tmp/ev.out" 2>&1; then
    out=$(timeout -k 5 60 "$run" --verbs "$tmp/events" 2>&1)
    rc=$?
    [ $rc -eq 1 ] &&
        grep -q '^note line 4: no SRQ limit event' <<<"$out" &&
        grep -q '^MISMATCH line 6: no event within' <<<"$out" &&
        grep -q '^replay: [0-9]* calls, 1 mismatches$' <<<"$out" && ok=1
else
    out=$(cat "$tmp/ev.out"); rc=-1
fi
if [ $ok = 1 ]; then
    result replay_events 1 "an event that never comes: one mismatch, no wait for ever;" \
        "a missing SRQ limit event: a note"
else
    result replay_events 0 "exit status $rc (want 1): $out"
fi

# the calls and each CQ's completions, one per line
normalize() { "${PYTHON3:-python3}" "$src/trace_norm.py" "$@"; }
normalize "$tmp/run.trace" >"$tmp/run.norm"
normalize "$tmp/replay.trace" >"$tmp/replay.norm" 2>&1
ok=0
if [ -s "$tmp/run.norm" ] && diff -u "$tmp/run.norm" "$tmp/replay.norm" >"$tmp/diff"; then
    ok=1
fi
if [ $ok = 1 ]; then
    result replay_trace 1 "$(grep -vc '^cq[0-9]*: ' "$tmp/run.norm") calls and" \
        "$(grep -c '^cq[0-9]*: ' "$tmp/run.norm") completions as traced"
else
    result replay_trace 0 "$(head -40 "$tmp/diff")"
fi
exit $fail
