/*
 * ucx-srq verbs conformance: shared receive queues: the mlx5-layout ring
 * (srq_verbs_ring.h) mixed with ibv_post_srq_recv, buffer ownership, the
 * one-shot SRQ limit event, resize.
 */
#include "verbs_fixture.h"

#include <endian.h>
#include <poll.h>
#include <string.h>

using namespace srq_test;

class srq : public two_dev_test {
protected:
    void SetUp() override
    {
        rcqb_len = 1024;
        two_dev_test::SetUp();
        if (IsSkipped()) {
            return;
        }
        sbuf = (char*)alloc(4096);
        smr  = reg(*a, sbuf, 4096, 0);
    }

    void make_pair(ibv_srq *s)
    {
        qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 256, 16);
        qpb = make_qp(*b, IBV_QPT_RC, scqb, rcqb, s);
        connect_rc(*a, qpa, *b, qpb);
    }

    /* message i carries i */
    void send_seq(uint32_t i)
    {
        memcpy(sbuf + 4 * (i % 1024), &i, 4);
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf + 4 * (i % 1024), 4,
                               smr->lkey, i, 0));
    }

    ibv_qp *qpa = nullptr, *qpb = nullptr;
    char *sbuf = nullptr;
    ibv_mr *smr = nullptr;
};

TEST_P(srq, create_query)
{
    ibv_srq *s = make_srq(*b, 100, 3);
    ibv_srq_attr attr;

    ASSERT_EQ(0, srq_verbs_query_srq(b->dev, s, &attr));
    EXPECT_GE(attr.max_wr, 100u);
    EXPECT_GE(attr.max_sge, 3u);
    EXPECT_EQ(0u, attr.srq_limit);
}

TEST_P(srq, resize_is_honest)
{
    skip_unless_soft();
    ibv_srq *s = make_srq(*b, 16);
    ibv_srq_attr attr = {};

    attr.max_wr = 64;
    EXPECT_EQ(EOPNOTSUPP, srq_verbs_modify_srq(b->dev, s, &attr,
                                               IBV_SRQ_MAX_WR));
}

TEST_P(srq, ring_layout)
{
    ibv_srq *s = make_srq(*b, 100, 3);
    srq_verbs_srq_ring_t ring;
    int ret = srq_verbs_srq_ring(b->dev, s, &ring);

    if (ret == EOPNOTSUPP) {
        GTEST_SKIP() << "device has no mlx5-layout SRQ ring";
    }
    ASSERT_EQ(0, ret);
    EXPECT_EQ(0u, ring.wqe_cnt & (ring.wqe_cnt - 1)) << "power of two";
    EXPECT_EQ(0u, ring.stride & (ring.stride - 1)) << "power of two";
    EXPECT_GE(ring.stride, 16u * (1 + ring.max_sge));
    EXPECT_GE(ring.max_sge, 3u);
    EXPECT_GE(ring.wqe_cnt, 101u);
    EXPECT_NE(nullptr, ring.buf);
    EXPECT_NE(nullptr, ring.dbrec);
    EXPECT_NE(ring.state->head, ring.state->tail);
    srq_verbs_srq_ring_release(&ring);
}

TEST_P(srq, ring_and_post_srq_recv_interleaved)
{
    const int rounds = 40, per = 5;
    ibv_srq *s = make_srq(*b, 64, 1);
    srq_verbs_srq_ring_t ring;
    char *rbuf = (char*)alloc(64 * 64);
    ibv_mr *rmr = reg(*b, rbuf, 64 * 64, IBV_ACCESS_LOCAL_WRITE);
    uint32_t msg = 0, expect = 0;
    int ret = srq_verbs_srq_ring(b->dev, s, &ring);

    if (ret == EOPNOTSUPP) {
        GTEST_SKIP() << "device has no mlx5-layout SRQ ring";
    }
    ASSERT_EQ(0, ret);
    if (!(ring.flags & SRQ_VERBS_RING_F_SHARED)) {
        srq_verbs_srq_ring_release(&ring);
        GTEST_SKIP() << "ring and ibv_post_srq_recv cannot be mixed here";
    }
    make_pair(s);

    for (int r = 0; r < rounds; ++r) {
        ibv_recv_wr wr[per], *bad = nullptr;
        ibv_sge sge[per];
        /* even rounds through the ring (one doorbell for the batch), odd
         * rounds through ibv_post_srq_recv; wr_id encodes the buffer */
        for (int i = 0; i < per; ++i) {
            uint32_t slot = (r * per + i) % 64;
            sge[i] = { (uintptr_t)rbuf + 64 * slot, 64, rmr->lkey };
            memset(&wr[i], 0, sizeof(wr[i]));
            wr[i].wr_id   = ((uint64_t)r << 32) | slot;
            wr[i].sg_list = &sge[i];
            wr[i].num_sge = 1;
            wr[i].next    = (i + 1 < per) ? &wr[i + 1] : nullptr;
        }
        uint16_t before = ring.state->counter;
        if (r % 2 == 0) {
            ASSERT_EQ(0, srq_verbs_ring_post(&ring, wr, &bad));
        } else {
            ASSERT_EQ(0, ibv_post_srq_recv(s, wr, &bad));
        }
        EXPECT_EQ((uint16_t)(before + per), ring.state->counter);
        EXPECT_EQ(htobe32(ring.state->counter), *ring.dbrec);

        for (int i = 0; i < per; ++i) {
            send_seq(msg++);
        }
        for (int i = 0; i < per; ++i) {
            ibv_wc wc = poll1(rcqb);
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
            uint32_t slot = (r * per + i) % 64;
            ASSERT_EQ(((uint64_t)r << 32) | slot, wc.wr_id)
                << "WQEs consumed in posting order, whichever path posted";
            uint32_t got;
            memcpy(&got, rbuf + 64 * slot, 4);
            ASSERT_EQ(expect++, got);
        }
    }
    srq_verbs_srq_ring_release(&ring);
}

