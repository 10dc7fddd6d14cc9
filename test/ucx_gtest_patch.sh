# SPDX-License-Identifier: BSD-3-Clause
# Sourced by test/ucx_gtest.sh (and test/ucx_gtest_lists.sh): the one change
# made to the private copy of UCX's source tree that UCX's gtest is built
# from, so that its UCT tests are instantiated for rc_srq too.
#
# rc_srq is appended to UCT_TEST_NO_SELF_TLS in test/gtest/uct/uct_test.h.
# UCX expands its transport lists with UCS_PP_FOREACH, which takes at most
# UCS_PP_MAX_ARGS names (20 in UCX 1.13-1.18, 21 later). Where a list with
# rc_srq is longer than that (UCX 1.22.0 and master: 21 names before it),
# the copy's src/ucs/sys/preprocessor.h gets definitions for up to
# GTEST_PP_MAX names in UCX's own scheme, appended after UCX's: a count up
# to the old limit comes out the same, so nothing the installed libraries
# were built with changes; no transport is dropped from the lists (each
# UCX version names its own, which ones cannot exist here differs).

GTEST_PP_MAX=32
GTEST_PATCH_BASE="rc_srq appended to UCT_TEST_NO_SELF_TLS and to test_tag's and test_ucp_tag_offload's instantiations, v3"

# add_rc_srq TREE: rc_srq after UCT_TEST_NO_SELF_TLS's last transport (the
# first line of the definition without a continuation backslash)
add_rc_srq() {
    local h=$1/test/gtest/uct/uct_test.h
    awk '
        /^#define UCT_TEST_NO_SELF_TLS/ { in_list = 1 }
        in_list && !/\\[ \t]*$/ { sub(/[ \t]*$/, ""); print $0 ", \\"
                                  print "    rc_srq"; in_list = 0; next }
        { print }' "$h" >"$h.new" && mv "$h.new" "$h" &&
    grep -q '^    rc_srq$' "$h"
}

# add_rc_srq_tag TREE: UCX instantiates its tag-offload tests for mlx5
# transports only (test/gtest/uct/test_tag.cc: rc_mlx5 and dc_mlx5;
# test/gtest/ucp/test_ucp_tag_offload.cc: rc_x and dc_x); test_tag and
# test_ucp_tag_offload are instantiated for rc_srq too, under the prefix
# rc_srq (their siblings read rc_mlx5's statistics, its multi-packet SRQ,
# GPU memory, or need two transports: not for rc_srq). A tree without
# test_ucp_tag_offload.cc (this script's own test trees) gets test_tag's.
add_rc_srq_tag() {
    local c=$1/test/gtest/uct/test_tag.cc u=$1/test/gtest/ucp/test_ucp_tag_offload.cc
    awk '
        { print }
        /^UCT_TAG_INSTANTIATE_TEST_CASE\(test_tag\)/ {
            print "_UCT_INSTANTIATE_TEST_CASE(test_tag, rc_srq)" }' "$c" >"$c.new" &&
    mv "$c.new" "$c" &&
    grep -q '^_UCT_INSTANTIATE_TEST_CASE(test_tag, rc_srq)$' "$c" || return 1
    [ -f "$u" ] || return 0
    awk '
        { print }
        /^UCP_INSTANTIATE_TAG_OFFLOAD_TEST_CASE\(test_ucp_tag_offload\)/ {
            print "UCP_INSTANTIATE_TEST_CASE_TLS(test_ucp_tag_offload, rc_srq, \"rc_srq\")" }' \
        "$u" >"$u.new" && mv "$u.new" "$u" &&
    grep -q '^UCP_INSTANTIATE_TEST_CASE_TLS(test_ucp_tag_offload, rc_srq, "rc_srq")$' "$u"
}

# count_tls TREE: "LIST COUNT" for each UCT_TEST_*_TLS list of TREE's
# uct_test.h, counted by the C preprocessor with TREE's own
# UCS_PP_NUM_ARGS. A list longer than UCS_PP_MAX_ARGS comes out as one of
# its names, not a number.
count_tls() {
    local t=$1 probe rc
    probe=$(mktemp "${TMPDIR:-/tmp}/srq-gtest-tls.XXXXXX.h") || return 1
    {
        echo "#include \"$t/src/ucs/sys/preprocessor.h\""
        # the list expanded before it is counted, as in UCS_PP_FOREACH
        echo "#define SRQ_PP_COUNT(...) UCS_PP_NUM_ARGS(__VA_ARGS__)"
        awk '/^#define UCT_TEST_[A-Z_]*(TLS|CMS)([ \t\\]|$)/, !/\\[ \t]*$/' \
            "$t/test/gtest/uct/uct_test.h"
        # the name in quotes: a string is not expanded
        sed -n 's/^#define \(UCT_TEST_[A-Z_]*TLS\)\([ \t\\].*\)\{0,1\}$/@@ "\1" SRQ_PP_COUNT(\1)/p' \
            "$t/test/gtest/uct/uct_test.h"
    } >"$probe"
    ${CC:-cc} -E -P -x c "$probe" | sed -n 's/^@@ "\([^"]*\)"/\1/p'
    rc=${PIPESTATUS[0]}
    rm -f "$probe"
    return "$rc"
}

