#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# UCX's own UCT test suite over rc_srq: UCX's gtest program, built from the
# source of the installed UCX (the configured tree contrib/ucx-devel keeps,
# copied; the one change is rc_srq in the transport list UCT_TEST_NO_SELF_TLS
# of test/gtest/uct/uct_test.h, with room for it where UCX's list is full:
# test/ucx_gtest_patch.sh) and linked against the installed UCX
# libraries, runs every UCT test instantiated for rc_srq with the plugin of
# this build tree loaded (srq-run): once on the built-in soft0, once on soft0
# served through libibverbs (srq-run --verbs: rc_srq's rdma-core path).
# Then once more with tag-matching offload on (UCX_RC_SRQ_TM_ENABLE=y,
# the "tm" pass): UCX's tag-offload tests (UCT's test_tag and UCP's
# test_ucp_tag_offload, which the copy instantiates for rc_srq too, and
# which the first pass leaves out), and on the built-in soft0 every other
# test as well: with tag matching every message carries a TMH, active
# messages too. A skip there is checked as any other: a tag-offload test
# that skips (no tag capability, no tag-offload lane) fails.
#
# One line per test case: PASS, FAIL (with UCX's failure message), or SKIP
# (the suite's own decision, from what rc_srq advertises; each must match a
# documented reason in test/ucx_gtest.skips, or it fails), then a summary
# per run. Tests listed in test/ucx_gtest.known (known failures of rc_srq,
# each with the reason and the issue that tracks it) are left out of the
# run - one of them aborts the program - and listed as KNOWN lines, so
# they are neither hidden nor counted as passed. The program is built once per machine and UCX version, in
# ${UCX_SRQ_CACHE:-~/.cache/ucx-srq}/gtest-<version>; a second run rebuilds
# nothing.
#
# Usage: test/ucx_gtest.sh [--soft|--verbs] [--tl TL] [--filter GLOB]
#                          [--build-only] [--keep-going]
#   --soft, --verbs  run only on that device path (default: both)
#   --tl TL          another transport, for reference (e.g. posix): its
#                    skips are reported, not checked
#   --filter GLOB    gtest filter within the transport's tests (default *)
#   --build-only     build (or find cached) and stop
# Environment (set by make check): SRQ_RUN, SRQ_RUN_PLUGIN,
#   SRQ_TEST_BUILDDIR, SRQ_UCX_SRC_DIR, SRQ_UCX_LIBDIR, SRQ_UCX_VERSION;
#   SRQ_UCX_GTEST_TIMEOUT (default 900): a run is stopped when its output
#   has not grown for that many seconds (one test's time; on a loaded
#   machine a whole run takes as long as the scheduler lets it, so it is
#   bound by its progress, and in any case stopped after 10 such times)
#
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/result.sh"
. "$here/progress.sh"
fail=0

builddir=${SRQ_TEST_BUILDDIR:-$(dirname "$here")/build}
run=${SRQ_RUN:-$builddir/contrib/srq-run}
export SRQ_RUN_PLUGIN=${SRQ_RUN_PLUGIN:-$builddir/.libs/libuct_srq.so}
build_var() { sed -n "s/^$1 = //p" "$builddir/Makefile" 2>/dev/null; }
ucx_src=${SRQ_UCX_SRC_DIR:-$(build_var UCX_SRC_DIR)}
ucx_libdir=${SRQ_UCX_LIBDIR:-$(build_var UCX_LIBDIR)}
limit=${SRQ_UCX_GTEST_TIMEOUT:-900}

modes="soft verbs" tl=rc_srq filter='*' build_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --soft)       modes=soft ;;
        --verbs)      modes=verbs ;;
        --tl)         tl=$2; shift ;;
        --filter)     filter=$2; shift ;;
        --build-only) build_only=1 ;;
        *) echo "usage: $0 [--soft|--verbs] [--tl TL] [--filter GLOB] [--build-only]" >&2
           exit 2 ;;
    esac
    shift
done