TEST_P(srq, ring_post_checks)
{
    ibv_srq *s = make_srq(*b, 3, 1);
    srq_verbs_srq_ring_t ring;
    char *rbuf = (char*)alloc(64);
    ibv_recv_wr wr[8], *bad;
    ibv_sge sge[8], two[2];
    int ret = srq_verbs_srq_ring(b->dev, s, &ring);

    if (ret == EOPNOTSUPP) {
        GTEST_SKIP() << "device has no mlx5-layout SRQ ring";
    }
    ASSERT_EQ(0, ret);
    for (int i = 0; i < 8; ++i) {
        sge[i] = { (uintptr_t)rbuf, 64, 0 };
        memset(&wr[i], 0, sizeof(wr[i]));
        wr[i].wr_id = i; wr[i].sg_list = &sge[i]; wr[i].num_sge = 1;
        wr[i].next = (i < 7) ? &wr[i + 1] : nullptr;
    }
    two[0] = two[1] = sge[0];
    wr[1].sg_list = two;
    wr[1].num_sge = 2;
    bad = nullptr;
    EXPECT_EQ(EINVAL, srq_verbs_ring_post(&ring, wr, &bad));
    EXPECT_EQ(&wr[1], bad);
    EXPECT_EQ(1u, ring.state->counter) << "wr[0] posted";
    wr[1].num_sge = 1;
    wr[1].sg_list = &sge[1];
    bad = nullptr;
    EXPECT_EQ(ENOMEM, srq_verbs_ring_post(&ring, &wr[1], &bad));
    EXPECT_EQ(ring.wqe_cnt - 1, ring.state->counter) << "filled up";
    EXPECT_EQ(&wr[ring.wqe_cnt - 1], bad);
    srq_verbs_srq_ring_release(&ring);
}

TEST_P(srq, buffer_owned_until_polled)
{
    ibv_srq *s = make_srq(*b, 1, 1);
    ibv_srq_attr attr;
    char *rbuf = (char*)alloc(64);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);

    ASSERT_EQ(0, srq_verbs_query_srq(b->dev, s, &attr));
    make_pair(s);
    for (uint32_t i = 0; i < attr.max_wr; ++i) {
        ASSERT_EQ(0, post_srq_recv(s, rbuf, 64, rmr->lkey, i));
    }
    EXPECT_EQ(ENOMEM, post_srq_recv(s, rbuf, 64, rmr->lkey, 99));
    send_seq(5);
    /* the message lands (progress of every CQ, none dequeued), but its
     * WQE is the device's until the completion is polled */
    uint32_t v = 0;
    for (uint64_t end = now_ms() + 2000; (v != 5) && (now_ms() < end);) {
        pump_once();
        memcpy(&v, rbuf, 4);
    }
    ASSERT_EQ(5u, v);
    EXPECT_EQ(ENOMEM, post_srq_recv(s, rbuf, 64, rmr->lkey, 99))
        << "a consumed but unpolled WQE was handed out again";
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, post_srq_recv(s, rbuf, 64, rmr->lkey, 100));
}

TEST_P(srq, rq_buffer_owned_until_polled)
{
    char *rbuf = (char*)alloc(64);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);

    qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 16, 16);
    qpb = make_qp(*b, IBV_QPT_RC, scqb, rcqb, nullptr, 16, 1);
    connect_rc(*a, qpa, *b, qpb);
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    send_seq(7);
    pump(20);
    EXPECT_EQ(ENOMEM, post_recv(qpb, rbuf, 64, rmr->lkey, 2));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
    EXPECT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 2));
}

