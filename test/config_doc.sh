#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Every configuration variable of the plugin (UCX_SRQ_*, UCX_RC_SRQ_*) is
# listed by 'ucx_info -c -f' with help text above it, and the reference,
# doc/configuration.md, has a row for each of them and for no other; the
# tuning knobs (help text starting "Tuning knob") are its "Tuning knobs"
# table.
#
set -u
doc=$(cd "$(dirname "$0")/.." && pwd)/doc/configuration.md
out=$("${SRQ_RUN:?}" ucx_info -c -f 2>&1) || { echo "FAIL: ucx_info -c -f failed"; echo "$out"; exit 1; }
fail=0 count=0
# Collect, for each variable line, whether its comment block had any text
# besides the syntax/inherits lines.
while IFS= read -r line; do
    count=$((count + 1))
    case "$line" in
        *"<no help>"*) echo "FAIL: ${line#*|} has no help text"; fail=1 ;;
    esac
done < <(awk '
    /^#/ {
        t = $0; sub(/^#[ ]?/, "", t)
        if (t != "" && t !~ /^(syntax|inherits|default):/) { doc = 1 }
        next
    }
    /^UCX_(SRQ|RC_SRQ)_[A-Z0-9_]*=/ {
        print (doc ? "ok" : "<no help>") "|" $0
    }
    { doc = 0 }' <<<"$out")
if [ $count -eq 0 ]; then
    echo "FAIL: no UCX_SRQ_*/UCX_RC_SRQ_* variable listed (plugin not loaded?)"
    exit 1
fi
# The reference names a variable in the first cell of a table row.
listed=$(grep -oE '^UCX_(SRQ|RC_SRQ)_[A-Z0-9_]*' <<<"$out" | sort -u)
documented=$(grep -oE '^\| `UCX_(SRQ|RC_SRQ)_[A-Z0-9_]*`' "$doc" |
             tr -d '|` ' | sort -u)
[ -n "$documented" ] || { echo "FAIL: no variable found in $doc"; exit 1; }
while IFS= read -r v; do
    [ -n "$v" ] && { echo "FAIL: $v is not in $doc"; fail=1; }
done < <(comm -23 <(echo "$listed") <(echo "$documented"))
while IFS= read -r v; do
    [ -n "$v" ] && { echo "FAIL: $doc has $v, which ucx_info does not list"; fail=1; }
done < <(comm -13 <(echo "$listed") <(echo "$documented"))
# Tuning knobs: the variables whose help starts with "Tuning knob" are
# the rows of the reference's "Tuning knobs" table, and no other
tuning_listed=$(awk '
    /^#/ {
        t = $0; sub(/^#[ ]?/, "", t)
        if (first == "" && t != "" && t !~ /^(syntax|inherits|default):/) { first = t }
        next
    }
    /^UCX_(SRQ|RC_SRQ)_[A-Z0-9_]*=/ {
        if (first ~ /^Tuning knob/) { v = $0; sub(/=.*/, "", v); print v }
    }
    { first = "" }' <<<"$out" | sort -u)
tuning_documented=$(sed -n '/^## Tuning knobs/,/^## /p' "$doc" |
                    grep -oE '^\| `UCX_(SRQ|RC_SRQ)_[A-Z0-9_]*`' | tr -d '|` ' | sort -u)
if [ -z "$tuning_listed" ] || [ "$tuning_listed" != "$tuning_documented" ]; then
    echo "FAIL: tuning knobs by their help: $(echo $tuning_listed);" \
         "in the reference's table: $(echo $tuning_documented)"
    fail=1
fi
[ $fail = 0 ] && echo "PASS: all $count plugin variables have help and a row in doc/configuration.md, $(echo "$tuning_listed" | wc -l) of them tuning knobs"
exit $fail
