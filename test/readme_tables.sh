#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The README's tables of numbers are the committed report's: what
# bench/readme-tables writes from bench/REPORT.md, with no number copied
# by hand. And the check sees a difference: one number changed in a copy
# of the README must make it fail.
#
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
tool=$top/bench/readme-tables
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-readme-tables.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
fail=0

if out=$("$tool" --check "$top/bench/REPORT.md" "$top/README.md" 2>&1); then
    echo "PASS: README's tables are bench/REPORT.md's"
else
    echo "FAIL: README's tables differ from bench/REPORT.md (run bench/readme-tables)"
    echo "$out"
    fail=1
fi

# a copy whose first like-for-like row has one value changed
awk '/readme-tables: like-for-like begin/ { inside = 1 }
     inside && /^\| UCT am_lat/ && !done { sub(/\| [0-9.]+ \|$/, "| 9.99 |"); done = 1 }
     { print }' "$top/README.md" >"$work/README.md"
if cmp -s "$top/README.md" "$work/README.md"; then
    echo "FAIL: could not alter a copy of the README (no am_lat row?)"
    fail=1
elif "$tool" --check "$top/bench/REPORT.md" "$work/README.md" >/dev/null 2>&1; then
    echo "FAIL: a README with a changed ratio passed the check"
    fail=1
else
    echo "PASS: a README with a changed ratio fails the check"
fi
exit $fail
