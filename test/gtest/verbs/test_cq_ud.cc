/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: completion queues (overrun, completion
 * channels) and UD (GRH area, immediate data, qkey).
 */
#include "verbs_fixture.h"

#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>

using namespace srq_test;

class cq : public verbs_test {};

TEST_P(cq, create_bad_args)
{
    tdev_t &d = open_dev();

    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_create_cq(d.dev, 0, nullptr, nullptr, 0));
    EXPECT_EQ(EINVAL, errno);
    ibv_cq *c = make_cq(d, 10);
    ASSERT_NE(nullptr, c);
    EXPECT_GE(c->cqe, 10);
}

TEST_P(cq, overrun_goes_to_error)
{
    SRQ_SKIP_UNLESS_SOFT(); /* HCAs differ in how an overrun shows */
    tdev_t &a = open_dev();
    ibv_cq *small = make_cq(a, 1);
    ibv_cq *other = make_cq(a);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, small, other);
    ibv_qp *qb = make_qp(a, IBV_QPT_RC, other, other);
    char *buf = (char*)alloc(64);
    ibv_mr *mr = reg(a, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_async_event ev;
    ibv_wc wc[4];
    int ret = 0;

    connect_rc(a, qa, a, qb);
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(0, post_recv(qb, buf, 64, mr->lkey, i));
        ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, buf, 8, mr->lkey, i));
    }
    pump(20);
    ASSERT_EQ(0, srq_verbs_get_async_event(a.dev, &ev));
    EXPECT_EQ(IBV_EVENT_CQ_ERR, ev.event_type);
    EXPECT_EQ(small, ev.element.cq);
    srq_verbs_ack_async_event(a.dev, &ev);
    for (int i = 0; (i < 4) && (ret >= 0); ++i) {
        ret = ibv_poll_cq(small, 1, wc);
    }
    EXPECT_LT(ret, 0) << "polling an overrun CQ reports the error";
}

TEST_P(cq, channel_event_in_process)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_comp_channel *ch = make_channel(b);
    int ctx_tag = 0;
    ibv_cq *rcq = srq_verbs_create_cq(b.dev, 16, &ctx_tag, ch, 0);
    ASSERT_NE(nullptr, rcq);
    m_cqs.push_back(rcq);
    m_cleanup.push_back([&b, rcq]() {
        EXPECT_EQ(0, srq_verbs_destroy_cq(b.dev, rcq));
    });
    ibv_cq *scq = make_cq(a);
    ibv_cq *scqb = make_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, scq, scq);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, scqb, rcq);
    char *buf = (char*)alloc(64);
    ibv_mr *smr = reg(a, buf, 64, 0);
    ibv_mr *rmr = reg(b, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    struct pollfd pfd = { ch->fd, POLLIN, 0 };
    ibv_cq *ev_cq = nullptr;
    void *ev_ctx = nullptr;
    int flags;

    connect_rc(a, qa, b, qb);
    ASSERT_EQ(0, post_recv(qb, buf, 64, rmr->lkey, 1));
    flags = fcntl(ch->fd, F_GETFL);
    ASSERT_EQ(0, fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK));
    EXPECT_EQ(EAGAIN, srq_verbs_get_cq_event(b.dev, ch, &ev_cq, &ev_ctx));

    ASSERT_EQ(0, ibv_req_notify_cq(rcq, 0));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, buf, 8, smr->lkey, 1));
    /* nobody polls b: the channel fd must still become readable */
    ASSERT_EQ(1, ::poll(&pfd, 1, 2000));
    int ret = EAGAIN;
    for (uint64_t end = now_ms() + 2000; (ret == EAGAIN) && (now_ms() < end);) {
        ret = srq_verbs_get_cq_event(b.dev, ch, &ev_cq, &ev_ctx);
        if (ret == EAGAIN) {
            ::poll(&pfd, 1, 100);
        }
    }
    ASSERT_EQ(0, ret);
    EXPECT_EQ(rcq, ev_cq);
    EXPECT_EQ(&ctx_tag, ev_ctx);
    srq_verbs_ack_cq_events(b.dev, ev_cq, 1);
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcq).status);
    /* not re-armed: no new event */
    ASSERT_EQ(0, post_recv(qb, buf, 64, rmr->lkey, 2));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, buf, 8, smr->lkey, 2));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcq).status);
    EXPECT_EQ(EAGAIN, srq_verbs_get_cq_event(b.dev, ch, &ev_cq, &ev_ctx));
    /* destroying a channel in use: EBUSY */
    EXPECT_EQ(EBUSY, srq_verbs_destroy_comp_channel(b.dev, ch));
}

SRQ_INSTANTIATE(cq);


class ud : public verbs_test {};

