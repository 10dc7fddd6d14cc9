#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# python/srq_contracts (test/contracts/test_srq_contracts.py): every listed
# verb has a contract, every contract is valid against contracts/schema.json
# (and the validator refuses a broken one), a trace line becomes a call of
# the verb's class and C code, a program from trace lines compiles. One
# result line per test.
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
. "$src/result.sh"
fail=0
out=$("${PYTHON3:-python3}" "$src/contracts/test_srq_contracts.py" 2>&1)
rc=$?
# unittest's own "FAIL: test_x" lines are details here, not results
details=$(sed 's/^/  /' <<<"$out")
n=0
while read -r name status; do
    n=$((n + 1))
    if [ "$status" = ok ]; then
        result "contracts_$name" 1 ok
    else
        result "contracts_$name" 0 "$status: $details"
    fi
done < <(sed -n 's/^\(test_[a-z_]*\) (.*) \.\.\. \(.*\)$/\1 \2/p' <<<"$out")
if [ $rc -ne 0 ] || [ $n -eq 0 ]; then
    result contracts_run 0 "exit status $rc, $n tests: $details"
fi
exit $fail
