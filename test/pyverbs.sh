#!/bin/bash
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
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-pyverbs.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cp -r "$src" "$work/tests"
gunzip -f "$work"/tests/*.gz

cd "$work" || exit 1
for f in tests/test_*.py; do
    m=$(basename "$f" .py)
    out=$("$run" --verbs timeout "$limit" "$python" tests/run_tests.py \
              --dev soft0 -v "tests.$m" 2>&1)
    rc=$?
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
