#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# contrib/version-matrix without building anything: a leg whose source
# cannot be had is reported skipped with its reason and does not fail the
# run (CI must not fail because a download is unreachable); the deb-src
# lines it derives name Debian 13 and only the system's own Debian
# entries; a leg that fails counts as failed; bad arguments are refused.
# apt-get is a stand-in on PATH that fails as an unreachable mirror does
# and keeps a copy of the private apt configuration it was given. Every
# run has a private, empty cache.
#
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/test/result.sh"
matrix="$top/contrib/version-matrix"
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-version-matrix.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0

mkdir -p "$work/bin"
cat >"$work/bin/apt-get" <<EOS
#!/bin/sh
# keep the private sources, then fail as apt does without a network
for a in "\$@"; do
    case "\$a" in Dir::Etc::SourceParts=*) cp -r "\${a#*=}" "$work/sources" 2>/dev/null ;; esac
done
echo "E: Failed to fetch: Temporary failure resolving the mirror" >&2
exit 100
EOS
chmod +x "$work/bin/apt-get"
vm() { PATH="$work/bin:$PATH" UCX_SRQ_CACHE="$work/cache" timeout 120 "$matrix" "$@"; }

# 1. Open MPI 5 with no network and nothing cached: skipped, exit 0
out=$(vm --openmpi5 2>&1); rc=$?
ok=0
[ $rc -eq 0 ] && grep -q '^openmpi-5.0.7: skipped: ' <<<"$out" &&
    grep -q '^version-matrix: 0 passed, 0 failed, 1 legs skipped$' <<<"$out" && ok=1
result "an unreachable source skips the Open MPI 5 leg, exit 0" $ok "rc=$rc" "$out"

# 2. what it asked apt for: deb-src entries for trixie, derived from the
# system's Debian entries of its own release (none of -security/-updates)
if [ -d "$work/sources" ]; then
    derived=$(cat "$work/sources"/* 2>/dev/null)
    ok=0
    if grep -qE '^(deb-src |Types: deb-src)' <<<"$derived" &&
       ! grep -qE '^deb |^Types: deb$' <<<"$derived" &&
       ! grep -qiE 'bookworm|-security|-updates' <<<"$derived" &&
       grep -q 'trixie' <<<"$derived"; then
        ok=1
    fi
    result "the private apt sources are trixie deb-src entries only" $ok "$derived"
else
    # no Debian entry to derive from: the skip says so
    ok=0; grep -q "no Debian .* entry in the apt sources" <<<"$out" && ok=1
    result "without Debian apt entries the skip names the reason" $ok "$out"
fi
[ -e /etc/apt/sources.list.d/derived.sources ] && { echo "FAIL: a system apt source was written"; fail=1; }

# 3. --ucx-from a path that does not exist: skipped, exit 0
out=$(vm --ucx-from "$work/no-such.tar.gz" 2>&1); rc=$?
ok=0
[ $rc -eq 0 ] && grep -q "skipped: no such tarball or directory" <<<"$out" && ok=1
result "a missing --ucx-from source is skipped" $ok "rc=$rc" "$out"

# 4. --ucx-from a tree that is not UCX: the leg fails, and so does the run
mkdir -p "$work/notucx"; echo "AC_INIT([x], [1])" >"$work/notucx/configure.ac"
out=$(vm --ucx-from "$work/notucx" 2>&1); rc=$?
ok=0
[ $rc -eq 1 ] && grep -q "does not look like a UCX source tree" <<<"$out" &&
    grep -q '^version-matrix: 0 passed, 1 failed, 0 legs skipped$' <<<"$out" && ok=1
result "a source that is not UCX fails its leg and the run" $ok "rc=$rc" "$out"

# 5. bad arguments
out=$(vm --bogus 2>&1); rc=$?
ok=0; [ $rc -ne 0 ] && grep -q "unknown argument '--bogus'" <<<"$out" && ok=1
result "an unknown argument is refused" $ok "rc=$rc" "$out"
out=$(MATRIX_JOBS=0 vm --openmpi5 2>&1); rc=$?
ok=0; [ $rc -ne 0 ] && grep -q "MATRIX_JOBS must be a positive number" <<<"$out" && ok=1
result "MATRIX_JOBS=0 is refused" $ok "rc=$rc" "$out"

exit $fail
