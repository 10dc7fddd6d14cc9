/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: RC transfers between two device instances of
 * this process: ordering, RNR, flush, key/bounds/access/length errors,
 * scatter/gather, immediate data, one-sided write/read.
 */
#include "verbs_fixture.h"
#include "verbs/soft/fabric/soft_pkt.h"
#include "verbs/soft/device/soft_wait.h"

#include <chrono>
#include <thread>
#include <string>
#include <vector>

#include <endian.h>
#include <string.h>
#include <sys/mman.h>

using namespace srq_test;

class rc : public two_dev_test {
protected:
    void make_pair(const conn_opts_t &o = conn_opts_t(), ibv_srq *srqb = nullptr,
                   uint32_t send_wr = 64, uint32_t recv_wr = 64)
    {
        qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, send_wr, recv_wr);
        qpb = make_qp(*b, IBV_QPT_RC, scqb, rcqb, srqb, send_wr, recv_wr);
        ASSERT_NE(nullptr, qpa);
        ASSERT_NE(nullptr, qpb);
        connect_rc(*a, qpa, *b, qpb, o);
    }

    /* The @n send completions of WRs 1..@n on a's send CQ: all succeed,
     * in order; into @wc */
    void expect_sends_done_in_order(int n, ibv_wc *wc)
    {
        ASSERT_EQ(n, poll(scqa, n, wc));
        for (int i = 0; i < n; ++i) {
            EXPECT_EQ((uint64_t)i + 1, wc[i].wr_id);
            EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status)
                << "WR " << i + 1 << ": " << ibv_wc_status_str(wc[i].status);
        }
    }

    /* Fill a's inbound queue with padding from b (soft0 only): b's next
     * frame to a finds no room, and waits */
    /* WR 1: a SEND of 16 bytes of @sbuf; WR 2, behind it: a READ of @len
     * bytes at @raddr into @lbuf */
    void post_send_then_read(char *sbuf, ibv_mr *smr, char *lbuf,
                             ibv_mr *lmr, uint32_t len, void *raddr,
                             uint32_t rkey)
    {
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 1));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_READ, lbuf, len, lmr->lkey,
                               2, IBV_SEND_SIGNALED, (uintptr_t)raddr, rkey));
    }

    /* post_send_then_read; b alone takes both (the SEND into @rbuf) and
     * finds a's queue full for the READ's response, which it keeps. b's
     * statistics before it, into @before */
    void hold_back_read_response(char *sbuf, ibv_mr *smr, char *lbuf,
                                 ibv_mr *lmr, uint32_t len, void *raddr,
                                 uint32_t rkey, char *rbuf, ibv_mr *rmr,
                                 srq_soft_stats_t *before)
    {
        srq_soft_stats_t after{};

        post_send_then_read(sbuf, smr, lbuf, lmr, len, raddr, rkey);
        fill_queue(*b, *a);
        ASSERT_EQ(0, srq_soft_query_stats(b->dev, before));
        ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
        ibv_wc wc = poll1_alone(rcqb); /* b alone: the SEND, then the READ */
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
        ASSERT_EQ(0, srq_soft_query_stats(b->dev, &after));
        EXPECT_GT(after.tx_ring_full, before->tx_ring_full)
            << "the READ's response was not held back";
    }

    ibv_qp *qpa = nullptr, *qpb = nullptr;
};

TEST_P(rc, send_recv_basic)
{
    make_pair();
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);

    strcpy(sbuf, "hello soft");
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 7));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 11, smr->lkey, 3));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_EQ(7u, wc.wr_id);
    EXPECT_EQ(11u, wc.byte_len);
    EXPECT_EQ(qpb->qp_num, wc.qp_num);
    EXPECT_EQ(qpa->qp_num, wc.src_qp);
    EXPECT_FALSE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_STREQ("hello soft", rbuf);
    wc = poll1(scqa);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_SEND, wc.opcode);
    EXPECT_EQ(3u, wc.wr_id);
}

/* A peer addressed by its LID alone (no GRH), as ibv_rc_pingpong and UCX
 * do on one subnet; the receiver sees the sender's LID as wc.slid */
TEST_P(rc, lid_addressed_send_reports_slid)
{
    conn_opts_t o;
    ibv_port_attr pa;

    o.lid_only = true;
    make_pair(o);
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);

    ASSERT_EQ(0, srq_verbs_query_port(a->dev, 1, &pa));
    strcpy(sbuf, "by lid");
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 7, smr->lkey, 2));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(pa.lid, wc.slid);
    EXPECT_STREQ("by lid", rbuf);
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
}

/* Two instances of one process share their port as contexts of one HCA
 * do: a QP pointed at its own instance's address reaches, by QP number,
 * the QP of the other instance (rdma-core's Python tests connect every
 * pair of QPs that way) */
TEST_P(rc, own_address_reaches_sibling_instance_by_qpn)
{
    conn_opts_t o;

    qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 64, 64);
    qpb = make_qp(*b, IBV_QPT_RC, scqb, rcqb, nullptr, 64, 64);
    ASSERT_NE(qpa->qp_num, qpb->qp_num) << "QP numbers unique in a process";
    rc_to_rts(*a, qpa, a->addr, qpb->qp_num, o);
    rc_to_rts(*b, qpb, b->addr, qpa->qp_num, o);
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);

    strcpy(sbuf, "sibling");
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 8, smr->lkey, 2));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(qpa->qp_num, wc.src_qp);
    EXPECT_STREQ("sibling", rbuf);
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
}

TEST_P(rc, in_order_delivery_and_completion)
{
    const int n = 200;
    make_pair(conn_opts_t(), nullptr, 256, 256);
    /* mix small (in the packet) and large (pulled) messages */
    const size_t big = 64 * 1024;
    char *sbuf = (char*)alloc(n * sizeof(uint32_t) + big);
    char *rbuf = (char*)alloc((size_t)n * big);
    ibv_mr *smr = reg(*a, sbuf, n * sizeof(uint32_t) + big, 0);
    ibv_mr *rmr = reg(*b, rbuf, (size_t)n * big, IBV_ACCESS_LOCAL_WRITE);
    char *bigsrc = sbuf + n * sizeof(uint32_t);
    int i;

    for (i = 0; i < (int)big; ++i) {
        bigsrc[i] = (char)(i * 7);
    }
    for (i = 0; i < n; ++i) {
        ASSERT_EQ(0, post_recv(qpb, rbuf + (size_t)i * big, big, rmr->lkey, i));
    }
    for (i = 0; i < n; ++i) {
        uint32_t *seq = (uint32_t*)sbuf + i;
        *seq = i;
        if (i % 10 == 9) {
            ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, bigsrc, big, smr->lkey,
                                   1000 + i));
        } else {
            ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, seq, 4, smr->lkey,
                                   1000 + i));
        }
    }
    for (i = 0; i < n; ++i) {
        ibv_wc wc = poll1(rcqb);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
        ASSERT_EQ((uint64_t)i, wc.wr_id) << "receive completions in order";
        if (i % 10 == 9) {
            ASSERT_EQ(big, wc.byte_len);
            ASSERT_EQ(0, memcmp(rbuf + (size_t)i * big, bigsrc, big));
        } else {
            ASSERT_EQ(4u, wc.byte_len);
            ASSERT_EQ((uint32_t)i, *(uint32_t*)(rbuf + (size_t)i * big));
        }
    }
    for (i = 0; i < n; ++i) {
        ibv_wc wc = poll1(scqa);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
        ASSERT_EQ((uint64_t)(1000 + i), wc.wr_id) << "send completions in order";
    }
}

TEST_P(rc, unsignaled_and_sq_sig_all)
{
    make_pair();
    char *buf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, buf, 64, 0);
    ibv_mr *rmr = reg(*b, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_wc wc[4];
    int i;

    for (i = 0; i < 4; ++i) {
        ASSERT_EQ(0, post_recv(qpb, buf, 64, rmr->lkey, i));
    }
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, 1, 0));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, 2, 0));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, 3));
    ASSERT_EQ(3, poll(rcqb, 3, wc));
    ASSERT_EQ(1, poll(scqa, 1, wc));
    EXPECT_EQ(3u, wc[0].wr_id) << "only the signaled send completes";
    EXPECT_EQ(0, poll(scqa, 1, wc, 50));

    /* sq_sig_all: every WR completes */
    ibv_qp *qpc = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 16, 16, 1, 64,
                          true);
    ibv_qp *qpd = make_qp(*b, IBV_QPT_RC, scqb, rcqb, nullptr, 16, 16, 1, 64);
    connect_rc(*a, qpc, *b, qpd);
    ASSERT_EQ(0, post_recv(qpd, buf, 64, rmr->lkey, 9));
    ASSERT_EQ(0, post_send(qpc, IBV_WR_SEND, buf, 8, smr->lkey, 11, 0));
    ASSERT_EQ(1, poll(scqa, 1, wc));
    EXPECT_EQ(11u, wc[0].wr_id);
}

TEST_P(rc, inline_data_copied_at_post)
{
    make_pair();
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(64);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);

    strcpy(sbuf, "inline!");
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    /* no lkey: inline data needs none */
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 8, 0xdeadbeef, 1,
                           IBV_SEND_SIGNALED | IBV_SEND_INLINE));
    memset(sbuf, 'X', 8); /* the buffer is ours again at once */
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_STREQ("inline!", rbuf);
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
}

