# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the shell tests that run long jobs. On a loaded machine a job
# takes as long as the scheduler lets it, so a limit on its whole run
# measures the load, not the code; these tests bound a job by its progress
# instead.
#
# progress_wait PID FILE STALL: waits for the background job PID (started
# by the caller, ideally under `timeout`, which passes a SIGTERM on to its
# command) and returns its exit status. While it runs, FILE must grow: if
# it has not grown for STALL seconds the job gets SIGTERM, and
# progress_why says so ("FILE did not grow for N s"; empty otherwise).
progress_wait() {
    local pid=$1 file=$2 stall=$3 size=-1 now grown=$SECONDS
    progress_why=""
    while kill -0 "$pid" 2>/dev/null; do
        now=$(stat -c %s "$file" 2>/dev/null || echo 0)
        [ "$now" != "$size" ] && { size=$now; grown=$SECONDS; }
        if (( SECONDS - grown > stall )); then
            progress_why="$(basename "$file") did not grow for $(( SECONDS - grown )) s"
            kill -TERM "$pid" 2>/dev/null
            break
        fi
        sleep 1
    done
    wait "$pid"
}
