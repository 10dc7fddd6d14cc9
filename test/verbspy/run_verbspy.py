# SPDX-License-Identifier: BSD-3-Clause
"""test/verbs_py.sh, Python half: the classes `srq_contracts verbs-py`
prints, pasted into a verbs.py over the stand-in API (fuzzing_api.py),
imported, built from trace lines, applied, and their generate_c() put
into one C program that makes every call on soft0 and checks what the
calls did. Prints one PASS/FAIL line per check and the counts; writes
OUT/prog.c for the shell half to compile and run.

    run_verbspy.py GENERATED.py CONTRACTS_DIR OUT_DIR
"""
import importlib
import os
import sys

generated_py, contracts_dir, out = sys.argv[1:4]
here = os.path.dirname(os.path.abspath(__file__))
fail = 0


def result(name, ok, detail=""):
    global fail
    print("%s: verbs_py_%s%s" % ("PASS" if ok else "FAIL", name, ": " + detail if detail else ""))
    fail |= not ok


# ---- the generated classes (srq-verbs-py's output), pasted into a verbs.py
with open(generated_py) as f:
    text = f.read()
n_contracts = len([f for f in os.listdir(contracts_dir) if f.startswith("ibv_") and f.endswith(".json")])
n_generated = len([l for l in text.splitlines() if l.startswith("class ") and "(VerbCall)" in l])
result("generate", n_generated == n_contracts, "%d classes from %d contracts" % (n_generated, n_contracts))
with open(os.path.join(out, "verbs.py"), "w") as f:
    f.write("from fuzzing_api import *  # what lib/verbs.py imports\n\n" + text)
sys.path[:0] = [out, here]
verbs = importlib.import_module("verbs")
classes = verbs.SRQ_VERB_CLASSES
api = importlib.import_module("fuzzing_api")
imported = [c for c in classes.values() if issubclass(c, api.VerbCall) and
            all(hasattr(c, m) for m in ("MUTABLE_FIELDS", "EXPORT_FIELDS", "CONTRACT", "FAILURES",
                                        "apply", "from_trace", "generate_c", "to_dict", "__doc__"))]
result("import", len(imported) == n_generated,
       "%d classes imported with every member" % len(imported))

# ---- the scenario: every verb once at least, one trace line each
# qp0 takes its receives from srq0; qp1 (its own RQ) sends to it
ACC = "IBV_QP_STATE|IBV_QP_PKEY_INDEX|IBV_QP_PORT|IBV_QP_ACCESS_FLAGS"
RTR = "IBV_QP_STATE|IBV_QP_AV|IBV_QP_PATH_MTU|IBV_QP_DEST_QPN|IBV_QP_RQ_PSN|" \
      "IBV_QP_MAX_DEST_RD_ATOMIC|IBV_QP_MIN_RNR_TIMER"
RTS = "IBV_QP_STATE|IBV_QP_TIMEOUT|IBV_QP_RETRY_CNT|IBV_QP_RNR_RETRY|IBV_QP_SQ_PSN|" \
      "IBV_QP_MAX_QP_RD_ATOMIC"


def sge(w, j, off, extra=""):
    return ("wr[%d].sg_list[%d].mr=mr0 wr[%d].sg_list[%d].addr=bufs[0]+%d "
            "wr[%d].sg_list[%d].length=64 %s" % (w, j, w, j, off, w, j, extra))