TEST_P(rc, multiple_sges_both_sides)
{
    make_pair();
    char *sbuf = (char*)alloc(256), *rbuf = (char*)alloc(256, 0xee);
    ibv_mr *smr = reg(*a, sbuf, 256, 0);
    ibv_mr *rmr = reg(*b, rbuf, 256, IBV_ACCESS_LOCAL_WRITE);
    ibv_sge ssge[3] = { { (uintptr_t)sbuf, 5, smr->lkey },
                        { (uintptr_t)sbuf + 100, 7, smr->lkey },
                        { (uintptr_t)sbuf + 200, 3, smr->lkey } };
    ibv_sge rsge[4] = { { (uintptr_t)rbuf, 4, rmr->lkey },
                        { (uintptr_t)rbuf + 64, 2, rmr->lkey },
                        { (uintptr_t)rbuf + 128, 6, rmr->lkey },
                        { (uintptr_t)rbuf + 192, 10, rmr->lkey } };
    ibv_send_wr swr = {}, *sbad;
    ibv_recv_wr rwr = {}, *rbad;
    int i;

    memcpy(sbuf, "ABCDE", 5);
    memcpy(sbuf + 100, "FGHIJKL", 7);
    memcpy(sbuf + 200, "MNO", 3);
    rwr.wr_id = 1; rwr.sg_list = rsge; rwr.num_sge = 4;
    ASSERT_EQ(0, ibv_post_recv(qpb, &rwr, &rbad));
    swr.wr_id = 2; swr.sg_list = ssge; swr.num_sge = 3;
    swr.opcode = IBV_WR_SEND; swr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(0, ibv_post_send(qpa, &swr, &sbad));

    ibv_wc wc = poll1(rcqb);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(15u, wc.byte_len);
    EXPECT_EQ(0, memcmp(rbuf, "ABCD", 4));
    EXPECT_EQ(0, memcmp(rbuf + 64, "EF", 2));
    EXPECT_EQ(0, memcmp(rbuf + 128, "GHIJKL", 6));
    EXPECT_EQ(0, memcmp(rbuf + 192, "MNO", 3));
    for (i = 195; i < 202; ++i) {
        EXPECT_EQ((char)0xee, rbuf[i]) << "nothing past the message";
    }
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
}

TEST_P(rc, large_send_multiple_sges_pulled)
{
    make_pair();
    const size_t part = 20000;
    char *sbuf = (char*)alloc(3 * part), *rbuf = (char*)alloc(3 * part);
    ibv_mr *smr = reg(*a, sbuf, 3 * part, 0);
    ibv_mr *rmr = reg(*b, rbuf, 3 * part, IBV_ACCESS_LOCAL_WRITE);
    ibv_sge ssge[2] = { { (uintptr_t)sbuf, (uint32_t)part, smr->lkey },
                        { (uintptr_t)sbuf + 2 * part, (uint32_t)part,
                          smr->lkey } };
    ibv_sge rsge[2] = { { (uintptr_t)rbuf, 7, rmr->lkey },
                        { (uintptr_t)rbuf + 100, (uint32_t)(2 * part),
                          rmr->lkey } };
    ibv_send_wr swr = {}, *sbad;
    ibv_recv_wr rwr = {}, *rbad;
    size_t i;

    for (i = 0; i < 3 * part; ++i) {
        sbuf[i] = (char)(i * 13 + 1);
    }
    rwr.sg_list = rsge; rwr.num_sge = 2;
    ASSERT_EQ(0, ibv_post_recv(qpb, &rwr, &rbad));
    swr.sg_list = ssge; swr.num_sge = 2;
    swr.opcode = IBV_WR_SEND; swr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(0, ibv_post_send(qpa, &swr, &sbad));
    ibv_wc wc = poll1(rcqb);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    ASSERT_EQ(2 * part, wc.byte_len);
    std::string expect = std::string(sbuf, part) +
                         std::string(sbuf + 2 * part, part);
    EXPECT_EQ(0, memcmp(rbuf, expect.data(), 7));
    EXPECT_EQ(0, memcmp(rbuf + 100, expect.data() + 7, 2 * part - 7));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
}

TEST_P(rc, immediate_data)
{
    make_pair();
    char *sbuf = (char*)alloc(64, 'a'), *rbuf = (char*)alloc(64);
    char *tgt = (char*)alloc(64);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *tmr = reg(*b, tgt, 64, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_WRITE);

    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 2));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND_WITH_IMM, sbuf, 8, smr->lkey, 1,
                           IBV_SEND_SIGNALED, 0, 0, htobe32(0x12345678)));
    ibv_wc wc = poll1(rcqb);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(0x12345678), wc.imm_data);

    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_WRITE_WITH_IMM, sbuf, 16,
                           smr->lkey, 2, IBV_SEND_SIGNALED,
                           (uintptr_t)tgt + 8, tmr->rkey, htobe32(0xabcdef)));
    wc = poll1(rcqb);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc.opcode);
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(16u, wc.byte_len);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(0xabcdef), wc.imm_data);
    EXPECT_EQ(0, memcmp(tgt + 8, sbuf, 16));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    wc = poll1(scqa);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
}

TEST_P(rc, rdma_write_read)
{
    make_pair();
    const size_t len = 100000;
    char *lbuf = (char*)alloc(len), *tgt = (char*)alloc(len, 0);
    ibv_mr *lmr = reg(*a, lbuf, len, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *tmr = reg(*b, tgt, len, IBV_ACCESS_LOCAL_WRITE |
                                    IBV_ACCESS_REMOTE_WRITE |
                                    IBV_ACCESS_REMOTE_READ);
    size_t i;

    for (i = 0; i < len; ++i) {
        lbuf[i] = (char)(i ^ 0x5a);
    }
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_WRITE, lbuf, len, lmr->lkey, 1,
                           IBV_SEND_SIGNALED, (uintptr_t)tgt, tmr->rkey));
    ibv_wc wc = poll1(scqa);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
    EXPECT_EQ(0, memcmp(lbuf, tgt, len));

    memset(lbuf, 0, len);
    for (i = 0; i < len; ++i) {
        tgt[i] = (char)(i * 3);
    }
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_READ, lbuf, len, lmr->lkey, 2,
                           IBV_SEND_SIGNALED, (uintptr_t)tgt, tmr->rkey));
    wc = poll1(scqa);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RDMA_READ, wc.opcode);
    EXPECT_EQ(len, wc.byte_len);
    EXPECT_EQ(0, memcmp(lbuf, tgt, len));
}

TEST_P(rc, write_does_not_overtake_send)
{
    /* SEND (stuck in RNR) then WRITE then SEND: the write must land only
     * after the first send was accepted */
    conn_opts_t o;
    make_pair(o);
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(128);
    char *tgt = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 128, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *tmr = reg(*b, tgt, 64, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_WRITE);

    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 8, smr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_WRITE, sbuf, 8, smr->lkey, 2,
                           IBV_SEND_SIGNALED, (uintptr_t)tgt, tmr->rkey));
    pump(20);
    EXPECT_EQ(0, tgt[0]) << "the write overtook an unacknowledged send";
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ibv_wc wc[2];
    expect_sends_done_in_order(2, wc);
    EXPECT_EQ('s', tgt[0]);
}

/*
 * RDMA behind an unacknowledged SEND (held by RNR NAKs: no receive
 * posted) goes out at once, for the target's responder to execute in PSN
 * order (soft0 counts it): the READ still sees what the SEND placed, the
 * WRITE lands only after it. The large WRITE is pulled by the responder.
 */
TEST_P(rc, rdma_behind_unacked_send_goes_at_once_in_order)
{
    conn_opts_t o;
    make_pair(o);
    const size_t big = 100000;
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    char *lbuf = (char*)alloc(64, 0), *wsrc = (char*)alloc(big, 'w');
    char *tgt  = (char*)alloc(big, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *lmr = reg(*a, lbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *wmr = reg(*a, wsrc, big, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE |
                                    IBV_ACCESS_REMOTE_READ);
    ibv_mr *tmr = reg(*b, tgt, big, IBV_ACCESS_LOCAL_WRITE |
                                    IBV_ACCESS_REMOTE_WRITE);
    srq_soft_stats_t before{}, after{};

    if (is_soft()) {
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &before));
    }
    post_send_then_read(sbuf, smr, lbuf, lmr, 16, rbuf, rmr->rkey);
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_WRITE, wsrc, big, wmr->lkey, 3,
                           IBV_SEND_SIGNALED, (uintptr_t)tgt, tmr->rkey));
    pump(20);
    EXPECT_EQ(0, tgt[0]) << "the write overtook an unacknowledged send";
    EXPECT_EQ(0, tgt[big - 1]);
    if (is_soft()) {
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &after));
        EXPECT_EQ(2u, after.rdma_by_responder - before.rdma_by_responder)
            << "the READ and the WRITE waited for the SEND's ACK";
    }
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ibv_wc wc[3];
    expect_sends_done_in_order(3, wc);
    EXPECT_EQ(IBV_WC_RDMA_READ, wc[1].opcode);
    EXPECT_EQ(16u, wc[1].byte_len);
    EXPECT_EQ(0, memcmp(lbuf, sbuf, 16)) << "the READ ran before the SEND";
    EXPECT_EQ(0, memcmp(tgt, wsrc, big));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
}

