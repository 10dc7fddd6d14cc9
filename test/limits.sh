#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# rc_srq at a limit of the process (issue 51): each limit ends the
# operation at once with an error that names it - never a hang, an abort,
# "the peer is gone", or a file left in /dev/shm. test/tools/uct_limits
# sets the limit in a fresh process (test/fd_budget.sh's model), on the
# built-in soft0 and on soft0 through libibverbs:
#
#   as_open      RLIMIT_AS from what the process maps up, by 2 MiB, until
#                an interface opens: every open fails cleanly, naming
#                RLIMIT_AS - also where soft0 fits and UCX's async thread
#                does not (UCX 1.13 aborted there: its assertion that the
#                thread started)
#   as_connect   an endpoint between two soft0 instances with a few MiB of
#                address space left: uct_ep_create fails at once, soft0
#                saying what it was mapping and its size (the handshake
#                datagram used to be lost silently, retried until
#                CONN_TIMEOUT; an endpoint waiting for its peer's first
#                message waited forever)
#   fd_connect   the same with 0..4 descriptors left: RLIMIT_NOFILE with
#                its numbers, never "the peer is gone" (EMFILE read
#                /proc/<pid>/stat as a dead peer, and opening its queue as
#                an unreachable one)
#   shm_small    (private mount namespace, root) a /dev/shm of 2 MiB: the
#                QP number table does not fit - ENOSPC, said as such, and
#                no empty qpn-* file left behind
#   shm_fds      (same) a fresh /dev/shm, 0..24 descriptors left: EMFILE
#                is never "Cannot allocate memory", every registry file is
#                whole and of the process's one sharing domain, and the
#                interface that opens with the fewest has its handshake
#                timer on UCX's async thread (refused before for the room
#                a start of the thread, already running, would take)
#
# No interval is shortened to finish: CONN_TIMEOUT is 3 s where a peer
# cannot answer (a handshake between two interfaces of one process takes
# milliseconds), and a run gets 60 s before it counts as a hang.
#
set -u
src=$(cd "$(dirname "$0")" && pwd)
build=${SRQ_TEST_BUILDDIR:?}
run=${SRQ_RUN:?}
tool="$build/test/tools/uct_limits"
budget="$build/test/tools/uct_fd_budget"
. "$src/result.sh"
fail=0
export UCX_SRQ_SOFT=y UCX_RC_SRQ_CONN_TIMEOUT=3s

# limits_run OUTVAR ARGS...: the tool's output (log lines too) and exit
# status, bounded
limits_run() {
    local -n _out=$1
    shift
    _out=$(timeout 120 "$run" "$@" 2>&1)
}

# as_open LABEL RUN_ARGS...
as_open() {
    local label=$1 kib out rc seen_thread=0 opened= why= ok
    shift
    for kib in $(seq 0 2048 65536); do
        limits_run out "$@" "$tool" open as "$kib"
        rc=$?
        if [ $rc != 0 ]; then
            why="$kib KiB: exit $rc"$'\n'"$(tail -5 <<<"$out")"
            break
        fi
        case "$out" in
        *opened*) opened=$kib; break ;;
        *RLIMIT_AS*) ;;
        *) why="$kib KiB: an error that does not name RLIMIT_AS"$'\n'"$out"
           break ;;
        esac
        case "$out" in *"UCX's async thread could not start"*) seen_thread=1 ;; esac
    done
    if [ -z "$why" ] && [ -z "$opened" ]; then
        why="no open succeeded with up to 64 MiB"
    elif [ -z "$why" ] && [ $seen_thread = 0 ]; then
        why="no run where soft0 fits and UCX's async thread does not"
    fi
    ok="clean errors naming RLIMIT_AS below $opened KiB, UCX's async thread refused, not aborted"
    result "limits_as_open$label" "$([ -z "$why" ] && echo 1)" "${why:-$ok}"
}

# connect_ok OUT LIMIT: the run delivered, or failed naming LIMIT and not
# as a peer gone
connect_ok() {
    case "$1" in *"the peer is gone"*|*"peer of QP"*) return 1 ;; esac
    case "$1" in *delivered*|*"$2"*) return 0 ;; esac
    return 1
}

# as_connect LABEL RUN_ARGS...
as_connect() {
    local label=$1 kib out rc failed_at= why=
    shift
    # not 0: with nothing left beyond what is mapped, whether the heap has
    # a free chunk for UCX 1.13's log (its thread table, log.c:291 asserts
    # when that allocation fails) when rc_srq logs the error is the heap's
    # luck, not soft0's doing (seen as 4 crashes in 30 once the QP grew a
    # few words); 512 KiB leaves the heap room and maps no soft0 queue
    for kib in 512 2048 4096 6144 65536; do
        limits_run out "$@" "$tool" connect as "$kib"
        rc=$?
        if [ $rc != 0 ] || ! connect_ok "$out" RLIMIT_AS; then
            why="$kib KiB: exit $rc"$'\n'"$out"
            break
        fi
        if [[ "$out" == *"ep failed: Out of memory"* ]] &&
           grep -Eq 'soft0: mapping the (tables|queue) of pid [0-9]+ \([0-9]+ bytes\): Cannot allocate memory \(RLIMIT_AS' <<<"$out"; then
            failed_at=$kib
        fi
    done
    if [ -z "$why" ] && [ -z "$failed_at" ]; then
        why="no uct_ep_create failed naming the mapping, its size and RLIMIT_AS"
    elif [ -z "$why" ] && [[ "$out" != *delivered* ]]; then
        why="64 MiB: not delivered"$'\n'"$out"
    fi
    result "limits_as_connect$label" "$([ -z "$why" ] && echo 1)" \
        "${why:-uct_ep_create fails at once (e.g. at $failed_at KiB), soft0 names the mapping and its size}"
}

