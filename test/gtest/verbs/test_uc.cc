/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: UC QPs (IBV_QPT_UC), on the built-in path and
 * through libibverbs (test/verbs_gtest_ibv.sh):
 *   - the attribute masks UC's transitions take (no ACK, retry, RNR or
 *     READ/atomic attributes), others EINVAL;
 *   - SEND and RDMA WRITE, with and without immediate data, small and
 *     larger than a packet carries, into a QP's own receive queue or an
 *     SRQ; READ and atomics refused when posted;
 *   - what the responder refuses (no receive WQE, a bad rkey) is dropped
 *     without a word: the sender's WR succeeds, both QPs stay usable and
 *     the next message arrives; a receive too small completes in error
 *     and the QP goes on (rxe's behaviour).
 */
#include "verbs_fixture.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

using namespace srq_test;

namespace {

const uint32_t kLen   = 256 * 1024; /* larger than a packet's payload */
const int kRemoteWrite = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

} // namespace

class uc : public two_dev_test {
protected:
    void to_init(tdev_t &d, ibv_qp *qp)
    {
        ibv_qp_attr a = {};

        a.qp_state        = IBV_QPS_INIT;
        a.pkey_index      = 0;
        a.port_num        = 1;
        a.qp_access_flags = kRemoteWrite;
        ASSERT_EQ(0, srq_verbs_modify_qp(d.dev, qp, &a,
                                         IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                         IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    }

    ibv_qp_attr rtr_attr(tdev_t &d, tdev_t &peer, ibv_qp *peer_qp)
    {
        ibv_qp_attr a = {};

        a.qp_state    = IBV_QPS_RTR;
        a.path_mtu    = IBV_MTU_1024;
        a.dest_qp_num = peer_qp->qp_num;
        a.rq_psn      = 0;
        EXPECT_EQ(0, srq_verbs_ah_attr(d.dev, 1, &peer.addr, &a.ah_attr));
        return a;
    }

    static const int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

    void to_rts(tdev_t &d, ibv_qp *qp, tdev_t &peer, ibv_qp *peer_qp)
    {
        ibv_qp_attr a = rtr_attr(d, peer, peer_qp);

        ASSERT_EQ(0, srq_verbs_modify_qp(d.dev, qp, &a, kRtrMask));
        a          = {};
        a.qp_state = IBV_QPS_RTS;
        a.sq_psn   = 0;
        ASSERT_EQ(0, srq_verbs_modify_qp(d.dev, qp, &a,
                                         IBV_QP_STATE | IBV_QP_SQ_PSN));
    }

    /* qa (a) <-> qb (b), qb on @srq if given; buffers registered */
    void uc_pair(ibv_srq *srq = nullptr)
    {
        qa = make_qp(*a, IBV_QPT_UC, scqa, rcqa);
        qb = make_qp(*b, IBV_QPT_UC, scqb, rcqb, srq);
        ASSERT_NE(nullptr, qa);
        ASSERT_NE(nullptr, qb);
        to_init(*a, qa);
        to_init(*b, qb);
        to_rts(*a, qa, *b, qb);
        to_rts(*b, qb, *a, qa);
        lbuf = (char*)alloc(kLen, 'L');
        rbuf = (char*)alloc(kLen, 'R');
        lmr  = reg(*a, lbuf, kLen, IBV_ACCESS_LOCAL_WRITE);
        rmr  = reg(*b, rbuf, kLen, kRemoteWrite);
    }

    /* A message sent completes successfully on a's send CQ */
    void expect_sent(uint64_t wr_id, ibv_wc_opcode op)
    {
        ibv_wc wc = poll1(scqa);

        EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(wr_id, wc.wr_id);
        EXPECT_EQ(op, wc.opcode);
    }

    ibv_qp *qa = nullptr, *qb = nullptr;
    char *lbuf = nullptr, *rbuf = nullptr;
    ibv_mr *lmr = nullptr, *rmr = nullptr;
};

/* UC's transitions take no ACK, retry, RNR or READ/atomic attribute */
TEST_P(uc, modify_takes_uc_masks)
{
    ibv_qp *qa = make_qp(*a, IBV_QPT_UC, scqa, rcqa);
    ibv_qp *qb = make_qp(*b, IBV_QPT_UC, scqb, rcqb);
    ibv_qp_attr x;

    ASSERT_NE(nullptr, qa);
    ASSERT_NE(nullptr, qb);
    x          = {};
    x.qp_state = IBV_QPS_INIT;
    x.port_num = 1;
    x.qkey     = 1; /* UD's attribute */
    EXPECT_EQ(EINVAL, srq_verbs_modify_qp(a->dev, qa, &x,
                                          IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                          IBV_QP_PORT | IBV_QP_QKEY));
    to_init(*a, qa);
    x = rtr_attr(*a, *b, qb);
    x.max_dest_rd_atomic = 1;
    x.min_rnr_timer      = 1;
    EXPECT_EQ(EINVAL, srq_verbs_modify_qp(a->dev, qa, &x, kRtrMask |
                                          IBV_QP_MAX_DEST_RD_ATOMIC));
    EXPECT_EQ(EINVAL, srq_verbs_modify_qp(a->dev, qa, &x, kRtrMask |
                                          IBV_QP_MIN_RNR_TIMER));
    EXPECT_EQ(EINVAL, srq_verbs_modify_qp(a->dev, qa, &x,
                                          kRtrMask & ~IBV_QP_RQ_PSN));
    EXPECT_EQ(IBV_QPS_INIT, qp_state(*a, qa));
    ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, qa, &x, kRtrMask));
    x           = {};
    x.qp_state  = IBV_QPS_RTS;
    x.timeout   = 14;
    x.retry_cnt = 7;
    x.rnr_retry = 7;
    for (int extra : { IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY,
                       IBV_QP_MAX_QP_RD_ATOMIC }) {
        EXPECT_EQ(EINVAL, srq_verbs_modify_qp(a->dev, qa, &x, IBV_QP_STATE |
                                              IBV_QP_SQ_PSN | extra))
            << extra;
    }
    EXPECT_EQ(IBV_QPS_RTR, qp_state(*a, qa));
    EXPECT_EQ(0, srq_verbs_modify_qp(a->dev, qa, &x,
                                     IBV_QP_STATE | IBV_QP_SQ_PSN));
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*a, qa));
}

