#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Both formats of 'ucx_info -v' are understood by contrib/ucx-devel and
# srq-run: "# Version X.Y.Z" (UCX 1.13) and "# Library version: X.Y.Z"
# (1.14 on, followed by "# API headers version:", which is not the running
# library's). Recorded outputs (test/ucx_info/) are fed through a stand-in
# ucx_info first in PATH; every other option goes to the real one.
#
set -u
builddir=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
top=$(cd "$(dirname "$0")/.." && pwd)
rec="$top/test/ucx_info"
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-ucxinfo.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0

real=$(command -v ucx_info) || { echo "FAIL: no ucx_info in PATH"; exit 1; }
mkdir -p "$work/bin"
cat >"$work/bin/ucx_info" <<EOS
#!/bin/sh
if [ "\$1" = -v ]; then exec cat "\$UCX_INFO_RECORDED"; fi
exec "$real" "\$@"
EOS
chmod +x "$work/bin/ucx_info"
built_for=$(sed -n 's/^built_for="\(.*\)"$/\1/p' "$run")

# with_recorded FILE CMD... : run CMD with 'ucx_info -v' printing FILE
with_recorded() {
    local file=$1; shift
    UCX_INFO_RECORDED="$file" PATH="$work/bin:$PATH" UCX_SRQ_CACHE="$work/cache" "$@"
}

for case in v1.13.txt:1.13.1 v1.18.txt:1.18.0 v1.22.txt:1.22.0; do
    file=$rec/${case%%:*} want=${case##*:}

    out=$(with_recorded "$file" "$top/contrib/ucx-devel" --print-dir 2>&1)
    if [ "$out" = "$work/cache/ucx-$want" ]; then
        echo "PASS: ucx-devel reads UCX $want from ${case%%:*}"
    else
        echo "FAIL: ucx-devel on ${case%%:*}: '$out', expected $work/cache/ucx-$want"; fail=1
    fi

    out=$(with_recorded "$file" env SRQ_RUN_VERBOSE=1 "$run" true 2>&1)
    if [ "$want" = "$built_for" ]; then
        expect="UCX $want (ucx_info), plugin built for UCX $built_for"
    else
        expect="built for UCX $built_for but ucx_info reports UCX $want"
    fi
    if grep -qF "$expect" <<<"$out"; then
        echo "PASS: srq-run reads UCX $want from ${case%%:*}"
    else
        echo "FAIL: srq-run on ${case%%:*}: expected '$expect' in:"; echo "$out"; fail=1
    fi
done

# Output in neither format: ucx-devel stops with a clear error, srq-run
# still runs the command
out=$(with_recorded "$rec/garbage.txt" "$top/contrib/ucx-devel" --print-dir 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "cannot read the installed UCX version" <<<"$out"; then
    echo "PASS: ucx-devel refuses an unreadable 'ucx_info -v'"
else
    echo "FAIL: ucx-devel on an unreadable 'ucx_info -v' (rc=$rc): $out"; fail=1
fi
out=$(with_recorded "$rec/garbage.txt" env SRQ_RUN_VERBOSE=1 "$run" echo ran 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q "^ran$" <<<"$out" && grep -q "cannot tell the UCX version" <<<"$out"; then
    echo "PASS: srq-run runs the command when it cannot tell the UCX version"
else
    echo "FAIL: srq-run on an unreadable 'ucx_info -v' (rc=$rc): $out"; fail=1
fi
exit $fail
