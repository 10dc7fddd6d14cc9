/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: post-time checks of ibv_post_send,
 * ibv_post_recv and ibv_post_srq_recv, one test per case: the call returns
 * the errno, *bad_wr is the failing WR, and the WRs before it stay posted
 * (they complete).
 */
#include "verbs_fixture.h"

#include <string.h>

using namespace srq_test;

class post : public two_dev_test {
protected:
    void SetUp() override
    {
        two_dev_test::SetUp();
        if (IsSkipped()) {
            return;
        }
        buf  = (char*)alloc(4096);
        smr  = reg(*a, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
        rmr  = reg(*b, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
    }

    /* a chain of @n single-SGE WRs, wr_id = index */
    void send_chain(int n, ibv_send_wr *wr, ibv_sge *sge, uint32_t lkey)
    {
        for (int i = 0; i < n; ++i) {
            sge[i] = { (uintptr_t)buf, 8, lkey };
            memset(&wr[i], 0, sizeof(wr[i]));
            wr[i].wr_id      = i;
            wr[i].sg_list    = &sge[i];
            wr[i].num_sge    = 1;
            wr[i].opcode     = IBV_WR_SEND;
            wr[i].send_flags = IBV_SEND_SIGNALED;
            wr[i].next       = (i + 1 < n) ? &wr[i + 1] : nullptr;
        }
    }

    void recv_chain(int n, ibv_recv_wr *wr, ibv_sge *sge, uint32_t lkey)
    {
        for (int i = 0; i < n; ++i) {
            sge[i] = { (uintptr_t)buf + 64 * i, 64, lkey };
            memset(&wr[i], 0, sizeof(wr[i]));
            wr[i].wr_id   = i;
            wr[i].sg_list = &sge[i];
            wr[i].num_sge = 1;
            wr[i].next    = (i + 1 < n) ? &wr[i + 1] : nullptr;
        }
    }

    /* connected pair, @posted receives at b */
    void pair(uint32_t send_wr = 64, uint32_t recv_wr = 64, int posted = 16)
    {
        qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, send_wr, recv_wr, 2,
                      16);
        qpb = make_qp(*b, IBV_QPT_RC, scqb, rcqb, nullptr, send_wr, recv_wr, 2,
                      16);
        connect_rc(*a, qpa, *b, qpb);
        for (int i = 0; i < posted; ++i) {
            ASSERT_EQ(0, post_recv(qpb, buf, 64, rmr->lkey, 100 + i));
        }
    }

    /* the first @n sends of a chain were posted: they complete, in order */
    void expect_sends_done(int n)
    {
        ibv_wc wc[16];
        ASSERT_EQ(n, poll(scqa, n, wc));
        for (int i = 0; i < n; ++i) {
            EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
            EXPECT_EQ((uint64_t)i, wc[i].wr_id);
        }
        EXPECT_EQ(0, poll(scqa, 1, wc, 20)) << "more than was posted";
    }

    ibv_qp *qpa = nullptr, *qpb = nullptr;
    char *buf = nullptr;
    ibv_mr *smr = nullptr, *rmr = nullptr;
};

TEST_P(post, send_too_many_sges)
{
    pair();
    ibv_send_wr wr[3], *bad = nullptr;
    ibv_sge sge[3], many[3];

    send_chain(3, wr, sge, smr->lkey);
    for (auto &s : many) {
        s = sge[0];
    }
    wr[1].sg_list = many;
    wr[1].num_sge = 3; /* max_send_sge is 2 */
    EXPECT_EQ(EINVAL, ibv_post_send(qpa, wr, &bad));
    EXPECT_EQ(&wr[1], bad);
    expect_sends_done(1);
}

TEST_P(post, send_queue_full)
{
    pair(2, 64);
    ibv_send_wr wr[3], *bad = nullptr;
    ibv_sge sge[3];

    send_chain(3, wr, sge, smr->lkey);
    EXPECT_EQ(ENOMEM, ibv_post_send(qpa, wr, &bad));
    EXPECT_EQ(&wr[2], bad);
    expect_sends_done(2);
    /* completions free the queue */
    bad = nullptr;
    send_chain(2, wr, sge, smr->lkey);
    EXPECT_EQ(0, ibv_post_send(qpa, wr, &bad));
    EXPECT_EQ(nullptr, bad);
}

TEST_P(post, send_bad_state)
{
    ibv_qp *qp = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    ibv_send_wr wr[2], *bad = nullptr;
    ibv_sge sge[2];
    ibv_qp_attr attr = {};

    send_chain(2, wr, sge, smr->lkey);
    EXPECT_EQ(EINVAL, ibv_post_send(qp, wr, &bad)) << "RESET";
    EXPECT_EQ(&wr[0], bad);

    attr.qp_state        = IBV_QPS_INIT;
    attr.port_num        = 1;
    attr.qp_access_flags = 0;
    ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, qp, &attr,
                                     IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    bad = nullptr;
    EXPECT_EQ(EINVAL, ibv_post_send(qp, wr, &bad)) << "INIT";
    EXPECT_EQ(&wr[0], bad);
}

TEST_P(post, send_unsupported_opcode_rejected)
{
    SRQ_SKIP_UNLESS_SOFT(); /* an HCA with TSO accepts it on UD */
    pair();
    ibv_send_wr wr[2], *bad = nullptr;
    ibv_sge sge[2];

    send_chain(2, wr, sge, smr->lkey);
    wr[1].opcode = IBV_WR_TSO;
    EXPECT_EQ(EINVAL, ibv_post_send(qpa, wr, &bad));
    EXPECT_EQ(&wr[1], bad);
    expect_sends_done(1);
}

TEST_P(post, send_inline_too_long)
{
    pair();
    ibv_send_wr wr[2], *bad = nullptr;
    ibv_sge sge[2];
    ibv_qp_attr attr;
    ibv_qp_init_attr init;

    ASSERT_EQ(0, srq_verbs_query_qp(a->dev, qpa, &attr, IBV_QP_CAP, &init));
    send_chain(2, wr, sge, smr->lkey);
    wr[1].send_flags |= IBV_SEND_INLINE;
    sge[1].length = init.cap.max_inline_data + 1;
    EXPECT_EQ(EINVAL, ibv_post_send(qpa, wr, &bad));
    EXPECT_EQ(&wr[1], bad);
    expect_sends_done(1);
}

TEST_P(post, recv_on_srq_qp)
{
    ibv_srq *srq = make_srq(*b, 16);
    ibv_qp *qp = make_qp(*b, IBV_QPT_RC, scqb, rcqb, srq);
    ibv_recv_wr wr[1], *bad = nullptr;
    ibv_sge sge[1];

    recv_chain(1, wr, sge, rmr->lkey);
    int ret = ibv_post_recv(qp, wr, &bad);
    EXPECT_NE(0, ret);
    if (is_soft()) {
        EXPECT_EQ(EINVAL, ret);
    }
    EXPECT_EQ(&wr[0], bad);
}

TEST_P(post, recv_too_many_sges)
{
    pair(64, 64, 0);
    ibv_recv_wr wr[3], *bad = nullptr;
    ibv_sge sge[3], many[3];
    ibv_wc wc[3];

    recv_chain(3, wr, sge, rmr->lkey);
    for (auto &s : many) {
        s = sge[1];
    }
    wr[1].sg_list = many;
    wr[1].num_sge = 3;
    EXPECT_EQ(EINVAL, ibv_post_recv(qpb, wr, &bad));
    EXPECT_EQ(&wr[1], bad);
    /* wr[0] is posted: a message lands in it */
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, 1));
    ASSERT_EQ(1, poll(rcqb, 1, wc));
    EXPECT_EQ(0u, wc[0].wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
}