SCENARIO = [
    ("OpenDevice", "device=dev_list[0] context=ctx0"),
    ("AllocPD", "context=ctx0 pd=pd0"),
    ("RegMR", "pd=pd0 mr=mr0 addr=bufs length=16384 "
              "access=IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_WRITE|IBV_ACCESS_MW_BIND"),
    ("AllocMW", "pd=pd0 mw=mw0 type=IBV_MW_TYPE_1"),
    # device memory: a copy in and out, a zero-based region on it (its
    # EBUSY while the region lives is test_dm.cc's: the model takes a
    # failed free as a free)
    ("AllocDM", "context=ctx0 dm=dm0 attr.length=4096 attr.log_align_req=0 attr.comp_mask=0"),
    ("MemcpyToDM", "dm=dm0 dm_offset=64 host_addr=bufs[1] length=64"),
    ("MemcpyFromDM", "host_addr=bufs[2] dm=dm0 dm_offset=64 length=64"),
    ("RegDMMR", "pd=pd0 dm=dm0 mr=mr7 dm_offset=0 length=4096 "
                "access=IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_ZERO_BASED"),
    ("DeregMR", "mr=mr7"),
    ("FreeDM", "dm=dm0"),
    # a thread domain and a parent domain on pd0 (what is made in one is
    # test_parent_domain.cc's and the fuzzer's)
    ("AllocTD", "context=ctx0 td=td0 init_attr.comp_mask=0"),
    ("AllocParentDomain", "context=ctx0 pd=pd1 attr.pd=pd0 attr.td=td0 attr.comp_mask=0"),
    ("DeallocPD", "pd=pd1"),
    ("DeallocTD", "td=td0"),
    ("CreateCompChannel", "context=ctx0 channel=ch0"),
    ("CreateCQ", "context=ctx0 cq=cq0 cqe=16 cq_context=NULL channel=ch0 comp_vector=0"),
    ("CreateCQ", "context=ctx0 cq=cq1 cqe=16"),
    ("ResizeCQ", "cq=cq1 cqe=32"),
    ("CreateCQEx", "context=ctx0 cq=cq2 cq_attr.cqe=8 cq_attr.wc_flags=0x7f"),
    # an XRC domain (private: fd -1, O_CREAT) and an XRC SRQ in it, its
    # number, both gone again (traffic through them is test_xrc.cc's)
    ("OpenXRCD", "context=ctx0 xrcd=xrcd0 xrcd_init_attr.comp_mask=0x3 "
                 "xrcd_init_attr.fd=-1 xrcd_init_attr.oflags=0x40"),
    ("CreateSRQEx", "context=ctx0 srq=srq1 srq_init_attr_ex.attr.max_wr=4 "
                    "srq_init_attr_ex.attr.max_sge=1 srq_init_attr_ex.comp_mask=0xf "
                    "srq_init_attr_ex.srq_type=IBV_SRQT_XRC srq_init_attr_ex.pd=pd0 "
                    "srq_init_attr_ex.xrcd=xrcd0 srq_init_attr_ex.cq=cq2"),
    ("GetSRQNum", "srq=srq1"),
    ("DestroySRQ", "srq=srq1"),
    ("CloseXRCD", "xrcd=xrcd0"),
    # a TM SRQ: a tag added, then a TAG_DEL of a handle no tag can have
    # (EINVAL there, the add done; matching is test_tm.cc's)
    ("CreateSRQEx", "context=ctx0 srq=srq2 srq_init_attr_ex.attr.max_wr=4 "
                    "srq_init_attr_ex.attr.max_sge=1 srq_init_attr_ex.comp_mask=0x1b "
                    "srq_init_attr_ex.srq_type=IBV_SRQT_TM srq_init_attr_ex.pd=pd0 "
                    "srq_init_attr_ex.cq=cq2 srq_init_attr_ex.tm_cap.max_num_tags=4 "
                    "srq_init_attr_ex.tm_cap.max_ops=4"),
    ("PostSRQOps", "srq=srq2 wr[0].wr_id=0x51 wr[0].opcode=IBV_WR_TAG_ADD "
                   "wr[0].flags=IBV_OPS_SIGNALED wr[0].tm.add.recv_wr_id=0x52 "
                   "wr[0].tm.add.tag=0x7 wr[0].tm.add.mask=0xff "
                   "wr[0].tm.add.sg_list[0].mr=mr0 wr[0].tm.add.sg_list[0].addr=bufs[0]+4096 "
                   "wr[0].tm.add.sg_list[0].length=64 wr[1].wr_id=0x53 "
                   "wr[1].opcode=IBV_WR_TAG_DEL wr[1].tm.handle=99 "
                   "wr_var=ops_srq2 bad_wr_var=bad_ops_srq2 ret_var=ret_ops_srq2"),
    ("DestroySRQ", "srq=srq2"),
    # mr0 keeps what it had (a window is bound to it below) and gains remote read
    ("ReRegMR", "mr=mr0 flags=IBV_REREG_MR_CHANGE_ACCESS "
                "access=IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_WRITE|IBV_ACCESS_REMOTE_READ|"
                "IBV_ACCESS_MW_BIND"),
    # a region remote accesses address from an IOVA of its own
    ("RegMRIova", "pd=pd0 mr=mr9 addr=bufs length=4096 iova=0x1000 "
                  "access=IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_WRITE"),
    ("DeregMR", "mr=mr9"),
    # an on-demand paging region, prefetched for write
    ("RegMR", "pd=pd0 mr=mr8 addr=bufs length=4096 "
              "access=IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_ON_DEMAND"),
    ("AdviseMR", "pd=pd0 advice=IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE flags=IBV_ADVISE_MR_FLAG_FLUSH "
                 "sg_list.lkey=mr8.lkey sg_list.addr=bufs[0]+0 sg_list.length=4096 num_sge=1"),
    ("DeregMR", "mr=mr8"),
    ("CreateSRQ", "pd=pd0 srq=srq0 srq_init_attr.attr.max_wr=8 srq_init_attr.attr.max_sge=1"),
    ("QuerySRQ", "srq=srq0"),
    ("CreateQP", "pd=pd0 qp=qp0 qp_init_attr.send_cq=cq1 qp_init_attr.recv_cq=cq0 qp_init_attr.srq=srq0 "
                 "qp_init_attr.qp_type=IBV_QPT_RC qp_init_attr.cap.max_send_wr=4 qp_init_attr.cap.max_send_sge=1"),
    ("CreateQP", "pd=pd0 qp=qp1 qp_init_attr.send_cq=cq1 qp_init_attr.recv_cq=cq1 qp_init_attr.qp_type=IBV_QPT_RC "
                 "qp_init_attr.cap.max_send_wr=4 qp_init_attr.cap.max_recv_wr=4 qp_init_attr.cap.max_send_sge=1 "
                 "qp_init_attr.cap.max_recv_sge=1"),
    ("CreateQPEx", "context=ctx0 qp=qp2 qp_init_attr_ex.send_cq=cq1 qp_init_attr_ex.recv_cq=cq1 "
                   "qp_init_attr_ex.qp_type=IBV_QPT_RC qp_init_attr_ex.cap.max_send_wr=4 "
                   "qp_init_attr_ex.cap.max_recv_wr=4 qp_init_attr_ex.cap.max_send_sge=1 "
                   "qp_init_attr_ex.cap.max_recv_sge=1 "
                   "qp_init_attr_ex.comp_mask=IBV_QP_INIT_ATTR_PD|IBV_QP_INIT_ATTR_SEND_OPS_FLAGS "
                   "qp_init_attr_ex.pd=pd0 qp_init_attr_ex.send_ops_flags=IBV_QP_EX_WITH_SEND"),
]
for qp, peer in (("qp0", "qp1"), ("qp1", "qp0")):
    SCENARIO.append(("ModifyQP", "qp=%s attr.qp_state=IBV_QPS_INIT attr.pkey_index=0 attr.port_num=1 "
                                 "attr.qp_access_flags=IBV_ACCESS_REMOTE_WRITE attr_mask=%s attr_var=attr_%s"
                                 % (qp, ACC, qp)))
