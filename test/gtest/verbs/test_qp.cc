/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: QP creation limits, the state machine's
 * required attributes, query, and a QP reset back to RESET.
 */
#include "verbs_fixture.h"

#include <string.h>

using namespace srq_test;

class qp : public verbs_test {
protected:
    void SetUp() override
    {
        verbs_test::SetUp();
        if (IsSkipped()) {
            return;
        }
        a  = &open_dev();
        b  = &open_dev();
        cq = make_cq(*a);
        cqb = make_cq(*b);
    }

    int modify(ibv_qp *q, ibv_qp_attr &attr, int mask)
    {
        return srq_verbs_modify_qp(a->dev, q, &attr, mask);
    }

    tdev_t *a = nullptr, *b = nullptr;
    ibv_cq *cq = nullptr, *cqb = nullptr;
};

TEST_P(qp, create_limits)
{
    ibv_device_attr dattr;
    ibv_qp_init_attr attr = {};

    ASSERT_EQ(0, srq_verbs_query_device(a->dev, &dattr));
    attr.send_cq = attr.recv_cq = cq;
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr  = dattr.max_qp_wr + 1;
    attr.cap.max_recv_wr  = 1;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_create_qp(a->dev, a->pd, &attr));
    EXPECT_NE(0, errno);
    attr.cap.max_send_wr  = 1;
    attr.cap.max_send_sge = dattr.max_sge + 1;
    EXPECT_EQ(nullptr, srq_verbs_create_qp(a->dev, a->pd, &attr));
    attr.cap.max_send_sge = 1;
    attr.send_cq = nullptr;
    EXPECT_EQ(nullptr, srq_verbs_create_qp(a->dev, a->pd, &attr));
}

/* UC and XRC are provided (test_uc.cc, test_xrc.cc); raw packet QPs are
 * not; an XRC target needs its domain, which only ibv_create_qp_ex gives */
TEST_P(qp, soft_unsupported_types_refused)
{
    SRQ_SKIP_UNLESS_SOFT();
    ibv_qp_init_attr attr = {};

    attr.send_cq = attr.recv_cq = cq;
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
    attr.qp_type = IBV_QPT_RAW_PACKET;
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_create_qp(a->dev, a->pd, &attr));
    EXPECT_EQ(EOPNOTSUPP, errno);
    attr.qp_type = IBV_QPT_XRC_RECV;
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_create_qp(a->dev, a->pd, &attr));
    EXPECT_EQ(EINVAL, errno);
}

TEST_P(qp, rc_required_attributes)
{
    ibv_qp *q = make_qp(*a, IBV_QPT_RC, cq, cq);
    ibv_qp *peer = make_qp(*b, IBV_QPT_RC, cqb, cqb);
    ibv_qp_attr attr = {};
    const int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                          IBV_QP_ACCESS_FLAGS;
    const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                         IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    const int rts_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC;

    /* RESET -> RTR skips INIT */
    attr.qp_state = IBV_QPS_RTR;
    EXPECT_EQ(EINVAL, modify(q, attr, IBV_QP_STATE));
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    EXPECT_EQ(EINVAL, modify(q, attr, IBV_QP_STATE | IBV_QP_PORT))
        << "missing pkey index and access flags";
    attr.port_num = 7;
    EXPECT_EQ(EINVAL, modify(q, attr, init_mask)) << "no such port";
    attr.port_num = 1;
    ASSERT_EQ(0, modify(q, attr, init_mask));
    EXPECT_EQ(IBV_QPS_INIT, qp_state(*a, q));

    memset(&attr, 0, sizeof(attr));
    attr.qp_state    = IBV_QPS_RTR;
    attr.path_mtu    = IBV_MTU_1024;
    attr.dest_qp_num = peer->qp_num;
    attr.min_rnr_timer = 12;
    ASSERT_EQ(0, srq_verbs_ah_attr(a->dev, 1, &b->addr, &attr.ah_attr));
    EXPECT_EQ(EINVAL, modify(q, attr, rtr_mask & ~IBV_QP_DEST_QPN))
        << "RTR needs the destination QP";
    EXPECT_EQ(EINVAL, modify(q, attr, rtr_mask & ~IBV_QP_AV))
        << "RTR needs the address vector";
    EXPECT_EQ(EINVAL, modify(q, attr, rtr_mask | IBV_QP_SQ_PSN))
        << "an attribute that does not belong to INIT->RTR";
    ASSERT_EQ(0, modify(q, attr, rtr_mask));

    memset(&attr, 0, sizeof(attr));
    attr.qp_state  = IBV_QPS_RTS;
    attr.timeout   = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 8; /* 0..7 */
    EXPECT_EQ(EINVAL, modify(q, attr, rts_mask));
    attr.rnr_retry = 6;
    EXPECT_EQ(EINVAL, modify(q, attr, rts_mask & ~IBV_QP_RNR_RETRY));
    ASSERT_EQ(0, modify(q, attr, rts_mask));

    ibv_qp_attr got;
    ibv_qp_init_attr init;
    ASSERT_EQ(0, srq_verbs_query_qp(a->dev, q, &got, IBV_QP_STATE |
                                    IBV_QP_DEST_QPN | IBV_QP_RNR_RETRY, &init));
    EXPECT_EQ(IBV_QPS_RTS, got.qp_state);
    EXPECT_EQ(peer->qp_num, got.dest_qp_num);
    EXPECT_EQ(6, got.rnr_retry);
    EXPECT_EQ(14, got.timeout);
    EXPECT_EQ(12, got.min_rnr_timer);
    EXPECT_EQ(IBV_QPT_RC, init.qp_type);
    EXPECT_EQ(cq, init.send_cq);

    /* wrong current state */
    attr.qp_state     = IBV_QPS_ERR;
    attr.cur_qp_state = IBV_QPS_INIT;
    EXPECT_EQ(EINVAL, modify(q, attr, IBV_QP_STATE | IBV_QP_CUR_STATE));
    /* any -> RESET, and around again */
    attr.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, modify(q, attr, IBV_QP_STATE));
    EXPECT_EQ(IBV_QPS_RESET, qp_state(*a, q));
}

