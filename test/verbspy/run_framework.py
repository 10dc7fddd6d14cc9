# SPDX-License-Identifier: BSD-3-Clause
"""test/verbs_py.sh, the framework half: the generated classes where
`srq-verbs-py --into` put them, in the stand-in of the rdma-fuzzing
framework's lib/verbs.py (verbs_standin.py), used the way that framework
uses its classes (read from its scaffolds, mutator, generators and summary
printer): constructors with its keywords and positions, the attributes and
value types it reads, MUTABLE_FIELDS as its mutator walks them, its
summary printer's reading of a class; then a program built from such
calls, and a program built from a trace, both through the stand-in of its
generator (fuzzing_api.render). Writes OUT/fw_prog.c and OUT/trace_prog.c
for the shell half to compile and run on soft0.

    run_framework.py VERBS_PY OUT_DIR TRACE
"""
import importlib
import os
import sys
import traceback

verbs_py, out, trace = sys.argv[1:4]
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.abspath(verbs_py)), here]
fail = 0


def result(name, ok, detail=""):
    global fail
    print("%s: verbs_py_fw_%s%s" % ("PASS" if ok else "FAIL", name, ": " + detail if detail else ""))
    fail |= not ok


api = importlib.import_module("fuzzing_api")
V = importlib.import_module(os.path.splitext(os.path.basename(verbs_py))[0])
classes = V.SRQ_VERB_CLASSES

# ---- in place: every generated class under its name, the file's own rest kept
displaced = [c.__name__ for c in classes.values() if getattr(V, c.__name__) is not c]
result("in_place", not displaced and V.AllocPD.CONTRACT_SOURCE == "ibv_alloc_pd" and
       V.CreateQP.CONTRACT_SOURCE == "ibv_create_qp" and V.ReRegMR.CONTRACT_SOURCE == "ibv_rereg_mr"
       and not hasattr(V, "ReregMR"),
       "%d classes in place%s" % (len(classes) - len(displaced),
                                  ", displaced: " + " ".join(displaced) if displaced else ""))
result("file_kept", hasattr(V, "QueryGIDEx") and V.mask_fields_to_c(["A", "B"]) == "A | B" and
       "ibv_alloc_pd" in V.VERB_FACTORY, "its helper, its other classes, its data")

