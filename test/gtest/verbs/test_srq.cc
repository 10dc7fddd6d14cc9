/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: shared receive queues: posting order,
 * buffer ownership, the one-shot SRQ limit event, resize.
 */
#include "verbs_fixture.h"

#include <memory>
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
    SRQ_SKIP_UNLESS_SOFT();
    ibv_srq *s = make_srq(*b, 16);
    ibv_srq_attr attr = {};

    attr.max_wr = 64;
    EXPECT_EQ(EOPNOTSUPP, srq_verbs_modify_srq(b->dev, s, &attr,
                                               IBV_SRQ_MAX_WR));
}

/* Batches of WRs, posted again and again as the queue recycles its WQEs
 * (200 through a 64-WQE SRQ): consumed in posting order, each message in
 * the buffer of the WR it completed */
TEST_P(srq, batches_consumed_in_posting_order)
{
    const int rounds = 40, per = 5;
    ibv_srq *s = make_srq(*b, 64, 1);
    char *rbuf = (char*)alloc(64 * 64);
    ibv_mr *rmr = reg(*b, rbuf, 64 * 64, IBV_ACCESS_LOCAL_WRITE);
    uint32_t msg = 0, expect = 0;

    make_pair(s);
    for (int r = 0; r < rounds; ++r) {
        ibv_recv_wr wr[per], *bad = nullptr;
        ibv_sge sge[per];
        /* wr_id encodes the round and the buffer */
        for (int i = 0; i < per; ++i) {
            uint32_t slot = (r * per + i) % 64;
            sge[i] = { (uintptr_t)rbuf + 64 * slot, 64, rmr->lkey };
            memset(&wr[i], 0, sizeof(wr[i]));
            wr[i].wr_id   = ((uint64_t)r << 32) | slot;
            wr[i].sg_list = &sge[i];
            wr[i].num_sge = 1;
            wr[i].next    = (i + 1 < per) ? &wr[i + 1] : nullptr;
        }
        ASSERT_EQ(0, ibv_post_srq_recv(s, wr, &bad));

        for (int i = 0; i < per; ++i) {
            send_seq(msg++);
        }
        for (int i = 0; i < per; ++i) {
            ibv_wc wc = poll1(rcqb);
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
            uint32_t slot = (r * per + i) % 64;
            ASSERT_EQ(((uint64_t)r << 32) | slot, wc.wr_id)
                << "WQEs consumed in posting order";
            uint32_t got;
            memcpy(&got, rbuf + 64 * slot, 4);
            ASSERT_EQ(expect++, got);
        }
    }
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

/* Two SRQs complete into one CQ, their completions interleaved in one
 * poll: each polled completion frees a WQE of its own SRQ, so each takes
 * exactly as many new WRs as it had completions */
TEST_P(srq, one_cq_for_two_srqs_frees_each_its_own)
{
    const uint32_t per = 8;
    ibv_srq *s[2] = {make_srq(*b, 16, 1), make_srq(*b, 16, 1)};
    ibv_qp *qa[2], *qb[2];
    char *rbuf = (char*)alloc(64);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_srq_attr attr[2];

    for (int j = 0; j < 2; ++j) {
        ASSERT_EQ(0, srq_verbs_query_srq(b->dev, s[j], &attr[j]));
        ASSERT_GE(attr[j].max_wr, per);
        qa[j] = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 256, 16);
        qb[j] = make_qp(*b, IBV_QPT_RC, scqb, rcqb, s[j]);
        connect_rc(*a, qa[j], *b, qb[j]);
        for (uint32_t i = 0; i < attr[j].max_wr; ++i) {
            ASSERT_EQ(0, post_srq_recv(s[j], rbuf, 64, rmr->lkey, i));
        }
    }
    for (uint32_t i = 0; i < 2 * per; ++i) {
        ASSERT_EQ(0, post_send(qa[i % 2], IBV_WR_SEND, sbuf, 4, smr->lkey, i,
                               0));
    }

    pump(100); /* all of them land, and are polled in few calls */
    ibv_wc wc[2 * per];
    uint32_t got = 0;
    for (uint64_t end = now_ms() + 5000; (got < 2 * per) && (now_ms() < end);) {
        int n = ibv_poll_cq(rcqb, 2 * per - got, wc);
        ASSERT_GE(n, 0);
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status);
        }
        got += n;
        if (n == 0) {
            pump_once();
        }
    }
    ASSERT_EQ(2 * per, got);

    for (int j = 0; j < 2; ++j) {
        for (uint32_t i = 0; i < per; ++i) {
            EXPECT_EQ(0, post_srq_recv(s[j], rbuf, 64, rmr->lkey, 100 + i))
                << "SRQ " << j << ", WR " << i;
        }
        EXPECT_EQ(ENOMEM, post_srq_recv(s[j], rbuf, 64, rmr->lkey, 200))
            << "SRQ " << j << " took more WRs than it completed";
    }
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

