#!/bin/bash
#
# Every configuration variable of the plugin (UCX_SRQ_*, UCX_RC_SRQ_*) is
# listed by 'ucx_info -c -f' with help text above it.
#
set -u
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
[ $fail = 0 ] && echo "PASS: all $count plugin variables documented"
exit $fail
