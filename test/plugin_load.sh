#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# How the plugin is loaded. srq-run asks UCX whether it scans
# UCX_PLUGIN_PATH for plugins ('ucx_info -c' lists UCX_PLUGIN_PATH, UCX
# 1.22+) and picks UCX_PLUGIN_PATH there, LD_PRELOAD elsewhere. The running
# UCX must then behave as the probe says:
#  - scanning: the plugin is found in a UCX_PLUGIN_PATH directory as
#    libuct_srq.so.0 (not as libuct_srq.so), and preloaded AND found by the
#    scan as a second file it registers once;
#  - not scanning: a UCX_PLUGIN_PATH directory loads nothing, LD_PRELOAD
#    does.
#
set -u
builddir=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
plugin=${SRQ_RUN_PLUGIN:?}
list="$builddir/test/tools/uct_list"
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-load.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0

srq_lines() { grep -c '^srq ' <<<"$1"; }

# 1. srq-run follows the probe: the real ucx_info, and a stand-in whose
#    'ucx_info -c' adds UCX_PLUGIN_PATH (everything else from the real one)
real=$(command -v ucx_info)
scans=0
"$real" -c 2>/dev/null | grep -q '^UCX_PLUGIN_PATH=' && scans=1
mkdir -p "$work/bin"
cat >"$work/bin/ucx_info" <<EOS
#!/bin/sh
if [ "\$1" = -c ]; then "$real" -c; echo UCX_PLUGIN_PATH=; exit 0; fi
exec "$real" "\$@"
EOS
chmod +x "$work/bin/ucx_info"
dir=$(dirname "$plugin")
for fake in 0 1; do
    if [ $fake = 1 ]; then p="$work/bin:$PATH"; s=1; else p=$PATH; s=$scans; fi
    out=$(PATH="$p" SRQ_RUN_VERBOSE=1 "$run" true 2>&1)
    if [ $s = 1 ]; then want="UCX_PLUGIN_PATH=$dir"; else want="LD_PRELOAD=$plugin"; fi
    if grep -qxF "srq-run: $want" <<<"$out"; then
        echo "PASS: srq-run, $([ $s = 1 ] || echo 'not ')scanning UCX$([ $fake = 1 ] && echo ' (stand-in ucx_info)'): $want"
    else
        echo "FAIL: srq-run, scanning=$s: expected '$want' in:"; echo "$out"; fail=1
    fi
done
out=$(PATH="$work/bin:$PATH" SRQ_RUN_LOAD=preload SRQ_RUN_VERBOSE=1 "$run" true 2>&1)
if grep -qxF "srq-run: LD_PRELOAD=$plugin" <<<"$out"; then
    echo "PASS: SRQ_RUN_LOAD=preload preloads on a scanning UCX"
else
    echo "FAIL: SRQ_RUN_LOAD=preload: $out"; fail=1
fi
out=$(PATH="$work/bin:$PATH" SRQ_RUN_LOAD=bogus "$run" true 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q "must be auto, preload or path" <<<"$out"; then
    echo "PASS: SRQ_RUN_LOAD=bogus refused"
else
    echo "FAIL: SRQ_RUN_LOAD=bogus (rc=$rc): $out"; fail=1
fi

# 2. the running UCX behaves as the probe says
mkdir -p "$work/scan" "$work/wrong" "$work/copy"
ln -s "$(readlink -f "$plugin")" "$work/scan/libuct_srq.so.0"
ln -s "$(readlink -f "$plugin")" "$work/wrong/libuct_srq.so"
cp "$(readlink -f "$plugin")" "$work/copy/libuct_srq.so.0"
preloaded=$(LD_PRELOAD="$plugin" "$list" 2>&1)
if [ "$(srq_lines "$preloaded")" -lt 1 ]; then
    echo "FAIL: preloaded, srq is not listed"; echo "$preloaded"; fail=1
else
    echo "PASS: LD_PRELOAD registers srq ($(srq_lines "$preloaded") transport line(s))"
fi
scanned=$(env -u LD_PRELOAD UCX_PLUGIN_PATH="$work/scan" "$list" 2>&1)
wrong=$(env -u LD_PRELOAD UCX_PLUGIN_PATH="$work/wrong" "$list" 2>&1)
both=$(LD_PRELOAD="$plugin" UCX_PLUGIN_PATH="$work/copy" "$list" 2>&1)
if [ $scans = 1 ]; then
    if [ "$scanned" = "$preloaded" ]; then
        echo "PASS: found by the scan as libuct_srq.so.0: the same components as preloaded"
    else
        echo "FAIL: UCX_PLUGIN_PATH with libuct_srq.so.0:"; echo "$scanned"; fail=1
    fi
    if [ "$(srq_lines "$wrong")" = 0 ]; then
        echo "PASS: the scan skips a file named libuct_srq.so"
    else
        echo "FAIL: the scan loaded libuct_srq.so"; fail=1
    fi
    if [ "$both" = "$preloaded" ]; then
        echo "PASS: preloaded and scanned (a second file): registered once"
    else
        echo "FAIL: preloaded and scanned:"; diff <(echo "$preloaded") <(echo "$both"); fail=1
    fi
else
    if [ "$(srq_lines "$scanned")" = 0 ] && [ "$both" = "$preloaded" ]; then
        echo "PASS: this UCX does not scan: UCX_PLUGIN_PATH loads nothing, LD_PRELOAD works"
    else
        echo "FAIL: the probe says this UCX does not scan, but UCX_PLUGIN_PATH loaded srq"
        echo "$scanned"; fail=1
    fi
fi
# UCP's wireup over rc_srq alone: with tag-matching offload the lane
# carries tag_offload (UCP selects it for tagged messages), without it not
lanes_tm=$(UCX_TLS=rc_srq UCX_RC_SRQ_TM_ENABLE=y "$run" ucx_info -e -u t 2>&1 | grep 'lane\[')
lanes=$(UCX_TLS=rc_srq UCX_RC_SRQ_TM_ENABLE=n "$run" ucx_info -e -u t 2>&1 | grep 'lane\[')
if grep -q 'rc_srq/.* tag_offload' <<<"$lanes_tm" && grep -q 'rc_srq/' <<<"$lanes" &&
   ! grep -q tag_offload <<<"$lanes"; then
    echo "PASS: ucx_info -e: a tag_offload lane on rc_srq with UCX_RC_SRQ_TM_ENABLE=y, none without"
else
    echo "FAIL: ucx_info -e lanes: with tag matching:"; echo "$lanes_tm"
    echo "without:"; echo "$lanes"; fail=1
fi
exit $fail
