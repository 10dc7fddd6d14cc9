#!/bin/bash
#
# rdma-core's own Python test suite (pyverbs; shipped with python3-pyverbs
# in /usr/share/doc/rdma-core/tests) against soft0 through libibverbs
# (srq-run --verbs): every module that is not about one vendor's device
# (device, PD, MR, CQ, CQ events, QP, extended QP/CQ, atomics, ODP,
# parent domain, ...). A module passes when the suite ran and reported no
# failure and no error; skips are the suite's own decision, from what the
# device reports as unsupported. One line per module with its counts.
#
set -u
run=${SRQ_RUN:?}
python=${SRQ_PYVERBS_PYTHON:-/usr/bin/python3}
src=/usr/share/doc/rdma-core/tests
limit=${SRQ_PYVERBS_TIMEOUT:-300}
fail=0

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
    case "$m" in
        *mlx5*|*efa*|*cuda*) continue ;;   # one vendor's device
    esac
    out=$("$run" --verbs timeout "$limit" "$python" tests/run_tests.py \
              --dev soft0 -v "tests.$m" 2>&1)
    rc=$?
    ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' <<<"$out" | tail -1)
    summary=$(grep -E '^(OK|FAILED)( \(|$)' <<<"$out" | tail -1)
    skipped=$(sed -n 's/.*skipped=\([0-9]*\).*/\1/p' <<<"$summary")
    failures=$(sed -n 's/.*failures=\([0-9]*\).*/\1/p' <<<"$summary")
    errors=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<<"$summary")
    skipped=${skipped:-0}; failures=${failures:-0}; errors=${errors:-0}
    if [ $rc -eq 0 ] && [ -n "$ran" ] && [[ "$summary" == OK* ]]; then
        echo "PASS: pyverbs $m: $((ran - skipped)) passed, 0 failed, $skipped skipped"
    else
        echo "FAIL: pyverbs $m (rc=$rc): ${ran:-?} ran, $failures failed, $errors errors, $skipped skipped"
        grep -E '^(ERROR|FAIL):' <<<"$out" | head -20
        tail -15 <<<"$out"
        fail=1
    fi
done
exit $fail