TEST_P(srq, limit_event_one_shot)
{
    ibv_srq *s = make_srq(*b, 16, 1);
    char *rbuf = (char*)alloc(64 * 16);
    ibv_mr *rmr = reg(*b, rbuf, 64 * 16, IBV_ACCESS_LOCAL_WRITE);
    ibv_srq_attr attr = {};
    ibv_async_event ev;
    int fd = srq_verbs_async_fd(b->dev);
    struct pollfd pfd = { fd, POLLIN, 0 };

    make_pair(s);
    for (int i = 0; i < 8; ++i) {
        ASSERT_EQ(0, post_srq_recv(s, rbuf + 64 * i, 64, rmr->lkey, i));
    }
    attr.srq_limit = 4;
    ASSERT_EQ(0, srq_verbs_modify_srq(b->dev, s, &attr, IBV_SRQ_LIMIT));
    ASSERT_EQ(0, srq_verbs_query_srq(b->dev, s, &attr));
    EXPECT_EQ(4u, attr.srq_limit);
    EXPECT_EQ(EAGAIN, srq_verbs_get_async_event(b->dev, &ev));
    ASSERT_GE(fd, 0);
    EXPECT_EQ(0, ::poll(&pfd, 1, 0)) << "nothing pending yet";

    /* 8 posted; after 4 consumed, 4 left: not below the limit yet */
    for (int i = 0; i < 4; ++i) {
        send_seq(i);
        EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
    }
    EXPECT_EQ(EAGAIN, srq_verbs_get_async_event(b->dev, &ev));
    /* the 5th drops it to 3 < 4 */
    send_seq(4);
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
    EXPECT_EQ(1, ::poll(&pfd, 1, 1000)) << "async fd readable";
    ASSERT_EQ(0, srq_verbs_get_async_event(b->dev, &ev));
    EXPECT_EQ(IBV_EVENT_SRQ_LIMIT_REACHED, ev.event_type);
    EXPECT_EQ(s, ev.element.srq);
    srq_verbs_ack_async_event(b->dev, &ev);
    EXPECT_EQ(EAGAIN, srq_verbs_get_async_event(b->dev, &ev));
    EXPECT_EQ(0, ::poll(&pfd, 1, 0)) << "fd quiet once drained";

    /* one shot: disarmed, no more events */
    ASSERT_EQ(0, srq_verbs_query_srq(b->dev, s, &attr));
    EXPECT_EQ(0u, attr.srq_limit);
    for (int i = 5; i < 8; ++i) {
        send_seq(i);
        EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
    }
    pump(5);
    EXPECT_EQ(EAGAIN, srq_verbs_get_async_event(b->dev, &ev));

    /* limit above max_wr: EINVAL */
    attr.srq_limit = 100000;
    EXPECT_EQ(EINVAL, srq_verbs_modify_srq(b->dev, s, &attr, IBV_SRQ_LIMIT));
}

TEST_P(srq, many_qps_one_srq)
{
    const int nqp = 8, per = 20;
    ibv_srq *s = make_srq(*b, 256, 1);
    char *rbuf = (char*)alloc(64 * 256);
    ibv_mr *rmr = reg(*b, rbuf, 64 * 256, IBV_ACCESS_LOCAL_WRITE);
    std::vector<ibv_qp*> qa, qb;
    std::vector<int> next(nqp, 0);

    for (int i = 0; i < 256; ++i) {
        ASSERT_EQ(0, post_srq_recv(s, rbuf + 64 * i, 64, rmr->lkey, i));
    }
    for (int q = 0; q < nqp; ++q) {
        qa.push_back(make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 64, 4));
        qb.push_back(make_qp(*b, IBV_QPT_RC, scqb, rcqb, s));
        connect_rc(*a, qa[q], *b, qb[q]);
    }
    uint32_t *vals = (uint32_t*)sbuf;
    for (int m = 0; m < per; ++m) {
        for (int q = 0; q < nqp; ++q) {
            vals[q * per + m] = (q << 16) | m;
            ASSERT_EQ(0, post_send(qa[q], IBV_WR_SEND, &vals[q * per + m], 4,
                                   smr->lkey, m, 0));
        }
    }
    for (int n = 0; n < nqp * per; ++n) {
        ibv_wc wc = poll1(rcqb);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
        uint32_t v;
        memcpy(&v, rbuf + 64 * wc.wr_id, 4);
        int q = v >> 16;
        ASSERT_LT(q, nqp);
        EXPECT_EQ(qb[q]->qp_num, wc.qp_num);
        EXPECT_EQ(next[q]++, (int)(v & 0xffff)) << "per-connection order";
    }
}

SRQ_INSTANTIATE(srq);
