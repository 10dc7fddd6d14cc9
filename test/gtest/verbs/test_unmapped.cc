/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: buffers the program unmapped while their
 * region stays registered, on both paths.
 *
 * An HCA holds a region's pages pinned: a receive or a READ response
 * aimed at a buffer the program has since unmapped lands in those pages,
 * and nothing else happens. soft0 pins nothing. UCX frees a UD QP's
 * receive buffers before it destroys the QP (its registration cache
 * deregisters them later), so a datagram that arrives meanwhile is
 * copied by soft0's progress thread, beside the program, into pages that
 * are gone: that must fail the one receive (IBV_WC_LOC_PROT_ERR), not
 * take the process down, and the QP goes on. The same for an RC receive
 * (its sender gets the NAK a receive error gives) and a READ's response.
 * Each waits on a completion channel and polls nothing of the device that
 * copies before its event: the copy is made beside the program.
 */
#include "verbs_fixture.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace srq_test;

class unmapped : public two_dev_test {
protected:
    /* A page registered on @d (local write), then unmapped: the region
     * stays registered over nothing */
    char *gone(tdev_t &d, uint32_t *lkey)
    {
        size_t ps = (size_t)sysconf(_SC_PAGESIZE);
        char *p = (char*)mmap(nullptr, ps, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ibv_mr *mr;

        EXPECT_NE(MAP_FAILED, p);
        mr = reg(d, p, ps, IBV_ACCESS_LOCAL_WRITE);
        EXPECT_NE(nullptr, mr);
        *lkey = (mr != nullptr) ? mr->lkey : 0;
        EXPECT_EQ(0, munmap(p, ps));
        return p;
    }

    /* A CQ of @d on a channel of its own, armed */
    ibv_cq *armed_cq(tdev_t &d, ibv_comp_channel **ch)
    {
        *ch = make_channel(d);
        ibv_cq *cq = make_cq(d, 16, *ch);

        EXPECT_EQ(0, ibv_req_notify_cq(cq, 0));
        return cq;
    }

    /* The first completion of @cq, taken after its channel's event (the
     * copy made by the device beside us, never by this poll) */
    ibv_wc after_event(tdev_t &d, ibv_comp_channel *ch, ibv_cq *cq)
    {
        struct pollfd pfd = { ch->fd, POLLIN, 0 };
        ibv_cq *ev_cq = nullptr;
        void *ev_ctx = nullptr;
        ibv_wc wc = {};

        wc.status = IBV_WC_GENERAL_ERR;
        EXPECT_EQ(1, ::poll(&pfd, 1, 20000)) << "no event";
        EXPECT_EQ(0, srq_verbs_get_cq_event(d.dev, ch, &ev_cq, &ev_ctx));
        srq_verbs_ack_cq_events(d.dev, cq, 1);
        EXPECT_EQ(1, ibv_poll_cq(cq, 1, &wc)) << "no completion";
        return wc;
    }

    /* One completion of a CQ of a's, polled (a's memory is all there) */
    ibv_wc poll_a(ibv_cq *cq)
    {
        ibv_wc wc = {};
        int n = 0;

        for (uint64_t end = now_ms() + 20000; (n == 0) && (now_ms() < end);) {
            n = ibv_poll_cq(cq, 1, &wc);
        }
        EXPECT_EQ(1, n) << "no completion";
        return wc;
    }
};

/* UCX's teardown: a datagram into a receive whose buffer is gone */
TEST_P(unmapped, ud_receive_fails_and_the_qp_goes_on)
{
    ibv_comp_channel *ch;
    ibv_cq *cqb = armed_cq(*b, &ch), *cqa = make_cq(*a);
    ibv_qp *qa = make_qp(*a, IBV_QPT_UD, cqa, cqa);
    ibv_qp *qb = make_qp(*b, IBV_QPT_UD, cqb, cqb);
    char *sbuf = (char*)alloc(64, 'u'), *rbuf = (char*)alloc(40 + 64);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 40 + 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_ah *ah = make_ah(*a, b->addr);
    uint32_t lkey;
    char *dead = gone(*b, &lkey);

    ASSERT_TRUE(smr && rmr && ah);
    ud_to_rts(*a, qa, 0x11);
    ud_to_rts(*b, qb, 0x11);
    ASSERT_EQ(0, post_recv(qb, dead, 40 + 64, lkey, 1));
    ASSERT_EQ(0, post_ud_send(qa, ah, qb->qp_num, 0x11, sbuf, 64, smr->lkey,
                              4));
    EXPECT_EQ(IBV_WC_SUCCESS, poll_a(cqa).status);
    ibv_wc wc = after_event(*b, ch, cqb);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status) << ibv_wc_status_str(wc.status);

