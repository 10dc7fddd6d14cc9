#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test/ucx_gtest_patch.sh, the change that puts rc_srq into the transport
# lists of UCX's gtest, on small trees made here: the preprocessor.h of the
# installed UCX's source (UCS_PP_MAX_ARGS 20 in 1.13) and a uct_test.h
# whose lists, nested as UCX nests them, hold one name fewer than that
# limit (rc_srq fits), as many as the limit (UCX 1.22.0 and master: the
# limit has to be raised), more, and more than the raised limit (a clear
# error). Each patched tree is compiled into a program that expands the
# lists with UCS_PP_FOREACH and UCS_PP_FOREACH_SEP, as the gtest does;
# every name, rc_srq once, must come out.
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/result.sh"
. "$here/ucx_gtest_patch.sh"
fail=0

builddir=${SRQ_TEST_BUILDDIR:-$(dirname "$here")/build}
ucx_src=${SRQ_UCX_SRC_DIR:-$(sed -n 's/^UCX_SRC_DIR = //p' "$builddir/Makefile" 2>/dev/null)}
pp=$ucx_src/src/ucs/sys/preprocessor.h
if [ ! -f "$pp" ]; then
    echo "FAIL: ucx-gtest lists: no UCX source tree with $pp; run contrib/ucx-devel"
    exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-gtest-lists.XXXXXX")
trap 'rm -rf "$work"' EXIT
max=$(pp_max "$ucx_src")

# tree DIR N: a tree whose UCT_TEST_TLS holds N names (tl1..tl<N-3>, self,
# gpu1, gpu2), UCT_TEST_NO_SELF_TLS the first N-3
tree() {
    local d=$1 n=$2 i
    mkdir -p "$d/src/ucs/sys" "$d/test/gtest/uct"
    cp "$pp" "$d/src/ucs/sys/"
    {
        printf '#define UCT_TEST_IB_TLS \\\n    tl1,  \\\n    tl2\n\n'
        printf '#define UCT_TEST_MM_TLS tl3, tl4\n\n'
        printf '#define UCT_TEST_NO_SELF_TLS \\\n    UCT_TEST_IB_TLS, \\\n    UCT_TEST_MM_TLS'
        for ((i = 5; i <= n - 3; i++)); do printf ', \\\n    tl%d' $i; done
        printf '\n\n#define UCT_TEST_GPU_TLS \\\n    gpu1, \\\n    gpu2\n\n'
        printf '#define UCT_TEST_NO_GPU_MEM_TYPE_TLS \\\n    UCT_TEST_NO_SELF_TLS, \\\n    self\n\n'
        printf '#define UCT_TEST_TLS \\\n    UCT_TEST_NO_GPU_MEM_TYPE_TLS, \\\n    UCT_TEST_GPU_TLS\n'
    } >"$d/test/gtest/uct/uct_test.h"
    # UCX's tag tests, instantiated for mlx5 transports by its own macro
    printf 'UCT_TAG_INSTANTIATE_TEST_CASE(test_tag)\n\nUCT_TAG_INSTANTIATE_TEST_CASE(test_tag_stats)\n' \
        >"$d/test/gtest/uct/test_tag.cc"
}

# tag_ok DIR: test_tag, and only it, instantiated for rc_srq too
tag_ok() {
    [ "$(grep -c '^_UCT_INSTANTIATE_TEST_CASE(test_tag, rc_srq)$' "$1/test/gtest/uct/test_tag.cc")" = 1 ] &&
        ! grep -q 'test_tag_stats, rc_srq' "$1/test/gtest/uct/test_tag.cc"
}

# names DIR: the names UCT_TEST_TLS expands to, by UCS_PP_FOREACH, then by
# UCS_PP_FOREACH_SEP, then UCS_PP_NUM_ARGS of it, compiled against DIR
names() {
    local d=$1
    cat >"$d/lists.c" <<'EOS'
#include <stdio.h>
#include <ucs/sys/preprocessor.h>
#include "uct_test.h"
#define PUT(_unused, _tl)   puts(#_tl);
#define NAME(_unused, _tl)  #_tl
/* the list expanded before it is counted, as in UCS_PP_FOREACH */
#define COUNT(...)          UCS_PP_NUM_ARGS(__VA_ARGS__)
int main(void)
{
    const char *sep[] = { UCS_PP_FOREACH_SEP(NAME, _, UCT_TEST_TLS) };
    unsigned i;
    UCS_PP_FOREACH(PUT, _, UCT_TEST_TLS)
    for (i = 0; i < sizeof(sep) / sizeof(sep[0]); i++)
        printf("sep %s\n", sep[i]);
    printf("count %d\n", COUNT(UCT_TEST_TLS));
    printf("count3 %d\n", UCS_PP_NUM_ARGS(a, b, c));
    return 0;
}
EOS
    ${CC:-cc} -Wall -Werror -I"$d/src" -I"$d/test/gtest/uct" "$d/lists.c" \
        -o "$d/lists" 2>&1 && "$d/lists"
}

