/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: the receive side as a receive-queue manager
 * sees it: the RNR count of an SRQ (srq_verbs_query_srq_rnr), a post that fails part
 * way through its chain (soft fault hook), and a QP connected to itself,
 * whose 0-byte sends take receive WQEs back from its SRQ one at a time.
 */
#include "verbs_fixture.h"

#include <string.h>

using namespace srq_test;

class rx : public two_dev_test {
protected:
    static const int kSlot  = 64;
    static const int kSlots = 64;

    void SetUp() override
    {
        two_dev_test::SetUp();
        if (IsSkipped()) {
            return;
        }
        sbuf = (char*)alloc(kSlot * kSlots);
        smr  = reg(*a, sbuf, kSlot * kSlots, 0);
        rbuf = (char*)alloc(kSlot * kSlots, 0xff);
        rmr  = reg(*b, rbuf, kSlot * kSlots, IBV_ACCESS_LOCAL_WRITE);
    }

    /* a -> b; qpb takes receives from @s, or from its own RQ without one.
     * RNR is retried forever: a refused message waits for a buffer */
    void make_pair(ibv_srq *s)
    {
        conn_opts_t o;

        o.rnr_retry     = 7;
        o.min_rnr_timer = 1;
        qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 64, 16);
        qpb = make_qp(*b, IBV_QPT_RC, scqb, rcqb, s, 64, 16);
        ASSERT_NE(nullptr, qpa);
        ASSERT_NE(nullptr, qpb);
        connect_rc(*a, qpa, *b, qpb, o);
        srq = s;
    }

    /* message @i carries i; receive WR i owns slot i of rbuf */
    void send_seq(uint32_t i)
    {
        memcpy(sbuf + kSlot * (i % kSlots), &i, sizeof(i));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf + kSlot * (i % kSlots),
                               sizeof(i), smr->lkey, i));
    }

    uint32_t slot_value(uint64_t i)
    {
        uint32_t v;

        memcpy(&v, rbuf + kSlot * (i % kSlots), sizeof(v));
        return v;
    }

    /* @n receive WRs for slots first.., wr_id = slot */
    void recv_chain(ibv_recv_wr *wr, ibv_sge *sge, int n, int first = 0)
    {
        for (int i = 0; i < n; ++i) {
            sge[i] = { (uintptr_t)rbuf + kSlot * (first + i), kSlot,
                       rmr->lkey };
            memset(&wr[i], 0, sizeof(wr[i]));
            wr[i].wr_id   = first + i;
            wr[i].sg_list = &sge[i];
            wr[i].num_sge = 1;
            wr[i].next    = (i + 1 < n) ? &wr[i + 1] : nullptr;
        }
    }

    /* WQEs posted to @s (none consumed), counted by filling it up one WR
     * at a time: leaves @s full */
    uint32_t posted_by_filling(ibv_srq *s)
    {
        ibv_recv_wr wr, *bad;
        ibv_sge sge;
        ibv_srq_attr attr;
        uint32_t room = 0;

        EXPECT_EQ(0, srq_verbs_query_srq(b->dev, s, &attr));
        recv_chain(&wr, &sge, 1);
        while ((room <= attr.max_wr) &&
               (ibv_post_srq_recv(s, &wr, &bad) == 0)) {
            ++room;
        }
        EXPECT_LE(room, attr.max_wr);
        return attr.max_wr - room;
    }

    /* into qpb's receive queue, whichever it is */
    int post_chain(ibv_recv_wr *wr, ibv_recv_wr **bad)
    {
        return (srq != nullptr) ? ibv_post_srq_recv(srq, wr, bad) :
                                  ibv_post_recv(qpb, wr, bad);
    }

    bool have_rnr_counter(ibv_srq *s)
    {
        uint64_t c;

        return (s != nullptr) &&
               (srq_verbs_query_srq_rnr(b->dev, s, &c) != ENOTSUP);
    }

    uint64_t rnr_count(ibv_srq *s)
    {
        uint64_t c = 0;

        EXPECT_EQ(0, srq_verbs_query_srq_rnr(b->dev, s, &c));
        return c;
    }

    /* until b's responder refused a message for qpb's SRQ (a while, where
     * the device counts nothing per SRQ, or qpb has its own RQ) */
    void wait_rnr(uint64_t before)
    {
        if (!have_rnr_counter(srq)) {
            pump(50);
            return;
        }
        for (uint64_t end = now_ms() + 2000;
             (rnr_count(srq) == before) && (now_ms() < end);) {
            pump_once();
        }
        EXPECT_GT(rnr_count(srq), before) << "no RNR NAK";
    }

    void fail_post_partial_chain();

    ibv_qp *qpa = nullptr, *qpb = nullptr;
    ibv_srq *srq = nullptr;
    char *sbuf = nullptr, *rbuf = nullptr;
    ibv_mr *smr = nullptr, *rmr = nullptr;
};

/* ---- srq_verbs_query_srq_rnr ------------------------------------------ */

/* The RNR NAKs of one SRQ, and only its: another SRQ of the same device
 * (another interface, another rank's on an HCA) does not see them */
