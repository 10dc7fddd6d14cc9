#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The installed plugin exports its documented API (src/uct/ucx_srq.h) and
# nothing else - no internal function, no test hook - and still registers
# its component when UCX loads it.
#
set -u
plugin=${SRQ_TEST_BUILDDIR:?}/.libs/libuct_srq.so
documented="uct_srq_iface_query_counters"
[ -f "$plugin" ] || { echo "FAIL: no plugin at $plugin"; exit 1; }

exported=$(nm -D --defined-only "$plugin" | awk 'NF == 3 { print $3 }' | sort)
extra=$(comm -23 <(echo "$exported") <(echo "$documented" | tr ' ' '\n' | sort))
missing=$(comm -13 <(echo "$exported") <(echo "$documented" | tr ' ' '\n' | sort))
fail=0
if [ -n "$extra" ]; then
    echo "FAIL: exported beyond the documented API ($(echo "$extra" | wc -l)):"
    echo "$extra" | head -20
    fail=1
fi
if [ -n "$missing" ]; then
    echo "FAIL: documented but not exported: $missing"
    fail=1
fi
out=$("${SRQ_RUN:?}" ucx_info -d 2>&1)
if ! grep -q "Transport: rc_srq" <<<"$out"; then
    echo "FAIL: the plugin did not register rc_srq (ucx_info -d)"
    fail=1
fi
[ $fail = 0 ] && echo "PASS: the plugin exports only $documented and registers rc_srq"
exit $fail