/* SEND and WRITE, with and without immediate, small and large */
TEST_P(uc, send_and_write_traffic)
{
    uc_pair();
    char *rx = (char*)alloc(kLen, 0);
    ibv_mr *rxm = reg(*b, rx, kLen, IBV_ACCESS_LOCAL_WRITE);
    ibv_wc wc;

    for (uint32_t i = 0; i < kLen; ++i) {
        lbuf[i] = (char)(i * 7 + 1);
    }
    ASSERT_EQ(0, post_recv(qb, rx, 64, rxm->lkey, 1));
    ASSERT_EQ(0, post_recv(qb, rx + 64, kLen - 64, rxm->lkey, 2));
    ASSERT_EQ(0, post_recv(qb, rx, 16, rxm->lkey, 3));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 64, lmr->lkey, 11));
    expect_sent(11, IBV_WC_SEND);
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND_WITH_IMM, lbuf + 64, kLen - 64,
                           lmr->lkey, 12, IBV_SEND_SIGNALED, 0, 0,
                           htobe32(5)));
    expect_sent(12, IBV_WC_SEND);
    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE, lbuf, kLen, lmr->lkey, 13,
                           IBV_SEND_SIGNALED, (uintptr_t)rbuf, rmr->rkey));
    expect_sent(13, IBV_WC_RDMA_WRITE);
    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE_WITH_IMM, lbuf, 32,
                           lmr->lkey, 14, IBV_SEND_SIGNALED,
                           (uintptr_t)rbuf + 100, rmr->rkey, htobe32(9)));
    expect_sent(14, IBV_WC_RDMA_WRITE);

    wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_EQ(64u, wc.byte_len);
    wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(kLen - 64, wc.byte_len);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(5), wc.imm_data);
    EXPECT_EQ(0, memcmp(rx, lbuf, kLen));
    wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc.opcode);
    EXPECT_EQ(htobe32(9), wc.imm_data);
    EXPECT_EQ(0, memcmp(rbuf, lbuf, 100));
    EXPECT_EQ(0, memcmp(rbuf + 100, lbuf, 32));
    EXPECT_EQ(0, memcmp(rbuf + 132, lbuf + 132, kLen - 132));
}