TEST_P(rx, query_srq_rnr_counts_empty_srq)
{
    ibv_srq *other = make_srq(*b, 16);
    uint64_t c0, c1;
    ibv_wc wc[4];
    int ret;

    ASSERT_NE(nullptr, other);
    ret = srq_verbs_query_srq_rnr(b->dev, other, &c0);
    if (ret == ENOTSUP) {
        GTEST_SKIP() << "device counts no receive-not-ready NAKs per SRQ";
    }
    ASSERT_EQ(0, ret) << strerror(ret);
    EXPECT_EQ(0u, c0);
    if (is_soft()) {
        EXPECT_EQ(EINVAL, srq_verbs_query_srq_rnr(a->dev, other, &c0))
            << "an SRQ of another device";
    }
    make_pair(make_srq(*b, 16));

    c0 = rnr_count(srq);
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(0, post_srq_recv(srq, rbuf + kSlot * i, kSlot, rmr->lkey, i));
    }
    EXPECT_EQ(c0, rnr_count(srq)) << "posting receives counted as RNR";
    for (int i = 0; i < 4; ++i) {
        send_seq(i);
    }
    ASSERT_EQ(4, poll(rcqb, 4, wc));
    ASSERT_EQ(4, poll(scqa, 4, wc));
    EXPECT_EQ(c0, rnr_count(srq)) << "RNR counted while buffers were posted";

    /* the SRQ is empty now: the 5th message is refused */
    send_seq(4);
    wait_rnr(c0);
    c1 = rnr_count(srq);
    EXPECT_EQ(0u, rnr_count(other)) << "another SRQ of the device counted it";
    if (is_soft()) {
        srq_soft_stats_t st{};
        ASSERT_EQ(0, srq_soft_query_stats(b->dev, &st));
        EXPECT_EQ(st.rnr_naks_sent, c1);
    }

    /* a buffer lets it in; posting does not move the counter */
    ASSERT_EQ(0, post_srq_recv(srq, rbuf + kSlot * 4, kSlot, rmr->lkey, 4));
    ibv_wc w = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, w.status);
    EXPECT_EQ(4u, w.wr_id);
    EXPECT_EQ(4u, slot_value(4));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    c1 = rnr_count(srq);
    for (int i = 5; i < 9; ++i) {
        ASSERT_EQ(0, post_srq_recv(srq, rbuf + kSlot * i, kSlot, rmr->lkey, i));
    }
    EXPECT_EQ(c1, rnr_count(srq));
}

/* ---- srq_soft_test_fail_post ------------------------------------------ */

/*
 * Inject a failure at WR k of an n-WR chain: the verbs contract of a
 * partial post, end to end. Exactly k receives are consumable; the rest of
 * the chain, posted again, goes in; every message lands exactly once.
 */
void rx::fail_post_partial_chain()
{
    const int n = 8, k = 3;
    ibv_recv_wr wr[n], *bad = nullptr;
    ibv_sge sge[n];
    ibv_wc wc[n + 1];
    std::vector<int> seen(n, 0);
    uint64_t rnr0 = 0;

    recv_chain(wr, sge, n);
    ASSERT_EQ(0, srq_soft_test_fail_post(b->dev, k, EIO));
    EXPECT_EQ(EIO, post_chain(wr, &bad));
    EXPECT_EQ(&wr[k], bad);

    /* k + 1 messages: k land, the (k+1)th is refused until more come */
    if (have_rnr_counter(srq)) {
        rnr0 = rnr_count(srq);
    }
    for (int i = 0; i <= k; ++i) {
        send_seq(i);
    }
    ASSERT_EQ(k, poll(rcqb, k + 1, wc, 300)) << "not exactly k posted";
    for (int i = 0; i < k; ++i) {
        EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
        EXPECT_EQ((uint64_t)i, wc[i].wr_id);
        ++seen[wc[i].wr_id];
    }
    wait_rnr(rnr0);
    EXPECT_EQ(k, poll(scqa, k + 1, wc, 50)) << "the refused send completed";

    /* the WRs from the failed one on, again: the fault was one-shot */
    bad = nullptr;
    ASSERT_EQ(0, post_chain(&wr[k], &bad));
    for (int i = k + 1; i < n; ++i) {
        send_seq(i);
    }
    ASSERT_EQ(n - k, poll(rcqb, n - k, wc));
    for (int i = 0; i < n - k; ++i) {
        ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status);
        ASSERT_LT(wc[i].wr_id, (uint64_t)n);
        EXPECT_EQ((uint64_t)(k + i), wc[i].wr_id) << "posting order";
        ++seen[wc[i].wr_id];
    }
    EXPECT_EQ(0, poll(rcqb, 1, wc, 20)) << "more receives than messages";
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(1, seen[i]) << "receive " << i;
        EXPECT_EQ((uint32_t)i, slot_value(i)) << "message " << i;
    }
    ASSERT_EQ(n - k, poll(scqa, n - k, wc));
    for (int i = 0; i < n - k; ++i) {
        EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
        EXPECT_EQ((uint64_t)(k + i), wc[i].wr_id);
    }
}

