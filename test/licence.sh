#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Every file of the project says under which licence it is: LICENSE holds
# the BSD 3-Clause text, every source, script, build file and document has
# an SPDX line in its first three lines, and the few that cannot carry one
# (JSON, images, UCX output samples, NEWS) are named in REUSE.toml. The
# files are git's when the source is a checkout, else those of the tarball
# less what autotools generated.
#
set -u
set -f # the REUSE.toml globs are matched, never expanded
top=$(cd "${srcdir:-$(dirname "$0")/..}" && pwd)
tag="SPDX-License-Identifier: BSD-3-Clause"
. "$(dirname "$0")/result.sh"
fail=0

result "LICENSE is the BSD 3-Clause text" \
    "$(head -1 "$top/LICENSE" 2>/dev/null | grep -cx 'BSD 3-Clause License')" \
    "$top/LICENSE"

cd "$top"
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
    list=$(git ls-files)
elif [ -f MANIFEST ]; then
    # a tarball (make dist's MANIFEST): less autotools' outputs and aux
    # files, which carry their own licences
    list=$(grep -v -e '^config/' -e '^configure$' -e '^aclocal\.m4$' \
                   -e '^srq_config\.h\.in$' -e '\(^\|/\)Makefile\.in$' MANIFEST)
else
    echo "FAIL: neither a git checkout nor a tarball with its MANIFEST: $top"
    exit 1
fi
# REUSE.toml's annotation paths (globs)
globs=$(sed -n 's/^path *= *\[\(.*\)\]/\1/p' REUSE.toml 2>/dev/null | tr ',' '\n' |
        sed 's/^ *"//; s/" *$//')
covered() {
    local g
    for g in $globs; do
        # shellcheck disable=SC2053
        [[ $1 == $g ]] && return 0
    done
    return 1
}
n=0 missing=""
for f in $list; do
    case "$f" in LICENSE|REUSE.toml) [ "$f" = LICENSE ] && continue ;; esac
    n=$((n + 1))
    head -3 "$f" | grep -qF "$tag" && continue
    covered "$f" && continue
    missing="$missing $f"
done
if [ -z "$missing" ]; then
    result "every file names its licence" 1 "$n files"
else
    result "every file names its licence" 0 \
        "no '$tag' in the first 3 lines, and not in REUSE.toml:$missing"
fi
# the globs must each match a file: a stale one would excuse nothing now
# and anything added under its name later
for g in $globs; do
    m=0
    for f in $list; do [[ $f == $g ]] && { m=1; break; }; done
    result "REUSE.toml's '$g' matches a file" "$m" "$g"
done
exit $fail
