#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Existing public MPI workloads over rc_srq, run exactly as test/mpi.sh runs
# its own programs (srq-run mpirun, UCX_TLS=rc_srq,self, pml/osc ucx, btl
# self, so nothing but rc_srq can carry traffic between ranks):
#
#   NetPIPE (Debian netpipe-openmpi: NPopenmpi, upstream name NPmpi), 2 ranks:
#     - integrity mode (-i): every message up to 4 MiB is checked byte for
#       byte by the receiver; every size must report "Integrity check passed";
#     - timing mode, 20 repeats per size up to 4 MiB: the job must finish and
#       write one positive throughput per size, the last one at 4 MiB.
#   HPC Challenge (hpcc) at 2 (1x2) and 4 (2x2) ranks with a small input
#     (N=1000) written into a temp dir: the summary section must be complete,
#     Success=1, the HPL residual check and every PTRANS residual check
#     PASSED, none FAILED, zero RandomAccess errors.
#
# For every job the transport's counters (UCX_RC_SRQ_COUNTERS_FILE) must show
# that every rank received over rc_srq. One PASS:/FAIL: line per workload.
#
# Time limits: 180 s a job, except hpcc 2x2. On a loaded machine its 4
# spinning ranks share the CPUs with everything else (beside 4 busy loops
# on 2 cores: hpcc 1x2 5-6 s, 2x2 136-281 s, its longest phase without
# output 66 s), so a limit on the whole job measures the load, not the
# transport. hpcc 2x2 is bound by its progress instead: it fails when
# hpccoutf.txt, which hpcc appends to at every phase, has not grown for 60
# times as long as the whole of hpcc 1x2 took on this machine now (at
# least 180 s), and in any case after 10 such stalls' time.
#
set -u
. "$(dirname "$0")/progress.sh"
run=${SRQ_RUN:?}
work=$(mktemp -d "${TMPDIR:-/tmp}/srq-workloads.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=rc_srq,self
fail=0

np_bin=""
for b in NPmpi NPopenmpi; do
    command -v "$b" >/dev/null && { np_bin=$b; break; }
done

mpi_opts=(--oversubscribe --mca pml ucx --mca osc ucx --mca btl self
          -x UCX_TLS -x UCX_RC_SRQ_COUNTERS_FILE)

# mpijob NAME NP DIR PROGRAM [ARGS...]: runs the job in DIR, for at most
# $limit seconds (default 180) or, when $progress names a file, until that
# file has not grown for $limit seconds (and at most 10 times that); leaves
# its output in $log, sets $rc, $secs (how long it ran), $why (a stall or
# the limit, when it was stopped) and $ranks (ranks that received over
# rc_srq)
mpijob() {
    local name=$1 np=$2 dir=$3; shift 3
    local counters="$work/counters.$name" t0=$SECONDS cap=${limit:-180}
    log="$work/$name.log" why=""
    rm -f "$counters".*
    [ -n "${progress:-}" ] && cap=$(( cap * 10 ))
    (cd "$dir" && UCX_RC_SRQ_COUNTERS_FILE="$counters.%p" \
        exec timeout -k 10 "$cap" "$run" mpirun -np "$np" "${mpi_opts[@]}" "$@") \
        >"$log" 2>&1 &
    if [ -n "${progress:-}" ]; then
        progress_wait $! "$dir/$progress" "$limit"; rc=$?
        why=$progress_why
    else
        wait $!; rc=$?
    fi
    secs=$(( SECONDS - t0 ))
    [ "$rc" = 124 ] && [ -z "$why" ] && why="the limit of $cap s"
    ranks=$(cat "$counters".* 2>/dev/null |
            awk '$6 > 0 {print $4}' | sort -u | wc -l)
}

# verdict NAME NP OK DETAIL: one PASS/FAIL line, with the job's log on failure
verdict() {
    local name=$1 np=$2 ok=$3 detail=$4
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: $name np=$np: job exit status $rc after ${secs} s${why:+ (stopped: $why)}"; ok=0
    elif [ "$ranks" -lt "$np" ]; then
        echo "FAIL: $name np=$np: only $ranks of $np ranks received over rc_srq"; ok=0
    elif [ "$ok" != 1 ]; then
        echo "FAIL: $name np=$np: $detail"
    else
        echo "PASS: $name np=$np ($detail; $ranks ranks received over rc_srq)"
        return
    fi
    tail -20 "$log"
    fail=1
}

# --- NetPIPE ---------------------------------------------------------------
if [ -z "$np_bin" ]; then
    echo "FAIL: netpipe: neither NPmpi nor NPopenmpi is installed (package netpipe-openmpi)"
    fail=1
else
    d="$work/netpipe-integrity"; mkdir -p "$d"
    mpijob netpipe-integrity 2 "$d" "$np_bin" -i -u 4194304 -n 5 -o "$d/np.out"
    sizes=$(grep -c 'bytes.*times -->' "$work/netpipe-integrity.log")
    passed=$(grep -c 'Integrity check passed' "$work/netpipe-integrity.log")
    ok=0
    [ "$sizes" -gt 10 ] && [ "$passed" -eq "$sizes" ] &&
        ! grep -qi 'integrity check failed' "$work/netpipe-integrity.log" && ok=1
    verdict "netpipe $np_bin -i" 2 $ok "$passed of $sizes sizes passed the integrity check"

    d="$work/netpipe"; mkdir -p "$d"
    mpijob netpipe 2 "$d" "$np_bin" -u 4194304 -n 20 -o "$d/np.out"
    # np.out: size, Mbps, seconds per message, one line per size
    summary=$(awk 'NF >= 3 { n++; if ($2 <= 0) bad++; last = $1; if ($2 > max) max = $2 }
                   END { printf "%d %d %d %.0f", n, bad, last, max }' "$d/np.out" 2>/dev/null)
    read -r n bad last max <<<"${summary:-0 0 0 0}"
    ok=0
    [ "$n" -gt 10 ] && [ "$bad" -eq 0 ] && [ "$last" -ge 4194304 ] && ok=1
    verdict "netpipe $np_bin" 2 $ok "$n sizes 1 B..$last B, all with a throughput, peak $max Mbps"
fi

# --- HPC Challenge ---------------------------------------------------------
# hpccinf P Q: a small HPL/PTRANS input for a P x Q process grid
hpccinf() {
    cat <<EOF
HPLinpack benchmark input file
ucx-srq test/workloads.sh: small problem, finishes in seconds
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
1000         Ns
1            # of NBs
64           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
$1           Ps
$2           Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                               Number of additional problem sizes for PTRANS
1200 10000 30000                values of N
0                               number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64        values of NB
EOF
}

if ! command -v hpcc >/dev/null; then
    echo "FAIL: hpcc is not installed (package hpcc)"
    fail=1
else
    limit=180 progress=""
    for grid in "1 2" "2 2"; do
        read -r p q <<<"$grid"
        np=$(( p * q ))
        d="$work/hpcc.$np"; mkdir -p "$d"
        hpccinf "$p" "$q" >"$d/hpccinf.txt"
        mpijob "hpcc.$np" "$np" "$d" hpcc
        # the next grid's stall bound: from what this one took now
        [ "$rc" = 0 ] && limit=$(( secs * 60 > 180 ? secs * 60 : 180 ))
        progress=hpccoutf.txt
        o="$d/hpccoutf.txt"
        ok=0 detail="no output file"
        if [ -f "$o" ]; then
            summ=$(sed -n '/^Begin of Summary section/,/^End of Summary section/p' "$o")
            hpl_pass=$(grep -c '^||Ax-b||.*PASSED' "$o")
            ptrans_pass=$(grep -c '^WALL .* PASSED' "$o")
            failed=$(grep -c 'FAILED' "$o")
            detail="summary incomplete"
            if grep -q '^End of Summary section' <<<"$summ" &&
               grep -q '^Success=1$' <<<"$summ" &&
               grep -q "^CommWorldProcs=$np\$" <<<"$summ" &&
               grep -q '^MPIRandomAccess_Errors=0$' <<<"$summ"; then
                detail="HPL residual PASSED x$hpl_pass, PTRANS PASSED x$ptrans_pass, FAILED x$failed"
                [ "$hpl_pass" -ge 1 ] && [ "$ptrans_pass" -ge 1 ] && [ "$failed" -eq 0 ] && ok=1
                detail="$detail, $(grep -E '^HPL_Tflops=' <<<"$summ"), ${secs} s"
            fi
        fi
        verdict "hpcc ${p}x${q}" "$np" $ok "$detail"
    done
fi

exit $fail
