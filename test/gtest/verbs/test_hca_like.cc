/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: what programs see behaves as on an HCA, where
 * outside suites (UCX's rc_verbs, rdma-core's tests, conformance suites)
 * look closely:
 *   - struct ibv_qp's state changes only through ibv_modify_qp and
 *     ibv_query_qp, never when the QP fails on its own;
 *   - rdma-core's calls that programs use answer for soft0 as they answer
 *     for an HCA (ibv_query_gid_type); one node GUID for every context,
 *     the device list's; every context of a process shares the port's
 *     LID and GID, and the QP number picks the QP behind that address;
 *   - every failing verb sets errno (on an HCA a failing control verb is
 *     a failing system call); a CQ is armed as an HCA arms it;
 *   - UD as on an HCA: a receive too small for a datagram completes with
 *     IBV_WC_LOC_LEN_ERR and the QP goes on; the AH's traffic class
 *     arrives in the GRH;
 *   - a WR wrong both locally and remotely reports the local error first;
 *   - (every object limit ibv_query_device reports is held: in
 *     test_hca_limits.cc);
 *   - handles are checked as the kernel checks them: an object of another
 *     context, or one whose handle was overwritten, is refused (a destroy
 *     ENOENT, other verbs EINVAL), never used;
 *   - the async events an HCA raises are raised: a responder's QP errors
 *     no completion reports (IBV_EVENT_QP_ACCESS_ERR, _QP_REQ_ERR) and
 *     IBV_EVENT_COMM_EST.
 */
#include "verbs_fixture.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <vector>

using namespace srq_test;

namespace {

const uint32_t kLen = 4096;

} // namespace

class hca_like : public two_dev_test {
protected:
    /* qa (a) <-> qb (b); b's QP grants @access_b */
    void connect(int access_b)
    {
        conn_opts_t oa, ob;

        oa.timeout   = ob.timeout   = 8; /* failures are retried: short */
        oa.retry_cnt = ob.retry_cnt = 1;
        ob.access    = access_b;
        qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        rc_to_rts(*a, qa, b->addr, qb->qp_num, oa);
        rc_to_rts(*b, qb, a->addr, qa->qp_num, ob);
        lbuf = (char*)alloc(kLen, 'L');
        rbuf = (char*)alloc(kLen, 'R');
        lmr  = reg(*a, lbuf, kLen, IBV_ACCESS_LOCAL_WRITE);
        rmr  = reg(*b, rbuf, kLen, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_WRITE);
    }

    /* One signaled WR of @op (RDMA or atomic) from qa: 8 bytes of lbuf
     * under @lkey, to rbuf under @rkey */
    void post_one(ibv_wr_opcode op, uint32_t lkey, uint32_t rkey)
    {
        ibv_sge sge = { (uintptr_t)lbuf, 8, lkey };
        ibv_send_wr wr = {}, *bad = nullptr;

        wr.wr_id      = 5;
        wr.sg_list    = &sge;
        wr.num_sge    = 1;
        wr.opcode     = op;
        wr.send_flags = IBV_SEND_SIGNALED;
        if ((op == IBV_WR_ATOMIC_FETCH_AND_ADD) ||
            (op == IBV_WR_ATOMIC_CMP_AND_SWP)) {
            wr.wr.atomic.remote_addr = (uintptr_t)rbuf;
            wr.wr.atomic.rkey        = rkey;
            wr.wr.atomic.compare_add = 1;
        } else {
            wr.wr.rdma.remote_addr = (uintptr_t)rbuf;
            wr.wr.rdma.rkey        = rkey;
        }
        ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));
    }

    /* An RDMA WRITE into b that b's QP does not allow: its status */
    int write_denied()
    {
        EXPECT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE, lbuf, 64, lmr->lkey, 9,
                               IBV_SEND_SIGNALED, (uintptr_t)rbuf, rmr->rkey));
        return poll1(scqa).status;
    }

    /* The next async event of @d within @timeout_ms, pumping meanwhile;
     * false if none came */
    bool next_event(tdev_t &d, ibv_async_event *ev, int timeout_ms = 3000)
    {
        struct pollfd pfd = { srq_verbs_async_fd(d.dev), POLLIN, 0 };
        uint64_t end = now_ms() + timeout_ms;

        while (now_ms() < end) {
            if ((::poll(&pfd, 1, 1) == 1) &&
                (srq_verbs_get_async_event(d.dev, ev) == 0)) {
                srq_verbs_ack_async_event(d.dev, ev);
                return true;
            }
            pump_once();
        }
        return false;
    }

    /* The port's LID, as a's context reports it */
    uint16_t pa_lid()
    {
        ibv_port_attr pa = {};

        EXPECT_EQ(0, srq_verbs_query_port(a->dev, 1, &pa));
        return pa.lid;
    }

    ibv_qp *qa = nullptr, *qb = nullptr;
    char   *lbuf = nullptr, *rbuf = nullptr;
    ibv_mr *lmr = nullptr, *rmr = nullptr;
};

/* UCX's rc_verbs asserts that a QP it never moved is still in RTS: the
 * field is the program's record of what it did, an HCA's provider updates
 * it only when asked (modify) or told (query) */
TEST_P(hca_like, qp_state_field_changes_only_by_modify_or_query)
{
    connect(IBV_ACCESS_LOCAL_WRITE); /* b grants no remote write */
    ASSERT_EQ(IBV_QPS_RTS, qa->state);
    ASSERT_EQ(IBV_WC_REM_ACCESS_ERR, write_denied());
    EXPECT_EQ(IBV_QPS_RTS, qa->state) << "the QP failed on its own";
    ibv_qp_attr cap = {};
    ibv_qp_init_attr init = {};
    ASSERT_EQ(0, srq_verbs_query_qp(a->dev, qa, &cap, IBV_QP_CAP, &init));
    EXPECT_EQ(IBV_QPS_RTS, qa->state) << "a query that did not ask for it";
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*a, qa));
    EXPECT_EQ(IBV_QPS_ERR, qa->state) << "a query tells the program";

    ibv_qp_attr attr = {};
    attr.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, qa, &attr, IBV_QP_STATE));
    EXPECT_EQ(IBV_QPS_RESET, qa->state);
}

