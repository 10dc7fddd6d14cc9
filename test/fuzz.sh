#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The fuzzers, a short run each with a fixed seed (the same inputs every
# time), both built with AddressSanitizer and UBSan:
#
#   fuzz_frames     the soft device's wire frames (test/fuzz/fuzz_frames.c)
#   fuzz_handshake  rc_srq's handshake datagrams (test/fuzz/fuzz_handshake.c),
#                   under srq-run with the sanitized plugin
#
# Regression inputs in test/fuzz/corpus/<fuzzer>/ are replayed first. A
# sanitizer report, a failed check or a crash fails the run; its output
# ends the FAIL line. Longer runs, other seeds, libFuzzer: contrib/fuzz.
#
# Environment: SRQ_FUZZ_RUNS (inputs per fuzzer), SRQ_FUZZ_SEED (default 1).
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
build=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
. "$src/result.sh"
fail=0
seed=${SRQ_FUZZ_SEED:-1}
# a sanitizer report ends the run (UBSan: -fno-sanitize-recover); both
# fuzzers free everything at the end, so LeakSanitizer reports leaks
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# fuzz NAME RUNS CMD...: run CMD with the corpus and the seed
fuzz() {
    local name=$1 runs=$2 out rc; shift 2
    local corpus=()
    [ -d "$src/fuzz/corpus/$name" ] && corpus=("$src/fuzz/corpus/$name"/*)
    out=$(timeout -k 10 600 "$@" -seed "$seed" -runs "${SRQ_FUZZ_RUNS:-$runs}" \
          "${corpus[@]}" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q 'no failure' <<<"$out"; then
        result "$name" 1 "$(grep 'no failure' <<<"$out" | sed "s/^$name: //");" \
               "$(tail -1 <<<"$out" | sed "s/^$name: //");" \
               "${#corpus[@]} regression inputs replayed"
    else
        result "$name" 0 "exit status $rc: $out"
    fi
}

fuzz fuzz_frames 100000 "$build/test/fuzz/fuzz_frames"
SRQ_RUN_PLUGIN="$build/test/fuzz/plugin/.libs/libuct_srq.so" \
    fuzz fuzz_handshake 10000 "$run" "$build/test/fuzz/fuzz_handshake"
exit $fail
