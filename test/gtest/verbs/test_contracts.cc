/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: the contract violations srq-verbs-fuzz found
 * (tools/fuzz, contracts/), one test each, so that they stay fixed:
 *   - ibv_dealloc_pd of a PD that still has an MR, SRQ, QP or AH: EBUSY,
 *     and the PD and its objects stay usable (soft0 freed it);
 *   - an RDMA write whose rkey the target does not grant: both QPs go to
 *     error, so the target's posted receives flush (soft0 left the target
 *     in RTS: only its requester learnt of the refusal);
 *   - an SRQ receive WR's second SGE is used whatever MR it names (soft0
 *     gave a region lkey 0x100, the SRQ WQE's end-of-list mark, after 255
 *     registrations: a message longer than the first SGE then failed with
 *     IBV_WC_LOC_LEN_ERR).
 */
#include "verbs_fixture.h"

#include <errno.h>
#include <string.h>

using namespace srq_test;

class contracts : public two_dev_test {
};

/* ibv_dealloc_pd.json: in_use */
TEST_P(contracts, dealloc_pd_in_use_is_ebusy)
{
    char *buf = (char*)alloc(64);
    const char *kinds[] = { "MR", "SRQ", "QP", "AH" };

    for (const char *kind : kinds) {
        ibv_pd *pd = srq_verbs_alloc_pd(a->dev);
        ASSERT_NE(nullptr, pd) << strerror(errno);
        ibv_mr *mr = nullptr;
        ibv_srq *srq = nullptr;
        ibv_qp *qp = nullptr;
        ibv_ah *ah = nullptr;

        if (!strcmp(kind, "MR")) {
            mr = srq_verbs_reg_mr(a->dev, pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
            ASSERT_NE(nullptr, mr) << strerror(errno);
        } else if (!strcmp(kind, "SRQ")) {
            ibv_srq_init_attr attr = {};
            attr.attr.max_wr  = 4;
            attr.attr.max_sge = 1;
            srq = srq_verbs_create_srq(a->dev, pd, &attr);
            ASSERT_NE(nullptr, srq) << strerror(errno);
        } else if (!strcmp(kind, "QP")) {
            ibv_qp_init_attr attr = {};
            attr.send_cq          = scqa;
            attr.recv_cq          = rcqa;
            attr.qp_type          = IBV_QPT_RC;
            attr.cap.max_send_wr  = 4;
            attr.cap.max_recv_wr  = 4;
            attr.cap.max_send_sge = 1;
            attr.cap.max_recv_sge = 1;
            qp = srq_verbs_create_qp(a->dev, pd, &attr);
            ASSERT_NE(nullptr, qp) << strerror(errno);
        } else {
            ibv_ah_attr attr;
            ASSERT_EQ(0, srq_verbs_ah_attr(a->dev, 1, &b->addr, &attr));
            ah = srq_verbs_create_ah(a->dev, pd, &attr);
            ASSERT_NE(nullptr, ah) << strerror(errno);
        }

        EXPECT_EQ(EBUSY, srq_verbs_dealloc_pd(a->dev, pd)) << kind;
        /* refused, and nothing lost: the object still works in the PD */
        if (mr != nullptr) {
            EXPECT_EQ(pd, mr->pd);
            EXPECT_EQ(0, srq_verbs_dereg_mr(a->dev, mr));
        } else if (srq != nullptr) {
            ibv_srq_attr sa;
            EXPECT_EQ(0, srq_verbs_query_srq(a->dev, srq, &sa));
            EXPECT_EQ(0, srq_verbs_destroy_srq(a->dev, srq));
        } else if (qp != nullptr) {
            EXPECT_EQ(IBV_QPS_RESET, qp_state(*a, qp));
            EXPECT_EQ(0, srq_verbs_destroy_qp(a->dev, qp));
        } else {
            EXPECT_EQ(0, srq_verbs_destroy_ah(a->dev, ah));
        }
        EXPECT_EQ(0, srq_verbs_dealloc_pd(a->dev, pd)) << kind;
    }
}

/* ibv_post_send.json: rkey_invalid ("both QPs move to IBV_QPS_ERR") */
TEST_P(contracts, rkey_refused_write_fails_both_qps)
{
    char *lbuf = (char*)alloc(64), *tgt = (char*)alloc(64);
    ibv_mr *lmr = reg(*a, lbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    /* the target's receive buffer: local write only, as the fuzzer's */
    ibv_mr *rmr = reg(*b, tgt, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp *qa  = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    ibv_qp *qb  = make_qp(*b, IBV_QPT_RC, scqb, rcqb);

    connect_rc(*a, qa, *b, qb);
    ASSERT_EQ(0, post_recv(qb, tgt, 64, rmr->lkey, 42));
    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE, lbuf, 8, lmr->lkey, 1,
                           IBV_SEND_SIGNALED, (uintptr_t)tgt, rmr->rkey));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, poll1(scqa).status);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*a, qa));
    /* the target's responder refused it: its QP is in error too */
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(42u, wc.wr_id);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*b, qb));
}

/* ibv_post_srq_recv.json: the scatter list is the WR's, SGE by SGE, for
 * every lkey the device hands out: 600 regions, each the second SGE of a
 * receive a 48-byte message spans */
TEST_P(contracts, srq_second_sge_with_any_lkey)
{
    ibv_srq *srq = make_srq(*b, 4, 2);
    ibv_qp *qa   = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    ibv_qp *qb   = make_qp(*b, IBV_QPT_RC, scqb, rcqb, srq);
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *head = reg(*b, rbuf, 16, IBV_ACCESS_LOCAL_WRITE);

    connect_rc(*a, qa, *b, qb);
    for (int i = 0; i < 600; ++i) {
        ibv_mr *tail = srq_verbs_reg_mr(b->dev, b->pd, rbuf + 16, 48,
                                        IBV_ACCESS_LOCAL_WRITE);
        ASSERT_NE(nullptr, tail) << strerror(errno);
        ibv_sge sge[2] = { { (uintptr_t)rbuf, 16, head->lkey },
                           { (uintptr_t)rbuf + 16, 48, tail->lkey } };
        ibv_recv_wr wr = {}, *bad = nullptr;
        wr.wr_id   = (uint64_t)i;
        wr.sg_list = sge;
        wr.num_sge = 2;
        ASSERT_EQ(0, ibv_post_srq_recv(srq, &wr, &bad));
        ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, sbuf, 48, smr->lkey, 1));
        ibv_wc wc = poll1(rcqb);
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
            << "region " << i << ", lkey 0x" << std::hex << tail->lkey;
        EXPECT_EQ(48u, wc.byte_len);
        ASSERT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
        ASSERT_EQ(0, srq_verbs_dereg_mr(b->dev, tail));
        if (wc.status != IBV_WC_SUCCESS) {
            break;
        }
    }
}

SRQ_INSTANTIATE(contracts);