# expect N: patch a tree of N names; rc_srq must come out once among all
# N+1, by every expansion, with the limit raised exactly when N+1 > max
expect() {
    local n=$1 d=$work/n$1 plan why out want i ok=1 detail=""
    tree "$d" "$n"
    plan=$(gtest_patch_plan "$d") || { result "$n names: plan" 0 "$plan"; return; }
    why=$(gtest_patch "$d" "$plan") || { result "$n names: patch" 0 "$plan: $why"; return; }
    out=$(names "$d") || { result "$n names: compiled" 0 "$plan" "$out"; return; }
    want=$(for ((i = 1; i <= n - 3; i++)); do echo "tl$i"; done; echo rc_srq; echo self
           echo gpu1; echo gpu2)
    [ "$(grep -v ' ' <<<"$out")" = "$want" ] || { ok=0; detail="UCS_PP_FOREACH:"; }
    [ "$(sed -n 's/^sep //p' <<<"$out")" = "$want" ] || { ok=0; detail="$detail UCS_PP_FOREACH_SEP:"; }
    grep -qx "count $((n + 1))" <<<"$out" || { ok=0; detail="$detail UCS_PP_NUM_ARGS:"; }
    grep -qx "count3 3" <<<"$out" || { ok=0; detail="$detail UCS_PP_NUM_ARGS(a, b, c):"; }
    tag_ok "$d" || { ok=0; detail="$detail test_tag.cc:"; }
    case "$plan" in
        *"raised from $max to $GTEST_PP_MAX"*) [ $((n + 1)) -gt "$max" ] || { ok=0; detail="$detail raised without need:"; } ;;
        *) [ $((n + 1)) -le "$max" ] || { ok=0; detail="$detail not raised:"; } ;;
    esac
    [ $ok = 1 ] && out=""          # the names only when something is wrong
    result "$n names, rc_srq as name $((n + 1)) (UCS_PP_MAX_ARGS $max)" $ok "$plan" "$detail" "$out"
}

expect $((max - 1))      # room for rc_srq: the list only
expect "$max"            # full, as UCX 1.22.0's: the limit raised
expect $((max + 4))
expect $((GTEST_PP_MAX - 1))    # rc_srq fills the raised limit

# more names than even the raised limit: a clear error, not a broken build
d=$work/over; tree "$d" $((GTEST_PP_MAX + 2))
plan=$(gtest_patch_plan "$d") && why=$(gtest_patch "$d" "$plan"); rc=$?
ok=0
[ $rc -ne 0 ] && grep -q "still hold more names than UCS_PP_FOREACH takes ($GTEST_PP_MAX)" <<<"$why" && ok=1
result "$((GTEST_PP_MAX + 2)) names: refused with the reason" $ok "rc=$rc" "$why"

# a test_tag.cc that no longer instantiates test_tag by UCX's macro: refused
d=$work/tag; tree "$d" "$((max - 1))"
sed -i '/^UCT_TAG_INSTANTIATE_TEST_CASE(test_tag)/d' "$d/test/gtest/uct/test_tag.cc"
plan=$(gtest_patch_plan "$d") && why=$(gtest_patch "$d" "$plan"); rc=$?
ok=0
[ $rc -ne 0 ] && grep -q "rc_srq could not be added to .*test_tag instantiations" <<<"$why" && ok=1
result "a test_tag.cc without UCX's instantiation of test_tag: refused" $ok "rc=$rc" "$why"

# a preprocessor.h of another scheme (no _UCS_PP_FOREACH_<max>): refused
d=$work/scheme; tree "$d" "$max"
sed -i "/^#define _UCS_PP_FOREACH_$max(/d" "$d/src/ucs/sys/preprocessor.h"
plan=$(gtest_patch_plan "$d") && why=$(gtest_patch "$d" "$plan"); rc=$?
ok=0
[ $rc -ne 0 ] && grep -q "no UCS_PP_MAX_ARGS below $GTEST_PP_MAX with _UCS_PP_FOREACH_N" <<<"$why" && ok=1
result "a preprocessor.h without UCX's FOREACH scheme: refused" $ok "rc=$rc" "$why"

exit $fail