SCENARIO.append(("PostRecv", "qp=qp1 wr[0].wr_id=0x100 %s" % sge(0, 0, 2048)))
for qp, peer in (("qp0", "qp1"), ("qp1", "qp0")):
    SCENARIO.append(("ModifyQP", "qp=%s attr.qp_state=IBV_QPS_RTR attr.path_mtu=IBV_MTU_1024 "
                                 "attr.dest_qp_num=%s.qp_num attr.rq_psn=0 attr.max_dest_rd_atomic=1 "
                                 "attr.min_rnr_timer=12 attr.ah_attr.dlid=port_attr.lid attr.ah_attr.port_num=1 "
                                 "attr_mask=%s attr_var=attr_%s" % (qp, peer, RTR, qp)))
for qp in ("qp0", "qp1"):
    SCENARIO.append(("ModifyQP", "qp=%s attr.qp_state=IBV_QPS_RTS attr.timeout=14 attr.retry_cnt=7 "
                                 "attr.rnr_retry=7 attr.sq_psn=0 attr.max_rd_atomic=1 attr_mask=%s "
                                 "attr_var=attr_%s" % (qp, RTS, qp)))
SCENARIO += [
    ("QueryQP", "qp=qp0 attr_mask=IBV_QP_STATE"),
    # unsignaled: its success makes no completion on cq1
    ("BindMW", "qp=qp1 mw=mw0 mw_bind.wr_id=0x30 mw_bind.send_flags=0 mw_bind.bind_info.mr=mr0 "
               "mw_bind.bind_info.addr=bufs[0]+8192 mw_bind.bind_info.length=64 "
               "mw_bind.bind_info.mw_access_flags=IBV_ACCESS_REMOTE_WRITE"),
    # three WRs, the second with a bad lkey: a completion-time failure
    ("PostSRQRecv", "srq=srq0 wr[0].wr_id=1 %s wr[1].wr_id=2 %s wr[2].wr_id=3 %s"
     % (sge(0, 0, 0), sge(1, 0, 64, "wr[1].sg_list[0].lkey=0xdead"), sge(2, 0, 128))),
    # three WRs, the second with more SGEs than the SRQ's max_sge: the call fails there
    ("PostSRQRecv", "srq=srq0 wr[0].wr_id=4 %s wr[1].wr_id=5 %s %s wr[2].wr_id=6 %s "
                    "wr_var=wr2_srq0 bad_wr_var=bad2_srq0 ret_var=ret2_srq0"
     % (sge(0, 0, 192), sge(1, 0, 256), sge(1, 1, 320), sge(2, 0, 384))),
    ("ModifySRQ", "srq=srq0 srq_attr.srq_limit=3 srq_attr_mask=IBV_SRQ_LIMIT"),
    ("ReqNotifyCQ", "cq=cq0 solicited_only=0"),
    ("PostSend", "qp=qp1 wr[0].wr_id=0x11 wr[0].opcode=IBV_WR_SEND wr[0].send_flags=IBV_SEND_SIGNALED "
                 "wr[0].sg_list[0].mr=mr0 wr[0].sg_list[0].addr=bufs[1] wr[0].sg_list[0].length=32 "
                 "wr[1].wr_id=0x12 wr[1].opcode=IBV_WR_SEND wr[1].send_flags=IBV_SEND_SIGNALED "
                 "wr[1].sg_list[0].mr=mr0 wr[1].sg_list[0].addr=bufs[1]+64 wr[1].sg_list[0].length=32"),
    ("GetCQEvent", "channel=ch0 cq_var=ev_cq cq_context_var=ev_cq_context"),
    ("AckCQEvents", "cq=cq0 nevents=1"),
    ("PollCQ", "cq=cq0 num_entries=4"),
    ("GetAsyncEvent", "context=ctx0 event_var=async_event"),
    ("AckAsyncEvent", "event_var=async_event"),
    ("PollCQ", "cq=cq1 num_entries=4"),
    ("CreateAH", "pd=pd0 ah=ah0 attr.dlid=port_attr.lid attr.port_num=1"),
    ("DestroyAH", "ah=ah0"),
    ("DeallocMW", "mw=mw0"),
    ("DestroyQP", "qp=qp2"),
    ("DestroyQP", "qp=qp0"),
    ("DestroyQP", "qp=qp1"),
    ("DestroySRQ", "srq=srq0"),
    ("DestroyCQ", "cq=cq0"),
    ("DestroyCQ", "cq=cq1"),
    ("DestroyCQ", "cq=cq2"),
    ("DestroyCompChannel", "channel=ch0"),
    ("DeregMR", "mr=mr0"),
    ("DeallocPD", "pd=pd0"),
    ("CloseDevice", "context=ctx0"),
]

