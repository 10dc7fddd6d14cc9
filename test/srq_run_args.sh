#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# srq-run's own arguments: its options come first ("--verbs", "-h"), "--"
# ends them, and the command with its arguments is passed on untouched.
# A wrong invocation is one clear line on stderr and a non-zero status;
# a right one runs the command with nothing added on stderr and returns
# the command's status.
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
run=${SRQ_RUN:?}
. "$src/result.sh"
fail=0

# case NAME WANT_RC WANT_STDERR(regex, "" = empty) WANT_STDOUT(regex) ARGS...
case_() {
    local name=$1 want_rc=$2 want_err=$3 want_out=$4 out err rc ok=1
    shift 4
    err=$( { out=$(timeout 60 "$run" "$@"); rc=$?; echo "$out" >&3; exit $rc; } 2>&1 3>"$tmpout")
    rc=$?
    out=$(cat "$tmpout")
    [ "$rc" = "$want_rc" ] || ok=0
    if [ -z "$want_err" ]; then
        [ -z "$err" ] || ok=0
    else
        grep -Eq -- "$want_err" <<<"$err" && [ "$(wc -l <<<"$err")" = 1 ] || ok=0
    fi
    [ -z "$want_out" ] || grep -Eq -- "$want_out" <<<"$out" || ok=0
    result "$name" $ok "srq-run $*: exit $rc, stderr '$err', stdout '$out'"
}
tmpout=$(mktemp "${TMPDIR:-/tmp}/srq-run-args.XXXXXX")
trap 'rm -f "$tmpout"' EXIT

case_ dashdash          0 ""                  ""        -- true
case_ dashdash_status   3 ""                  ""        -- sh -c 'exit 3'
case_ verbs_twice       0 ""                  ""        --verbs --verbs true
case_ verbs_dashdash    0 ""                  ""        --verbs -- true
case_ args_untouched    0 ""                  "^-x --verbs -- y$" sh -c 'echo "$*"' sh -x --verbs -- y
case_ unknown_option    2 "unknown option '--bogus'" "" --bogus true
case_ no_command        2 "no command given"  ""
case_ only_dashdash     2 "no command given"  ""        --
case_ only_verbs        2 "no command given"  ""        --verbs
case_ not_found       127 "command not found: 'srq-no-such-command'" "" srq-no-such-command
case_ help              0 ""                  "srq-run \[--verbs\]" --help
exit $fail
