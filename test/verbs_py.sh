#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# srq-verbs-py: the contracts as classes for the verbs.py of the Python
# RDMA verbs fuzzer rdma-fuzzing, tested without it: against the project's
# stand-in of that framework's base API (test/verbspy/fuzzing_api.py),
# every generated class is imported, built from a trace line, applied
# (tracker and contract table), and its generate_c() output is compiled
# (-Wall -Werror, <infiniband/verbs.h>) into one program that makes every
# call on soft0 through libibverbs (srq-run --verbs) and checks what the
# calls did: a chain of three SRQ WRs with a bad lkey in the second is
# posted whole and WR 2 completes IBV_WC_LOC_PROT_ERR, a chain with too many
# SGEs in the second gets EINVAL with *bad_wr at WR 1 and only WR 0 posted.
# One result line per check, then the counts.
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
build=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
. "$src/result.sh"
fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/srq-verbs-py.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export SRQ_CONTRACTS_PYTHON=$src/../python SRQ_CONTRACTS_DIR=$src/../contracts
tool=$build/tools/srq-verbs-py

checks() {
# the command: all verbs, one verb, an unknown verb
ok=0
"$tool" -o "$tmp/srq_verbs.py" >"$tmp/gen.out" 2>&1 && [ -s "$tmp/srq_verbs.py" ] && ok=1
result verbs_py_command "$ok" "$(wc -l <"$tmp/srq_verbs.py") lines $(cat "$tmp/gen.out")"
one=$("$tool" ibv_post_srq_recv 2>&1)
result verbs_py_one_verb "$([ "$(grep -c '(VerbCall):$' <<<"$one")" = 1 ] &&
                           grep -q '^class PostSRQRecv(VerbCall):$' <<<"$one" && echo 1)" \
    "$(grep '(VerbCall):$' <<<"$one")"
bad=$("$tool" ibv_post_nothing 2>&1)
brc=$?
result verbs_py_unknown_verb "$([ $brc -ne 0 ] && grep -q 'no contract for ibv_post_nothing' <<<"$bad" && echo 1)" \
    "$bad"

# import, from_trace, apply, generate_c, contract refusals (Python half)
"${PYTHON3:-python3}" "$src/verbspy/run_verbspy.py" "$tmp/srq_verbs.py" "$SRQ_CONTRACTS_DIR" "$tmp" \
    >"$tmp/py.out" 2>&1
prc=$?
grep -E '^(PASS|FAIL): ' "$tmp/py.out"
if [ $prc -ne 0 ]; then
    fail=1
    grep -vE '^(PASS|FAIL): ' "$tmp/py.out" | tail -20
fi
counts=$(sed -n 's/^verbs_py counts: //p' "$tmp/py.out")
blocks=$(sed -n 's/^verbs_py blocks: //p' "$tmp/py.out")

# compile the program
ok=0
[ -f "$tmp/prog.c" ] && ${CC:-cc} -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" -libverbs >"$tmp/cc.out" 2>&1 && ok=1
result verbs_py_compile "$ok" "${blocks:-0} generate_c blocks, $(wc -l <"$tmp/prog.c" 2>/dev/null) lines of C" \
    "$(cat "$tmp/cc.out" 2>/dev/null)"

# run it on soft0
made=0
if [ $ok = 1 ]; then
    out=$(timeout -k 10 120 "$run" --verbs "$tmp/prog" 2>&1)
    rc=$?
    grep -E '^(PASS|FAIL): ' <<<"$out"
    made=$(grep -c '^made: ' <<<"$out")
    summary=$(grep '^verbs_py program: ' <<<"$out")
    result verbs_py_program "$([ $rc -eq 0 ] && [ -n "$summary" ] && echo 1)" \
        "${summary#verbs_py program: }" "$([ $rc -ne 0 ] && echo "exit $rc: $(grep -vE "^(PASS|FAIL): " <<<"$out" | tail -30)")"
fi

echo "verbs_py: ${counts:-nothing}, ${blocks:-0} compiled, $made run"
}

checks >"$tmp/all" 2>&1
cat "$tmp/all"
echo "verbs_py: $(grep -c '^PASS: ' "$tmp/all") passed, $(grep -c '^FAIL: ' "$tmp/all") failed"
exit $fail