# what the program checks after a step (C; the call's variables by name)
AFTER = {
    "OpenDevice": "CHECK(ctx0 != NULL, \"soft0 opened\");\n"
                  "    CHECK(ibv_query_port(ctx0, 1, &port_attr) == 0, \"port 1 queried\");",
    "QuerySRQ": "CHECK(ret_query_srq_srq0 == 0 && srq_attr_srq0.max_wr >= 8 && srq_attr_srq0.max_sge >= 1,"
                " \"the SRQ has room for 8 WRs\");\n    srq_room = (int)srq_attr_srq0.max_wr;",
    "QueryQP": "CHECK(ret_query_qp_qp0 == 0 && attr_qp0.qp_state == IBV_QPS_RTS, \"qp0 in RTS\");",
    "PostSRQRecv#1": "CHECK(ret_post_srq_recv_srq0 == 0 && bad_recv_wr_srq0_idx == -1,"
                     " \"chain of 3, bad lkey in WR 1: posted (a completion-time failure)\");",
    "PostSRQRecv#2": "CHECK(ret2_srq0 == EINVAL && bad2_srq0 == &wr2_srq0_next && bad2_srq0_idx == 1,"
                     " \"chain of 3, WR 1 over max_sge: EINVAL, *bad_wr is WR 1\");",
    "PostSend": "CHECK(ret_post_send_qp1 == 0, \"two sends posted\");",
    "GetCQEvent": "CHECK(ret_get_cq_event_ch0 == 0 && ev_cq == cq0, \"completion event of cq0\");",
    "CreateAH": "CHECK(ah0 != NULL, \"AH created\");",
    "RegMRIova": "CHECK(mr9 != NULL, \"a region at an IOVA\");",
    "AdviseMR": "CHECK(ret_advise_mr_pd0 == 0, \"an ODP region prefetched\");",
    "AllocDM": "CHECK(dm0 != NULL, \"4 KiB of device memory\");\n"
               "    memset(bufs[1], 0x5a, 32); /* what the copies carry */",
    "MemcpyFromDM": "CHECK(ret_memcpy_from_dm_dm0 == 0 && memcmp(bufs[1], bufs[2], 64) == 0,"
                    " \"what was copied in comes back\");",
    "RegDMMR": "CHECK(mr7 != NULL, \"a zero-based region on device memory\");",
    "FreeDM": "CHECK(ret_free_dm_dm0 == 0, \"device memory freed once its region is gone\");",
    "AllocTD": "CHECK(td0 != NULL, \"a thread domain\");",
    "OpenXRCD": "CHECK(xrcd0 != NULL, \"a private XRC domain\");",
    "CreateSRQEx#1": "CHECK(srq1 != NULL, \"an XRC SRQ in it\");",
    "CreateSRQEx#2": "CHECK(srq2 != NULL, \"a TM SRQ\");",
    "PostSRQOps": "CHECK(ret_ops_srq2 == EINVAL && bad_ops_srq2 == &ops_srq2_next && bad_ops_srq2_idx == 1 &&"
                  " ops_srq2.tm.handle != 0,"
                  " \"TAG_ADD done (a handle), TAG_DEL of handle 99: EINVAL, *bad_wr is it\");",
    "AllocParentDomain": "CHECK(pd1 != NULL && pd1 != pd0, \"a parent domain on pd0 naming td0\");",
    "AllocMW": "CHECK(mw0 != NULL && mw0->type == IBV_MW_TYPE_1, \"type 1 window allocated\");",
    "CreateQPEx": "CHECK(qp2 != NULL && ibv_qp_to_qp_ex(qp2) != NULL,"
                  " \"an extended QP, with the ibv_wr_* API\");",
    "PollCQ#1": "CHECK(status_of(1) == IBV_WC_SUCCESS && status_of(2) == IBV_WC_LOC_PROT_ERR,"
                " \"SRQ WR 1 received, WR 2 (bad lkey) IBV_WC_LOC_PROT_ERR\");\n"
                "    CHECK(status_of(3) == -1 && status_of(4) == -1 && status_of(5) == -1,"
                " \"WRs 3, 4 (and no 5) left in the SRQ\");\n"
                "    k = fill_srq(srq0);\n"
                "    CHECK(k == srq_room - 2, \"2 WRs still posted: the WRs of chain 1 and WR 0 of chain 2\");",
    "PollCQ#2": "CHECK(status_of(0x11) == IBV_WC_SUCCESS && status_of(0x12) == IBV_WC_REM_OP_ERR,"
                " \"send 0x11 done, send 0x12 (into the bad lkey) IBV_WC_REM_OP_ERR\");",
}