/*
 * A READ too large for one response packet goes at once behind an
 * unacknowledged SEND as well: the responder answers it in PSN order
 * without the data, and the requester reads it then. So it sees what the
 * SEND placed at the start of the range it reads.
 */
TEST_P(rc, large_read_behind_unacked_send_goes_at_once_in_order)
{
    conn_opts_t o;
    make_pair(o);
    const size_t big = 100000;
    char *sbuf = (char*)alloc(64, 's'), *lbuf = (char*)alloc(big, 0);
    char *src  = (char*)alloc(big, 'r');
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *lmr = reg(*a, lbuf, big, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *xmr = reg(*b, src, big, IBV_ACCESS_LOCAL_WRITE |
                                    IBV_ACCESS_REMOTE_READ);
    srq_soft_stats_t before{}, after{};

    if (is_soft()) {
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &before));
    }
    post_send_then_read(sbuf, smr, lbuf, lmr, big, src, xmr->rkey);
    pump(20);
    if (is_soft()) {
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &after));
        EXPECT_EQ(1u, after.rdma_by_responder - before.rdma_by_responder)
            << "the READ waited for the SEND's ACK";
    }
    ASSERT_EQ(0, post_recv(qpb, src, 64, xmr->lkey, 1)); /* src's start */
    ibv_wc wc[2];
    expect_sends_done_in_order(2, wc);
    EXPECT_EQ(IBV_WC_RDMA_READ, wc[1].opcode);
    EXPECT_EQ(big, wc[1].byte_len);
    EXPECT_EQ(0, memcmp(lbuf, sbuf, 16)) << "the READ ran before the SEND";
    EXPECT_EQ(0, memcmp(lbuf + 16, src + 16, big - 16));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
}

/*
 * The requester reads a large READ's data when its answer comes, with the
 * target's keys checked again then: a region deregistered in between is
 * not read, and the READ fails with a remote access error.
 */
TEST_P(rc, large_read_answered_then_deregistered_reads_nothing)
{
    if (!is_soft()) {
        /* soft0 through rdma-core runs a progress thread per instance,
         * which may take the answer before b deregisters */
        GTEST_SKIP() << "needs a to progress only when polled";
    }
    conn_opts_t o;
    make_pair(o);
    still(*a); /* the answer waits until a polls */
    still(*b);
    const size_t big = 100000;
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    char *lbuf = (char*)alloc(big, 0), *src = (char*)alloc(big, 'r');
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *lmr = reg(*a, lbuf, big, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *xmr = srq_verbs_reg_mr(b->dev, b->pd, src, big,
                                   IBV_ACCESS_REMOTE_READ);

    ASSERT_NE(nullptr, xmr) << strerror(errno);
    /* both go at once, the READ behind the unacknowledged SEND */
    post_send_then_read(sbuf, smr, lbuf, lmr, big, src, xmr->rkey);
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ibv_wc wc = poll1_alone(rcqb); /* b alone: the SEND placed, the READ answered */
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    ASSERT_EQ(0, srq_verbs_dereg_mr(b->dev, xmr));
    ibv_wc swc[2];
    ASSERT_EQ(2, poll(scqa, 2, swc));
    EXPECT_EQ(IBV_WC_SUCCESS, swc[0].status);
    EXPECT_EQ(2u, swc[1].wr_id);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, swc[1].status)
        << ibv_wc_status_str(swc[1].status);
    EXPECT_EQ(0, lbuf[0]);
    EXPECT_EQ(0, lbuf[big - 1]);
}

/*
 * A WRITE with immediate data behind an unacknowledged SEND goes at once
 * too; the responder writes its data only once a receive WQE is there to
 * take the immediate (an RNR NAK first leaves the target untouched).
 */
TEST_P(rc, write_imm_behind_unacked_send_waits_for_its_receive)
{
    conn_opts_t o;
    make_pair(o);
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(128, 0);
    char *wsrc = (char*)alloc(64, 'w'), *tgt = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *wmr = reg(*a, wsrc, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 128, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *tmr = reg(*b, tgt, 64, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_WRITE);
    srq_soft_stats_t before{}, after{};

    if (is_soft()) {
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &before));
    }
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_WRITE_WITH_IMM, wsrc, 16,
                           wmr->lkey, 2, IBV_SEND_SIGNALED, (uintptr_t)tgt,
                           tmr->rkey, htobe32(0x1234)));
    pump(20);
    if (is_soft()) {
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &after));
        EXPECT_EQ(1u, after.rdma_by_responder - before.rdma_by_responder)
            << "the WRITE waited for the SEND's ACK";
    }
    /* one receive: the SEND takes it, the WRITE finds none */
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    pump(20);
    EXPECT_EQ(0, tgt[0]) << "written before a receive WQE took it";
    ASSERT_EQ(0, post_recv(qpb, rbuf + 64, 64, rmr->lkey, 2));
    wc = poll1(rcqb);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc.opcode);
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(16u, wc.byte_len);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(0x1234), wc.imm_data);
    EXPECT_EQ(0, memcmp(tgt, wsrc, 16));
    ibv_wc swc[2];
    expect_sends_done_in_order(2, swc);
}

/*
 * IBV_SEND_FENCE: a WRITE whose source a READ before it fills goes only
 * once the READ's data is in, so it carries that data (without the fence
 * the READ and the WRITE may go together, the WRITE with the old bytes).
 */
TEST_P(rc, fenced_write_waits_for_the_read_before_it)
{
    conn_opts_t o;
    make_pair(o);
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    char *lbuf = (char*)alloc(64, 0), *src = (char*)alloc(64, 'X');
    char *dst  = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *lmr = reg(*a, lbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *xmr = reg(*b, src, 64, IBV_ACCESS_REMOTE_READ);
    ibv_mr *dmr = reg(*b, dst, 64, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_WRITE);

    /* the SEND waits out RNR NAKs: the READ and the WRITE are behind it */
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_READ, lbuf, 32, lmr->lkey, 2,
                           IBV_SEND_SIGNALED, (uintptr_t)src, xmr->rkey));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_WRITE, lbuf, 32, lmr->lkey, 3,
                           IBV_SEND_SIGNALED | IBV_SEND_FENCE,
                           (uintptr_t)dst, dmr->rkey));
    pump(20);
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ibv_wc wc[3];
    expect_sends_done_in_order(3, wc);
    EXPECT_EQ(0, memcmp(lbuf, src, 32));
    EXPECT_EQ(0, memcmp(dst, src, 32)) << "the fenced WRITE did not wait";
}

/* A READ the responder executes is refused as the requester would refuse
 * it: a bad rkey fails it with a remote access error, and the target's
 * QP goes to error */
TEST_P(rc, read_behind_unacked_send_with_bad_rkey)
{
    conn_opts_t o;
    make_pair(o);
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    char *lbuf = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *lmr = reg(*a, lbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE); /* no READ */

    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_READ, lbuf, 16, lmr->lkey, 2,
                           IBV_SEND_SIGNALED, (uintptr_t)rbuf, rmr->rkey));
    pump(20);
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ibv_wc wc[2];
    ASSERT_EQ(2, poll(scqa, 2, wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(2u, wc[1].wr_id);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc[1].status)
        << ibv_wc_status_str(wc[1].status);
    EXPECT_EQ(0, lbuf[0]);
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*b, qpb));
}

/*
 * A READ whose response finds the requester's queue full is answered once
 * there is room, with the data as it was when the READ executed (a copy
 * kept meanwhile), not as it is by then.
 */
TEST_P(rc, read_response_held_back_by_a_full_queue)
{
    if (!is_soft()) {
        GTEST_SKIP() << "fills soft0's queue";
    }
    conn_opts_t o;
    make_pair(o);
    still(*a); /* its queue stays full while it does not poll */
    still(*b);
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    char *lbuf = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *lmr = reg(*a, lbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE |
                                    IBV_ACCESS_REMOTE_READ);
    srq_soft_stats_t before{};

    /* behind the SEND, the READ is b's to do: it reads what the SEND
     * placed */
    hold_back_read_response(sbuf, smr, lbuf, lmr, 16, rbuf, rmr->rkey, rbuf,
                            rmr, &before);
    memset(rbuf, 'Z', 16); /* after the READ */
    pump(50);              /* a drains its queue, b sends what it kept */
    ibv_wc swc[2];
    expect_sends_done_in_order(2, swc);
    EXPECT_EQ(0, memcmp(lbuf, sbuf, 16)) << "not the data the READ read";
}

/*
 * A large READ's answer (no data: the requester reads it) that finds the
 * requester's queue full is kept and sent once there is room: the READ
 * completes without being sent again, with the data as the requester
 * reads it then.
 */