/* A QP moved to RESET takes its completions not yet polled out of its
 * CQs, as an HCA's provider does (rdma-core's tests reset a QP in error
 * and expect the next completion to be the new traffic's); another QP's
 * stay, in order */
TEST_P(hca_like, reset_removes_the_qps_completions)
{
    ibv_cq *cq = make_cq(*a, 16);
    ibv_qp *q1 = make_qp(*a, IBV_QPT_RC, scqa, cq);
    ibv_qp *q2 = make_qp(*a, IBV_QPT_RC, scqa, cq);
    ASSERT_TRUE((cq != nullptr) && (q1 != nullptr) && (q2 != nullptr));
    char *buf = (char*)alloc(64, 1);
    ibv_mr *mr = reg(*a, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp_attr attr = {};

    /* q1, q2, q1 flushed in turn: their completions interleave */
    for (int i = 0; i < 3; ++i) {
        ibv_qp *q = (i == 1) ? q2 : q1;
        attr = {};
        attr.qp_state = IBV_QPS_INIT;
        attr.port_num = 1;
        if (i < 2) {
            ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, q, &attr,
                                             IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                             IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
        }
        ASSERT_EQ(0, post_recv(q, buf, 64, mr->lkey, 10 + i));
        if (i > 0) {
            attr = {};
            attr.qp_state = IBV_QPS_ERR;
            ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, q, &attr, IBV_QP_STATE));
        }
    }
    attr = {};
    attr.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, q1, &attr, IBV_QP_STATE));
    ibv_wc wc[4];
    ASSERT_EQ(1, poll(cq, 1, wc));
    EXPECT_EQ(11u, wc[0].wr_id) << "q2's completion";
    EXPECT_EQ(q2->qp_num, wc[0].qp_num);
    EXPECT_EQ(0, poll(cq, 4, wc, 100)) << "q1's completions are still there";
}

/* A QP that fails on its own answers modify as its real state allows: an
 * RTS -> RTS modify of a QP in error is refused */
TEST_P(hca_like, modify_checks_the_real_state)
{
    connect(IBV_ACCESS_LOCAL_WRITE);
    ASSERT_EQ(IBV_WC_REM_ACCESS_ERR, write_denied());
    ibv_qp_attr attr = {};
    attr.qp_state     = IBV_QPS_RTS;
    attr.cur_qp_state = IBV_QPS_RTS;
    EXPECT_EQ(EINVAL, srq_verbs_modify_qp(a->dev, qa, &attr,
                                          IBV_QP_STATE | IBV_QP_CUR_STATE));
    attr.qp_state = IBV_QPS_ERR;
    EXPECT_EQ(0, srq_verbs_modify_qp(a->dev, qa, &attr, IBV_QP_STATE));
    EXPECT_EQ(IBV_QPS_ERR, qa->state);
}

/* rdma-core's ibv_query_gid_type (pyverbs' Context.query_gid_type) asks
 * the kernel for the GID entry; through libibverbs soft0 answers it, as
 * it answers ibv_query_gid_ex. A private symbol of libibverbs: found at
 * run time, as pyverbs is bound to it */
TEST_P(hca_like, query_gid_type_through_libibverbs)
{
    typedef int (*gid_type_fn_t)(ibv_context*, uint8_t, unsigned, int*);
    gid_type_fn_t fn = (gid_type_fn_t)dlsym(RTLD_DEFAULT,
                                            "ibv_query_gid_type");
    ibv_context *ctx = srq_verbs_context(a->dev);
    int type = -1;

    if (is_soft()) {
        GTEST_SKIP() << "a libibverbs call: soft0 is not a libibverbs "
                        "device on the built-in path";
    }
    if (fn == nullptr) {
        GTEST_SKIP() << "this libibverbs has no ibv_query_gid_type";
    }
    errno = 0;
    ASSERT_EQ(0, fn(ctx, 1, 0, &type)) << strerror(errno);
    EXPECT_EQ(0, type) << "IB/RoCE v1: an IB port's GID";
    errno = 0;
    EXPECT_EQ(-1, fn(ctx, 1, 1, &type)) << "entry 1 is empty";
    EXPECT_EQ(ENODATA, errno) << "an empty entry, as libibverbs says of an HCA's";
}

/* An IB port's GID table as an HCA's sysfs shows it: gid_tbl_len entries,
 * the port's GID first and the rest present but zero. ibv_query_gid reads
 * an empty entry as zeros (programs written for RoCE query index 1 or 3
 * and go on); ibv_query_gid_ex, which gives valid entries only, refuses it
 * with ENODATA; an index past the table fails */