if [ ! -f "$ucx_src/config.h" ] || [ ! -f "$ucx_src/test/gtest/uct/uct_test.h" ]; then
    echo "FAIL: ucx-gtest: no configured UCX source tree ('$ucx_src'); run contrib/ucx-devel"
    exit 1
fi
version=${SRQ_UCX_VERSION:-$(build_var UCX_VERSION)}
version=${version:-$(basename "$ucx_src" | sed 's/^ucx-//')}
cache=${UCX_SRQ_CACHE:-$HOME/.cache/ucx-srq}/gtest-$version
mkdir -p "$cache" || { echo "FAIL: ucx-gtest: cannot create $cache"; exit 1; }

# ---- build (one at a time per cache: other builds may run beside) -------

# The tokens of an automake variable's first assignment in @file
am_list() {
    awk -v var="$2" '
        !on && $1 == var && $2 == "=" { on = 1; $1 = ""; $2 = "" }
        on { line = $0; cont = sub(/\\[ \t]*$/, "", line)
             n = split(line, t, " "); for (i = 1; i <= n; i++) print t[i]
             if (!cont) exit }' "$1"
}

# A variable of UCX's configured test/gtest/Makefile, its tree paths
# pointing at our copy
ucx_var() {
    sed -n "s/^$1 = //p" "$src/test/gtest/Makefile" |
        sed "s|\${abs_top_srcdir}|$src|g; s|\${abs_top_builddir}|$src|g"
}

# rc_srq in the copy's transport lists (and room for it): see
# test/ucx_gtest_patch.sh
. "$here/ucx_gtest_patch.sh"

ucp_srcs="ucp/ucp_test.cc ucp/ucp_datatype.cc ucp/test_ucp_tag.cc
ucp/test_ucp_tag_offload.cc"

ib_srcs="uct/ib/test_ib.cc uct/ib/test_ib_md.cc uct/ib/test_cq_moderation.cc
uct/ib/test_ib_xfer.cc uct/ib/test_ib_pkey.cc uct/ib/test_ib_event.cc
uct/ib/ud_base.cc uct/ib/test_ud.cc uct/ib/test_ud_timer.cc
uct/ib/test_ud_pending.cc uct/ib/test_ud_ds.cc uct/ib/test_rc.cc"

# UCX 1.14 and later install mlx5 as a module of its own, libuct_ib_mlx5,
# which test_ib_event.cc calls into; UCX's gtest links it where HAVE_MLX5_DV
# (1.13 has mlx5 inside libuct_ib: nothing to add, the flags unchanged)
ib_module_libs() {
    [ -e "$ucx_libdir/ucx/libuct_ib_mlx5.so" ] &&
        grep -q '^#define HAVE_MLX5_DV 1' "$src/config.h" &&
        printf -- '-luct_ib_mlx5 %s ' "$(ucx_var LIB_MLX5)"
}