# fd_connect LABEL RUN_ARGS...
fd_connect() {
    local label=$1 n out rc why=
    shift
    for n in 0 1 2 3 4 64; do
        limits_run out "$@" env UCX_LOG_LEVEL=diag "$tool" connect fds "$n"
        rc=$?
        if [ $rc != 0 ] || ! connect_ok "$out" RLIMIT_NOFILE; then
            why="$n descriptors: exit $rc"$'\n'"$(grep -v DIAG <<<"$out"; grep -E 'gone|peer of QP' <<<"$out")"
            break
        fi
        if [ $n = 0 ] && [[ "$out" != *"ep failed"* ]]; then
            why="0 descriptors: uct_ep_create did not fail"$'\n'"$out"
            break
        fi
        if [ $n = 64 ] && [[ "$out" != *delivered* ]]; then
            why="64 descriptors: not delivered"$'\n'"$out"
        fi
    done
    result "limits_fd_connect$label" "$([ -z "$why" ] && echo 1)" \
        "${why:-RLIMIT_NOFILE named with its numbers, no peer taken for gone}"
}

# ---- in a private mount namespace (the script runs itself there) ----------

# shm_files_ok: every registry file whole and of one domain; prints why not
shm_files_ok() {
    local f size domains
    for f in $(find /dev/shm -type f); do
        size=$(stat -c %s "$f")
        case "$f" in
        */lid-*) [ "$size" = 1179624 ] || { echo "$f: $size bytes"; return 1; } ;;
        */qpn-*) [ "$size" = 2097152 ] || { echo "$f: $size bytes"; return 1; } ;;
        *) echo "$f: not a registry file"; return 1 ;;
        esac
    done
    domains=$(find /dev/shm -type f -printf '%f\n' | sed 's/.*-//' | sort -u |
              wc -l)
    [ "$domains" -le 1 ] || { echo "files of $domains sharing domains"; find /dev/shm -type f; return 1; }
}

# mount_shm SIZE: a fresh tmpfs on /dev/shm, seen by this namespace only
mount_shm() {
    umount /dev/shm 2>/dev/null
    mount -t tmpfs -o "size=$1,mode=1777" tmpfs /dev/shm
}

in_namespace() {
    local label=$1 out why= n
    shift
    mount --make-rprivate / || exit 2
    # the namespace's mounts go with it; unmounted first all the same
    trap 'umount /dev/shm 2>/dev/null' EXIT
    mount_shm 2m || exit 2
    limits_run out "$@" "$budget" 64
    if [[ "$out" != *"iface failed"* ]] ||
       [[ "$out" != *"handshake UD QP: No space left on device"* ]] ||
       ! grep -Eq 'soft0: making /dev/shm/srq-[0-9]+/qpn-[0-9a-f]+ \(2097152 bytes, [0-9]+ free there\): No space left' <<<"$out"; then
        why="no ENOSPC named"$'\n'"$out"
    elif ! why=$(shm_files_ok); then
        why="left behind: $why"
    fi
    result "limits_shm_small$label" "$([ -z "$why" ] && echo 1)" \
        "${why:-ENOSPC said with the file and its size, no file left behind}"

    why=
    mount_shm 8m || exit 2
    for n in $(seq 0 24); do
        limits_run out "$@" env UCX_LOG_LEVEL=diag "$budget" "$n"
        if [[ "$out" == *"Cannot allocate memory"* ]]; then
            why="$n descriptors: EMFILE said as ENOMEM"$'\n'"$out"
        elif [[ "$out" != *opened* ]] && [[ "$out" != *RLIMIT_NOFILE* ]]; then
            why="$n descriptors: an error that does not name RLIMIT_NOFILE"$'\n'"$out"
        elif ! why=$(shm_files_ok); then
            why="$n descriptors: $why"
        elif [[ "$out" == *opened* ]] &&
             [[ "$out" == *"no async handshake answers"* ]]; then
            why="$n descriptors: opened without its handshake timer"$'\n'"$out"
        fi
        [ -z "$why" ] || break
        case "$out" in *opened*) break ;; esac
    done
    result "limits_shm_fds$label" "$([ -z "$why" ] && echo 1)" \
        "${why:-RLIMIT_NOFILE named up to $n descriptors, every registry file whole, one domain}"
    exit $fail
}

if [ "${1:-}" = --in-namespace ]; then
    shift
    in_namespace "$@"
fi

for args in "" "--verbs"; do
    label=${args:+_verbs}
    as_open "$label" $args
    as_connect "$label" $args
    fd_connect "$label" $args
    if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
        echo "SKIP: limits_shm_small$label, limits_shm_fds$label: need root and unshare -m (a private /dev/shm)"
        continue
    fi
    unshare -m "$BASH" "$0" --in-namespace "$label" $args || fail=1
done
exit $fail
