# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the shell tests: result NAME OK DETAIL... prints one
# "PASS: NAME: DETAIL" or "FAIL: NAME" line (with the last 40 lines of DETAIL) and,
# on failure, sets fail=1 for the caller's exit status.
result() {
    local name=$1 ok=$2; shift 2
    if [ "$ok" = 1 ]; then
        echo "PASS: $name: $*"
    else
        echo "FAIL: $name"
        echo "$*" | tail -40
        fail=1
    fi
}
