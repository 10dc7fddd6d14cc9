# SPDX-License-Identifier: BSD-3-Clause
"""A verbs trace (SRQ_VERBS_TRACE) as what two runs of one program share:
the calls, one per line, then each CQ's completions, per work queue in
order (QPs sharing a CQ interleave as they will, and a poll returns what
has arrived by then). test/verbs_replay.sh and test/verbs_py.sh compare a
trace with the trace of the program made from it.

    trace_norm.py [--prelude-open] TRACE

ibv_get/ack_async_event are left out: libibverbs serves them from the
async fd, the provider's trace never sees them. --prelude-open: the
program opened a device of its own before the trace's first (the
rdma-fuzzing framework's generator does): that open is left out and the
contexts after it renamed one down (a port's LID and GID are named after
the first context, which all contexts share).
"""
import re
import sys

prelude = "--prelude-open" in sys.argv
path = [a for a in sys.argv[1:] if a != "--prelude-open"][0]
calls, wcs, dropped = [], {}, False
for line in open(path):
    # an address in no traced buffer is the process's own: not compared
    line = re.sub(r"(addr=)0x[0-9a-f]+", r"\1ADDR", line.rstrip("\n"))
    # the limit an SRQ reports depends on how many messages landed by the
    # query, so on when ACKs and retries ran (timers, the progress thread):
    # under load a replay saw it fired where its run had not (1 run in 6)
    line = re.sub(r"(out\.srq_attr\.srq_limit=)\d+", r"\1N", line)
    verb = line.split(" ", 1)[0]
    if not line or line.startswith("#") or verb in ("ibv_get_async_event", "ibv_ack_async_event"):
        continue
    if prelude and verb == "ibv_open_device" and not dropped:
        dropped = True          # the generator's own open
        continue
    if dropped:
        line = re.sub(r"\bctx(\d+)(?!\.port)", lambda m: "ctx%d" % (int(m.group(1)) - 1), line)
    if verb != "ibv_poll_cq":
        calls.append(line)
        continue
    cq = re.search(r" cq=(\S+)", line).group(1)
    entries = {}
    for m in re.finditer(r" out\.wc\[(\d+)\]\.(\S+)", line):
        entries.setdefault(int(m.group(1)), []).append(m.group(2))
    # in order per work queue; QPs sharing a CQ interleave as they will
    for i in sorted(entries):
        qp = [f for f in entries[i] if f.startswith("qp_num=")]
        wcs.setdefault((cq, " ".join(qp)), []).append(" ".join(entries[i]))
for c in calls:
    print(c)
for cq, qp in sorted(wcs):
    for w in wcs[(cq, qp)]:
        print("%s: %s" % (cq, w))