TEST_P(hca_like, gid_table_as_an_ib_port)
{
    ibv_context *ctx = srq_verbs_context(a->dev);
    ibv_port_attr pa;
    ibv_gid_entry entry;
    union ibv_gid gid, zero;

    if (is_soft()) {
        GTEST_SKIP() << "libibverbs calls: soft0 is not a libibverbs "
                        "device on the built-in path";
    }
    memset(&zero, 0, sizeof(zero));
    ASSERT_EQ(0, ibv_query_port(ctx, 1, &pa));
    ASSERT_GE(pa.gid_tbl_len, 4) << "a RoCE program's index 3 in the table";
    ASSERT_EQ(0, ibv_query_gid(ctx, 1, 0, &gid));
    EXPECT_NE(0, memcmp(&gid, &zero, sizeof(gid))) << "entry 0: the port's GID";
    memset(&gid, 0xff, sizeof(gid));
    ASSERT_EQ(0, ibv_query_gid(ctx, 1, 3, &gid)) << "an empty entry reads";
    EXPECT_EQ(0, memcmp(&gid, &zero, sizeof(gid))) << "as zeros";
    EXPECT_EQ(-1, ibv_query_gid(ctx, 1, pa.gid_tbl_len, &gid));
    EXPECT_EQ(0, ibv_query_gid_ex(ctx, 1, 0, &entry, 0));
    EXPECT_EQ(ENODATA, ibv_query_gid_ex(ctx, 1, 3, &entry, 0));
    EXPECT_EQ(EINVAL, ibv_query_gid_ex(ctx, 1, pa.gid_tbl_len, &entry, 0));
}

/* One node GUID per HCA: every context of the device reports the same,
 * and, through libibverbs, the device list's (ibv_get_device_guid) */
TEST_P(hca_like, one_node_guid_for_every_context)
{
    ibv_device_attr da = {}, db = {};

    ASSERT_EQ(0, srq_verbs_query_device(a->dev, &da));
    ASSERT_EQ(0, srq_verbs_query_device(b->dev, &db));
    EXPECT_NE(0u, da.node_guid);
    EXPECT_EQ(da.node_guid, db.node_guid) << "two contexts, two GUIDs";
    EXPECT_EQ(da.sys_image_guid, db.sys_image_guid);
    if (!is_soft()) {
        ibv_context *ctx = srq_verbs_context(a->dev);
        EXPECT_EQ(ibv_get_device_guid(ctx->device), da.node_guid)
            << "the device list's GUID differs";
    }
}

/* Every context of a port shares its LID and GID, as on an HCA (UCX's
 * ud_verbs test_ud_ds.if_addr opens two interfaces on one port and
 * expects one address), while their QP numbers stay distinct */
TEST_P(hca_like, contexts_share_the_ports_lid_and_gid)
{
    ibv_port_attr pa = {}, pb = {};

    ASSERT_EQ(0, srq_verbs_query_port(a->dev, 1, &pa));
    ASSERT_EQ(0, srq_verbs_query_port(b->dev, 1, &pb));
    EXPECT_NE(0, pa.lid);
    EXPECT_EQ(pa.lid, pb.lid) << "two contexts, two LIDs";
    EXPECT_EQ(0, memcmp(a->addr.gid, b->addr.gid, sizeof(a->addr.gid)))
        << "two contexts, two GIDs";
    EXPECT_EQ(a->addr.lid, b->addr.lid);

    /* a context opened later, and one opened while another closed,
     * find the same port */
    tdev_t &c = open_dev();
    EXPECT_EQ(0, memcmp(a->addr.gid, c.addr.gid, sizeof(a->addr.gid)));
    EXPECT_EQ(a->addr.lid, c.addr.lid);

    ibv_qp *q1 = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    ibv_qp *q2 = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    ibv_cq *cqc = make_cq(c);
    ibv_qp *q3  = make_qp(c, IBV_QPT_UD, cqc, cqc);
    EXPECT_NE(q1->qp_num, q2->qp_num);
    EXPECT_NE(q1->qp_num, q3->qp_num);
    EXPECT_NE(q2->qp_num, q3->qp_num);
}

/* One address, two contexts: RC connections made to the shared address
 * reach the QP their QP number names, by GID and by LID */
TEST_P(hca_like, shared_address_reaches_the_named_qp)
{
    for (bool lid_only : {false, true}) {
        conn_opts_t o;
        o.lid_only = lid_only;
        /* a's QP talks to b's, a second QP of a to a third of a */
        ibv_qp *x = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        ibv_qp *y = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        ibv_qp *z = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        ibv_qp *w = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        rc_to_rts(*a, x, a->addr, y->qp_num, o); /* a's address: the port */
        rc_to_rts(*b, y, b->addr, x->qp_num, o);
        rc_to_rts(*a, z, b->addr, w->qp_num, o); /* b's: the same port */
        rc_to_rts(*a, w, a->addr, z->qp_num, o);

        char *buf = (char*)alloc(2 * kLen, 'x');
        ibv_mr *mra = reg(*a, buf, 2 * kLen, IBV_ACCESS_LOCAL_WRITE);
        ibv_mr *mrb = reg(*b, buf, 2 * kLen, IBV_ACCESS_LOCAL_WRITE);
        ASSERT_EQ(0, post_recv(y, buf + kLen, 64, mrb->lkey, 21));
        ASSERT_EQ(0, post_recv(w, buf + kLen + 64, 64, mra->lkey, 22));
        ASSERT_EQ(0, post_send(x, IBV_WR_SEND, buf, 8, mra->lkey, 11));
        ASSERT_EQ(0, post_send(z, IBV_WR_SEND, buf, 16, mra->lkey, 12));
        ibv_wc wc[2];
        ASSERT_EQ(2, poll(scqa, 2, wc)) << "lid_only " << lid_only;
        EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
        EXPECT_EQ(IBV_WC_SUCCESS, wc[1].status);
        /* each message at the QP its number names */
        wc[0] = poll1(rcqb);
        wc[1] = poll1(rcqa);
        EXPECT_EQ(21u, wc[0].wr_id);
        EXPECT_EQ(y->qp_num, wc[0].qp_num);
        EXPECT_EQ(8u, wc[0].byte_len);
        EXPECT_EQ(22u, wc[1].wr_id);
        EXPECT_EQ(w->qp_num, wc[1].qp_num);
        EXPECT_EQ(16u, wc[1].byte_len);
        for (int i = 0; i < 2; ++i) {
            EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
            EXPECT_EQ(pa_lid(), wc[i].slid) << "the port's LID";
        }
    }
}