TEST_P(rc, large_read_answer_held_back_by_a_full_queue)
{
    if (!is_soft()) {
        GTEST_SKIP() << "fills soft0's queue";
    }
    conn_opts_t o;
    make_pair(o);
    still(*a); /* its queue stays full while it does not poll */
    still(*b);
    const size_t big = 100000;
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    char *lbuf = (char*)alloc(big, 0), *src = (char*)alloc(big, 'r');
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *lmr = reg(*a, lbuf, big, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *xmr = reg(*b, src, big, IBV_ACCESS_REMOTE_READ);
    srq_soft_stats_t before{}, after{};

    hold_back_read_response(sbuf, smr, lbuf, lmr, big, src, xmr->rkey, rbuf,
                            rmr, &before);
    memset(src, 'Z', big); /* read when the answer reaches a */
    ibv_wc swc[2];
    expect_sends_done_in_order(2, swc);
    ASSERT_EQ(0, srq_soft_query_stats(b->dev, &after));
    EXPECT_EQ(before.rx_out_of_seq, after.rx_out_of_seq)
        << "the READ was sent again: its answer was lost";
    EXPECT_EQ('Z', lbuf[0]);
    EXPECT_EQ('Z', lbuf[big - 1]);
}

/*
 * A peer that does not run (stopped, descheduled) is alive: its queue full
 * of our WRITEs is back-pressure for as long as it does not run, never a
 * transport error (an HCA keeps taking them, or RNR-retries forever). Here
 * a's transport timeout and retries (4 us x 2^8 x 2, about 2 ms) pass
 * many times over while b's device stands still; then b runs, and every
 * WRITE completes successfully.
 */
TEST_P(rc, full_queue_of_a_peer_that_does_not_run_is_back_pressure)
{
    if (!is_soft()) {
        GTEST_SKIP() << "fills soft0's queue";
    }
    conn_opts_t o;
    o.timeout   = 8;
    o.retry_cnt = 1;
    make_pair(o, nullptr, 256, 256);
    still(*a);
    still(*b);
    const uint32_t len = 15000; /* in the packet: 140 of them fill b's queue */
    const int n = 200;
    char *sbuf = (char*)alloc(len, 'w'), *rbuf = (char*)alloc(len, 0);
    ibv_mr *smr = reg(*a, sbuf, len, 0);
    ibv_mr *rmr = reg(*b, rbuf, len, IBV_ACCESS_LOCAL_WRITE);
    srq_soft_stats_t st{};
    ibv_wc wc;

    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(0, post_recv(qpb, rbuf, len, rmr->lkey, i));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, len, smr->lkey, i));
    }
    /* a alone runs for 100 transport timeouts and more */
    uint64_t end = now_ms() + 300;
    int done = 0;
    while (now_ms() < end) {
        int k = ibv_poll_cq(scqa, 1, &wc);
        ASSERT_GE(k, 0);
        if (k == 1) {
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
                << "WR " << wc.wr_id << " failed while its peer stood still";
            ++done;
        }
    }
    ASSERT_EQ(0, srq_soft_query_stats(a->dev, &st));
    EXPECT_GT(st.tx_ring_full, 0u) << "b's queue never filled";
    EXPECT_LT(done, n);
    /* b runs: everything goes */
    while (done < n) {
        wc = poll1(scqa, 10000); /* polls b's CQs too */
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << "WR " << wc.wr_id;
        ++done;
    }
}

/*
 * soft0 pins nothing: a program may unmap a buffer whose region is still
 * registered (a registration cache deregisters it later). A retransmission
 * that reads it then fails its WR with IBV_WC_LOC_PROT_ERR; it does not take
 * the process down (UCX's destroy_entity_after_send did, through the
 * progress thread's retransmission, once every soft0 had one).
 */
TEST_P(rc, retransmission_from_an_unmapped_buffer_fails_the_wr)
{
    if (!is_soft()) {
        GTEST_SKIP() << "reads what the soft device reads";
    }
    /* about 67 ms a timeout, 8 transmissions: the unmap comes after the
     * first retransmission with 6 left, however loaded the machine (with
     * 1 ms timeouts and a fixed 20 ms wait, the retries were all spent
     * before the unmap under load: a packet to a QP not ready is a loss) */
    conn_opts_t o;
    o.timeout = 14;
    make_pair(o);
    void *m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, m);
    memset(m, 'u', 4096);
    ibv_mr *smr = reg(*a, m, 4096, 0);
    /* b drops what arrives: a sends the SEND again and again */
    ibv_qp_attr attr = {};
    attr.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qpb, &attr, IBV_QP_STATE));
    srq_soft_stats_t st;
    ASSERT_EQ(0, srq_soft_query_stats(a->dev, &st));
    uint64_t sent = st.tx_packets;
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, m, 64, smr->lkey, 1));
    ibv_wc wc;
    uint64_t end = now_ms() + 10000;
    do { /* the first transmission and one retransmission */
        ASSERT_EQ(0, ibv_poll_cq(scqa, 1, &wc)) << "completed before unmap";
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &st));
    } while ((st.tx_packets - sent < 2) && (now_ms() < end));
    ASSERT_GE(st.tx_packets - sent, 2u) << "no retransmission";
    ASSERT_EQ(0, munmap(m, 4096));
    wc = poll1(scqa, 5000);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status)
        << ibv_wc_status_str(wc.status);
    EXPECT_EQ(1u, wc.wr_id);
}

/*
 * The same for a first transmission that back-pressure deferred: b's queue
 * is full, so a's SEND waits in a's send queue, and a's progress sends it
 * later, after the program unmapped the buffer. It fails its WR with
 * IBV_WC_LOC_PROT_ERR (UCX's destroy_entity_after_send took the process
 * down again this way, under load, where the first post found no room).
 */
TEST_P(rc, deferred_send_from_an_unmapped_buffer_fails_the_wr)
{
    SRQ_SKIP_UNLESS_SOFT(); /* fills a queue by injection */
    make_pair();
    still(*b); /* b reads its queue only when the test polls it */
    void *m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, m);
    memset(m, 'u', 4096);
    ibv_mr *smr = reg(*a, m, 4096, 0);
    uint8_t junk[SRQ_SOFT_CELL] = {};
    srq_soft_stats_t before{}, after{};
    int ret = 0, n = 0;
    ibv_wc wc, rwc;

    ((srq_soft_pkt_t*)junk)->opcode = 0x7f; /* b drops them, one by one */
    while (ret == 0) {
        ret = srq_soft_inject(a->dev, b->dev, junk, sizeof(junk),
                              SRQ_SOFT_INJECT_FRAME);
    }
    ASSERT_EQ(EAGAIN, ret);
    ASSERT_EQ(0, srq_soft_query_stats(a->dev, &before));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, m, 64, smr->lkey, 1));
    ASSERT_EQ(0, srq_soft_query_stats(a->dev, &after));
    ASSERT_EQ(before.tx_packets, after.tx_packets) << "sent at once: no room "
                                                "was expected";
    ASSERT_EQ(0, munmap(m, 4096));
    /* b drains its queue; a's progress then sends the SEND */
    for (uint64_t end = now_ms() + 10000; (n == 0) && (now_ms() < end);) {
        (void)ibv_poll_cq(rcqb, 1, &rwc);
        n = ibv_poll_cq(scqa, 1, &wc);
    }
    ASSERT_EQ(1, n) << "no completion";
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status)
        << ibv_wc_status_str(wc.status);
    EXPECT_EQ(1u, wc.wr_id);
}

TEST_P(rc, rnr_retry_succeeds_when_recv_posted_late)
{
    conn_opts_t o;
    o.rnr_retry = 7; /* forever */
    make_pair(o);
    char *sbuf = (char*)alloc(64, 'r'), *rbuf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    srq_soft_stats_t st{};

    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 5));
    pump(30); /* several RNR NAKs and retries */
    ibv_wc wc;
    EXPECT_EQ(0, poll(scqa, 1, &wc, 1)) << ibv_wc_status_str(wc.status);
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 6));
    wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(16u, wc.byte_len);
    wc = poll1(scqa);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(5u, wc.wr_id);
    if (is_soft()) {
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &st));
        EXPECT_GT(st.rnr_retries, 0u);
    }
}

/*
 * A region deregistered while a SEND from it waits out RNR NAKs is not
 * read again: an HCA's key is invalid once ibv_dereg_mr returns, so the
 * retransmission fails the WR with a local protection error instead of
 * sending what the program may already have freed (UCX's
 * test_uct_ep.destroy_entity_after_send does just that).
 */
TEST_P(rc, rnr_retransmission_after_dereg_reads_nothing)
{
    conn_opts_t o;
    o.rnr_retry = 7; /* forever: only the key can end it */
    make_pair(o);
    char *sbuf = (char*)alloc(64, 'r'), *rbuf = (char*)alloc(64, 0);
    ibv_mr *smr = srq_verbs_reg_mr(a->dev, a->pd, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_wc wc;

    ASSERT_NE(nullptr, smr) << strerror(errno);
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 5));
    pump(30); /* sent, refused: RNR NAKs */
    ASSERT_EQ(0, poll(scqa, 1, &wc, 1)) << ibv_wc_status_str(wc.status);
    ASSERT_EQ(0, srq_verbs_dereg_mr(a->dev, smr));
    memset(sbuf, 'x', 64); /* what a retransmission must not carry */
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 6));
    wc = poll1(scqa);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(0, poll(rcqb, 1, &wc, 50)) << "a message arrived";
    EXPECT_EQ(0, rbuf[0]);
}

/*
 * A sender whose peer's SRQ is dry probes with the refused WR alone: the
 * responder would drop the rest of the window behind it, and a dry
 * receiver is one short of CPU. Then all of it arrives, once, in order.
 */