TEST_P(ud, grh_offset_40_and_imm)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_UD, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_UD, cqb, cqb);
    char *sbuf = (char*)alloc(256), *rbuf = (char*)alloc(256, 0xcc);
    ibv_mr *smr = reg(a, sbuf, 256, 0);
    ibv_mr *rmr = reg(b, rbuf, 256, IBV_ACCESS_LOCAL_WRITE);
    ibv_ah *ah = make_ah(a, b.addr);
    ibv_sge sge = { (uintptr_t)sbuf, 20, smr->lkey };
    ibv_send_wr wr = {}, *bad;

    ud_to_rts(a, qa, 0x1234);
    ud_to_rts(b, qb, 0x1234);
    ASSERT_EQ(0, post_recv(qb, rbuf, 256, rmr->lkey, 9));
    strcpy(sbuf, "datagram payload!!!");
    wr.wr_id             = 4;
    wr.sg_list           = &sge;
    wr.num_sge           = 1;
    wr.opcode            = IBV_WR_SEND_WITH_IMM;
    wr.send_flags        = IBV_SEND_SIGNALED;
    wr.imm_data          = htobe32(77);
    wr.wr.ud.ah          = ah;
    wr.wr.ud.remote_qpn  = qb->qp_num;
    wr.wr.ud.remote_qkey = 0x1234;
    ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));

    ibv_wc wc = poll1(cqb);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(9u, wc.wr_id);
    EXPECT_EQ(40u + 20u, wc.byte_len) << "byte_len includes the GRH";
    EXPECT_EQ(qa->qp_num, wc.src_qp);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(77), wc.imm_data);
    EXPECT_EQ(0, strcmp(rbuf + 40, "datagram payload!!!"))
        << "payload starts at offset 40";
    EXPECT_EQ((char)0xcc, rbuf[60]);
    if (is_soft()) {
        EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
        /* the soft GRH carries the sender's address as sgid */
        EXPECT_EQ(0, memcmp(rbuf + 8, a.addr.gid, 16));
    }
    wc = poll1(cqa);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(4u, wc.wr_id);
}

TEST_P(ud, grh_spans_sges_and_wrong_qkey_dropped)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_UD, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_UD, cqb, cqb);
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(256);
    ibv_mr *smr = reg(a, sbuf, 64, 0);
    ibv_mr *rmr = reg(b, rbuf, 256, IBV_ACCESS_LOCAL_WRITE);
    ibv_ah *ah = make_ah(a, b.addr);
    ibv_sge ssge = { (uintptr_t)sbuf, 8, smr->lkey };
    /* GRH in the first SGE (40 bytes), payload in the second */
    ibv_sge rsge[2] = { { (uintptr_t)rbuf, 40, rmr->lkey },
                        { (uintptr_t)rbuf + 128, 64, rmr->lkey } };
    ibv_send_wr wr = {}, *bad;
    ibv_recv_wr rwr = {}, *rbad;
    ibv_wc wc;

    ud_to_rts(a, qa, 5);
    ud_to_rts(b, qb, 5);
    rwr.wr_id = 1; rwr.sg_list = rsge; rwr.num_sge = 2;
    ASSERT_EQ(0, ibv_post_recv(qb, &rwr, &rbad));
    memcpy(sbuf, "ABCDEFGH", 8);
    wr.sg_list = &ssge; wr.num_sge = 1; wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah; wr.wr.ud.remote_qpn = qb->qp_num;
    wr.wr.ud.remote_qkey = 6; /* wrong */
    ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(cqa).status);
    EXPECT_EQ(0, poll(cqb, 1, &wc, 50)) << "wrong qkey: dropped";
    wr.wr.ud.remote_qkey = 5;
    ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));
    wc = poll1(cqb);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(48u, wc.byte_len);
    EXPECT_EQ(0, memcmp(rbuf + 128, "ABCDEFGH", 8));
}

/* mlx5 posts both and the HCA fails them (rxe refuses them at post time):
 * a datagram above the MTU completes IBV_WC_LOC_LEN_ERR, an RDMA WRITE on
 * a UD QP IBV_WC_LOC_QP_OP_ERR; the QP goes to error */
TEST_P(ud, too_long_or_rdma_fails_as_its_completion)
{
    SRQ_SKIP_UNLESS_SOFT();
    tdev_t &a = open_dev();
    ibv_cq *cqa = make_cq(a);
    ibv_qp *qa = make_qp(a, IBV_QPT_UD, cqa, cqa);
    char *sbuf = (char*)alloc(8192);
    ibv_mr *smr = reg(a, sbuf, 8192, 0);
    ibv_ah *ah = make_ah(a, a.addr);
    ibv_sge sge = { (uintptr_t)sbuf, 8192, smr->lkey };
    ibv_send_wr wr = {}, *bad = nullptr;

    ud_to_rts(a, qa, 1);
    wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_SEND;
    wr.wr.ud.ah = ah; wr.wr.ud.remote_qpn = qa->qp_num;
    wr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad)) << "above the MTU";
    EXPECT_EQ(IBV_WC_LOC_LEN_ERR, poll1(cqa).status) << "above the MTU";
    EXPECT_EQ(IBV_QPS_ERR, qp_state(a, qa));

    ibv_qp *qb = make_qp(a, IBV_QPT_UD, cqa, cqa);
    ud_to_rts(a, qb, 1);
    wr.opcode  = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = (uintptr_t)sbuf; /* the union's AH is gone */
    wr.wr.rdma.rkey        = smr->rkey;
    sge.length = 8;
    ASSERT_EQ(0, ibv_post_send(qb, &wr, &bad)) << "RDMA on UD";
    EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, poll1(cqa).status) << "RDMA on UD";
    EXPECT_EQ(IBV_QPS_ERR, qp_state(a, qb));
}

SRQ_INSTANTIATE(ud);