/* errno holds what a failing verb returns, whatever it was before */
TEST_P(hca_like, failing_verbs_set_errno)
{
    connect(IBV_ACCESS_LOCAL_WRITE);
    ibv_srq *srq = make_srq(*b, 4);
    ibv_qp_attr attr = {};

    errno = 0;
    EXPECT_EQ(EBUSY, srq_verbs_dealloc_pd(a->dev, a->pd));
    EXPECT_EQ(EBUSY, errno) << "dealloc_pd of a PD in use";
    errno = 0;
    EXPECT_EQ(EBUSY, srq_verbs_destroy_cq(a->dev, scqa));
    EXPECT_EQ(EBUSY, errno) << "destroy_cq of a CQ in use";
    errno = 0;
    attr.qp_state = IBV_QPS_RTR; /* RTS -> RTR: no such transition */
    EXPECT_EQ(EINVAL, srq_verbs_modify_qp(a->dev, qa, &attr, IBV_QP_STATE));
    EXPECT_EQ(EINVAL, errno) << "modify_qp";
    errno = 0;
    ibv_srq_attr sattr = {};
    sattr.max_wr = 1u << 30;
    EXPECT_NE(0, srq_verbs_modify_srq(b->dev, srq, &sattr, IBV_SRQ_MAX_WR));
    EXPECT_NE(0, errno) << "modify_srq";

    /* the data path too */
    ibv_sge sge = { (uintptr_t)lbuf, 8, lmr->lkey };
    ibv_send_wr wr = {}, *bad = nullptr;
    wr.sg_list = &sge;
    wr.num_sge = 1000; /* above max_send_sge */
    wr.opcode  = IBV_WR_SEND;
    errno = 0;
    EXPECT_EQ(EINVAL, ibv_post_send(qa, &wr, &bad));
    EXPECT_EQ(EINVAL, errno) << "post_send";
    ibv_recv_wr rwr = {}, *rbad = nullptr;
    rwr.sg_list = &sge;
    rwr.num_sge = 1000;
    errno = 0;
    EXPECT_EQ(EINVAL, ibv_post_srq_recv(srq, &rwr, &rbad));
    EXPECT_EQ(EINVAL, errno) << "post_srq_recv";
    errno = 0;
    EXPECT_EQ(EINVAL, ibv_post_recv(qa, &rwr, &rbad));
    EXPECT_EQ(EINVAL, errno) << "post_recv";
}

/* A CQ without a completion channel cannot be armed: the kernel refuses */
TEST_P(hca_like, arm_without_channel_is_einval)
{
    errno = 0;
    EXPECT_EQ(EINVAL, ibv_req_notify_cq(rcqb, 0));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(EINVAL, ibv_req_notify_cq(rcqb, 1));
}

/* A solicited-only arm after an "any" arm leaves the CQ armed for any
 * completion: an unsolicited message still raises the event */
TEST_P(hca_like, solicited_arm_never_narrows_an_any_arm)
{
    ibv_comp_channel *ch = make_channel(*b);
    ibv_cq *cq = make_cq(*b, 16, ch);
    ibv_cq *ev_cq = nullptr;
    void *ev_ctx = nullptr;
    struct pollfd pfd = { ch->fd, POLLIN, 0 };
    int ret = EAGAIN;

    qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    qb = make_qp(*b, IBV_QPT_RC, scqb, cq);
    connect_rc(*a, qa, *b, qb);
    lbuf = (char*)alloc(64);
    lmr  = reg(*a, lbuf, 64, 0);
    rmr  = reg(*b, lbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_EQ(0, fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK));
    ASSERT_EQ(0, post_recv(qb, lbuf, 64, rmr->lkey, 1));
    ASSERT_EQ(0, ibv_req_notify_cq(cq, 0));
    ASSERT_EQ(0, ibv_req_notify_cq(cq, 1));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 8, lmr->lkey, 1));
    for (uint64_t end = now_ms() + 3000; (ret == EAGAIN) && (now_ms() < end);) {
        ::poll(&pfd, 1, 100);
        ret = srq_verbs_get_cq_event(b->dev, ch, &ev_cq, &ev_ctx);
    }
    ASSERT_EQ(0, ret) << "no event for an unsolicited completion";
    EXPECT_EQ(cq, ev_cq);
    srq_verbs_ack_cq_events(b->dev, ev_cq, 1);
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(cq).status);
}

/* A WR with a bad lkey and a bad rkey, as mlx5 reports it: a WRITE's
 * requester finds its own error before it sends anything (its gather
 * list is read first: IBV_WC_LOC_PROT_ERR, nothing reaches b); a READ's
 * or an atomic's local key is for the response, checked when it lands,
 * so the responder's refusal comes first (IBV_WC_REM_ACCESS_ERR, b in
 * error) */
TEST_P(hca_like, which_key_fails_first)
{
    static const ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
                                         IBV_WR_RDMA_WRITE_WITH_IMM,
                                         IBV_WR_ATOMIC_FETCH_AND_ADD };

    for (ibv_wr_opcode op : ops) {
        SCOPED_TRACE(op);
        connect(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
        post_one(op, lmr->lkey + 0x1000, rmr->rkey + 0x1000);
        ibv_wc wc = poll1(scqa);
        bool gathers = (op == IBV_WR_RDMA_WRITE) ||
                       (op == IBV_WR_RDMA_WRITE_WITH_IMM);
        if (gathers) {
            EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
            EXPECT_EQ(IBV_QPS_RTS, qp_state(*b, qb)) << "nothing reached b";
        } else {
            EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
        }
        destroy_qp(*a, qa);
        destroy_qp(*b, qb);
    }
}