# ---- build, apply, generate
classes_by_name = {c.__name__: c for c in classes.values()}
ctx = api.CodeGenContext()
body, built, applied, generated, seen = [], 0, 0, 0, {}
errors = []
for cname, line in SCENARIO:
    cls = classes_by_name[cname]
    try:
        call = cls.from_trace(line, ctx)
        built += 1
        call.apply(ctx)
        applied += 1
        code = call.generate_c(ctx)
        generated += 1
    except Exception as e:   # a failure of the generated class: reported, counted
        errors.append("%s %s: %s: %s" % (cname, line, type(e).__name__, e))
        continue
    seen[cname] = seen.get(cname, 0) + 1
    key = "%s#%d" % (cname, seen[cname])
    check = AFTER.get(key, AFTER.get(cname))
    if cname == "GetCQEvent":
        code = "    wait_fd(ch0->fd, \"completion channel\");\n" + code
    elif cname == "PollCQ":
        # poll until the completions the scenario expects are in
        want = 2 if call.cq.value == "cq0" else 3
        code = ("    for (got = 0, t0 = now_ms(); got < %d && now_ms() - t0 < 10000;) {\n%s"
                "        for (i = 0; i < %s; ++i) record(&%s[i]);\n"
                "        got += (%s > 0) ? %s : 0;\n    }\n"
                "    CHECK(got == %d, \"%d completions on %s\");\n"
                % (want, code, call.ret_var, call.wc_var, call.ret_var, call.ret_var,
                   want, want, call.cq.value))
    elif cname == "GetAsyncEvent":
        pending = code       # placed with the AckAsyncEvent that follows
        continue
    elif cname == "AckAsyncEvent":
        # events come in any order: read them, each acked, until the SRQ limit one
        code = ("    for (k = 0; k < 8 && !limit_event; ++k) {\n"
                "        if (!wait_fd(ctx0->async_fd, \"async event\")) break;\n%s"
                "        if (ret_get_async_event_ctx0 != 0) break;\n"
                "        if (async_event.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&\n"
                "            async_event.element.srq == srq0) limit_event = 1;\n%s    }\n"
                "    CHECK(limit_event, \"IBV_EVENT_SRQ_LIMIT_REACHED on srq0\");\n"
                "    mark(\"GetAsyncEvent\");\n" % (pending, code))
    if cname in ("DestroyAH", "DestroyQP", "DestroySRQ", "DestroyCQ", "DestroyCompChannel",
                 "BindMW", "DeallocMW", "MemcpyToDM", "DeallocTD", "GetSRQNum", "CloseXRCD",
                 "DeregMR", "DeallocPD", "CloseDevice", "ModifySRQ", "ReqNotifyCQ", "ModifyQP",
                 "PostRecv", "AckCQEvents") and check is None and hasattr(call, "ret_var"):
        check = "CHECK(%s == 0, \"%s returned 0\");" % (call.ret_var, line.replace('"', "'")[:60])
    body.append(code + "    mark(\"%s\");\n" % cname + ("    %s\n" % check if check else ""))