TEST_P(post, recv_queue_full)
{
    pair(64, 2, 0);
    ibv_recv_wr wr[3], *bad = nullptr;
    ibv_sge sge[3];
    ibv_qp_attr attr = {};
    ibv_wc wc[3];

    recv_chain(3, wr, sge, rmr->lkey);
    EXPECT_EQ(ENOMEM, ibv_post_recv(qpb, wr, &bad));
    EXPECT_EQ(&wr[2], bad);
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qpb, &attr, IBV_QP_STATE));
    ASSERT_EQ(2, poll(rcqb, 3, wc, 100)) << "exactly the first two posted";
    EXPECT_EQ(0u, wc[0].wr_id);
    EXPECT_EQ(1u, wc[1].wr_id);
}

TEST_P(post, recv_in_reset)
{
    ibv_qp *qp = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    ibv_recv_wr wr[1], *bad = nullptr;
    ibv_sge sge[1];

    recv_chain(1, wr, sge, rmr->lkey);
    EXPECT_EQ(EINVAL, ibv_post_recv(qp, wr, &bad));
    EXPECT_EQ(&wr[0], bad);
}

TEST_P(post, srq_too_many_sges)
{
    ibv_srq *srq = make_srq(*b, 16, 1);
    ibv_qp *qp   = make_qp(*b, IBV_QPT_RC, scqb, rcqb, srq);
    ibv_recv_wr wr[3], *bad = nullptr;
    ibv_sge sge[3], many[2];
    ibv_wc wc[3];

    qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    connect_rc(*a, qpa, *b, qp);
    recv_chain(3, wr, sge, rmr->lkey);
    many[0] = many[1] = sge[1];
    wr[1].sg_list = many;
    wr[1].num_sge = 2;
    EXPECT_EQ(EINVAL, ibv_post_srq_recv(srq, wr, &bad));
    EXPECT_EQ(&wr[1], bad);
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, 2));
    ASSERT_EQ(1, poll(rcqb, 1, wc));
    EXPECT_EQ(0u, wc[0].wr_id) << "wr[0] was posted";
    EXPECT_EQ(0, poll(rcqb, 1, wc, 50)) << "nothing after the bad WR";
}

TEST_P(post, srq_full)
{
    ibv_srq_attr sattr;
    ibv_srq *srq = make_srq(*b, 4, 1);
    std::vector<ibv_recv_wr> wr;
    std::vector<ibv_sge> sge;
    ibv_recv_wr *bad = nullptr;

    ASSERT_EQ(0, srq_verbs_query_srq(b->dev, srq, &sattr));
    wr.resize(sattr.max_wr + 1);
    sge.resize(sattr.max_wr + 1);
    recv_chain((int)wr.size(), wr.data(), sge.data(), rmr->lkey);
    EXPECT_EQ(ENOMEM, ibv_post_srq_recv(srq, wr.data(), &bad));
    EXPECT_EQ(&wr[sattr.max_wr], bad);
}

SRQ_INSTANTIATE(post);
