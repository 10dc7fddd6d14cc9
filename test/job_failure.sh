#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Failure at job level: a 4-rank MPI job over rc_srq (srq-run mpirun,
# UCX_TLS=rc_srq,self, pml/osc ucx, btl self) in which rank 2 sends itself
# SIGKILL after 50 rounds of verified ring traffic (test/mpi/kill_rank.c);
# the survivors keep talking to it. Checks:
#
#   - the ranks exchanged verified traffic before the kill ("traffic ok"):
#     with rc_srq,self and btl self nothing but rc_srq can carry it;
#   - the job ends with a non-zero status within $limit seconds (measured;
#     timeout(1) at a larger bound is only a safety net, hitting it fails);
#   - no process of the job remains (pgrep on this test's own binary path);
#   - the job's ranks, the killed one included, leave no soft-device file
#     in /dev/shm (srq-soft-<instance>, whose instance id holds the pid):
#     the soft device keeps its shared memory in memfds.
#
# No Open MPI option is needed: mpirun's default (orte_abort_on_non_zero_status)
# already aborts the whole job when a rank dies on a signal; the test checks
# that this teardown is not held up by ranks blocked in rc_srq.
#
set -u
run=${SRQ_RUN:?}
src=$(cd "$(dirname "$0")" && pwd)
limit=60
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-jobfail.XXXXXX")
prog="$work/kill_rank"
job=""

cleanup() {
    local p
    [ -n "$job" ] && kill -9 "$job" 2>/dev/null
    # ranks left behind: match this test's own binary path only
    for p in $(pgrep -f "^$prog" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=rc_srq,self
fail=0
pass() { echo "PASS: $*"; }
failed() { echo "FAIL: $*"; fail=1; }

mpicc -O2 -I"$src/mpi" -o "$prog" "$src/mpi/kill_rank.c" ||
    { echo "FAIL: cannot build kill_rank"; exit 1; }

shm_list() { ls /dev/shm 2>/dev/null | grep '^srq-soft-' | sort; }
# the pid in a name srq-soft-<instance in hex>: the instance is domain (4
# bytes), pid (4 bytes, little endian), random (see src/verbs/soft)
shm_owner() {
    local h=${1#srq-soft-}
    [ ${#h} -ge 16 ] && echo $(( 16#${h:14:2}${h:12:2}${h:10:2}${h:8:2} ))
}

shm_list >"$work/shm.before"
start=$(date +%s%N)
timeout -k 10 $(( limit * 2 )) "$run" mpirun -np 4 --oversubscribe \
    --mca pml ucx --mca osc ucx --mca btl self -x UCX_TLS "$prog" 2 \
    >"$work/log" 2>&1 &
job=$!
wait "$job"
rc=$?
job=""
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
secs=$(awk -v m="$elapsed_ms" 'BEGIN { printf "%.1f", m / 1000 }')
shm_list >"$work/shm.after"

pids=$(awk '$1 == "pid" { print $3 }' "$work/log" | sort -u)
npids=$(wc -w <<<"$pids")
if [ "$npids" -eq 4 ] && grep -q '^traffic ok' "$work/log"; then
    pass "4 ranks started and exchanged verified traffic over rc_srq before rank 2 was killed"
else
    failed "the job did not get to the kill ($npids ranks reported, no verified traffic)"
    tail -20 "$work/log"
fi

if [ "$elapsed_ms" -gt $(( limit * 1000 )) ]; then
    failed "the job took ${secs} s to end after a rank's death (limit ${limit} s, rc=$rc)"
elif [ "$rc" -eq 0 ]; then
    failed "the job exited 0 although rank 2 was killed"
else
    pass "the job ended with status $rc in ${secs} s (limit ${limit} s)"
fi

sleep 1
left=$(pgrep -f "^$prog" 2>/dev/null | tr '\n' ' ')
if [ -n "$left" ]; then
    failed "processes of the job remain: $left"
    ps -o pid,stat,etime,args -p ${left// /,} 2>/dev/null
else
    pass "no process of the job remains"
fi

# files created during the job by one of its ranks (other users of the
# machine may create their own meanwhile)
job_segs=()
for s in $(comm -13 "$work/shm.before" "$work/shm.after"); do
    owner=$(shm_owner "$s")
    [ -n "$owner" ] && grep -qx -- "$owner" <<<"$pids" && job_segs+=("$s")
done
if [ ${#job_segs[@]} -gt 0 ]; then
    failed "the job's ranks left ${#job_segs[@]} soft-device files in /dev/shm: ${job_segs[*]}"
    rm -f "${job_segs[@]/#//dev/shm/}"
else
    pass "the job's ranks, the killed one included, left no soft-device file in /dev/shm"
fi

exit $fail