# ---- the framework's calls, as its scaffolds and mutator make them
ACCESS = "IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ"
CALLS = [
    lambda: V.AllocPD(pd="pd0"),
    lambda: V.CreateCompChannel(channel="ch0"),
    lambda: V.CreateCQ(cq="cq0"),
    lambda: V.CreateCQ(cqe=16, channel="ch0", cq="cq1"),
    lambda: V.ReqNotifyCQ(cq="cq1", solicited_only=0),
    lambda: V.ResizeCQ(cq="cq1", cqe=64),
    lambda: V.AllocDM(dm="dm0", attr_obj=api.IbvAllocDmAttr(length=4096, log_align_req=12)),
    lambda: V.MemcpyToDM(dm="dm0", dm_offset=0, host="bufs[3]", length=64),
    lambda: V.CreateSRQ(pd="pd0", srq="srq0",
                        srq_init_obj=api.IbvSrqInitAttr(attr=api.IbvSrqAttr(max_wr=16, max_sge=1))),
    lambda: V.ModifySRQ("srq0", "srq_attr_0", api.IbvSrqAttr(srq_limit=4), "IBV_SRQ_LIMIT"),
    lambda: V.QuerySRQ(srq="srq0"),
    lambda: V.GetSRQNum(srq="srq0", srq_num_var="srqn0"),
    lambda: V.RegMR(pd="pd0", mr="mr0", addr="bufs[0]", length=1024, access=ACCESS),
    lambda: V.ReRegMR(mr="mr0", flags="IBV_REREG_MR_CHANGE_ACCESS", access=ACCESS),
    lambda: V.AdviseMR(pd="pd0", advice="IBV_ADVISE_MR_ADVICE_PREFETCH", flags=0,
                       sg_list=[api.IbvSge(mr="mr0", length=64)], num_sge=1),
    lambda: V.CreateQP(pd="pd0", qp="qp0", remote_qp="srv0", init_attr_obj=api.IbvQPInitAttr(
        send_cq="cq0", recv_cq="cq0", srq="srq0", qp_type="IBV_QPT_RC", sq_sig_all=1,
        cap=api.IbvQPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1))),
    lambda: V.ModifyQP(qp="qp0", attr_mask="IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | "
                       "IBV_QP_ACCESS_FLAGS", attr_obj=api.IbvQPAttr(
                           qp_state="IBV_QPS_INIT", pkey_index=0, port_num=1,
                           qp_access_flags="IBV_ACCESS_REMOTE_WRITE")),
    lambda: V.ModifyQP(qp="qp0", attr_mask="IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | "
                       "IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER",
                       attr_obj=api.IbvQPAttr(
                           qp_state="IBV_QPS_RTR", path_mtu="IBV_MTU_1024", dest_qp_num="qp0->qp_num",
                           rq_psn=0, max_dest_rd_atomic=1, min_rnr_timer=12,
                           ah_attr=api.IbvAHAttr(dlid="port_attr.lid", port_num=1))),
    lambda: V.ModifyQP(qp="qp0", attr_mask="IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | "
                       "IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC",
                       attr_obj=api.IbvQPAttr(qp_state="IBV_QPS_RTS", timeout=14, retry_cnt=7,
                                              rnr_retry=7, sq_psn=0, max_rd_atomic=1)),
    lambda: V.QueryQP(qp="qp0", attr_mask="IBV_QP_STATE"),
    lambda: V.AllocMW(pd="pd0", mw="mw0", mw_type="IBV_MW_TYPE_1"),
    lambda: V.CreateAH(pd="pd0", ah="ah0", attr_obj=api.IbvAHAttr(dlid="port_attr.lid", port_num=1)),
    lambda: V.PostSRQRecv(srq="srq0", wr_obj=api.IbvRecvWR(
        wr_id=1, num_sge=1, sg_list=[api.IbvSge(mr="mr0", length=64)])),
    lambda: V.PostSend(qp="qp0", wr_obj=api.IbvSendWR(
        wr_id=2, num_sge=1, opcode="IBV_WR_SEND", send_flags="IBV_SEND_SIGNALED",
        sg_list=[api.IbvSge(mr="mr0", length=64)])),
    "CHECK",
    lambda: V.PollCQ(cq="cq0"),
    lambda: V.DestroyQP(qp="qp0"),
    lambda: V.DestroyAH(ah="ah0"),
    lambda: V.DeallocMW(mw="mw0"),
    lambda: V.DestroySRQ(srq="srq0"),
    lambda: V.DeregMR(mr="mr0"),
    lambda: V.FreeDM(dm="dm0"),
    lambda: V.DestroyCQ(cq="cq1"),
    lambda: V.DestroyCQ(cq="cq0"),
    lambda: V.DestroyCompChannel(channel="ch0"),
    lambda: V.DeallocPD(pd="pd0"),
]


class Check(api.VerbCall):
    """The test's own C: the send and its receive, completed on cq0"""

    def apply(self, ctx):
        ctx.alloc_variable("check_wc", "struct ibv_wc", None, "[2]")

    def generate_c(self, ctx):
        return ("    {\n        int got = 0, ok = 0;\n        long t0 = (long)time(NULL);\n"
                "        while (got < 2 && (long)time(NULL) - t0 < 10) {\n"
                "            int n = ibv_poll_cq(cq0, 2 - got, check_wc + got);\n"
                "            got += n > 0 ? n : 0;\n        }\n"
                "        for (int i = 0; i < got; ++i) {\n"
                "            ok += check_wc[i].status == IBV_WC_SUCCESS;\n        }\n"
                "        printf(\"framework_style: %d completions, %d successful\\n\", got, ok);\n"
                "    }\n")


calls, made = [], 0
for make in CALLS:
    try:
        calls.append(Check() if make == "CHECK" else make())
        made += 1
    except Exception as e:
        result("constructor", False, "%s: %s" % (type(e).__name__, e))
result("constructors", made == len(CALLS), "%d of %d calls made with the framework's keywords"
       % (made, len(CALLS)))


def refused(make):
    try:
        make()
    except ValueError:
        return True
    return False


result("required_names", refused(lambda: V.AllocPD()) and refused(lambda: V.CreateQP(pd="pd0")),
       "AllocPD() and CreateQP without qp refused, as the framework refuses them")