TEST_P(rc, rnr_resends_a_probe_not_the_window)
{
    SRQ_SKIP_UNLESS_SOFT(); /* the responder's statistics */
    const int n = 16;
    ibv_srq *srq = make_srq(*b, n);
    make_pair(conn_opts_t(), srq);
    char *sbuf = (char*)alloc(n), *rbuf = (char*)alloc(n * 8);
    ibv_mr *smr = reg(*a, sbuf, n, 0);
    ibv_mr *rmr = reg(*b, rbuf, n * 8, IBV_ACCESS_LOCAL_WRITE);
    srq_soft_stats_t st{};

    for (int i = 0; i < n; ++i) {
        sbuf[i] = (char)i;
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf + i, 1, smr->lkey, i));
    }
    pump(30); /* a dry SRQ for many RNR timers */
    ASSERT_EQ(0, srq_soft_query_stats(b->dev, &st));
    EXPECT_GE(st.rnr_naks_sent, 3u) << "too few RNR rounds to tell";
    /* the first round sends the window: n - 1 dropped behind the refused
     * one; the probes after it add none */
    EXPECT_LT(st.rx_out_of_seq, 2u * n)
        << st.rnr_naks_sent << " RNR rounds resent the window";
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(0, post_srq_recv(srq, rbuf + i * 8, 8, rmr->lkey, i));
    }
    ibv_wc wc[n];
    ASSERT_EQ(n, poll(rcqb, n, wc));
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
        EXPECT_EQ(1u, wc[i].byte_len);
        EXPECT_EQ((char)i, rbuf[wc[i].wr_id * 8]) << "out of order at " << i;
    }
    ASSERT_EQ(n, poll(scqa, n, wc));
    EXPECT_EQ(0, poll(rcqb, 1, wc, 50)) << "a message arrived twice";
}

/*
 * ibv_poll_cq runs the soft device's work on the caller's CPU; a poll that
 * its CQ can satisfy does not (a consumer polling two CQs per round, or
 * one with completions waiting, would run it again for nothing).
 */
TEST_P(rc, poll_satisfied_from_the_cq_runs_no_progress)
{
    SRQ_SKIP_UNLESS_SOFT(); /* the device's statistics */
    make_pair();
    char *buf  = (char*)alloc(64, 'p');
    ibv_mr *mr = reg(*b, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *smr = reg(*a, buf, 64, 0);
    srq_soft_stats_t st;
    ibv_wc wc;

    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(0, post_recv(qpb, buf, 64, mr->lkey, i));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, i));
    }
    pump(50); /* progress only: the four completions wait in scqa */
    ASSERT_EQ(0, srq_soft_query_stats(a->dev, &st));
    const uint64_t before = st.progress_calls;
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(1, ibv_poll_cq(scqa, 1, &wc)) << "completion " << i;
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    }
    ASSERT_EQ(0, srq_soft_query_stats(a->dev, &st));
    EXPECT_EQ(before, st.progress_calls) << "polls the CQ satisfied ran the "
                                            "device";
    EXPECT_EQ(0, ibv_poll_cq(scqa, 1, &wc));
    ASSERT_EQ(0, srq_soft_query_stats(a->dev, &st));
    EXPECT_EQ(before + 1, st.progress_calls) << "an empty CQ's poll must";
}

/*
 * A consumer polling two empty CQs in turn, as UCX's progress polls its
 * receive and send CQs, runs the device once per round, not once per
 * poll: a poll skips it if it ran (for every CQ) since that CQ's last
 * poll. A CQ polled alone runs it every time; a poll of none always does.
 */
TEST_P(rc, two_cqs_polled_in_turn_run_the_device_once_a_round)
{
    SRQ_SKIP_UNLESS_SOFT(); /* the device's statistics */
    make_pair();
    srq_soft_stats_t st;
    ibv_wc wc;

    EXPECT_EQ(0, ibv_poll_cq(rcqb, 1, &wc)); /* each CQ polled once */
    EXPECT_EQ(0, ibv_poll_cq(scqb, 1, &wc));
    ASSERT_EQ(0, srq_soft_query_stats(b->dev, &st));
    uint64_t before = st.progress_calls;
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(0, ibv_poll_cq(rcqb, 1, &wc));
        EXPECT_EQ(0, ibv_poll_cq(scqb, 1, &wc));
    }
    ASSERT_EQ(0, srq_soft_query_stats(b->dev, &st));
    EXPECT_EQ(before + 10, st.progress_calls) << "10 rounds of two polls";

    before = st.progress_calls;
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(0, ibv_poll_cq(rcqb, 1, &wc));
    }
    EXPECT_EQ(0, ibv_poll_cq(rcqb, 0, &wc));
    ASSERT_EQ(0, srq_soft_query_stats(b->dev, &st));
    EXPECT_EQ(before + 11, st.progress_calls) << "one CQ, 10 polls and one "
                                                 "of none";
}

/*
 * A send queue full to max_send_wr with WRs in flight (a dry receiver: RNR),
 * half of them inline (their data copied at post time, the buffer reused
 * at once): every one arrives, once, in order, with its data. On soft0 the
 * queue starts small and grows while WRs are outstanding.
 */
TEST_P(rc, full_send_queue_keeps_every_wr)
{
    const int n = 200;
    make_pair(conn_opts_t(), nullptr, n, n);
    char *sbuf = (char*)alloc(n * 8), *rbuf = (char*)alloc(n * 8);
    ibv_mr *smr = reg(*a, sbuf, n * 8, 0);
    ibv_mr *rmr = reg(*b, rbuf, n * 8, IBV_ACCESS_LOCAL_WRITE);

    for (int i = 0; i < n; ++i) {
        bool inl = (i % 2) != 0;
        memset(sbuf + i * 8, 'a' + i % 26, 8);
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf + i * 8, 8, smr->lkey, i,
                               IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0)))
            << "WR " << i;
        if (inl) {
            memset(sbuf + i * 8, '#', 8); /* inline: the WR has its copy */
        }
    }
    pump(20); /* no receive posted: everything stays in flight */
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(0, post_recv(qpb, rbuf + i * 8, 8, rmr->lkey, i));
    }
    std::vector<ibv_wc> wc(n);
    ASSERT_EQ(n, poll(rcqb, n, wc.data()));
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status) << i;
        EXPECT_EQ((uint64_t)i, wc[i].wr_id);
        EXPECT_EQ(std::string(8, (char)('a' + i % 26)),
                  std::string(rbuf + i * 8, 8)) << "message " << i;
    }
    ASSERT_EQ(n, poll(scqa, n, wc.data()));
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ((uint64_t)i, wc[i].wr_id) << "send completions in order";
    }
}

/*
 * A send queue slot stays held until a completion at or after its WR has
 * been polled, as on an HCA (its provider frees send queue space in
 * ibv_poll_cq): when a post finds the queue full then depends on what the
 * caller polled, not on how fast the device finished, and a verbs trace
 * replays (test/verbs_replay.sh). An unsignaled WR's slot comes back with
 * the next signaled completion.
 */
TEST_P(rc, send_slots_are_free_once_polled)
{
    SRQ_SKIP_UNLESS_SOFT();
    make_pair(conn_opts_t(), nullptr, 8, 8);
    ibv_qp_attr attr;
    ibv_qp_init_attr init;
    ASSERT_EQ(0, srq_verbs_query_qp(a->dev, qpa, &attr, IBV_QP_CAP, &init));
    const int n = (int)attr.cap.max_send_wr, half = n / 2;
    ASSERT_GE(n, 2);
    char *sbuf = (char*)alloc(8), *rbuf = (char*)alloc(8 * n);
    ibv_mr *smr = reg(*a, sbuf, 8, 0);
    ibv_mr *rmr = reg(*b, rbuf, 8 * n, IBV_ACCESS_LOCAL_WRITE);

    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(0, post_recv(qpb, rbuf + 8 * i, 8, rmr->lkey, i));
    }
    /* signaled: the last of each half */
    for (int i = 0; i < n; ++i) {
        bool sig = (i == half - 1) || (i == n - 1);
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 8, smr->lkey, i,
                               sig ? IBV_SEND_SIGNALED : 0)) << "WR " << i;
    }
    std::vector<ibv_wc> wc(n);
    ASSERT_EQ(n, poll(rcqb, n, wc.data())) << "every message arrived";
    pump(50); /* the ACKs are in: the device finished every WR */
    EXPECT_EQ(ENOMEM, post_send(qpa, IBV_WR_SEND, sbuf, 8, smr->lkey, 100))
        << "finished but not polled: the slots are still held";

    ASSERT_EQ(1, poll(scqa, 1, wc.data()));
    EXPECT_EQ((uint64_t)(half - 1), wc[0].wr_id);
    for (int i = 0; i < half; ++i) {
        ASSERT_EQ(0, post_recv(qpb, rbuf + 8 * i, 8, rmr->lkey, 200 + i));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 8, smr->lkey, 200 + i))
            << "the first half's slots are free: WR " << i;
    }
    EXPECT_EQ(ENOMEM, post_send(qpa, IBV_WR_SEND, sbuf, 8, smr->lkey, 101))
        << "the second half is still held";

    ASSERT_EQ(half + 1, poll(scqa, half + 1, wc.data()));
    EXPECT_EQ((uint64_t)(n - 1), wc[0].wr_id);
    ASSERT_EQ(half, poll(rcqb, half, wc.data()));
}