TEST_P(qp, rc_rtr_needs_reachable_peer)
{
    SRQ_SKIP_UNLESS_SOFT();
    ibv_qp *q = make_qp(*a, IBV_QPT_RC, cq, cq);
    ibv_qp_attr attr = {};
    srq_verbs_port_addr_t gone = b->addr;

    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    ASSERT_EQ(0, modify(q, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    gone.gid[15] ^= 0x55;
    attr.qp_state    = IBV_QPS_RTR;
    attr.path_mtu    = IBV_MTU_1024;
    attr.dest_qp_num = 1234;
    ASSERT_EQ(0, srq_verbs_ah_attr(a->dev, 1, &gone, &attr.ah_attr));
    EXPECT_NE(0, modify(q, attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC |
                                 IBV_QP_MIN_RNR_TIMER));
    EXPECT_EQ(IBV_QPS_INIT, qp_state(*a, q));
}

TEST_P(qp, ud_transitions)
{
    ibv_qp *q = make_qp(*a, IBV_QPT_UD, cq, cq);
    ibv_qp_attr attr = {};

    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    EXPECT_EQ(EINVAL, modify(q, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                      IBV_QP_PORT)) << "UD needs a qkey";
    ud_to_rts(*a, q, 0x11);
    ibv_qp_attr got;
    ibv_qp_init_attr init;
    ASSERT_EQ(0, srq_verbs_query_qp(a->dev, q, &got, IBV_QP_QKEY, &init));
    EXPECT_EQ(0x11u, got.qkey);
    EXPECT_EQ(IBV_QPS_RTS, got.qp_state);
}

TEST_P(qp, destroy_with_completions_pending)
{
    ibv_qp *qa = make_qp(*a, IBV_QPT_RC, cq, cq);
    ibv_qp *qb = make_qp(*b, IBV_QPT_RC, cqb, cqb);
    char *buf = (char*)alloc(64);
    ibv_mr *mr = reg(*b, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *smr = reg(*a, buf, 64, 0);
    ibv_wc wc;

    connect_rc(*a, qa, *b, qb);
    ASSERT_EQ(0, post_recv(qb, buf, 64, mr->lkey, 1));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, buf, 8, smr->lkey, 1));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(cq).status);
    destroy_qp(*b, qb); /* its receive completion is still in cqb */
    EXPECT_EQ(1, poll(cqb, 1, &wc));
    EXPECT_EQ(0, poll(cqb, 1, &wc, 10));
}

SRQ_INSTANTIATE(qp);