# what its generators, mutator and to_dict read, and the value types its
# mutator moves
by = {type(c).__name__ + ("_%d" % i): c for i, c in enumerate(calls)}
qp = next(c for c in calls if type(c).__name__ == "CreateQP")
mr = next(c for c in calls if type(c).__name__ == "RegMR")
mq = next(c for c in calls if type(c).__name__ == "ModifyQP")
ms = next(c for c in calls if type(c).__name__ == "ModifySRQ")
ps = next(c for c in calls if type(c).__name__ == "PostSend")
attrs_ok = (isinstance(qp.remote_qp, api.LocalResourceValue) and str(qp.remote_qp) == "srv0" and
            isinstance(qp.init_attr_obj, api.IbvQPInitAttr) and isinstance(qp.pd, api.ResourceValue) and
            isinstance(mr.addr, api.LocalResourceValue) and mr.addr.resource_type == "buf" and
            isinstance(mr.access, api.FlagValue) and mr.access.flag_type == "IBV_ACCESS_FLAGS_ENUM" and
            isinstance(mq.attr_mask, api.FlagValue) and mq.attr_mask.flag_type == "IBV_QP_ATTR_MASK_ENUM" and
            isinstance(mq.attr_obj, api.IbvQPAttr) and str(ms.attr_var) == "srq_attr_0" and
            isinstance(ms.attr_obj, api.IbvSrqAttr) and isinstance(ps.wr_obj, api.IbvSendWR))
result("attributes", attrs_ok, "remote_qp, init_attr_obj, addr (buf), access and attr_mask (flags), "
       "attr_var, attr_obj, wr_obj")

# the framework's MUTABLE_FIELDS, first, as its mutator walks them
FRAMEWORK_MUTABLE = {
    "AllocPD": ["pd"], "CreateCQ": ["cqe", "cq_context", "channel", "comp_vector", "cq"],
    "CreateQP": ["pd", "qp", "init_attr_obj", "remote_qp"], "CreateSRQ": ["pd", "srq", "srq_init_obj"],
    "ModifyQP": ["qp", "attr_obj", "attr_mask"], "ModifySRQ": ["srq", "attr_var", "attr_obj", "attr_mask"],
    "PostSend": ["qp", "wr_obj"], "PostSRQRecv": ["srq", "wr_obj", "wr_var", "bad_wr_var"],
    "PostRecv": ["qp", "wr_obj", "wr_var", "bad_wr_var"],
    "RegMR": ["pd", "mr", "addr", "length", "access"], "PollCQ": ["cq"], "DestroyQP": ["qp"],
    "ReRegMR": ["mr", "flags", "pd", "addr", "length", "access"], "AllocDM": ["dm", "attr_obj", "attr_var"],
}
wrong = [n for n, f in FRAMEWORK_MUTABLE.items() if getattr(V, n).MUTABLE_FIELDS[:len(f)] != f]
result("mutable_fields", not wrong, "the framework's lists first%s" % (": not so for " + " ".join(wrong)
                                                                       if wrong else ""))
d = qp.to_dict()
result("to_dict", d.get("verb") == "CreateQP" and all(k in d for k in ("pd", "qp", "init_attr_obj", "remote_qp")),
       " ".join(sorted(d)))


def walk(obj, prefix="", depth=0):
    """its mutator's walk (fuzz_mutate._enumerate_mutable_paths): an
    object's MUTABLE_FIELDS, into what is no value; a field that is None
    is a leaf it would call .mutate() on (its fuzz loop stopped on one)"""
    outp = []
    if obj is None or isinstance(obj, api.Value) or depth > 8:
        return outp
    for name in getattr(obj, "MUTABLE_FIELDS", None) or []:
        if not hasattr(obj, name):
            continue
        val = getattr(obj, name)
        if depth == 0 and val is None:
            raise ValueError("%s.%s is None: the mutator would call None.mutate()" % (type(obj).__name__, name))
        outp.append(prefix + name)
        outp += walk(val.value if isinstance(val, api.OptionalValue) else val, prefix + name + ".", depth + 1)
    return outp