TEST_P(rc, rnr_retry_exceeded)
{
    conn_opts_t o;
    o.rnr_retry     = 2;
    o.min_rnr_timer = 1;
    make_pair(o);
    char *sbuf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);

    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 2, 0));
    ibv_wc wc[2];
    ASSERT_EQ(2, poll(scqa, 2, wc));
    EXPECT_EQ(1u, wc[0].wr_id);
    EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc[0].status);
    EXPECT_EQ(2u, wc[1].wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[1].status)
        << "errors complete even unsignaled WRs";
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*a, qpa));
}

TEST_P(rc, flush_on_error)
{
    make_pair();
    char *buf = (char*)alloc(64);
    ibv_mr *mr = reg(*b, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *smr = reg(*a, buf, 64, 0);
    ibv_qp_attr attr = {};
    ibv_wc wc[4];
    int i;

    for (i = 0; i < 3; ++i) {
        ASSERT_EQ(0, post_recv(qpb, buf, 64, mr->lkey, 10 + i));
    }
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qpb, &attr, IBV_QP_STATE));
    ASSERT_EQ(3, poll(rcqb, 3, wc));
    for (i = 0; i < 3; ++i) {
        EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
        EXPECT_EQ((uint64_t)(10 + i), wc[i].wr_id);
        EXPECT_EQ(qpb->qp_num, wc[i].qp_num);
    }
    /* posting to a QP in error: accepted, flushed */
    ASSERT_EQ(0, post_recv(qpb, buf, 64, mr->lkey, 20));
    ASSERT_EQ(1, poll(rcqb, 1, wc));
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
    EXPECT_EQ(20u, wc[0].wr_id);

    ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, qpa, &attr, IBV_QP_STATE));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, 30, 0));
    ASSERT_EQ(1, poll(scqa, 1, wc));
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
    EXPECT_EQ(30u, wc[0].wr_id);
}

TEST_P(rc, flush_outstanding_sends)
{
    make_pair();
    char *buf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, buf, 64, 0);
    ibv_qp_attr attr = {};
    ibv_wc wc[5];
    int i;

    /* no receives: the sends sit in RNR */
    for (i = 0; i < 5; ++i) {
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, i));
    }
    pump(5);
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, qpa, &attr, IBV_QP_STATE));
    ASSERT_EQ(5, poll(scqa, 5, wc));
    for (i = 0; i < 5; ++i) {
        EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
        EXPECT_EQ((uint64_t)i, wc[i].wr_id);
    }
}

TEST_P(rc, bad_lkey_local_protection)
{
    make_pair();
    char *buf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, buf, 64, 0);
    ibv_mr *rmr = reg(*b, buf, 64, IBV_ACCESS_LOCAL_WRITE);

    ASSERT_EQ(0, post_recv(qpb, buf, 64, rmr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey + 0x10000, 1));
    ibv_wc wc = poll1(scqa);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*a, qpa));
}

TEST_P(rc, lkey_bounds_and_stale)
{
    make_pair();
    char *buf = (char*)alloc(128);
    ibv_mr *smr = reg(*a, buf, 64, 0);

    /* beyond the region */
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf + 32, 64, smr->lkey, 1));
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, poll1(scqa).status);

    /* a deregistered region's key */
    ibv_qp *qpc = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    ibv_qp *qpd = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    connect_rc(*a, qpc, *b, qpd);
    ibv_mr *m2 = srq_verbs_reg_mr(a->dev, a->pd, buf, 64, 0);
    ASSERT_NE(nullptr, m2);
    uint32_t stale = m2->lkey;
    ASSERT_EQ(0, srq_verbs_dereg_mr(a->dev, m2));
    ASSERT_EQ(0, post_send(qpc, IBV_WR_SEND, buf, 8, stale, 2));
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, poll1(scqa).status);
}

TEST_P(rc, recv_bad_lkey)
{
    make_pair();
    char *buf = (char*)alloc(64);
    ibv_mr *smr = reg(*a, buf, 64, 0);
    ibv_mr *ro  = reg(*b, buf, 64, 0); /* no local write */

    ASSERT_EQ(0, post_recv(qpb, buf, 64, ro->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, 1));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
    wc = poll1(scqa);
    EXPECT_NE(IBV_WC_SUCCESS, wc.status);
    if (is_soft()) {
        EXPECT_EQ(IBV_WC_REM_OP_ERR, wc.status);
    }
}

TEST_P(rc, length_error)
{
    make_pair();
    char *sbuf = (char*)alloc(256), *rbuf = (char*)alloc(256);
    ibv_mr *smr = reg(*a, sbuf, 256, 0);
    ibv_mr *rmr = reg(*b, rbuf, 256, IBV_ACCESS_LOCAL_WRITE);

    ASSERT_EQ(0, post_recv(qpb, rbuf, 16, rmr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 100, smr->lkey, 1));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status);
    wc = poll1(scqa);
    EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status);
}

TEST_P(rc, rkey_errors)
{
    char *lbuf = (char*)alloc(4096), *tgt = (char*)alloc(4096);
    ibv_mr *lmr = reg(*a, lbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *wo  = reg(*b, tgt, 1024, IBV_ACCESS_LOCAL_WRITE |
                                     IBV_ACCESS_REMOTE_WRITE);
    ibv_mr *ro  = reg(*b, tgt + 1024, 1024, IBV_ACCESS_REMOTE_READ);
    struct {
        ibv_wr_opcode op;
        uint64_t      addr;
        uint32_t      rkey;
        uint32_t      len;
        const char   *what;
    } cases[] = {
        { IBV_WR_RDMA_WRITE, (uintptr_t)tgt, wo->rkey ^ 0x5a5a0000, 8,
          "bad rkey" },
        { IBV_WR_RDMA_WRITE, (uintptr_t)tgt + 1000, wo->rkey, 100,
          "out of bounds" },
        { IBV_WR_RDMA_WRITE, (uintptr_t)tgt - 8, wo->rkey, 16,
          "below the region" },
        { IBV_WR_RDMA_WRITE, (uintptr_t)tgt + 1024, ro->rkey, 8,
          "write to a read-only region" },
        { IBV_WR_RDMA_READ, (uintptr_t)tgt, wo->rkey, 8,
          "read from a write-only region" },
    };

    for (auto &c : cases) {
        ibv_qp *qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        ibv_qp *qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        connect_rc(*a, qa, *b, qb);
        ASSERT_EQ(0, post_send(qa, c.op, lbuf, c.len, lmr->lkey, 1,
                               IBV_SEND_SIGNALED, c.addr, c.rkey));
        ibv_wc wc = poll1(scqa);
        EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status) << c.what;
        EXPECT_EQ(IBV_QPS_ERR, qp_state(*a, qa)) << c.what;
    }
}

TEST_P(rc, rnr_with_srq)
{
    ibv_srq *srq = make_srq(*b, 16);
    make_pair(conn_opts_t(), srq);
    char *buf = (char*)alloc(64, 'q');
    ibv_mr *smr = reg(*a, buf, 64, 0);
    ibv_mr *rmr = reg(*b, buf, 64, IBV_ACCESS_LOCAL_WRITE);

    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, buf, 8, smr->lkey, 1));
    pump(10);
    ASSERT_EQ(0, post_srq_recv(srq, buf, 64, rmr->lkey, 77));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(77u, wc.wr_id);
    EXPECT_EQ(qpb->qp_num, wc.qp_num);
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
}

SRQ_INSTANTIATE(rc);

/*
 * Request and reply: the reply carries the ACK of the request. The ACK of
 * a message placed on a QP whose last reply followed its request at once
 * waits one progress call; the reply posted meanwhile carries it, and the
 * ACK frame is saved. Each side polls only its own CQs here (each poll
 * runs only that device): a requester whose ACK did not come with the
 * reply would wait for the responder's device to run again, which nothing
 * here does, and its send would never complete.
 */
class rc_reply : public rc {
protected:
    /* Poll @cq alone (it runs that CQ's device only) until one completion */
    ibv_wc spin(ibv_cq *cq)
    {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        ibv_wc wc{};
        int n;

        while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
            if (std::chrono::steady_clock::now() > until) {
                ADD_FAILURE() << "no completion within 5 s";
                wc.status = IBV_WC_GENERAL_ERR;
                return wc;
            }
        }
        EXPECT_EQ(1, n);
        return wc;
    }

    /* One request and reply (b's next ACK then waits for a reply), then
     * the last request (WR 2): b has taken it and owes its ACK */
    void owe_an_ack_a_reply_would_carry()
    {
        ibv_mr *rmra = reg(*a, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
        ibv_mr *rmrb = reg(*b, rbuf + 64, 64, IBV_ACCESS_LOCAL_WRITE);

        ASSERT_EQ(0, post_recv(qpb, rbuf + 64, 64, rmrb->lkey, 100));
        ASSERT_EQ(0, post_recv(qpa, rbuf, 64, rmra->lkey, 200));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 8, smra->lkey, 1));
        ASSERT_EQ(IBV_WC_SUCCESS, spin(rcqb).status);
        ASSERT_EQ(0, post_send(qpb, IBV_WR_SEND, sbuf + 64, 8, smrb->lkey, 300));
        ASSERT_EQ(IBV_WC_SUCCESS, spin(rcqa).status);
        ASSERT_EQ(IBV_WC_SUCCESS, spin(scqa).status);
        ASSERT_EQ(IBV_WC_SUCCESS, poll1(scqb).status);

        ASSERT_EQ(0, post_recv(qpb, rbuf + 64, 64, rmrb->lkey, 101));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 8, smra->lkey, 2));
        ASSERT_EQ(IBV_WC_SUCCESS, spin(rcqb).status);
    }

    void SetUp() override
    {
        rc::SetUp();
        if (IsSkipped()) {
            return;
        }
        make_pair();
        sbuf = (char*)alloc(128, 'q');
        rbuf = (char*)alloc(128);
        smra = reg(*a, sbuf, 128, 0);
        smrb = reg(*b, sbuf, 128, 0);
    }

    char   *sbuf = nullptr, *rbuf = nullptr;
    ibv_mr *smra = nullptr, *smrb = nullptr;
};