verbs_in_scenario = set(c for c, _ in SCENARIO)
result("from_trace", built == len(SCENARIO), "%d of %d trace lines built" % (built, len(SCENARIO)))
result("apply", applied == len(SCENARIO), "%d applied (tracker and contract table)" % applied)
all_in = len(verbs_in_scenario) == len(classes)
result("generate_c", generated == len(SCENARIO) and not errors and all_in,
       "%d generate_c, %d of %d classes in the program %s" %
       (generated, len(verbs_in_scenario), len(classes), "; ".join(errors)))

# the contract table followed the scenario
# (the framework's table holds its server QPs and template buffers from the start)
snap = {k: v for k, v in ctx.contracts.snapshot().items() if k[0] not in ("remote_qp", "buf")}
result("contract_states", all(s is api.State.DESTROYED for (t, n), (s, _) in snap.items()) and
       ("qp", "qp0") in snap and ("mr", "mr0") in snap and ("srq", "srq0") in snap,
       "%d resources, all destroyed at the end" % len(snap))

# ---- the contract refuses what the JSON forbids
def refused(cname, lines, what):
    ctx2 = api.CodeGenContext()
    ctx2.tracker = None     # the contract table alone decides
    by = {c.__name__: c for c in classes.values()}
    try:
        for c, l in lines[:-1]:
            by[c].from_trace(l, ctx2).apply(ctx2)
    except Exception as e:
        return result(what, False, "setup failed: %s" % e)
    c, l = lines[-1]
    try:
        by[c].from_trace(l, ctx2).apply(ctx2)
    except api.ContractError as e:
        return result(what, True, "refused: %s" % e)
    except ValueError as e:
        return result(what, True, "refused: %s" % e)
    return result(what, False, "%s %s was accepted" % (c, l))