def summarize(obj, depth=0):
    """its summary printer (debug_dump): the class's MUTABLE_FIELDS or
    FIELD_LIST, iterated, else the object's __dict__"""
    if obj is None or isinstance(obj, (str, int)) or depth > 8:
        return str(obj)
    if isinstance(obj, api.Value):
        return str(obj.value)
    fields = getattr(obj.__class__, "MUTABLE_FIELDS", None) or getattr(obj.__class__, "FIELD_LIST", None)
    if not fields:
        fields = [k for k in getattr(obj, "__dict__", {}) if not k.startswith("_") and k != "tracker"]
    return "%s{%s}" % (type(obj).__name__, ", ".join("%s=%s" % (f, summarize(getattr(obj, f, None), depth + 1))
                                                     for f in fields))


traced = [V.CreateSRQ.from_trace("ibv_create_srq pd=pd0 srq_init_attr.attr.max_wr=8 "
                                 "srq_init_attr.attr.max_sge=1 ret=srq1"),
          V.ModifyQP.from_trace("ibv_modify_qp qp=qp1 attr.qp_state=IBV_QPS_INIT attr.port_num=1 "
                                "attr_mask=IBV_QP_STATE|IBV_QP_PORT ret=0"),
          V.PostSend.from_trace("ibv_post_send qp=qp1 wr[0].wr_id=0x1 wr[0].opcode=IBV_WR_RDMA_WRITE "
                                "wr[0].wr.rdma.remote_addr=buf0+64 wr[0].wr.rdma.rkey=mr0.rkey ret=0")]
try:
    paths = sum((walk(c) for c in calls + traced), [])
    texts = [summarize(c) for c in calls + traced]
    result("mutator_and_summary", "srq_init_obj.attr.max_wr" in paths and "srq_init_obj" in texts[-3],
           "%d mutable paths, %d summaries" % (len(paths), len(texts)))
except Exception as e:
    result("mutator_and_summary", False, "%s: %s" % (type(e).__name__, traceback.format_exc().splitlines()[-3]))

# a CQ's polls share one wc array, as long as the longest asks; a count the
# mutator moved to 0 (or past any array) is no error
try:
    ctx = api.CodeGenContext()
    ctx.contracts.put("cq", "cq9", api.State.ALLOCATED)
    ctx.tracker.create("cq", "cq9")
    polls = [V.PollCQ(cq="cq9", num_entries=n) for n in (1, 15, 3)]
    polls[2].num_entries.value = 0
    for c in polls:
        c.apply(ctx)
    after3 = ctx.variables["wc_cq9"][2]
    c = V.PollCQ(cq="cq9")
    c.num_entries.value = 1 << 40
    c.apply(ctx)
    code = c.generate_c(ctx)
    result("poll_arrays", after3 == "[15]" and ctx.variables["wc_cq9"][2] == "[4096]" and
           "ibv_poll_cq(cq9, 4096 - " in code, "wc_cq9%s after polls of 1, 15 and 0, %s after one of 2^40"
           % (after3, ctx.variables["wc_cq9"][2]))
except Exception as e:
    result("poll_arrays", False, "%s: %s" % (type(e).__name__, e))

TEMPLATE = """/* the rdma-fuzzing framework's client template, as much of it as the
 * generated code uses: includes, IF_OK_PTR, the variables, main; C++ */
#include <infiniband/verbs.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define IF_OK_PTR(p, ...) \\
    do { \\
        if ((p) != NULL) { \\
            __VA_ARGS__ \\
        } else { \\
            fprintf(stderr, "[skip] missing resource: %%s\\n", #p); \\
        } \\
    } while (0)

%s

int main(void)
{
%s
    printf("%s: the end\\n");
    return 0;
}
"""


def program(name, verbs):
    variables, body = api.render(verbs, V.OpenDevice)
    with open(os.path.join(out, name + ".c"), "w") as f:
        f.write(TEMPLATE % (variables, body, name))
    return body


try:
    body = program("fw_prog", calls)
    result("generate", "ibv_open_device(dev_list[0])" in body and "(contract ibv_create_qp.json)" in body,
           "%d calls, the prelude's OpenDevice(\"dev_list\") opens dev_list[0]" % len(calls))
except Exception as e:
    result("generate", False, "%s: %s" % (type(e).__name__, traceback.format_exc()))

# ---- a trace through from_trace and the generator
try:
    with open(trace) as f:
        tcalls = V.srq_calls_from_trace(f.read())
    program("trace_prog", tcalls)
    result("trace_to_program", True, "%d calls" % len(tcalls))
except Exception as e:
    result("trace_to_program", False, "%s: %s" % (type(e).__name__, traceback.format_exc()))
sys.exit(1 if fail else 0)