TEST_P(rc_reply, reply_carries_the_ack)
{
    if (!is_soft()) {
        GTEST_SKIP() << "counts ACKs of the soft device";
    }
    still(*a); /* counts what the polls below send, not the threads */
    still(*b);
    srq_soft_stats_t before{}, after{};
    /* both QPs receive into rbuf: a on a's MR, b on b's */
    ibv_mr *rmra = reg(*a, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmrb = reg(*b, rbuf + 64, 64, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_EQ(0, srq_soft_query_stats(b->dev, &before));
    for (int r = 0; r < 4; ++r) {
        ASSERT_EQ(0, post_recv(qpb, rbuf + 64, 64, rmrb->lkey, 100 + r));
        ASSERT_EQ(0, post_recv(qpa, rbuf, 64, rmra->lkey, 200 + r));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 8, smra->lkey, r));
        ASSERT_EQ(IBV_WC_SUCCESS, spin(rcqb).status);
        ASSERT_EQ(0, post_send(qpb, IBV_WR_SEND, sbuf + 64, 8, smrb->lkey,
                               300 + r));
        ASSERT_EQ(IBV_WC_SUCCESS, spin(rcqa).status);
        ibv_wc wc = spin(scqa);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << "round " << r;
        EXPECT_EQ((uint64_t)r, wc.wr_id);
        EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqb).status); /* both progress */
    }
    ASSERT_EQ(0, srq_soft_query_stats(b->dev, &after));
    /* the first ACK went on its own (no reply had followed a request yet);
     * the next three rode on the replies */
    EXPECT_GE(after.acks_carried - before.acks_carried, 3u);
    EXPECT_LE(after.acks_sent - before.acks_sent, 1u);
}

/*
 * The ACK waiting for a reply is not lost when the program destroys its
 * QP instead: it goes first, and the peer's send completes successfully,
 * as it would on an HCA (which acknowledges on arrival).
 */
TEST_P(rc_reply, destroy_sends_the_ack_a_reply_would_have_carried)
{
    owe_an_ack_a_reply_would_carry();
    if (HasFatalFailure()) {
        return;
    }
    destroy_qp(*b, qpb);
    ibv_wc wc = spin(scqa);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(2u, wc.wr_id);
}

/*
 * The ACK a destroy owes goes out even when the peer's queue is locked at
 * that moment (a live producer holding it for 20 ms): the destroy tries for
 * a while, as an HCA, which ACKs on arrival, never loses it.
 */
TEST_P(rc_reply, destroy_sends_its_ack_past_a_busy_peer_queue)
{
    if (!is_soft()) {
        GTEST_SKIP() << "holds soft0's queue lock";
    }
    still(*a); /* the ACK is b's destroy's to send, not b's thread's */
    still(*b);
    owe_an_ack_a_reply_would_carry();
    if (HasFatalFailure()) {
        return;
    }
    /* a's queue is locked by a live producer (this process) for 20 ms */
    ASSERT_EQ(0, srq_soft_test_hold_lock(a->dev));
    srq_verbs_dev_t *adev = a->dev;
    std::thread release([adev] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        srq_soft_test_release_lock(adev);
    });
    destroy_qp(*b, qpb);
    release.join();
    ibv_wc wc = spin(scqa);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(2u, wc.wr_id);
}

SRQ_INSTANTIATE(rc_reply);

/*
 * The device answers for itself, as an HCA does: b's program never polls,
 * yet a's SEND is placed and ACKed, a WRITE and a READ behind it (which
 * b's responder executes, in order) complete, all by b's progress thread.
 * Only a's CQ is polled, so nothing of this test moves b.
 */
TEST_P(rc, target_that_never_polls_answers)
{
    SRQ_SKIP_UNLESS_SOFT(); /* an HCA does this without asking */
    make_pair();
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    char *wsrc = (char*)alloc(64, 'w'), *tgt = (char*)alloc(64, 0);
    char *lbuf = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *wmr = reg(*a, wsrc, 64, 0);
    ibv_mr *lmr = reg(*a, lbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *tmr = reg(*b, tgt, 64, IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_WRITE |
                                   IBV_ACCESS_REMOTE_READ);

    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_WRITE, wsrc, 32, wmr->lkey, 2,
                           IBV_SEND_SIGNALED, (uintptr_t)tgt, tmr->rkey));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_READ, lbuf, 32, lmr->lkey, 3,
                           IBV_SEND_SIGNALED, (uintptr_t)tgt, tmr->rkey));
    ibv_wc wc[3];
    for (int i = 0; i < 3; ++i) {
        wc[i] = poll1_alone(scqa);
        EXPECT_EQ((uint64_t)i + 1, wc[i].wr_id);
        ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status)
            << ibv_wc_status_str(wc[i].status);
    }
    EXPECT_EQ(0, memcmp(rbuf, sbuf, 16));
    EXPECT_EQ(0, memcmp(tgt, wsrc, 32));
    EXPECT_EQ(0, memcmp(lbuf, wsrc, 32)) << "the READ ran before the WRITE";
}

/*
 * b's owner polled, then stopped (a rank gone computing). Its thread, which
 * leaves a polling owner alone, looks again only a minute later here, and
 * b did not ask to be poked. a's next SEND waits in b's queue; a's ticks
 * see b's device stand still and poke b's thread, which takes it at once,
 * as an HCA would have. On a loaded machine b's thread may see b stop
 * before b stops, and ask to be poked after all: then that round proves
 * nothing, and is tried again.
 */
TEST_P(rc, requester_pokes_a_target_that_stopped_polling)
{
    SRQ_SKIP_UNLESS_SOFT(); /* an HCA does this without asking */
    const int rounds = 10;
    make_pair();
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    srq_soft_stats_t before{}, after{};
    bool poked = false;
    uint64_t id = 0;
    ibv_wc wc;

    ASSERT_EQ(0, srq_soft_test_thread_look(b->dev, 60000));
    for (int round = 0; (round < rounds) && !poked; ++round) {
        /* b's owner polls through a SEND: b's thread, woken by it if b
         * had asked, finds b's owner polling and from then on leaves b
         * alone, asking for no poke */
        ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, ++id));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, id));
        int n = 0;
        for (uint64_t end = now_ms() + 10000; (n == 0) && (now_ms() < end);) {
            (void)ibv_poll_cq(rcqb, 1, &wc);
            n = ibv_poll_cq(scqa, 1, &wc);
        }
        ASSERT_EQ(1, n) << "no completion";
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        for (uint64_t end = now_ms() + 50; now_ms() < end;) {
            (void)ibv_poll_cq(rcqb, 1, &wc);
        }
        /* then it stops, and a sends again */
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &before));
        ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, ++id));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, id));
        wc = poll1_alone(scqa); /* 10 s, against b's look of 60 */
        EXPECT_EQ(id, wc.wr_id);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        ASSERT_EQ(0, srq_soft_query_stats(a->dev, &after));
        poked = (after.peer_nudges > before.peer_nudges);
    }
    EXPECT_TRUE(poked) << "b's thread asked to be poked in all " << rounds
                       << " rounds: the poke was never needed";
}

/*
 * A polling owner runs its device itself: its thread's looks are pure
 * cost on its CPUs, and grow further apart the longer the owner polls
 * (SRQ_SOFT_THREAD_LOOK_MS doubling up to _MAX_MS). b polls for 400 ms,
 * longer until its thread has looked once,
 * while a's SEND makes b's thread look (b asked to be poked while nobody
 * polled it): a look every millisecond would be 400; at most the doubling
 * looks and one per longest look are allowed. A loaded machine makes
 * fewer.
 */