TEST_P(rx, fail_post_srq)
{
    if (!is_soft()) {
        EXPECT_EQ(EINVAL, srq_soft_test_fail_post(b->dev, 0, EIO));
        GTEST_SKIP() << "fault injection is a soft-device hook";
    }
    make_pair(make_srq(*b, 16));
    fail_post_partial_chain();
}

TEST_P(rx, fail_post_rq)
{
    if (!is_soft()) {
        EXPECT_EQ(EINVAL, srq_soft_test_fail_post(b->dev, 0, EIO));
        GTEST_SKIP() << "fault injection is a soft-device hook";
    }
    make_pair(nullptr);
    fail_post_partial_chain();
}

TEST_P(rx, fail_post_short_chain_stays_armed)
{
    SRQ_SKIP_UNLESS_SOFT();
    /* the fault is the device's: each step posts to an SRQ of its own, so
     * that what the step posted can be counted */
    ibv_srq *s1 = make_srq(*b, 16), *s2 = make_srq(*b, 16),
            *s3 = make_srq(*b, 16);
    ibv_recv_wr wr[8], *bad = nullptr;
    ibv_sge sge[8];

    EXPECT_EQ(EINVAL, srq_soft_test_fail_post(nullptr, 0, EIO));
    EXPECT_EQ(EINVAL, srq_soft_test_fail_post(b->dev, 0, 0)) << "no error";

    ASSERT_EQ(0, srq_soft_test_fail_post(b->dev, 3, EAGAIN));
    recv_chain(wr, sge, 3);
    EXPECT_EQ(0, ibv_post_srq_recv(s1, wr, &bad)) << "3 WRs: no WR 3";
    EXPECT_EQ(3u, posted_by_filling(s1));

    recv_chain(wr, sge, 5, 3);
    EXPECT_EQ(EAGAIN, ibv_post_srq_recv(s2, wr, &bad)) << "still armed";
    EXPECT_EQ(&wr[3], bad);
    EXPECT_EQ(3u, posted_by_filling(s2)) << "WRs 0-2 of the chain posted";

    ASSERT_EQ(0, srq_soft_test_fail_post(b->dev, 0, ENOMEM));
    bad = nullptr;
    EXPECT_EQ(ENOMEM, ibv_post_srq_recv(s3, &wr[3], &bad));
    EXPECT_EQ(&wr[3], bad);
    EXPECT_EQ(0, ibv_post_srq_recv(s3, &wr[3], &bad)) << "one-shot";
    EXPECT_EQ(2u, posted_by_filling(s3)) << "the failed post posted nothing";
}

/* ---- a QP connected to itself ----------------------------------------- */

/*
 * IB loopback on one port: an RC QP whose remote is its own port address
 * and QP number. A 0-byte SEND takes exactly one WQE of the QP's SRQ - the
 * way a receiver retires posted buffers when it shrinks its SRQ.
 */
TEST_P(rx, loopback_zero_byte_send_takes_one_srq_wqe)
{
    ibv_srq *s = make_srq(*a, 16);
    char *lbuf = (char*)alloc(2 * kSlot, 0xab);
    ibv_mr *lmr = reg(*a, lbuf, 2 * kSlot, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp *q = make_qp(*a, IBV_QPT_RC, scqa, rcqa, s);
    ibv_send_wr wr = {}, *bad = nullptr;
    ibv_wc wc;

    ASSERT_NE(nullptr, q);
    rc_to_rts(*a, q, a->addr, q->qp_num, conn_opts_t());
    ASSERT_EQ(IBV_QPS_RTS, qp_state(*a, q));
    ASSERT_EQ(0, post_srq_recv(s, lbuf, kSlot, lmr->lkey, 1));
    ASSERT_EQ(0, post_srq_recv(s, lbuf + kSlot, kSlot, lmr->lkey, 2));

    for (uint64_t i = 1; i <= 2; ++i) {
        wr.wr_id      = 100 + i;
        wr.opcode     = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.num_sge    = 0;
        ASSERT_EQ(0, ibv_post_send(q, &wr, &bad));
        wc = poll1(rcqa);
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(IBV_WC_RECV, wc.opcode);
        EXPECT_EQ(i, wc.wr_id) << "WQEs taken in posting order";
        EXPECT_EQ(0u, wc.byte_len);
        EXPECT_EQ(q->qp_num, wc.qp_num);
        EXPECT_EQ(q->qp_num, wc.src_qp);
        wc = poll1(scqa);
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(IBV_WC_SEND, wc.opcode);
        EXPECT_EQ(100 + i, wc.wr_id);
        EXPECT_EQ(0, poll(rcqa, 1, &wc, 20)) << "more than one WQE taken";
    }
    for (int i = 0; i < 2 * kSlot; ++i) {
        ASSERT_EQ((char)0xab, lbuf[i]) << "a 0-byte send wrote data";
    }
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*a, q));
}

SRQ_INSTANTIATE(rx);