build() {
    local ident src=$cache/src why
    # the copy is redone when the source tree or the change to it does
    patch_plan=$(gtest_patch_plan "$ucx_src") || { echo "$patch_plan"; return 1; }
    ident="$(cat "$ucx_src/.ucx-srq-ready" 2>/dev/null; md5sum <"$ucx_src/config.h")
$patch_plan"
    if [ "$(cat "$cache/ident" 2>/dev/null)" != "$ident" ]; then
        rm -rf "$cache/src" "$cache/obj" "$cache/gtest" "$cache/ident" "$cache/src.tmp"
        cp -a "$ucx_src" "$cache/src.tmp" || { echo "copying $ucx_src failed"; return 1; }
        why=$(gtest_patch "$cache/src.tmp" "$patch_plan") ||
            { echo "UCX $version's transport lists: $why"; return 1; }
        mv "$cache/src.tmp" "$src" || return 1
        echo "$ident" >"$cache/ident"
    fi

    local gtest_srcs lib_srcs perf_srcs flags
    gtest_srcs=$(am_list "$src/test/gtest/Makefile.am" gtest_SOURCES |
                 grep -E '^(common/[^/]*|uct/[^/]*|uct/v2/[^/]*)\.cc$')
    # and the uct/ib tests of UCX's rc and ud transports (UCX adds them
    # under HAVE_IB, HAVE_TL_RC, HAVE_TL_UD; its dc, devx and sockaddr
    # tests need mlx5 or rdma_cm): instantiated for rc_verbs and ud_verbs
    # only, never for rc_srq (they read uct_ib_iface_t internals)
    # and UCP's tag-offload tests (test_ucp_tag_offload.cc, instantiated
    # for rc_srq by the copy's change) with the UCP test base they need
    local f
    for f in $ucp_srcs; do
        [ -f "$src/test/gtest/$f" ] && gtest_srcs="$gtest_srcs
$f"
    done
    for f in $ib_srcs; do
        [ -f "$src/test/gtest/$f" ] && gtest_srcs="$gtest_srcs
$f"
    done
    lib_srcs=$(am_list "$src/test/gtest/common/googletest/Makefile.am" \
                       libgtest_la_SOURCES | grep '\.cc$')
    perf_srcs=$(am_list "$src/src/tools/perf/lib/Makefile.am" \
                        libucxperf_la_SOURCES | grep -E '\.(c|cc)$')
    flags="UCX_CPPFLAGS=$(ucx_var BASE_CPPFLAGS)
UCX_CFLAGS=$(ucx_var BASE_CFLAGS)
UCX_CXXFLAGS=$(ucx_var BASE_CXXFLAGS)
GTEST_CXXFLAGS=$(ucx_var GTEST_CXXFLAGS)
PERF_CXXFLAGS=$(ucx_var PERF_LIB_CXXFLAGS)
OPENMP_CFLAGS=$(ucx_var OPENMP_CFLAGS)
LDFLAGS_DYNAMIC_LIST_DATA=$(ucx_var LDFLAGS_DYNAMIC_LIST_DATA)
IBVERBS_LIBS=$(ib_module_libs)$(ucx_var IBVERBS_LDFLAGS)
UCX_LIBDIR=$ucx_libdir
UCX_MODDIR=$ucx_libdir/ucx
GTEST_MK_MD5=$(md5sum <"$here/ucx_gtest.mk" | cut -d" " -f1)"
    [ "$(cat "$cache/flags" 2>/dev/null)" = "$flags" ] || echo "$flags" >"$cache/flags"

    local -a vars=()
    while IFS= read -r line; do vars+=("$line"); done <<<"$flags"
    make -j2 -f "$here/ucx_gtest.mk" UCX_SRC="$src" OUT="$cache" \
         FLAGS_STAMP="$cache/flags" GTEST_SRCS="$(echo $gtest_srcs)" \
         GTEST_LIB_SRCS="$(echo $lib_srcs)" PERF_SRCS="$(echo $perf_srcs)" \
         "${vars[@]}" >"$cache/make.out" 2>&1 ||
        { grep -E 'error|Error' "$cache/make.out" | head -20; return 1; }
}

start=$(date +%s)
exec 9>"$cache.lock"
flock 9
build_log=$(build 2>&1)
built=$?
flock -u 9
took=$(( $(date +%s) - start ))
gtest=$cache/gtest
if [ $built -ne 0 ] || [ ! -x "$gtest" ]; then
    result "ucx-gtest build" 0 "building UCX $version's gtest in $cache failed: $build_log"
    exit 1
fi
# one libucs/libuct in the process: the installed ones the plugin uses
libs=$(ldd "$gtest" | awk '/libuc[stpm]\.so/ { print $3 }')
for l in $libs; do
    case "$(dirname "$(readlink -f "$l")")" in
        "$(readlink -f "$ucx_libdir")") ;;
        *) result "ucx-gtest libraries" 0 "$gtest uses $l, not $ucx_libdir's"
           exit 1 ;;
    esac
