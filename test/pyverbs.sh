#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# rdma-core's own Python test suite (pyverbs; shipped with python3-pyverbs
# in /usr/share/doc/rdma-core/tests) against soft0 through libibverbs
# (srq-run --verbs): every module, each in its own process, the vendors'
# (mlx5, efa, cuda: they skip themselves on a device not theirs) included.
# A module passes when the suite ran and reported no failure and no error;
# skips are the suite's own decision, from what the device reports as
# unsupported. One line per module with its passed/failed/skipped/errors
# counts, then the sums.
#
set -u
run=${SRQ_RUN:?}
python=${SRQ_PYVERBS_PYTHON:-/usr/bin/python3}
src=/usr/share/doc/rdma-core/tests
limit=${SRQ_PYVERBS_TIMEOUT:-300}
fail=0
tot_pass=0 tot_fail=0 tot_skip=0 tot_err=0

if [ ! -d "$src" ] || ! "$python" -c 'import pyverbs' 2>/dev/null; then
    echo "FAIL: pyverbs: $src or $python's pyverbs module missing (install python3-pyverbs)"
    exit 1
fi
# The suite's huge-page tests (requires_huge_pages: 2 MiB pages reserved
# on the host) skip where none are. With SRQ_PYVERBS_HUGEPAGES=N, where we
# may (a writable count at 0: root, outside a read-only /sys), a module
# with such tests gets N for its run, given back after it, whatever
# happens. Not by default: the pool is the host's, and every process
# beside us under make -j (UCX's pools among them: UCX_RC_SRQ_ALLOC starts
# with huge) takes from it while it is there, so a run would no longer be
# the same run twice
hp_file=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
hp_want=${SRQ_PYVERBS_HUGEPAGES:-0}
hp_held=0
hp_reserve() {
    [ "$hp_want" -gt 0 ] && [ -w "$hp_file" ] &&
        [ "$(cat "$hp_file")" = 0 ] || return 0
    if (echo "$hp_want" >"$hp_file") 2>/dev/null; then
        hp_held=1
        echo "pyverbs $1: $(cat "$hp_file") huge pages of 2 MiB reserved for it"
    fi
}
hp_release() {
    [ $hp_held = 1 ] && echo 0 >"$hp_file"
    hp_held=0
}

work=$(mktemp -d "${TMPDIR:-/tmp}/srq-pyverbs.XXXXXX")
trap 'hp_release; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
cp -r "$src" "$work/tests"
gunzip -f "$work"/tests/*.gz

cd "$work" || exit 1
for f in tests/test_*.py; do
    m=$(basename "$f" .py)
    grep -q 'requires_huge_pages' "$f" && hp_reserve "$m"
    out=$("$run" --verbs timeout "$limit" "$python" tests/run_tests.py \
              --dev soft0 -v "tests.$m" 2>&1)
    rc=$?
    hp_release
    ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' <<<"$out" | tail -1)
    summary=$(grep -E '^(OK|FAILED)( \(|$)' <<<"$out" | tail -1)
    skipped=$(sed -n 's/.*skipped=\([0-9]*\).*/\1/p' <<<"$summary")
    failures=$(sed -n 's/.*failures=\([0-9]*\).*/\1/p' <<<"$summary")
    errors=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<<"$summary")
    skipped=${skipped:-0}; failures=${failures:-0}; errors=${errors:-0}
    passed=$(( ${ran:-0} - skipped - failures - errors ))
    tot_pass=$((tot_pass + passed)) tot_skip=$((tot_skip + skipped))
    tot_fail=$((tot_fail + failures)) tot_err=$((tot_err + errors))
    if [ $rc -eq 0 ] && [ -n "$ran" ] && [[ "$summary" == OK* ]]; then
        echo "PASS: pyverbs $m: $passed passed, 0 failed, $skipped skipped, 0 errors"
    else
        [ -n "$ran" ] || tot_err=$((tot_err + 1)) # no summary: counts as one
        echo "FAIL: pyverbs $m (rc=$rc): ${ran:-?} ran, $passed passed, $failures failed, $skipped skipped, $errors errors"
        grep -E '^(ERROR|FAIL):' <<<"$out" | head -20
        tail -15 <<<"$out"
        fail=1
    fi
done
echo "pyverbs: $tot_pass passed, $tot_fail failed, $tot_skip skipped, $tot_err errors"
exit $fail