/* A WRITE with immediate data whose rkey is refused took a receive WQE:
 * that WQE completes in error (IBV_WC_REM_ACCESS_ERR, as rxe), telling
 * b's user - not flushed - and the sender gets IBV_WC_REM_ACCESS_ERR */
TEST_P(hca_like, write_imm_refused_completes_its_receive_in_error)
{
    connect(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ASSERT_EQ(0, post_recv(qb, rbuf, 64, rmr->lkey, 7));
    ASSERT_EQ(0, post_recv(qb, rbuf + 64, 64, rmr->lkey, 8));
    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE_WITH_IMM, lbuf, 8,
                           lmr->lkey, 5, IBV_SEND_SIGNALED, (uintptr_t)rbuf,
                           rmr->rkey + 0x1000, 0x1234));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, poll1(scqa).status);
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(7u, wc.wr_id);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    wc = poll1(rcqb);
    EXPECT_EQ(8u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status) << "the next one flushes";
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*b, qb));
}

/* The responder of a refused RDMA WRITE raises IBV_EVENT_QP_ACCESS_ERR:
 * no completion tells its user */
TEST_P(hca_like, responder_access_violation_raises_qp_access_err)
{
    ibv_async_event ev = {};

    connect(IBV_ACCESS_LOCAL_WRITE); /* b grants no remote write */
    ASSERT_EQ(IBV_WC_REM_ACCESS_ERR, write_denied());
    ASSERT_TRUE(next_event(*b, &ev)) << "no async event on the responder";
    EXPECT_EQ(IBV_EVENT_QP_ACCESS_ERR, ev.event_type);
    EXPECT_EQ(qb, ev.element.qp);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*b, qb));
    EXPECT_FALSE(next_event(*a, &ev, 100)) << "nothing on the requester";
}

/* An atomic the responder's QP does not allow is an invalid request: the
 * requester sees IBV_WC_REM_INV_REQ_ERR, the responder raises
 * IBV_EVENT_QP_REQ_ERR */
TEST_P(hca_like, responder_invalid_request_raises_qp_req_err)
{
    ibv_async_event ev = {};

    connect(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ibv_sge sge = { (uintptr_t)lbuf, 8, lmr->lkey };
    ibv_send_wr wr = {}, *bad = nullptr;
    wr.sg_list               = &sge;
    wr.num_sge               = 1;
    wr.opcode                = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.send_flags            = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = (uintptr_t)rbuf;
    wr.wr.atomic.rkey        = rmr->rkey;
    wr.wr.atomic.compare_add = 1;
    ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));
    EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, poll1(scqa).status);
    ASSERT_TRUE(next_event(*b, &ev)) << "no async event on the responder";
    EXPECT_EQ(IBV_EVENT_QP_REQ_ERR, ev.event_type);
    EXPECT_EQ(qb, ev.element.qp);
}

/* A QP in RTR that receives its first packet raises IBV_EVENT_COMM_EST,
 * once */
TEST_P(hca_like, first_packet_in_rtr_raises_comm_est)
{
    conn_opts_t o;
    ibv_async_event ev = {};
    ibv_qp_attr attr = {};

    qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    rc_to_rts(*a, qa, b->addr, qb->qp_num, o);
    lbuf = (char*)alloc(64);
    lmr  = reg(*a, lbuf, 64, 0);
    rmr  = reg(*b, lbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    /* b only to RTR */
    attr.qp_state        = IBV_QPS_INIT;
    attr.port_num        = 1;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qb, &attr,
                                     IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    attr = {};
    attr.qp_state           = IBV_QPS_RTR;
    attr.path_mtu           = IBV_MTU_1024;
    attr.dest_qp_num        = qa->qp_num;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer      = 1;
    ASSERT_EQ(0, srq_verbs_ah_attr(b->dev, 1, &a->addr, &attr.ah_attr));
    ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qb, &attr,
                                     IBV_QP_STATE | IBV_QP_AV |
                                     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                     IBV_QP_MIN_RNR_TIMER));
    EXPECT_FALSE(next_event(*b, &ev, 50)) << "nothing arrived yet";

    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(0, post_recv(qb, lbuf, 64, rmr->lkey, i));
        ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 8, lmr->lkey, i));
        EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
        EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    }
    ASSERT_TRUE(next_event(*b, &ev)) << "no COMM_EST";
    EXPECT_EQ(IBV_EVENT_COMM_EST, ev.event_type);
    EXPECT_EQ(qb, ev.element.qp);
    EXPECT_FALSE(next_event(*b, &ev, 100)) << "raised once";
}

/* Objects of another context (b's) in a's create verbs and in a UD post:
 * EINVAL, nothing made */