done
# which change the copy had, every time: the program's results depend on it
echo "ucx-gtest: UCX $version's gtest source: $(tail -1 "$cache/ident")"
if grep -q "^g++\|^gcc" "$cache/make.out"; then
    echo "ucx-gtest: built UCX $version's gtest in $took s ($cache)"
else
    echo "ucx-gtest: UCX $version's gtest up to date ($took s, $cache)"
fi
[ $build_only = 1 ] && exit 0

# ---- run --------------------------------------------------------------------

# documented skips: "GLOB<TAB>reason" per line, GLOB on suite.test/N
skips_file=$here/ucx_gtest.skips
skip_reason() {
    local name=$1 glob reason
    while IFS=$'\t' read -r glob reason; do
        case "$glob" in ''|'#'*) continue ;; esac
        # shellcheck disable=SC2053
        [[ $name == $glob ]] && { echo "$reason"; return 0; }
    done <"$skips_file"
    return 1
}

# known failures: "GLOB<TAB>reason" per line, left out of the run
known_file=$here/ucx_gtest.known
known_filter() {
    local glob reason neg="" sep
    while IFS=$'\t' read -r glob reason; do
        case "$glob" in ''|'#'*) continue ;; esac
        known_applies "$glob" || continue
        neg="$neg${neg:+:}$tl/${glob#*:}"
    done <"$known_file"
    # after the caller's own negative patterns, if it has some
    case "$(pass_filter)" in *-*) sep=: ;; *) sep=- ;; esac
    [ -n "$neg" ] && printf -- '%s%s' "$sep" "$neg"
}
# a GLOB may start with "soft:" or "verbs:" (rc_srq's, known on that path
# only) or with another transport and ":" ("ud_verbs:...": known for that
# transport); a GLOB without a prefix is rc_srq's
known_applies() {
    case "$1" in
        soft:*|verbs:*) [ "$tl" = rc_srq ] && [ "${1%%:*}" = "$mode" ] ;;
        *:*) [ "${1%%:*}" = "$tl" ] ;;
        *) [ "$tl" = rc_srq ] ;;
    esac
}
list_known() {
    local glob reason
    while IFS=$'\t' read -r glob reason; do
        case "$glob" in ''|'#'*) continue ;; esac
        known_applies "$glob" || continue
        echo "KNOWN: ucx-gtest $mode $tl/${glob#*:}: not run: $reason"
        nknown=$((nknown + 1))
    done <"$known_file"
}

# gtest's output -> one "STATE<TAB>name<TAB>detail" line per test case
parse() {
    awk '
        function flush_case(state, detail) {
            printf "%s\t%s\t%s\n", state, name, detail; name = ""
        }
        /^\[ RUN      \] / { name = $4; skip = ""; msg = ""; next }
        name != "" && /^\[     SKIP \]/ {
            skip = $0; sub(/^\[     SKIP \] ?/, "", skip)
            if (skip == "") skip = "(no reason given)"; next }
        name != "" && /^\[       OK \] / {
            flush_case(skip != "" ? "SKIP" : "PASS", skip); next }
        name != "" && /^\[  FAILED  \] / {
            gsub(/\t/, " ", msg); flush_case("FAIL", msg); next }
        name != "" { if (length(msg) < 3000) msg = msg "\\n" $0 }
        /^\[==========\] .* ran\./ { ran = 1 }
        END { if (name != "") { gsub(/\t/, " ", msg)
                                flush_case("CRASH", msg) }
              if (!ran) print "NOSUMMARY\t\t" }'
}

# the tests of a pass: the tag-offload tests (UCT's test_tag, UCP's
# test_ucp_tag_offload) only with tag matching on (without, they skip
# every test); in the tm pass on the libibverbs path, only they
tm_tests='test_tag.*:test_ucp_tag_offload.*'
pass_filter() {
    local f=$filter
    case "$pass,$mode" in
        tm,verbs) [ "$f" = '*' ] && f=${tm_tests//:/:$tl/} ;;
        tm,*) ;;
        *) case "$f" in
               *-*) f="$f:$tl/${tm_tests//:/:$tl/}" ;;
               *)   f="$f-$tl/${tm_tests//:/:$tl/}" ;;
           esac ;;
    esac
    echo "$f"
}