    /* the QP goes on */
    ASSERT_EQ(0, post_recv(qb, rbuf, 40 + 64, rmr->lkey, 2));
    ASSERT_EQ(0, post_ud_send(qa, ah, qb->qp_num, 0x11, sbuf, 64, smr->lkey,
                              4));
    EXPECT_EQ(IBV_WC_SUCCESS, poll_a(cqa).status);
    wc = poll1(cqb);
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(0, memcmp(rbuf + 40, sbuf, 64));
}

/* An RC SEND into a receive whose buffer is gone: the receive fails, and
 * its sender gets the NAK a receive error gives */
TEST_P(unmapped, rc_receive_fails)
{
    ibv_comp_channel *ch;
    ibv_cq *cqb = armed_cq(*b, &ch);
    ibv_qp *qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    ibv_qp *qb = make_qp(*b, IBV_QPT_RC, scqb, cqb);
    char *sbuf = (char*)alloc(64, 's');
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    uint32_t lkey;
    char *dead = gone(*b, &lkey);

    ASSERT_TRUE(qa && qb && smr);
    connect_rc(*a, qa, *b, qb);
    ASSERT_EQ(0, post_recv(qb, dead, 64, lkey, 1));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, sbuf, 64, smr->lkey, 3));
    ibv_wc wc = after_event(*b, ch, cqb);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status) << ibv_wc_status_str(wc.status);
    wc = poll_a(scqa);
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(IBV_WC_REM_OP_ERR, wc.status) << ibv_wc_status_str(wc.status);
}

/* A READ whose local buffer is gone when its response comes: the READ
 * fails locally */
TEST_P(unmapped, read_response_fails_locally)
{
    ibv_comp_channel *ch;
    ibv_cq *cqa = armed_cq(*a, &ch);
    ibv_qp *qa = make_qp(*a, IBV_QPT_RC, cqa, rcqa);
    ibv_qp *qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    char *src = (char*)alloc(64, 'r');
    ibv_mr *xmr = reg(*b, src, 64, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_READ);
    uint32_t lkey;
    char *dead = gone(*a, &lkey);

    ASSERT_TRUE(qa && qb && xmr);
    connect_rc(*a, qa, *b, qb);
    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_READ, dead, 64, lkey, 5,
                           IBV_SEND_SIGNALED, (uintptr_t)src, xmr->rkey));
    ibv_wc wc = after_event(*a, ch, cqa);
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status) << ibv_wc_status_str(wc.status);
}

/* The same READ behind an unacknowledged SEND: b executes it, and its
 * response carries the data, which a's device scatters (b moves only
 * when polled, where it can be stopped) */
TEST_P(unmapped, read_response_data_fails_locally)
{
    ibv_comp_channel *ch;
    ibv_cq *cqa = armed_cq(*a, &ch);
    ibv_qp *qa = make_qp(*a, IBV_QPT_RC, cqa, rcqa);
    ibv_qp *qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    char *src = (char*)alloc(64, 'r'), *sbuf = (char*)alloc(64, 's');
    char *rbuf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *xmr = reg(*b, src, 64, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_READ);
    struct pollfd pfd = { ch->fd, POLLIN, 0 };
    uint32_t lkey;
    char *dead = gone(*a, &lkey);
    ibv_wc wc;

    ASSERT_TRUE(qa && qb && smr && rmr && xmr);
    if (is_soft()) {
        still(*b);
    }
    connect_rc(*a, qa, *b, qb);
    ASSERT_EQ(0, post_recv(qb, rbuf, 64, rmr->lkey, 1));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, sbuf, 16, smr->lkey, 4, 0));
    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_READ, dead, 64, lkey, 5,
                           IBV_SEND_SIGNALED, (uintptr_t)src, xmr->rkey));
    /* b runs (polled: its memory is all there) until a's event */
    for (uint64_t end = now_ms() + 20000;
         (::poll(&pfd, 1, 0) == 0) && (now_ms() < end);) {
        ibv_poll_cq(rcqb, 1, &wc);
        ibv_poll_cq(scqb, 1, &wc);
    }
    wc = after_event(*a, ch, cqa);
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status) << ibv_wc_status_str(wc.status);
}

SRQ_INSTANTIATE(unmapped);