TEST_P(hca_like, objects_of_another_context_refused)
{
    ibv_comp_channel *chb = make_channel(*b);
    ibv_srq *srqb = make_srq(*b, 4);
    ibv_qp_init_attr qa_attr = {};
    ibv_srq_init_attr sattr = {};
    ibv_ah_attr ahattr;
    char *buf = (char*)alloc(64);

    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_create_cq(a->dev, 4, nullptr, chb, 0));
    EXPECT_EQ(EINVAL, errno) << "create_cq with b's channel";
    if (is_soft()) {
        /* a's verb given only b's object: libibverbs has no such call (it
         * takes the context from the object) */
        errno = 0;
        EXPECT_EQ(nullptr, srq_verbs_reg_mr(a->dev, b->pd, buf, 64, 0));
        EXPECT_EQ(EINVAL, errno) << "reg_mr with b's PD";
        sattr.attr.max_wr  = 4;
        sattr.attr.max_sge = 1;
        errno = 0;
        EXPECT_EQ(nullptr, srq_verbs_create_srq(a->dev, b->pd, &sattr));
        EXPECT_EQ(EINVAL, errno) << "create_srq with b's PD";
        ASSERT_EQ(0, srq_verbs_ah_attr(a->dev, 1, &b->addr, &ahattr));
        errno = 0;
        EXPECT_EQ(nullptr, srq_verbs_create_ah(a->dev, b->pd, &ahattr));
        EXPECT_EQ(EINVAL, errno) << "create_ah with b's PD";
        /* a destroy finds no object by the handle in a: ENOENT, as the
         * kernel's uverbs answers */
        EXPECT_EQ(ENOENT, srq_verbs_destroy_cq(a->dev, scqb));
        EXPECT_EQ(ENOENT, srq_verbs_destroy_srq(a->dev, srqb));
        EXPECT_EQ(ENOENT, srq_verbs_dealloc_pd(a->dev, b->pd));
    }

    qa_attr.qp_type          = IBV_QPT_RC;
    qa_attr.cap.max_send_wr  = 1;
    qa_attr.cap.max_recv_wr  = 1;
    qa_attr.cap.max_send_sge = 1;
    qa_attr.cap.max_recv_sge = 1;
    for (int which = 0; which < 4; ++which) {
        ibv_qp_init_attr at = qa_attr;
        ibv_pd *pd = (which == 0) ? b->pd : a->pd;
        at.send_cq = (which == 1) ? scqb : scqa;
        at.recv_cq = (which == 2) ? rcqb : rcqa;
        at.srq     = (which == 3) ? srqb : nullptr;
        if (at.srq != nullptr) {
            at.cap.max_recv_wr = at.cap.max_recv_sge = 0;
        }
        errno = 0;
        EXPECT_EQ(nullptr, srq_verbs_create_qp(a->dev, pd, &at))
            << "create_qp with b's object #" << which;
        EXPECT_EQ(EINVAL, errno) << "create_qp with b's object #" << which;
    }

    /* a UD send through an AH of b's context */
    ibv_qp *ud = make_qp(*a, IBV_QPT_UD, scqa, rcqa);
    ud_to_rts(*a, ud, 1);
    ibv_ah *ahb = make_ah(*b, a->addr);
    ibv_mr *mr = reg(*a, buf, 64, 0);
    ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
    ibv_send_wr wr = {}, *bad = nullptr;
    wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_SEND;
    wr.wr.ud.ah = ahb; wr.wr.ud.remote_qpn = ud->qp_num;
    EXPECT_EQ(EINVAL, ibv_post_send(ud, &wr, &bad));
}

/* A handle the program overwrote names no object: a destroy answers
 * ENOENT (the kernel's uverbs: uobj_perform_destroy finds nothing), every
 * other control verb on it, or taking it, EINVAL; the object stays as it
 * was */
TEST_P(hca_like, corrupted_handles_refused)
{
    connect(IBV_ACCESS_LOCAL_WRITE);
    ibv_srq *srq = make_srq(*b, 4);
    ibv_ah *ah = make_ah(*a, b->addr);
    ibv_qp_attr qattr = {};
    ibv_qp_init_attr qinit = {};
    ibv_srq_attr sattr = {};
    ibv_ah_attr ahattr;
    char *buf = (char*)alloc(64);

    /* each: corrupt, try, restore */
    uint32_t h = a->pd->handle;
    a->pd->handle = h ^ 0x5a5a;
    errno = 0;
    EXPECT_EQ(ENOENT, srq_verbs_dealloc_pd(a->dev, a->pd));
    EXPECT_EQ(nullptr, srq_verbs_reg_mr(a->dev, a->pd, buf, 64, 0));
    EXPECT_EQ(EINVAL, errno) << "reg_mr";
    ASSERT_EQ(0, srq_verbs_ah_attr(a->dev, 1, &b->addr, &ahattr));
    EXPECT_EQ(nullptr, srq_verbs_create_ah(a->dev, a->pd, &ahattr));
    a->pd->handle = h;

    h = qa->handle;
    qa->handle = h + 1;
    qattr.qp_state = IBV_QPS_ERR;
    EXPECT_EQ(EINVAL, srq_verbs_modify_qp(a->dev, qa, &qattr, IBV_QP_STATE));
    EXPECT_EQ(EINVAL, srq_verbs_query_qp(a->dev, qa, &qattr, IBV_QP_STATE,
                                         &qinit));
    EXPECT_EQ(ENOENT, srq_verbs_destroy_qp(a->dev, qa));
    qa->handle = h;
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*a, qa)) << "left as it was";

    h = scqa->handle;
    scqa->handle = ~h;
    EXPECT_EQ(ENOENT, srq_verbs_destroy_cq(a->dev, scqa));
    qinit            = {};
    qinit.qp_type    = IBV_QPT_RC;
    qinit.send_cq    = scqa;
    qinit.recv_cq    = rcqa;
    qinit.cap.max_send_wr = qinit.cap.max_recv_wr = 1;
    qinit.cap.max_send_sge = qinit.cap.max_recv_sge = 1;
    EXPECT_EQ(nullptr, srq_verbs_create_qp(a->dev, a->pd, &qinit));
    scqa->handle = h;

    h = srq->handle;
    srq->handle = h ^ 1;
    EXPECT_EQ(EINVAL, srq_verbs_query_srq(b->dev, srq, &sattr));
    sattr.srq_limit = 1;
    EXPECT_EQ(EINVAL, srq_verbs_modify_srq(b->dev, srq, &sattr,
                                           IBV_SRQ_LIMIT));
    EXPECT_EQ(ENOENT, srq_verbs_destroy_srq(b->dev, srq));
    srq->handle = h;

    h = ah->handle;
    ah->handle = h ^ 1;
    EXPECT_EQ(ENOENT, srq_verbs_destroy_ah(a->dev, ah));
    ah->handle = h;

    h = lmr->handle;
    lmr->handle = h ^ 1;
    EXPECT_EQ(ENOENT, srq_verbs_dereg_mr(a->dev, lmr));
    lmr->handle = h;

    ibv_mw *w = ibv_alloc_mw(a->pd, IBV_MW_TYPE_1);
    ASSERT_NE(nullptr, w);
    h = w->handle;
    w->handle = h ^ 1;
    EXPECT_EQ(ENOENT, ibv_dealloc_mw(w));
    w->handle = h;
    EXPECT_EQ(0, ibv_dealloc_mw(w));
    /* restored, all still work (TearDown destroys them) */
    EXPECT_EQ(0, srq_verbs_query_srq(b->dev, srq, &sattr));
}