/* UC has no READ and no atomics: refused when posted, as HCAs do */
TEST_P(uc, read_and_atomics_refused_at_post)
{
    uc_pair();
    ibv_send_wr wr, *bad;
    ibv_sge sge = { (uintptr_t)lbuf, 8, lmr->lkey };
    ibv_wc wc;

    for (ibv_wr_opcode op : { IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
                              IBV_WR_ATOMIC_FETCH_AND_ADD }) {
        memset(&wr, 0, sizeof(wr));
        wr.opcode                = op;
        wr.sg_list               = &sge;
        wr.num_sge               = 1;
        wr.send_flags            = IBV_SEND_SIGNALED;
        wr.wr.atomic.remote_addr = (uintptr_t)rbuf;
        wr.wr.atomic.rkey        = rmr->rkey;
        bad = nullptr;
        EXPECT_EQ(EINVAL, ibv_post_send(qa, &wr, &bad)) << op;
        EXPECT_EQ(&wr, bad) << op;
    }
    pump(50);
    EXPECT_EQ(0, ibv_poll_cq(scqa, 1, &wc));
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*a, qa));
}

/* No receive WQE: the message is dropped, the sender's WR succeeds, and
 * the next message takes the next receive */
TEST_P(uc, message_without_receive_dropped_next_arrives)
{
    uc_pair();
    char *rx = (char*)alloc(64, 0);
    ibv_mr *rxm = reg(*b, rx, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_wc wc;

    memcpy(lbuf, "first", 5);
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 5, lmr->lkey, 1));
    expect_sent(1, IBV_WC_SEND);
    pump(50);
    EXPECT_EQ(0, ibv_poll_cq(rcqb, 1, &wc));
    ASSERT_EQ(0, post_recv(qb, rx, 64, rxm->lkey, 7));
    memcpy(lbuf + 8, "second", 6);
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf + 8, 6, lmr->lkey, 2));
    expect_sent(2, IBV_WC_SEND);
    wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, wc.wr_id);
    EXPECT_EQ(6u, wc.byte_len);
    EXPECT_EQ(0, memcmp(rx, "second", 6));
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*a, qa));
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*b, qb));
}

/* A WRITE the responder refuses (an rkey that is no region's, one without
 * remote write) lands nowhere; the sender is not told; the QPs go on */
TEST_P(uc, write_with_bad_rkey_dropped)
{
    uc_pair();
    char *ro    = (char*)alloc(64, 'O');
    ibv_mr *rom = reg(*b, ro, 64, IBV_ACCESS_LOCAL_WRITE |
                                  IBV_ACCESS_REMOTE_READ);
    char *rx    = (char*)alloc(64, 0);
    ibv_mr *rxm = reg(*b, rx, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_wc wc;

    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE, lbuf, 64, lmr->lkey, 1,
                           IBV_SEND_SIGNALED, (uintptr_t)rbuf,
                           rmr->rkey + 0x1000));
    expect_sent(1, IBV_WC_RDMA_WRITE);
    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE, lbuf, 64, lmr->lkey, 2,
                           IBV_SEND_SIGNALED, (uintptr_t)ro, rom->rkey));
    expect_sent(2, IBV_WC_RDMA_WRITE);
    ASSERT_EQ(0, post_recv(qb, rx, 64, rxm->lkey, 7));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 8, lmr->lkey, 3));
    expect_sent(3, IBV_WC_SEND);
    wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, wc.wr_id);
    EXPECT_EQ(0, memcmp(rbuf, std::string(64, 'R').data(), 64));
    EXPECT_EQ(0, memcmp(ro, std::string(64, 'O').data(), 64));
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*b, qb));
}

