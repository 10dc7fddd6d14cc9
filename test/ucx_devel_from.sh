#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# contrib/ucx-devel --from DIR|TARBALL: a site that built UCX itself
# supplies its source. A copy of the cached source of the installed UCX
# must be configured, checked (version, config.h against 'ucx_info -b') and
# cached in a private cache; a tarball of another version and a missing
# path must be refused with a clear error, before any configure run.
#
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
devel="$top/contrib/ucx-devel"
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-devel-from.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0

cached=$("$devel" --print-dir)
if [ ! -f "$cached/.ucx-srq-ready" ]; then
    echo "SKIP: no cached UCX source at $cached (run contrib/ucx-devel)"
    exit 77
fi
version=$(basename "$cached"); version=${version#ucx-}
cp -a "$cached" "$work/src"
rm -f "$work/src/.ucx-srq-ready"

# 1. a source tree of the installed version is prepared into the cache
out=$(UCX_SRQ_CACHE="$work/cache" "$devel" --from "$work/src" 2>"$work/err"); rc=$?
dest="$work/cache/ucx-$version"
if [ $rc -eq 0 ] && [ "$out" = "$dest" ] && [ -f "$dest/.ucx-srq-ready" ] &&
   [ -r "$dest/config.h" ] && [ -r "$dest/src/uct/base/uct_iface.h" ] &&
   ! grep -q "error" "$work/err"; then
    echo "PASS: --from DIR prepared UCX $version in $dest"
else
    echo "FAIL: --from DIR (rc=$rc, out='$out')"; cat "$work/err"; fail=1
fi
[ -d "$work/src/src/uct" ] || { echo "FAIL: --from DIR changed or removed the given tree"; fail=1; }

# 2. once prepared, a second call answers from the cache at once
out=$(UCX_SRQ_CACHE="$work/cache" timeout 20 "$devel" --from "$work/src" 2>/dev/null); rc=$?
if [ $rc -eq 0 ] && [ "$out" = "$dest" ]; then
    echo "PASS: a prepared cache is reused"
else
    echo "FAIL: second --from call (rc=$rc, out='$out')"; fail=1
fi

# 3. a tarball of another version: refused before configure runs
mkdir -p "$work/bin"
real=$(command -v ucx_info)
cat >"$work/bin/ucx_info" <<EOS
#!/bin/sh
if [ "\$1" = -v ]; then echo "# Library version: 1.22.0"; echo "# Configured with: --enable-mt"; exit 0; fi
exec "$real" "\$@"
EOS
chmod +x "$work/bin/ucx_info"
tar -C "$work" -czf "$work/ucx-src.tar.gz" src
start=$SECONDS
out=$(PATH="$work/bin:$PATH" UCX_SRQ_CACHE="$work/cache2" "$devel" --from "$work/ucx-src.tar.gz" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "is UCX $version, but the installed UCX is 1.22.0" <<<"$out" &&
   [ ! -e "$work/cache2/ucx-1.22.0" ] && [ $((SECONDS - start)) -lt 60 ]; then
    echo "PASS: --from TARBALL of UCX $version refused for UCX 1.22.0: $(grep -o 'error:.*' <<<"$out")"
else
    echo "FAIL: --from TARBALL of another version (rc=$rc): $out"; fail=1
fi

# 4. a path that does not exist
out=$(UCX_SRQ_CACHE="$work/cache3" "$devel" --from "$work/nothing" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "no such directory or file" <<<"$out"; then
    echo "PASS: --from a missing path is refused"
else
    echo "FAIL: --from a missing path (rc=$rc): $out"; fail=1
fi
exit $fail