# tls_overflow TREE: the lists of count_tls that do not fit (none: empty)
tls_overflow() {
    local counts
    counts=$(count_tls "$1") || return 1
    [ -n "$counts" ] || return 1
    awk '$2 !~ /^[0-9]+$/ { print $1 }' <<<"$counts"
}

# pp_max TREE: UCS_PP_MAX_ARGS of TREE (the last definition: raise_pp_max
# appends one)
pp_max() {
    sed -n 's/^#define UCS_PP_MAX_ARGS[ \t]*\([0-9][0-9]*\).*/\1/p' \
        "$1/src/ucs/sys/preprocessor.h" | tail -1
}

# raise_pp_max TREE: UCS_PP_NUM_ARGS, UCS_PP_FOREACH and
# UCS_PP_FOREACH_SEP of TREE take up to GTEST_PP_MAX arguments;
# definitions appended before the header's last #endif
raise_pp_max() {
    local h=$1/src/ucs/sys/preprocessor.h old
    old=$(pp_max "$1")
    [ -n "$old" ] && [ "$old" -lt $GTEST_PP_MAX ] &&
        grep -q "^#define _UCS_PP_FOREACH_$old(" "$h" &&
        grep -q "^#define _UCS_PP_FOREACH_SEP_$old(" "$h" || {
        echo "$h: no UCS_PP_MAX_ARGS below $GTEST_PP_MAX with _UCS_PP_FOREACH_N and _UCS_PP_FOREACH_SEP_N up to it"
        return 1
    }
    awk -v old="$old" -v max=$GTEST_PP_MAX '
        function block(   i, s) {
            print "/* ucx-srq test/ucx_gtest.sh: room for rc_srq in the gtest transport lists */"
            print "#undef UCS_PP_MAX_ARGS"
            print "#define UCS_PP_MAX_ARGS " max
            s = "_0"; for (i = 1; i <= max; i++) s = s ",_" i
            print "#undef _UCS_PP_NUM_ARGS"
            print "#define _UCS_PP_NUM_ARGS(" s ",N,...) N"
            s = ""; for (i = max; i >= 0; i--) s = s "," i
            print "#undef UCS_PP_NUM_ARGS"
            print "#define UCS_PP_NUM_ARGS(...) _UCS_PP_NUM_ARGS(, ## __VA_ARGS__" s ")"
            for (i = old + 1; i <= max; i++)
                printf "#define _UCS_PP_FOREACH_%d(_macro, _arg, _arg1, ...) _macro(_arg, _arg1) _UCS_PP_FOREACH_%d(_macro, _arg, __VA_ARGS__)\n", i, i - 1
            for (i = old + 1; i <= max; i++)
                printf "#define _UCS_PP_FOREACH_SEP_%d(_macro, _arg, _arg1, ...) _macro(_arg, _arg1), _UCS_PP_FOREACH_SEP_%d(_macro, _arg, __VA_ARGS__)\n", i, i - 1
        }
        { line[NR] = $0; if ($0 ~ /^#endif/) last = NR }
        END { for (i = 1; i <= NR; i++) { if (i == last) block(); print line[i] } }
    ' "$h" >"$h.new" && mv "$h.new" "$h"
}

# gtest_patch_plan TREE: the change TREE's copy needs, as one line (also
# the build's identity: a different change rebuilds the program)
gtest_patch_plan() {
    local t=$1 tmp over
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/srq-gtest-plan.XXXXXX") || return 1
    mkdir -p "$tmp/src/ucs/sys" "$tmp/test/gtest/uct"
    cp "$t/src/ucs/sys/preprocessor.h" "$tmp/src/ucs/sys/" &&
        cp "$t/test/gtest/uct/uct_test.h" "$tmp/test/gtest/uct/" &&
        add_rc_srq "$tmp" && over=$(tls_overflow "$tmp") ||
        { rm -rf "$tmp"; echo "cannot read the transport lists of $t"; return 1; }
    rm -rf "$tmp"
    if [ -z "$over" ]; then
        echo "$GTEST_PATCH_BASE"
    else
        echo "$GTEST_PATCH_BASE; UCS_PP_MAX_ARGS raised from $(pp_max "$t") to $GTEST_PP_MAX in the copy ($(echo $over) longer than $(pp_max "$t") names with rc_srq)"
    fi
}

# gtest_patch TREE PLAN: make the change PLAN names, then check that every
# list fits
gtest_patch() {
    local t=$1 plan=$2 over
    add_rc_srq "$t" || { echo "rc_srq could not be added to $t's UCT_TEST_NO_SELF_TLS"; return 1; }
    add_rc_srq_tag "$t" || { echo "rc_srq could not be added to $t's test_tag instantiations"; return 1; }
    case "$plan" in *"UCS_PP_MAX_ARGS raised"*) raise_pp_max "$t" || return 1 ;; esac
    over=$(tls_overflow "$t") || { echo "cannot count the transport lists of $t"; return 1; }
    [ -z "$over" ] || {
        echo "with rc_srq, $(echo $over) of $t still hold more names than UCS_PP_FOREACH takes ($(pp_max "$t"))"
        return 1
    }
}