/*
 * soft0's ibv_query_srq answers as of now: a message that reached the
 * device before the query counts, whether or not a CQ poll has run the
 * device since (a poll runs it once per round of CQs), so the answer does
 * not depend on the caller's polling pattern.
 */
TEST_P(srq, query_counts_what_arrived_before_it)
{
    SRQ_SKIP_UNLESS_SOFT(); /* an HCA takes messages in on its own time */
    ibv_srq *s = make_srq(*b, 16, 1);
    char *rbuf = (char*)alloc(64 * 4);
    ibv_mr *rmr = reg(*b, rbuf, 64 * 4, IBV_ACCESS_LOCAL_WRITE);
    ibv_srq_attr attr = {};

    make_pair(s);
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(0, post_srq_recv(s, rbuf + 64 * i, 64, rmr->lkey, i));
    }
    attr.srq_limit = 4;
    ASSERT_EQ(0, srq_verbs_modify_srq(b->dev, s, &attr, IBV_SRQ_LIMIT));
    send_seq(0); /* in b's inbound queue: nothing has polled b since */
    ASSERT_EQ(0, srq_verbs_query_srq(b->dev, s, &attr));
    EXPECT_EQ(0u, attr.srq_limit) << "the message that arrived was not "
                                     "taken: 4 still posted";
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
}

/*
 * Destroying an object drops its events the user has not taken yet, as the
 * kernel does (they would name freed memory), and keeps the others in
 * order. Two SRQs each raise their limit event; the first is destroyed
 * before either event is read: only the second's is left.
 */
TEST_P(srq, destroy_drops_its_events_not_taken)
{
    ibv_srq_init_attr init = {};
    init.attr.max_wr  = 16;
    init.attr.max_sge = 1;
    ibv_srq *s1 = srq_verbs_create_srq(b->dev, b->pd, &init);
    ASSERT_NE(nullptr, s1);
    /* TearDown runs after this frame is gone: the flag lives on the heap */
    auto s1_live = std::make_shared<bool>(true);
    srq_verbs_dev_t *bdev = b->dev;
    m_cleanup.push_back([bdev, s1, s1_live]() {
        if (*s1_live) {
            srq_verbs_destroy_srq(bdev, s1);
        }
    });
    ibv_srq *s2 = make_srq(*b, 16, 1), *srqs[2] = { s1, s2 };
    char *rbuf = (char*)alloc(64 * 4);
    ibv_mr *rmr = reg(*b, rbuf, 64 * 4, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp *qa[2], *qb[2];
    ibv_srq_attr attr = {};
    struct pollfd pfd = { srq_verbs_async_fd(b->dev), POLLIN, 0 };
    ibv_async_event ev;

    for (int i = 0; i < 2; ++i) {
        qa[i] = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        qb[i] = make_qp(*b, IBV_QPT_RC, scqb, rcqb, srqs[i]);
        connect_rc(*a, qa[i], *b, qb[i]);
        ASSERT_EQ(0, post_srq_recv(srqs[i], rbuf + 128 * i, 64, rmr->lkey, 0));
        ASSERT_EQ(0, post_srq_recv(srqs[i], rbuf + 128 * i + 64, 64,
                                   rmr->lkey, 1));
        attr.srq_limit = 2;
        ASSERT_EQ(0, srq_verbs_modify_srq(b->dev, srqs[i], &attr,
                                          IBV_SRQ_LIMIT));
    }
    for (int i = 0; i < 2; ++i) { /* one each: 1 left < 2 */
        ASSERT_EQ(0, post_send(qa[i], IBV_WR_SEND, sbuf, 4, smr->lkey, i));
        ASSERT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
    }
    for (uint64_t end = now_ms() + 2000;
         (::poll(&pfd, 1, 0) == 0) && (now_ms() < end);) {
        pump_once();
    }
    ASSERT_EQ(1, ::poll(&pfd, 1, 0)) << "no limit event";

    destroy_qp(*b, qb[0]);
    ASSERT_EQ(0, srq_verbs_destroy_srq(b->dev, s1));
    *s1_live = false;
    ASSERT_EQ(0, srq_verbs_get_async_event(b->dev, &ev)) << "both dropped";
    EXPECT_EQ(IBV_EVENT_SRQ_LIMIT_REACHED, ev.event_type);
    EXPECT_EQ(s2, ev.element.srq) << "the destroyed SRQ's event is left";
    srq_verbs_ack_async_event(b->dev, &ev);
    EXPECT_EQ(EAGAIN, srq_verbs_get_async_event(b->dev, &ev));
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