/* A context has a descriptor a program can dup, as a uverbs context has
 * (rdma-core's shared-PD and import tests dup it), and importing a
 * context by it is refused as a provider without import refuses it
 * (EOPNOTSUPP), never a crash: libibverbs' own import would look for the
 * sysfs node soft0 has not */
TEST_P(hca_like, context_import_refused)
{
    if ((srq_verbs_dev_kind(a->dev) != SRQ_VERBS_DEV_RDMA) ||
        (GetParam() != "soft0")) {
        GTEST_SKIP() << "soft0 through libibverbs (an HCA imports)";
    }
    int fd = dup(srq_verbs_context(a->dev)->cmd_fd);

    ASSERT_GE(fd, 0) << strerror(errno);
    errno = 0;
    EXPECT_EQ(nullptr, ibv_import_device(fd));
    EXPECT_EQ(EOPNOTSUPP, errno);
    close(fd);
}

SRQ_INSTANTIATE(hca_like);

/* Two UD QPs, a on a and b on b, in RTS with one qkey */
class hca_like_ud : public two_dev_test {
protected:
    void SetUp() override
    {
        two_dev_test::SetUp();
        if (IsSkipped()) {
            return;
        }
        qa   = make_qp(*a, IBV_QPT_UD, scqa, rcqa);
        qb   = make_qp(*b, IBV_QPT_UD, scqb, rcqb);
        sbuf = (char*)alloc(256, 'S');
        rbuf = (char*)alloc(512, 0);
        smr  = reg(*a, sbuf, 256, 0);
        rmr  = reg(*b, rbuf, 512, IBV_ACCESS_LOCAL_WRITE);
        ud_to_rts(*a, qa, kQkey);
        ud_to_rts(*b, qb, kQkey);
    }

    /* An AH of a to b, with @tclass in its GRH */
    ibv_ah *ah_to_b(uint8_t tclass)
    {
        ibv_ah_attr attr;
        ibv_ah *ah;

        EXPECT_EQ(0, srq_verbs_ah_attr(a->dev, 1, &b->addr, &attr));
        attr.is_global         = 1;
        memcpy(attr.grh.dgid.raw, b->addr.gid, sizeof(attr.grh.dgid.raw));
        attr.grh.sgid_index    = 0;
        attr.grh.hop_limit     = 64;
        attr.grh.traffic_class = tclass;
        ah = srq_verbs_create_ah(a->dev, a->pd, &attr);
        EXPECT_NE(nullptr, ah) << strerror(errno);
        if (ah != nullptr) {
            srq_verbs_dev_t *dev = a->dev;
            m_cleanup.push_back([dev, ah]() {
                EXPECT_EQ(0, srq_verbs_destroy_ah(dev, ah));
            });
        }
        return ah;
    }

    /* One datagram of @len bytes through @ah; its send completes */
    void send(ibv_ah *ah, uint32_t len, uint64_t wr_id)
    {
        ASSERT_EQ(0, post_ud_send(qa, ah, qb->qp_num, kQkey, sbuf, len,
                                  smr->lkey, wr_id));
        EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    }

    static const uint32_t kQkey = 0x11;
    ibv_qp *qa = nullptr, *qb = nullptr;
    char   *sbuf = nullptr, *rbuf = nullptr;
    ibv_mr *smr = nullptr, *rmr = nullptr;
};

/* A datagram longer than the receive WQE is dropped without a word (IB
 * class D, as rxe) and the WQE stays: the next datagram, one that fits,
 * lands in it; the QP stays as it was */
TEST_P(hca_like_ud, receive_too_small_then_next_arrives)
{
    ibv_ah *ah = ah_to_b(0);
    ibv_wc wc;

    ASSERT_EQ(0, post_recv(qb, rbuf, 40 + 16, rmr->lkey, 1));
    send(ah, 64, 10);
    EXPECT_EQ(0, poll(rcqb, 1, &wc, 100)) << "the too long one completed";
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*b, qb));

    send(ah, 16, 11);
    wc = poll1(rcqb);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(40u + 16u, wc.byte_len);
    EXPECT_EQ('S', rbuf[40 + 15]);
}

/* The AH's traffic class is in the received GRH (IPv6 layout: 4 bits of
 * version, then the 8-bit traffic class) */
TEST_P(hca_like_ud, traffic_class_arrives_in_the_grh)
{
    ibv_ah *ah = ah_to_b(0xb8);

    ASSERT_EQ(0, post_recv(qb, rbuf, 256, rmr->lkey, 1));
    send(ah, 8, 10);
    ibv_wc wc = poll1(rcqb);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    ASSERT_TRUE(wc.wc_flags & IBV_WC_GRH);
    uint8_t *grh = (uint8_t*)rbuf;
    EXPECT_EQ(6, grh[0] >> 4) << "IP version";
    EXPECT_EQ(0xb8, ((grh[0] & 0xf) << 4) | (grh[1] >> 4));
}

/* One AH to the port reaches a UD QP of either context, the QP number
 * picking it; the GRH names the sender's port */
