#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The verbs tests that run threads, under ThreadSanitizer: a copy of the
# verbs layer and of those tests built with -fsanitize=thread
# (test/tsan/srq_verbs_tsan_gtest, test/Makefile.inc). Each thread posts
# and polls its own QPs and CQs on shared devices, several threads poll
# one CQ, a thread holds the device while another polls, the progress
# thread runs beside the program: any race ThreadSanitizer reports fails.
# Not the test that forks (lock_waiter_gives_its_cpu_to_the_holder:
# ThreadSanitizer does not run a child forked from threads).
#
#   tsan_tests    the tests pass
#   tsan_clean    no ThreadSanitizer report
#
# Skipped (77) in a build that has no TSan copy (--enable-asan: one
# sanitizer runtime per process).
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
build=${SRQ_TEST_BUILDDIR:?}
. "$src/result.sh"
bin=$build/test/tsan/srq_verbs_tsan_gtest
[ -x "$bin" ] || { echo "SKIP: no ThreadSanitizer build of the verbs tests ($bin)"; exit 77; }
fail=0
log=$(mktemp "${TMPDIR:-/tmp}/srq-tsan.XXXXXX")
trap 'rm -f "$log"' EXIT

# exitcode: what a run with a report ends with (the tests' own failures
# end with 1); history_size: enough of a thread's past to show both sides
TSAN_OPTIONS="halt_on_error=0 exitcode=66 history_size=4 ${TSAN_OPTIONS:-}" \
    timeout -k 10 600 "$bin" --gtest_filter='-*lock_waiter_gives_its_cpu*' >"$log" 2>&1
rc=$?
passed=$(grep -c '^\[       OK \]' "$log")
if grep -q '^\[  PASSED  \]' "$log" && ! grep -q '^\[  FAILED  \]' "$log"; then
    result tsan_tests 1 "$passed tests passed"
else
    result tsan_tests 0 "exit status $rc: $(grep -E '^\[  FAILED  \]|Failure' "$log" | head -20)"
fi
reports=$(grep -c 'WARNING: ThreadSanitizer' "$log")
if [ "$reports" = 0 ] && [ $rc -ne 66 ]; then
    result tsan_clean 1 "no ThreadSanitizer report"
else
    result tsan_clean 0 "$reports reports, exit status $rc; the first:" \
        "$(grep -m1 -A30 'WARNING: ThreadSanitizer' "$log")"
fi
exit $fail