base = [("OpenDevice", "context=ctx0"), ("AllocPD", "context=ctx0 pd=pd0"),
        ("CreateSRQ", "pd=pd0 srq=srq0 srq_init_attr.attr.max_wr=4 srq_init_attr.attr.max_sge=1")]
refused("PostSRQRecv", base + [("RegMR", "pd=pd0 mr=mr0 addr=bufs length=64"),
                               ("PostSRQRecv", "srq=srq0 wr[0].wr_id=1 %s wr[1].wr_id=2 "
                                               "wr[1].sg_list[0].mr=mr7 wr[1].sg_list[0].length=8" % sge(0, 0, 0))],
        "refuses_unregistered_mr")
refused("PostSRQRecv", base + [("RegMR", "pd=pd0 mr=mr0 addr=bufs length=64"),
                               ("DestroySRQ", "srq=srq0"),
                               ("PostSRQRecv", "srq=srq0 wr[0].wr_id=1 %s" % sge(0, 0, 0))],
        "refuses_destroyed_srq")
refused("PostSRQRecv", base + [("PostSRQRecv", "srq=srq0 wr[0].wr_idd=1")], "refuses_unknown_key")
refused("CreateSRQ", base + [("CreateSRQ", "pd=pd0 srq=srq1 srq_init_attr.attr.max_wrr=4")],
        "refuses_unknown_field")

refused("PostSRQRecv", base + [("PostSRQRecv", "srq=srq0 bogus=1 %s" % sge(0, 0, 0))],
        "refuses_unknown_param")