TEST_P(hca_like_ud, one_ah_reaches_the_qps_of_every_context)
{
    ibv_qp *qa2 = make_qp(*a, IBV_QPT_UD, scqa, rcqa);
    char *rbuf2 = (char*)alloc(512, 0);
    ibv_mr *rmr2 = reg(*a, rbuf2, 512, IBV_ACCESS_LOCAL_WRITE);
    ibv_ah *ah = ah_to_b(0); /* b's address: a's too */

    ud_to_rts(*a, qa2, kQkey);
    ASSERT_EQ(0, post_recv(qb, rbuf, 256, rmr->lkey, 1));
    ASSERT_EQ(0, post_recv(qa2, rbuf2, 256, rmr2->lkey, 2));
    send(ah, 8, 10);
    qb = qa2; /* send() sends to qb */
    send(ah, 12, 11);
    ibv_wc wc[2] = { poll1(rcqb), poll1(rcqa) };
    EXPECT_EQ(1u, wc[0].wr_id);
    EXPECT_EQ(40u + 8u, wc[0].byte_len);
    EXPECT_EQ(2u, wc[1].wr_id);
    EXPECT_EQ(40u + 12u, wc[1].byte_len) << "at the other context's QP";
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
        EXPECT_EQ(qa->qp_num, wc[i].src_qp);
    }
    /* sgid: the sender's port, as its own query gives it */
    EXPECT_EQ(0, memcmp(rbuf + 8, a->addr.gid, 16));
    EXPECT_EQ(0, memcmp(rbuf2 + 8, a->addr.gid, 16));
    EXPECT_EQ(0, memcmp(rbuf + 24, b->addr.gid, 16)) << "dgid";
    EXPECT_EQ(0, memcmp(rbuf2 + 24, a->addr.gid, 16)) << "dgid";
}

/* One AH reaches the QPs of as many contexts as the port has (UCX keeps
 * one AH per address: every interface of a process on the port is behind
 * it) */
TEST_P(hca_like_ud, one_ah_reaches_many_contexts)
{
    const int n = 20;
    ibv_ah *ah = ah_to_b(0);
    std::vector<ibv_qp*> qps;
    std::vector<ibv_cq*> cqs;
    char *bufs = (char*)alloc(n * 256, 0);

    for (int i = 0; i < n; ++i) {
        tdev_t &d = open_dev();
        ibv_cq *cq = make_cq(d);
        ibv_qp *qp = make_qp(d, IBV_QPT_UD, cq, cq);
        ibv_mr *mr = reg(d, bufs + i * 256, 256, IBV_ACCESS_LOCAL_WRITE);
        ASSERT_NE(nullptr, qp);
        ASSERT_NE(nullptr, mr);
        ud_to_rts(d, qp, kQkey);
        ASSERT_EQ(0, post_recv(qp, bufs + i * 256, 256, mr->lkey, i));
        qps.push_back(qp);
        cqs.push_back(cq);
    }
    for (int i = 0; i < n; ++i) {
        qb = qps[i]; /* send() sends to qb */
        send(ah, 8 + i, 100 + i);
    }
    for (int i = 0; i < n; ++i) {
        ibv_wc wc = poll1(cqs[i]);
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << "context " << i;
        EXPECT_EQ((uint64_t)i, wc.wr_id);
        EXPECT_EQ(40u + 8u + i, wc.byte_len);
    }
}

SRQ_INSTANTIATE(hca_like_ud);

/*
 * A request to a remote QP in the error state is never answered: the
 * requester retries as the QP asks and reports IBV_WC_RETRY_EXC_ERR after
 * retry_cnt + 1 timeouts, as an HCA times it - an atomic (a packet the
 * responder drops) as a READ or WRITE (done one-sided, the drop seen at
 * once): READ and WRITE failed one timeout early. The times are printed;
 * only their lower bound is judged.
 */
class hca_like_retry : public hca_like {
protected:
    void run(ibv_wr_opcode op)
    {
        SCOPED_TRACE(op);
        conn_opts_t o;
        o.timeout   = kTimeout;
        o.retry_cnt = kRetries;
        o.access    = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        connect_rc(*a, qa, *b, qb, o);
        ibv_qp_attr at = {};
        at.qp_state = IBV_QPS_ERR;
        ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qb, &at, IBV_QP_STATE));
        uint64_t t0 = now_us();
        post_one(op, lmr->lkey, rmr->rkey);
        ibv_wc wc = poll1(scqa, 30000);
        uint64_t us = now_us() - t0;
        EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
        EXPECT_GE(us, (kRetries + 1u) * kTimeoutUs) << "fewer timeouts";
        std::cout << GetParam() << ": opcode " << op << ": RETRY_EXC_ERR after "
                  << us / 1000.0 << " ms, " << (kRetries + 1) << " timeouts of "
                  << kTimeoutUs / 1000.0 << " ms asked (printed, not judged)"
                  << std::endl;
        destroy_qp(*a, qa);
        destroy_qp(*b, qb);
    }

    void buffers()
    {
        lbuf = (char*)alloc(kLen, 'L');
        rbuf = (char*)alloc(kLen, 'R');
        lmr  = reg(*a, lbuf, kLen, IBV_ACCESS_LOCAL_WRITE);
        rmr  = reg(*b, rbuf, kLen, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_WRITE |
                                   IBV_ACCESS_REMOTE_READ |
                                   IBV_ACCESS_REMOTE_ATOMIC);
    }

    static const uint8_t  kTimeout   = 12;
    static const uint8_t  kRetries   = 3;
    static const uint64_t kTimeoutUs = (4096ull << kTimeout) / 1000;
};

TEST_P(hca_like_retry, request_to_a_qp_in_error)
{
    buffers();
    for (ibv_wr_opcode op : { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
                              IBV_WR_ATOMIC_FETCH_AND_ADD,
                              IBV_WR_ATOMIC_CMP_AND_SWP }) {
        run(op);
    }
}

SRQ_INSTANTIATE(hca_like_retry);