TEST_P(rc, thread_looks_less_often_the_longer_its_owner_polls)
{
    SRQ_SKIP_UNLESS_SOFT();
    make_pair();
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    const uint64_t poll_ms = 400;
    srq_soft_stats_t before{}, after{};
    uint64_t start, end, elapsed, looks, doublings = 0, sent = 0;
    ibv_wc wc;

    ASSERT_EQ(0, srq_soft_query_stats(b->dev, &before));
    ASSERT_EQ(0, ibv_poll_cq(rcqb, 1, &wc));
    /* poll_ms at least, and until the thread has looked once: on a busy
     * machine it may not run for a while (a stopped clock: 60 s); the
     * bound below is in the time polled. A SEND again each poll_ms
     * without a look: when b's thread saw no poll between two of its
     * rounds (this thread descheduled), it asked to be poked and slept,
     * and a SEND that came before that and was taken by b's polls left
     * it asleep - the next one pokes it (seen under a loaded CI, 2 runs
     * in 3: 0 looks in 60 s, b's thread asleep without a timeout) */
    start = now_ms();
    do {
        ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, ++sent));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, sent));
        for (end = now_ms() + poll_ms; now_ms() < end;) {
            (void)ibv_poll_cq(rcqb, 1, &wc);
        }
        ASSERT_EQ(0, srq_soft_query_stats(b->dev, &after));
    } while ((after.thread_looks == before.thread_looks) &&
             (now_ms() - start < 60000));
    elapsed = now_ms() - start;
    for (uint64_t i = 1; i <= sent; ++i) {
        wc = poll1_alone(scqa);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(i, wc.wr_id);
    }
    for (unsigned ms = SRQ_SOFT_THREAD_LOOK_MS;
         ms < SRQ_SOFT_THREAD_LOOK_MAX_MS; ms *= 2) {
        ++doublings;
    }
    looks = after.thread_looks - before.thread_looks;
    /* what b's thread did meanwhile, should it never have looked: asleep
     * (no rounds: no poke came), or woken each time (rounds) */
    EXPECT_GE(looks, 1u) << "the thread never looked: the test saw nothing ("
                         << (after.thread_rounds - before.thread_rounds)
                         << " rounds of b's thread, "
                         << (after.rx_packets - before.rx_packets)
                         << " packets in at b, "
                         << (after.progress_calls - before.progress_calls)
                         << " progress calls of b, in " << elapsed << " ms)";
    EXPECT_LE(looks, doublings + elapsed / SRQ_SOFT_THREAD_LOOK_MAX_MS + 2)
        << "in " << elapsed << " ms";
}

/*
 * A live peer is not declared dead because we are slow. b took a's SEND
 * and answers it at once, but a's queue is full of frames a has not read
 * (a slow, descheduled a): the ACK waits in b, then behind those frames.
 * a's transport timer fires many times over meanwhile (16 ms, 1 retry)
 * and finds a's own queue unread each time: not a loss, so no retry
 * counts, and the SEND completes once a reads its way to the ACK.
 */
TEST_P(rc, slow_requester_does_not_exhaust_its_retries)
{
    SRQ_SKIP_UNLESS_SOFT(); /* fills a queue by injection */
    conn_opts_t o;
    o.timeout   = 12; /* ~16.8 ms */
    o.retry_cnt = 1;
    make_pair(o);
    still(*a); /* a reads its queue only when the test polls it */
    char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, sbuf, 64, 0);
    ibv_mr *rmr = reg(*b, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
    uint8_t junk[SRQ_SOFT_CELL] = {};
    int ret = 0;

    ((srq_soft_pkt_t*)junk)->opcode = 0x7f; /* a drops them, one by one */
    while (ret == 0) {
        ret = srq_soft_inject(b->dev, a->dev, junk, sizeof(junk),
                              SRQ_SOFT_INJECT_FRAME);
    }
    ASSERT_EQ(EAGAIN, ret);
    ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
    ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 1,
                           IBV_SEND_SIGNALED));

    /* a reads a batch every millisecond: the 32768 frames ahead of the ACK
     * take it about half a second, 30 of its timeouts */
    ibv_wc wc;
    int n = 0;
    uint64_t end = now_ms() + 20000;
    while ((n == 0) && (now_ms() < end)) {
        usleep(1000);
        n = ibv_poll_cq(scqa, 1, &wc);
    }
    ASSERT_EQ(1, n) << "no completion";
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(0, memcmp(rbuf, sbuf, 16));
}

/*
 * A revocation waits at most for the chunk in flight, whoever executes
 * the WRITE: one of @big bytes posted behind an unacknowledged SEND is
 * b's responder's to execute (b's device thread; b's program never
 * polls). The bound is derived from what it measures: the same WRITE run
 * to its end first, then revoking once the second one has begun
 * (@revoke: deregistering b's region, resetting b's QP) must take less
 * than a quarter of that whole WRITE (a 1 MiB chunk is a thousandth of a
 * GiB). @wc: the completions of the second SEND and WRITE, after @tgt
 * was overwritten with 'Z' (nothing may land after the revocation).
 */
struct revoke_run_t {
    uint64_t whole_ms, revoke_ms;
    ibv_wc   wc[2];
    char    *tgt;
    ibv_mr  *tmr; /* b's region, registered outside the fixture's list:
                     the revocation may deregister it */
};

class rc_revoke : public rc {
protected:
    void run(size_t big, const std::function<void(ibv_mr*)> &revoke,
             revoke_run_t *r)
    {
        make_pair();
        char *src = (char*)alloc(big, 'w');
        char *tgt = (char*)alloc(big, 0);
        char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(256, 0);
        ibv_mr *smr = reg(*a, sbuf, 64, 0);
        ibv_mr *wmr = reg(*a, src, big, 0);
        ibv_mr *rmr = reg(*b, rbuf, 256, IBV_ACCESS_LOCAL_WRITE);
        const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

        /* the whole WRITE, executed by b's responder behind the SEND */
        ibv_mr *tmr = srq_verbs_reg_mr(b->dev, b->pd, tgt, big, access);
        ASSERT_NE(nullptr, tmr);
        r->tmr = tmr;
        ASSERT_EQ(0, post_recv(qpb, rbuf, 64, rmr->lkey, 1));
        uint64_t t0 = now_ms();
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 1));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_WRITE, src, big, wmr->lkey,
                               2, IBV_SEND_SIGNALED, (uintptr_t)tgt,
                               tmr->rkey));
        for (int i = 0; i < 2; ++i) {
            r->wc[i] = poll1_alone(scqa, 60000);
            ASSERT_EQ(IBV_WC_SUCCESS, r->wc[i].status)
                << ibv_wc_status_str(r->wc[i].status);
        }
        r->whole_ms = now_ms() - t0;
        ASSERT_EQ('w', tgt[big - 1]);

        /* again, revoked as soon as its first bytes land */
        memset(tgt, 0, 4096);
        ASSERT_EQ(0, post_recv(qpb, rbuf + 64, 64, rmr->lkey, 3));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, sbuf, 16, smr->lkey, 3));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_RDMA_WRITE, src, big, wmr->lkey,
                               4, IBV_SEND_SIGNALED, (uintptr_t)tgt,
                               tmr->rkey));
        uint64_t end = now_ms() + 60000;
        while ((((volatile char*)tgt)[0] == 0) && (now_ms() < end)) {
            /* a's completions not taken: nothing of this moves b */
        }
        ASSERT_EQ('w', tgt[0]) << "the WRITE never began";
        uint64_t t1 = now_ms();
        revoke(tmr);
        r->revoke_ms = now_ms() - t1;
        memset(tgt, 'Z', big);
        r->tgt = tgt;
        printf("revoked during a %zu MiB responder WRITE: %lu ms (the whole "
               "WRITE: %lu ms)\n", big >> 20, (unsigned long)r->revoke_ms,
               (unsigned long)r->whole_ms);
        EXPECT_LT(r->revoke_ms * 4, r->whole_ms)
            << "the revocation waited for the WRITE";
    }

    /* nothing landed after the revocation returned */
    static void expect_untouched(const revoke_run_t &r, size_t big)
    {
        for (size_t i = 0; i < big; i += 4096) {
            ASSERT_EQ('Z', r.tgt[i]) << "landed after it, at " << i;
        }
    }
};

/* ibv_dereg_mr of b's region: the WRITE fails with REM_ACCESS_ERR */
TEST_P(rc_revoke, dereg_waits_for_a_chunk_of_a_responder_write)
{
    SRQ_SKIP_UNLESS_SOFT(); /* times soft0's responder */
    const size_t big = 1ul << 30;
    revoke_run_t r{};

    run(big, [this](ibv_mr *mr) {
        ASSERT_EQ(0, srq_verbs_dereg_mr(b->dev, mr));
    }, &r);
    ASSERT_FALSE(HasFatalFailure());
    r.wc[0] = poll1_alone(scqa, 60000);
    r.wc[1] = poll1_alone(scqa, 60000);
    EXPECT_EQ(IBV_WC_SUCCESS, r.wc[0].status);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, r.wc[1].status)
        << ibv_wc_status_str(r.wc[1].status);
    expect_untouched(r, big);
}

/* b's QP moved to ERR (as a reset begins): the WRITE is not completed */
TEST_P(rc_revoke, qp_error_waits_for_a_chunk_of_a_responder_write)
{
    SRQ_SKIP_UNLESS_SOFT(); /* times soft0's responder */
    const size_t big = 256ul << 20;
    revoke_run_t r{};

    run(big, [this](ibv_mr *) {
        ibv_qp_attr attr = {};
        attr.qp_state = IBV_QPS_ERR;
        ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qpb, &attr, IBV_QP_STATE));
    }, &r);
    ASSERT_FALSE(HasFatalFailure());
    expect_untouched(r, big);
    EXPECT_EQ(0, srq_verbs_dereg_mr(b->dev, r.tmr));
}

SRQ_INSTANTIATE(rc_revoke);