run_suite() {
    local out npass=0 nfail=0 nskip=0 nknown=0 rc state name detail reason
    mode=$1 pass=${2:-}
    local -a launcher=("$run") tm_env=()
    [ "$mode" = verbs ] && launcher+=(--verbs)
    [ "$pass" = tm ] && tm_env=(UCX_RC_SRQ_TM_ENABLE=y)
    # UCX's atomic and fence tests never progress their target while
    # threads send atomics at it: soft0's progress thread serves them on
    # both paths, as an HCA would, with every interval at its default
    out=$builddir/test/ucx_gtest-$tl-$mode${pass:+-$pass}.out
    mkdir -p "$(dirname "$out")"
    local t0; t0=$(date +%s)
    env UCX_HANDLE_ERRORS=bt UCX_LOG_LEVEL=warn UCX_LOG_PRINT_ENABLE=y \
        "${tm_env[@]}" \
        timeout -k 10 $(( limit * 10 )) "${launcher[@]}" "$gtest" \
        --gtest_filter="$tl/$(pass_filter)$(known_filter)" >"$out" 2>&1 &
    progress_wait $! "$out" "$limit"
    rc=$?
    local secs=$(( $(date +%s) - t0 ))

    while IFS=$'\t' read -r state name detail; do
        case "$state" in
            PASS) echo "PASS: ucx-gtest $mode$pass_tag $name"; npass=$((npass + 1)) ;;
            SKIP)
                if [ "$tl" != rc_srq ]; then
                    echo "SKIP: ucx-gtest $mode$pass_tag $name: $detail"
                    nskip=$((nskip + 1))
                elif reason=$(skip_reason "${name#*/}"); then
                    echo "SKIP: ucx-gtest $mode$pass_tag $name: $detail: $reason"
                    nskip=$((nskip + 1))
                else
                    result "ucx-gtest $mode$pass_tag $name" 0 \
                        "skipped without a documented reason (test/ucx_gtest.skips): $detail"
                    nfail=$((nfail + 1))
                fi ;;
            FAIL|CRASH)
                [ "$state" = CRASH ] && detail="the program ended during this test (rc $rc${progress_why:+, stopped: $progress_why})$detail"
                result "ucx-gtest $mode$pass_tag $name" 0 "$(printf '%b' "$detail")"
                nfail=$((nfail + 1)) ;;
            NOSUMMARY)
                if [ -n "$progress_why" ]; then
                    why="stopped: $progress_why"
                elif [ $rc -eq 124 ]; then
                    why="timed out after $(( limit * 10 )) s"
                else
                    why="no gtest summary (rc $rc)"
                fi
                result "ucx-gtest $mode$pass_tag $tl run" 0 "$why; see $out: $(tail -20 "$out")"
                nfail=$((nfail + 1)) ;;
        esac
    done < <(parse <"$out")

    if [ $rc -ne 0 ] && [ $nfail -eq 0 ]; then
        result "ucx-gtest $mode$pass_tag $tl run" 0 "the program failed (rc $rc) with no failed test: $(tail -20 "$out")"
        nfail=1
    fi
    if [ $((npass + nfail + nskip)) -eq 0 ]; then
        result "ucx-gtest $mode$pass_tag $tl" 0 "no $tl test ran (is the plugin loaded?): $(tail -20 "$out")"
        nfail=1
    fi
    list_known
    echo "ucx-gtest: $tl on soft0 ($mode${pass:+, tag matching on}): $npass passed, $nfail failed, $nskip skipped, $nknown known failures not run, in $secs s (log: $out)"
}

for mode in $modes; do
    pass_tag=""
    run_suite "$mode"
    # UCX's tag tests and, on soft0 built in, all with every message a TMH
    if [ "$tl" = rc_srq ]; then
        pass_tag=" tm"
        run_suite "$mode" tm
    fi
done
exit $fail