# trace values become C: anything but a number, a name or a reference is refused
for i, bad in enumerate(("wr[0].wr_id=1;abort()", "wr[0].sg_list[0].length=8);abort(", "wr_var=w;abort()")):
    refused("PostSRQRecv", base + [("RegMR", "pd=pd0 mr=mr0 addr=bufs length=64"),
                                   ("PostSRQRecv", "srq=srq0 %s %s" % (sge(0, 0, 0), bad))],
            "refuses_c_injection_%d" % i)

# a line of the project's own tracer (SRQ_VERBS_TRACE) builds too: the MR
# comes from the lkey reference, the results (ret=, out.) are skipped
line = ("ibv_post_srq_recv srq=srq0 wr[0].wr_id=0x1 wr[0].sg_list[0].addr=buf0+0 "
        "wr[0].sg_list[0].length=64 wr[0].sg_list[0].lkey=mr0.lkey wr[0].num_sge=1 wr[1].wr_id=0x2 "
        "wr[1].sg_list[0].addr=buf0+64 wr[1].sg_list[0].length=64 wr[1].sg_list[0].lkey=mr3.lkey "
        "wr[1].num_sge=1 ret=EINVAL out.bad_wr=wr[1]")
try:
    call = classes["ibv_post_srq_recv"].from_trace(line)
    mrs = [r for r in api.resolve(call, "wr_obj.**.sg_list[*].mr")]
    c = call.generate_c(api.CodeGenContext())
    ok = mrs == ["mr0", "mr3"] and "mr3->lkey" in c and "(buf0 + 64)" in c
    result("project_trace_line", ok, "MRs %s" % mrs)
except Exception as e:
    result("project_trace_line", False, "%s: %s" % (type(e).__name__, e))

# the mutator's view: MUTABLE_FIELDS down to the leaves, as the framework
# walks them; a struct's numbers are values it can move
def leaves(obj, prefix=""):
    out = []
    for name in getattr(obj, "MUTABLE_FIELDS", []):
        val = getattr(obj, name, None)
        path = prefix + name
        out += [(path, val)] if isinstance(val, api.Value) else leaves(val, path + ".")
    return out


srq = classes["ibv_create_srq"].from_trace("pd=pd0 srq=srq0 srq_init_attr.attr.max_wr=8 "
                                          "srq_init_attr.attr.max_sge=1")
found = dict(leaves(srq))
mw = found.get("srq_init_obj.attr.max_wr")   # the framework's name
ok = isinstance(mw, api.IntValue) and isinstance(found.get("pd"), api.ResourceValue)
if ok:
    mw.mutate()
    ok = "srq_init_attr_srq0.attr.max_wr = 9;" in srq.generate_c(api.CodeGenContext())
result("mutable_leaves", ok, " ".join(sorted(found)))

# to_dict of the call the issue asked for
psr = classes["ibv_post_srq_recv"].from_trace([l for c, l in SCENARIO if c == "PostSRQRecv"][0])
d = psr.to_dict()
result("to_dict", d.get("verb") == "PostSRQRecv" and
       d.get("srq") == {"type": "ResourceValue", "value": "srq0"}
       and "wr_obj" in d, str(d)[:120])

with open(os.path.join(out, "prog.c"), "w") as f:
    with open(os.path.join(here, "prelude.c")) as p:
        f.write(p.read())
    f.write("\n/* the variables the generated code declared through ctx.alloc_variable */\n")
    f.write(ctx.generate_variable_definitions_all() + "\n\n")
    f.write("int main(void)\n{\n    int i, k, got, limit_event = 0, srq_room = 0;\n    long t0;\n\n"
            "    setup();\n%s\n    return finish(%d, srq_room);\n}\n" % ("".join(body), generated))
print("verbs_py counts: %d generated, %d imported, %d trace lines built, %d applied, %d generate_c"
      % (n_generated, len(imported), built, applied, generated))
print("verbs_py blocks: %d" % generated)
sys.exit(1 if fail else 0)
