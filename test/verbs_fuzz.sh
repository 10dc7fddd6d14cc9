#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# srq-verbs-fuzz (tools/fuzz) holds soft0 to the verb contracts
# (contracts/): a short run with a fixed seed (the same calls every time,
# but for how often a poll finds nothing), built with AddressSanitizer and
# UBSan (test/fuzz/srq-verbs-fuzz), twice:
#
#   api      through the project's verbs API (srq_verbs_open)
#   verbs    through libibverbs, soft0 being the preloaded provider
#            (srq-run --verbs, a sanitized test/fuzz/libsrq_ibv.so)
#
# Each must report 0 contract violations and no sanitizer error; its line
# gives iterations, calls, checks and violations. A long run on demand:
# srq-verbs-fuzz --long [--ibv] (README, "Verb contracts").
#
# Environment: SRQ_VERBS_FUZZ_ITERATIONS (default 150: past the 255 MR
# registrations that found the lkey 0x100 bug), SRQ_VERBS_FUZZ_SEED (1).
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
build=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
. "$src/result.sh"
fail=0
iters=${SRQ_VERBS_FUZZ_ITERATIONS:-150}
seed=${SRQ_VERBS_FUZZ_SEED:-1}
fuzz=$build/test/fuzz/srq-verbs-fuzz
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# check NAME HOW CMD...: CMD must exit 0 with 0 violations through HOW
check() {
    local name=$1 how=$2 out rc line; shift 2
    out=$(timeout -k 10 600 "$@" --seed "$seed" --iterations "$iters" 2>&1)
    rc=$?
    line=$(grep '^srq-verbs-fuzz: ' <<<"$out" | tail -1)
    if [ $rc -eq 0 ] && grep -q "^srq-verbs-fuzz: soft0 through $how, seed $seed: $iters iterations, .*, 0 violations$" <<<"$line" &&
       ! grep -q 'Sanitizer\|runtime error' <<<"$out"; then
        result "verbs_fuzz_$name" 1 "${line#srq-verbs-fuzz: }; $(grep '^contract coverage' <<<"$out")"
    else
        result "verbs_fuzz_$name" 0 "exit status $rc: $(grep -v '^  ' <<<"$out")"
    fi
}

check api "project API" "$fuzz"
# the sanitized plugin makes srq-run put the ASan runtime first
SRQ_RUN_PLUGIN="$build/test/fuzz/plugin/.libs/libuct_srq.so" \
SRQ_RUN_VERBS_LIB="$build/test/fuzz/.libs/libsrq_ibv.so" \
    check verbs libibverbs "$run" --verbs "$fuzz" --ibv
exit $fail