/* A receive too small completes in error and the QP goes on */
TEST_P(uc, receive_too_small_then_next_arrives)
{
    uc_pair();
    char *rx = (char*)alloc(64, 0);
    ibv_mr *rxm = reg(*b, rx, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_wc wc;

    ASSERT_EQ(0, post_recv(qb, rx, 4, rxm->lkey, 1));
    ASSERT_EQ(0, post_recv(qb, rx + 8, 32, rxm->lkey, 2));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 16, lmr->lkey, 1));
    expect_sent(1, IBV_WC_SEND);
    wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 16, lmr->lkey, 2));
    expect_sent(2, IBV_WC_SEND);
    wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(0, memcmp(rx + 8, lbuf, 16));
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*b, qb));
}

/* The destination QP is gone (destroyed, or reset): the message is lost
 * on the way, as on a fabric, and the sender's WR still completes */
TEST_P(uc, message_to_a_qp_gone_completes)
{
    uc_pair();
    ibv_qp_attr x = {};

    /* reset: no QP of that number listens */
    x.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qb, &x, IBV_QP_STATE));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 8, lmr->lkey, 1));
    expect_sent(1, IBV_WC_SEND);
    /* destroyed: no QP of that number at all */
    destroy_qp(*b, qb);
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 64, lmr->lkey, 2));
    expect_sent(2, IBV_WC_SEND);
    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE, lbuf, kLen, lmr->lkey, 3,
                           IBV_SEND_SIGNALED, (uintptr_t)rbuf, rmr->rkey));
    expect_sent(3, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(0, memcmp(rbuf, std::string(kLen, 'R').data(), kLen));
}

/* The word that the message has left, from a destination gone, finds the
 * sender's queue full and is lost: the sender finds out from the
 * destination's tables on a tick, and the WR completes all the same */
TEST_P(uc, message_to_a_qp_gone_completes_when_its_word_is_lost)
{
    if (!is_soft()) {
        GTEST_SKIP() << "fills soft0's queue";
    }
    uc_pair();
    still(*a); /* its queue stays full while it does not poll */
    destroy_qp(*b, qb);
    fill_queue(*b, *a);
    srq_soft_stats_t before{}, after{};
    ASSERT_EQ(0, srq_soft_query_stats(b->dev, &before));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 8, lmr->lkey, 1));
    /* b alone: it drops the message, and its word finds a's queue full */
    for (int i = 0; (i < 1000) && (after.rx_dropped == before.rx_dropped);
         ++i) {
        ibv_wc wc;
        ASSERT_EQ(0, ibv_poll_cq(rcqb, 1, &wc));
        ASSERT_EQ(0, srq_soft_query_stats(b->dev, &after));
        usleep(1000);
    }
    ASSERT_GT(after.rx_dropped, before.rx_dropped) << "b took no message";
    EXPECT_GT(after.tx_ring_full, before.tx_ring_full)
        << "b's word found room: not the case under test";
    expect_sent(1, IBV_WC_SEND);
}

/* A UC QP may receive from an SRQ (rdma-core and the kernel allow it) */
TEST_P(uc, receives_from_an_srq)
{
    ibv_srq *srq = make_srq(*b, 16);
    ASSERT_NE(nullptr, srq);
    uc_pair(srq);
    char *rx = (char*)alloc(64, 0);
    ibv_mr *rxm = reg(*b, rx, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_wc wc;

    ASSERT_EQ(0, post_srq_recv(srq, rx, 64, rxm->lkey, 5));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 32, lmr->lkey, 1));
    expect_sent(1, IBV_WC_SEND);
    wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(qb->qp_num, wc.qp_num);
    EXPECT_EQ(0, memcmp(rx, lbuf, 32));
}

SRQ_INSTANTIATE(uc);
