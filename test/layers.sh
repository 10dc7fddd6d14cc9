#!/bin/bash
#
# Inside a layer, dependencies run one way: contrib/depgraph reads the
# built objects of src/uct and of src/verbs and finds no cycle among their
# files. (The soft device, src/verbs/soft, still has one, not checked here:
# its requester and completer resume each other; doc/architecture.md.)
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$src/.." && pwd)
. "$src/result.sh"
fail=0
for layer in src/uct src/verbs; do
    out=$("${PYTHON3:-python3}" "$top/contrib/depgraph" \
              --build "${SRQ_TEST_BUILDDIR:?}" "$layer" 2>&1)
    name="layers_${layer//\//_}_acyclic"
    if grep -q "files, .* dependencies" <<<"$out" &&
       grep -q "no cycles" <<<"$out" && ! grep -q "cycle of" <<<"$out"; then
        result "$name" 1 "$(head -1 <<<"$out")"
    else
        result "$name" 0 "$out"
    fi
done
exit $fail
