/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: tag matching (a TM SRQ, IBV_SRQT_TM) as
 * rdma-core's ibv_post_srq_ops(3), ibv_create_srq_ex(3) and
 * Documentation/tag_matching.md describe it. The project API has no
 * ibv_create_srq_ex: on the built-in path the soft device's own calls
 * (srq_soft_api.h), through libibverbs (test/verbs_gtest_ibv.sh)
 * ibv_create_srq_ex and ibv_post_srq_ops. A device without tm_caps skips.
 * A client QP on a sends to a server QP on b, which has no send queue of
 * its own (max_send_wr 0) and sits on a TM SRQ whose CQ is extended with
 * IBV_WC_EX_WITH_TM_INFO:
 *   - eager: the data after the TMH lands in the matching tag's buffer,
 *     IBV_WC_TM_RECV with MATCH | DATA_VALID, the tag's recv_wr_id, the
 *     message's tag and app_ctx; the earliest posted of two matches wins;
 *   - unexpected: no tag matches, the whole message goes into an ordinary
 *     receive; a tag added then does not match (IBV_WC_TM_SYNC_REQ) until
 *     IBV_WR_TAG_SYNC reports the count of unexpected messages;
 *   - IBV_TMH_NO_TAG: an ordinary receive, IBV_WC_TM_NO_TAG, not counted;
 *   - rendezvous: MATCH at once, the sender's buffer read into the tag's
 *     (DATA_VALID), a FIN (a TMH, opcode IBV_TMH_FIN) into one of the
 *     sender's receives; a bad rkey or a tag too small fail the tag;
 *   - TAG_DEL: a deleted tag matches nothing, one consumed completes with
 *     IBV_WC_TM_ERR, a handle that names no tag is EINVAL;
 *   - what tm_caps and tm_cap say is enforced (tags, outstanding
 *     operations, SGEs), bad attributes are EINVAL.
 */
#include "verbs_fixture.h"

#include <arpa/inet.h>

#include <infiniband/tm_types.h>

#include <endian.h>
#include <errno.h>
#include <string.h>

using namespace srq_test;

namespace {

const uint32_t kBuf    = 4096;
const uint64_t kMask   = 0xffff;
const int kRemote      = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                         IBV_ACCESS_REMOTE_WRITE;

/* One completion of an extended CQ, as read with ibv_wc_read_* */
struct tm_wc {
    uint64_t              wr_id    = UINT64_MAX;
    int                   status   = IBV_WC_GENERAL_ERR;
    int                   opcode   = -1;
    unsigned              wc_flags = 0;
    uint32_t              byte_len = 0;
    uint32_t              imm      = 0; /* network order, if WITH_IMM */
    ibv_wc_tm_info        tm{};
};

} // namespace

class tag_match : public two_dev_test {
protected:
    void SetUp() override
    {
        two_dev_test::SetUp();
        if (IsSkipped() || HasFailure()) {
            return;
        }
        ASSERT_EQ(0, srq_verbs_query_device_ex(b->dev, &caps));
        if (!(caps.tm_caps.flags & IBV_TM_CAP_RC)) {
            GTEST_SKIP() << "the device has no tag matching";
        }
    }

    ibv_cq_ex *make_cq_ex(tdev_t &d, uint64_t wc_flags)
    {
        ibv_cq_init_attr_ex attr = {};

        attr.cqe      = 256;
        attr.wc_flags = wc_flags;
        return verbs_test::make_cq_ex(d, attr);
    }

    ibv_srq_init_attr_ex tm_attr(ibv_cq *cq, uint32_t tags, uint32_t ops)
    {
        ibv_srq_init_attr_ex attr = {};

        attr.attr.max_wr      = 64;
        attr.attr.max_sge     = 1;
        attr.comp_mask        = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
                                IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
        attr.srq_type         = IBV_SRQT_TM;
        attr.pd               = b->pd;
        attr.cq               = cq;
        attr.tm_cap.max_num_tags = tags;
        attr.tm_cap.max_ops   = ops;
        return attr;
    }

    /* ibv_create_srq_ex on either path: nullptr and errno on failure */
    ibv_srq *srq_ex(tdev_t &d, ibv_srq_init_attr_ex &attr)
    {
        ibv_srq *s = is_soft() ? srq_soft_create_srq_ex(d.dev, &attr) :
                     ibv_create_srq_ex(srq_verbs_context(d.dev), &attr);
        if (s != nullptr) {
            srq_verbs_dev_t *dev = d.dev;
            m_cleanup.push_back([dev, s]() {
                EXPECT_EQ(0, srq_verbs_destroy_srq(dev, s));
            });
        }
        return s;
    }

    int post_ops(ibv_srq *s, ibv_ops_wr *wr, ibv_ops_wr **bad)
    {
        return is_soft() ? srq_soft_post_srq_ops(b->dev, s, wr, bad) :
                           ibv_post_srq_ops(s, wr, bad);
    }

    /* The stage: a TM SRQ on b with an extended CQ, a server QP on it
     * with no send queue, a client QP on a with its own receive queue */
    void stage(uint32_t tags = 0, uint32_t ops = 16)
    {
        cq = make_cq_ex(*b, IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_TM_INFO);
        ASSERT_NE(nullptr, cq) << strerror(errno);
        ibv_srq_init_attr_ex attr = tm_attr(ibv_cq_ex_to_cq(cq),
                                            tags ? tags :
                                            caps.tm_caps.max_num_tags, ops);
        srq = srq_ex(*b, attr);
        ASSERT_NE(nullptr, srq) << strerror(errno);
        server = make_qp(*b, IBV_QPT_RC, ibv_cq_ex_to_cq(cq),
                         ibv_cq_ex_to_cq(cq), srq, 0, 0, 1, 0);
        client = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 16, 16, 1, 0);
        ASSERT_TRUE((server != nullptr) && (client != nullptr));
        connect_rc(*a, client, *b, server);

        cbuf  = (uint8_t*)alloc(kBuf, 'c');
        cmr   = reg(*a, cbuf, kBuf, kRemote);
        finb  = (uint8_t*)alloc(kBuf, 0);
        finmr = reg(*a, finb, kBuf, IBV_ACCESS_LOCAL_WRITE);
        for (int i = 0; i < 4; ++i) {
            tbuf[i] = (uint8_t*)alloc(kBuf, 0);
            tmr[i]  = reg(*b, tbuf[i], kBuf, IBV_ACCESS_LOCAL_WRITE);
        }
        obuf = (uint8_t*)alloc(kBuf, 0);
        omr  = reg(*b, obuf, kBuf, IBV_ACCESS_LOCAL_WRITE);
        ASSERT_TRUE(cmr && finmr && tmr[0] && tmr[1] && tmr[2] && tmr[3] &&
                    omr);
    }

    /* IBV_WR_TAG_ADD of tag @tag into tag buffer @i: the handle (0 and
     * errno: refused) */
    uint32_t add_tag(uint64_t tag, int i, uint64_t wr_id,
                     int flags = IBV_OPS_SIGNALED, uint32_t len = kBuf,
                     uint64_t mask = kMask, int num_sge = 1)
    {
        ibv_sge sge = { (uintptr_t)tbuf[i], len, tmr[i]->lkey };
        ibv_ops_wr wr = {}, *bad = nullptr;

        wr.wr_id             = wr_id;
        wr.opcode            = IBV_WR_TAG_ADD;
        wr.flags             = flags;
        wr.tm.add.recv_wr_id = wr_id;
        wr.tm.add.sg_list    = &sge;
        wr.tm.add.num_sge    = num_sge;
        wr.tm.add.tag        = tag;
        wr.tm.add.mask       = mask;
        errno = 0;
        int ret = post_ops(srq, &wr, &bad);
        if (ret != 0) {
            EXPECT_EQ(&wr, bad);
            errno = ret;
            return 0;
        }
        return wr.tm.handle;
    }

    int del_tag(uint32_t handle, uint64_t wr_id)
    {
        ibv_ops_wr wr = {}, *bad = nullptr;

        wr.wr_id     = wr_id;
        wr.opcode    = IBV_WR_TAG_DEL;
        wr.flags     = IBV_OPS_SIGNALED;
        wr.tm.handle = handle;
        return post_ops(srq, &wr, &bad);
    }

    int sync(uint32_t unexpected, uint64_t wr_id)
    {
        ibv_ops_wr wr = {}, *bad = nullptr;

        wr.wr_id             = wr_id;
        wr.opcode            = IBV_WR_TAG_SYNC;
        wr.flags             = IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC;
        wr.tm.unexpected_cnt = unexpected;
        return post_ops(srq, &wr, &bad);
    }

    /* The next completion of the TM SRQ's CQ */
    tm_wc next(int timeout_ms = 5000)
    {
        ibv_poll_cq_attr pattr = {};
        uint64_t end = now_ms() + timeout_ms;
        tm_wc w;
        int ret;

        while (((ret = ibv_start_poll(cq, &pattr)) == ENOENT) &&
               (now_ms() < end)) {
            pump_once();
        }
        EXPECT_EQ(0, ret) << "no completion";
        if (ret != 0) {
            return w;
        }
        w.wr_id    = cq->wr_id;
        w.status   = cq->status;
        w.opcode   = ibv_wc_read_opcode(cq);
        w.wc_flags = ibv_wc_read_wc_flags(cq);
        w.byte_len = ibv_wc_read_byte_len(cq);
        if (w.wc_flags & IBV_WC_WITH_IMM) {
            w.imm = ibv_wc_read_imm_data(cq);
        }
        ibv_wc_read_tm_info(cq, &w.tm);
        ibv_end_poll(cq);
        return w;
    }

    /* The completion of a list operation */
    void expect_op(int opcode, uint64_t wr_id, unsigned flags = 0,
                   int status = IBV_WC_SUCCESS)
    {
        tm_wc w = next();

        EXPECT_EQ(status, w.status);
        EXPECT_EQ(opcode, w.opcode);
        EXPECT_EQ(wr_id, w.wr_id);
        EXPECT_EQ(flags, w.wc_flags & (IBV_WC_TM_SYNC_REQ | IBV_WC_TM_MATCH |
                                       IBV_WC_TM_DATA_VALID));
    }

    /* The client sends @len bytes of cbuf, a TMH (@op, @tag, @ctx) first,
     * then the pattern @fill */
    void send_tm(uint8_t op, uint64_t tag, uint32_t ctx, uint32_t len,
                 uint8_t fill, uint64_t wr_id = 1, uint32_t imm = 0)
    {
        ibv_tmh tmh = {};

        memset(cbuf, fill, len);
        tmh.opcode  = op;
        tmh.app_ctx = htobe32(ctx);
        tmh.tag     = htobe64(tag);
        memcpy(cbuf, &tmh, sizeof(tmh));
        /* with an immediate (network order) when @imm is not 0 */
        ASSERT_EQ(0, post_send(client, (imm != 0) ? IBV_WR_SEND_WITH_IMM :
                                                    IBV_WR_SEND,
                               cbuf, len, cmr->lkey, wr_id,
                               IBV_SEND_SIGNALED, 0, 0, imm));
    }

    /* A message that went whole into the ordinary receive @wr_id */
    void expect_ordinary(int opcode, uint64_t wr_id, uint32_t len)
    {
        tm_wc w = next();

        EXPECT_EQ(IBV_WC_SUCCESS, w.status);
        EXPECT_EQ(opcode, w.opcode);
        EXPECT_EQ(wr_id, w.wr_id);
        EXPECT_EQ(0u, w.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
        EXPECT_EQ(0u, w.tm.tag) << "no tag info without a match";
        EXPECT_EQ(len, w.byte_len);
        EXPECT_EQ(0, memcmp(obuf, cbuf, len)) << "the TMH too";
    }

    /* The client sends a rendezvous request for @len bytes at @src
     * (@rkey): TMH and RVH */
    void send_rndv(uint64_t tag, uint32_t ctx, const void *src, uint32_t rkey,
                   uint32_t len, uint64_t wr_id)
    {
        ibv_tmh tmh = {};
        ibv_rvh rvh;

        tmh.opcode  = IBV_TMH_RNDV;
        tmh.app_ctx = htobe32(ctx);
        tmh.tag     = htobe64(tag);
        rvh.va      = htobe64((uintptr_t)src);
        rvh.rkey    = htobe32(rkey);
        rvh.len     = htobe32(len);
        memcpy(cbuf, &tmh, sizeof(tmh));
        memcpy(cbuf + sizeof(tmh), &rvh, sizeof(rvh));
        ASSERT_EQ(0, post_send(client, IBV_WR_SEND, cbuf,
                               sizeof(tmh) + sizeof(rvh), cmr->lkey, wr_id));
    }

    void expect_sent(int status = IBV_WC_SUCCESS)
    {
        EXPECT_EQ(status, poll1(scqa).status);
    }

    ibv_device_attr_ex caps{};
    ibv_cq_ex *cq = nullptr;
    ibv_srq *srq = nullptr;
    ibv_qp *server = nullptr, *client = nullptr;
    uint8_t *cbuf = nullptr, *finb = nullptr, *obuf = nullptr;
    uint8_t *tbuf[4] = {};
    ibv_mr *cmr = nullptr, *finmr = nullptr, *omr = nullptr;
    ibv_mr *tmr[4] = {};
};

/* What tm_caps says: RC, and limits a program can size its list by */
TEST_P(tag_match, caps_reported)
{
    EXPECT_GT(caps.tm_caps.max_num_tags, 0u);
    EXPECT_GT(caps.tm_caps.max_ops, 0u);
    EXPECT_GT(caps.tm_caps.max_sge, 0u);
    EXPECT_GE(caps.tm_caps.max_rndv_hdr_size,
              sizeof(ibv_tmh) + sizeof(ibv_rvh));
}

/* Eager: the data after the TMH in the tag's buffer, the tag's wr_id, the
 * message's tag and app_ctx; of two matching tags the first posted */
TEST_P(tag_match, eager_match)
{
    stage();
    ASSERT_NE(0u, add_tag(1, 0, 0x11)) << strerror(errno);
    expect_op(IBV_WC_TM_ADD, 0x11);
    /* (message tag & mask) == tag: both match 0x10002 */
    ASSERT_NE(0u, add_tag(2, 1, 0x12, IBV_OPS_SIGNALED, kBuf, 0xff));
    expect_op(IBV_WC_TM_ADD, 0x12);
    ASSERT_NE(0u, add_tag(0x10002, 2, 0x13, IBV_OPS_SIGNALED, kBuf,
                          0xfffff));
    expect_op(IBV_WC_TM_ADD, 0x13);

    send_tm(IBV_TMH_EAGER, 0x10002, 0xc0ffee, 116, 'e');
    tm_wc w = next();
    EXPECT_EQ(IBV_WC_SUCCESS, w.status);
    EXPECT_EQ(IBV_WC_TM_RECV, w.opcode);
    EXPECT_EQ(0x12u, w.wr_id) << "the first posted of two matches";
    EXPECT_EQ((unsigned)(IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID),
              w.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
    EXPECT_EQ(100u, w.byte_len);
    EXPECT_EQ(0x10002u, w.tm.tag);
    EXPECT_EQ(0xc0ffeeu, w.tm.priv);
    expect_sent();
    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ('e', tbuf[1][i]) << "byte " << i << " of the data";
    }
    EXPECT_EQ(0, tbuf[1][100]) << "more than the data after the TMH";

    /* the same tag again: now the other one */
    send_tm(IBV_TMH_EAGER, 0x10002, 7, 32, 'f');
    w = next();
    EXPECT_EQ(0x13u, w.wr_id);
    EXPECT_TRUE(w.wc_flags & IBV_WC_TM_MATCH);
    EXPECT_EQ('f', tbuf[2][0]);
    expect_sent();
}

/* A message larger than what travels in a packet (the responder pulls it
 * from the sender's memory): matched on its TMH all the same, its data
 * after the TMH in the tag's buffer; unexpected, whole in a receive */
TEST_P(tag_match, eager_large)
{
    const uint32_t big = 256 * 1024;
    stage();
    uint8_t *src = (uint8_t*)alloc(big + sizeof(ibv_tmh), 0);
    uint8_t *dst = (uint8_t*)alloc(big + sizeof(ibv_tmh), 0);
    ibv_mr *smr  = reg(*a, src, big + sizeof(ibv_tmh), kRemote);
    ibv_mr *dmr  = reg(*b, dst, big + sizeof(ibv_tmh), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_TRUE(smr && dmr);
    for (uint32_t i = 0; i < big + sizeof(ibv_tmh); ++i) {
        src[i] = (uint8_t)(i * 13 + 1);
    }
    ibv_tmh tmh = {};
    tmh.opcode = IBV_TMH_EAGER;
    tmh.tag    = htobe64(0x77);
    memcpy(src, &tmh, sizeof(tmh));

    ibv_sge sge = { (uintptr_t)dst, big, dmr->lkey };
    ibv_ops_wr wr = {}, *bad = nullptr;
    wr.wr_id             = 0x81;
    wr.opcode            = IBV_WR_TAG_ADD;
    wr.flags             = IBV_OPS_SIGNALED;
    wr.tm.add.recv_wr_id = 0x81;
    wr.tm.add.sg_list    = &sge;
    wr.tm.add.num_sge    = 1;
    wr.tm.add.tag        = 0x77;
    wr.tm.add.mask       = kMask;
    ASSERT_EQ(0, post_ops(srq, &wr, &bad));
    expect_op(IBV_WC_TM_ADD, 0x81);

    ASSERT_EQ(0, post_send(client, IBV_WR_SEND, src, big + sizeof(ibv_tmh),
                           smr->lkey, 0x82));
    tm_wc w = next();
    EXPECT_EQ(IBV_WC_SUCCESS, w.status);
    EXPECT_EQ(0x81u, w.wr_id);
    EXPECT_TRUE(w.wc_flags & IBV_WC_TM_DATA_VALID);
    EXPECT_EQ(big, w.byte_len);
    EXPECT_EQ(0, memcmp(dst, src + sizeof(ibv_tmh), big));
    expect_sent();

    /* unexpected: the whole of it, TMH included */
    memset(dst, 0, big + sizeof(ibv_tmh));
    ASSERT_EQ(0, post_srq_recv(srq, dst, big + sizeof(ibv_tmh), dmr->lkey,
                               0x83));
    ASSERT_EQ(0, post_send(client, IBV_WR_SEND, src, big + sizeof(ibv_tmh),
                           smr->lkey, 0x84));
    w = next();
    EXPECT_EQ(IBV_WC_SUCCESS, w.status);
    EXPECT_EQ(0x83u, w.wr_id);
    EXPECT_EQ(0u, w.wc_flags & IBV_WC_TM_MATCH);
    EXPECT_EQ(0, memcmp(dst, src, big + sizeof(ibv_tmh)));
    expect_sent();
}

/* Unexpected: the whole message into an ordinary receive, counted; a tag
 * added before the program caught up does not match until TAG_SYNC */
TEST_P(tag_match, unexpected_then_sync)
{
    stage();
    ASSERT_NE(0u, add_tag(1, 0, 0x21));
    expect_op(IBV_WC_TM_ADD, 0x21);
    ASSERT_EQ(0, post_srq_recv(srq, obuf, kBuf, omr->lkey, 0x501));
    ASSERT_EQ(0, post_srq_recv(srq, obuf, kBuf, omr->lkey, 0x502));

    send_tm(IBV_TMH_EAGER, 9, 1, 64, 'u');
    expect_ordinary(IBV_WC_TM_RECV, 0x501, 64);
    expect_sent();

    /* the device saw one unexpected message, the program said 0 */
    ASSERT_NE(0u, add_tag(9, 1, 0x22));
    expect_op(IBV_WC_TM_ADD, 0x22, IBV_WC_TM_SYNC_REQ);
    send_tm(IBV_TMH_EAGER, 9, 2, 64, 'v');
    tm_wc w = next();
    EXPECT_EQ(0x502u, w.wr_id) << "a tag added out of sync matched";
    EXPECT_EQ(0u, w.wc_flags & IBV_WC_TM_MATCH);
    expect_sent();

    ASSERT_EQ(0, sync(2, 0x23));
    expect_op(IBV_WC_TM_SYNC, 0x23);
    send_tm(IBV_TMH_EAGER, 9, 3, 64, 'w');
    w = next();
    EXPECT_EQ(0x22u, w.wr_id) << "in sync again, the tag matches";
    EXPECT_TRUE(w.wc_flags & IBV_WC_TM_MATCH);
    EXPECT_EQ('w', tbuf[1][0]);
    expect_sent();
}

/* IBV_TMH_NO_TAG: an ordinary receive, whole, not an unexpected one */
TEST_P(tag_match, no_tag)
{
    stage();
    ASSERT_NE(0u, add_tag(5, 0, 0x31));
    expect_op(IBV_WC_TM_ADD, 0x31);
    ASSERT_EQ(0, post_srq_recv(srq, obuf, kBuf, omr->lkey, 0x601));

    send_tm(IBV_TMH_NO_TAG, 5, 0, 48, 'n');
    expect_ordinary(IBV_WC_TM_NO_TAG, 0x601, 48);
    EXPECT_EQ(0, tbuf[0][0]) << "the tag of the same value took it";
    expect_sent();

    /* not counted: a new tag needs no synchronisation */
    ASSERT_NE(0u, add_tag(6, 1, 0x32));
    expect_op(IBV_WC_TM_ADD, 0x32);
}

/* A SEND with immediate reports it, whether a tag matched it, it went
 * unexpected into a receive, or it was no tagged message at all (UCX's
 * rc_srq carries an AM's id and half a tag's immediate there) */
TEST_P(tag_match, immediate_reported)
{
    stage();
    ASSERT_NE(0u, add_tag(5, 0, 0x41));
    expect_op(IBV_WC_TM_ADD, 0x41);
    ASSERT_EQ(0, post_srq_recv(srq, obuf, kBuf, omr->lkey, 0x701));

    send_tm(IBV_TMH_EAGER, 5, 3, 48, 'i', 1, htonl(0xabcd0001));
    tm_wc w = next();
    EXPECT_EQ(0x41u, w.wr_id);
    EXPECT_TRUE(w.wc_flags & IBV_WC_TM_MATCH);
    EXPECT_TRUE(w.wc_flags & IBV_WC_WITH_IMM) << "a matched one";
    EXPECT_EQ(0xabcd0001u, ntohl(w.imm));
    expect_sent();

    send_tm(IBV_TMH_NO_TAG, 0, 0, 24, 'j', 1, htonl(7));
    w = next();
    EXPECT_EQ(0x701u, w.wr_id);
    EXPECT_EQ(IBV_WC_TM_NO_TAG, w.opcode);
    EXPECT_TRUE(w.wc_flags & IBV_WC_WITH_IMM) << "one of no tag";
    EXPECT_EQ(7u, ntohl(w.imm));
    expect_sent();

    ASSERT_EQ(0, post_srq_recv(srq, obuf, kBuf, omr->lkey, 0x702));
    send_tm(IBV_TMH_EAGER, 6, 0, 32, 'k', 1, htonl(0xfeed));
    w = next();
    EXPECT_EQ(0x702u, w.wr_id);
    EXPECT_EQ(IBV_WC_TM_RECV, w.opcode);
    EXPECT_TRUE(w.wc_flags & IBV_WC_WITH_IMM) << "an unexpected one";
    EXPECT_EQ(0xfeedu, ntohl(w.imm));
    expect_sent();

    send_tm(IBV_TMH_EAGER, 5, 0, 40, 'l'); /* none: no immediate said */
    ASSERT_EQ(0, post_srq_recv(srq, obuf, kBuf, omr->lkey, 0x703));
    w = next();
    EXPECT_EQ(0u, w.wc_flags & IBV_WC_WITH_IMM);
    expect_sent();
}

/* Rendezvous: MATCH at once, the sender's buffer read into the tag's,
 * DATA_VALID, then a FIN in one of the sender's receives - by a server QP
 * that has no send queue */
TEST_P(tag_match, rndv_reads_and_fins)
{
    stage();
    uint8_t *src = (uint8_t*)alloc(kBuf, 0);
    ibv_mr *smr  = reg(*a, src, kBuf, kRemote);
    ASSERT_NE(nullptr, smr);
    for (uint32_t i = 0; i < kBuf; ++i) {
        src[i] = (uint8_t)(i * 7 + 3);
    }
    ASSERT_NE(0u, add_tag(3, 0, 0x41));
    expect_op(IBV_WC_TM_ADD, 0x41);
    ASSERT_EQ(0, post_recv(client, finb, kBuf, finmr->lkey, 0x701));

    send_rndv(3, 0xabc, src, smr->rkey, kBuf, 0x42);

    tm_wc w = next();
    EXPECT_EQ(IBV_WC_SUCCESS, w.status);
    EXPECT_EQ(IBV_WC_TM_RECV, w.opcode);
    EXPECT_EQ(0x41u, w.wr_id);
    EXPECT_EQ((unsigned)IBV_WC_TM_MATCH,
              w.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
    EXPECT_EQ(3u, w.tm.tag);
    EXPECT_EQ(0xabcu, w.tm.priv);
    w = next();
    EXPECT_EQ(IBV_WC_SUCCESS, w.status);
    EXPECT_EQ(IBV_WC_TM_RECV, w.opcode);
    EXPECT_EQ(0x41u, w.wr_id);
    EXPECT_EQ((unsigned)IBV_WC_TM_DATA_VALID,
              w.wc_flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
    EXPECT_EQ(kBuf, w.byte_len);
    EXPECT_EQ(0, memcmp(tbuf[0], src, kBuf)) << "the data read";

    ibv_wc fin = poll1(rcqa);
    EXPECT_EQ(IBV_WC_SUCCESS, fin.status);
    EXPECT_EQ(IBV_WC_RECV, fin.opcode);
    EXPECT_EQ(0x701u, fin.wr_id);
    EXPECT_EQ(sizeof(ibv_tmh), fin.byte_len);
    ibv_tmh got;
    memcpy(&got, finb, sizeof(got));
    EXPECT_EQ(IBV_TMH_FIN, got.opcode);
    EXPECT_EQ(3u, be64toh(got.tag));
    EXPECT_EQ(0xabcu, be32toh(got.app_ctx));
    expect_sent();
}

/* A rendezvous whose rkey does not grant the read fails the tag (as the
 * READ would fail) and the request's SEND; one too big for the tag too */
TEST_P(tag_match, rndv_errors_fail_the_tag)
{
    stage();
    uint8_t *src = (uint8_t*)alloc(kBuf, 's');
    ibv_mr *lmr  = reg(*a, src, kBuf, IBV_ACCESS_LOCAL_WRITE); /* no read */
    ASSERT_NE(nullptr, lmr);
    ASSERT_NE(0u, add_tag(4, 0, 0x51));
    expect_op(IBV_WC_TM_ADD, 0x51);

    send_rndv(4, 0, src, lmr->rkey, kBuf, 0x52);

    tm_wc w = next();
    EXPECT_EQ(IBV_WC_SUCCESS, w.status);
    EXPECT_TRUE(w.wc_flags & IBV_WC_TM_MATCH);
    w = next();
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, w.status) << "the read was refused";
    EXPECT_EQ(0x51u, w.wr_id);
    EXPECT_EQ(IBV_WC_TM_RECV, w.opcode);
    EXPECT_EQ(0, tbuf[0][0]) << "nothing lands";
    expect_sent(IBV_WC_REM_ACCESS_ERR);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*b, server));
}

TEST_P(tag_match, rndv_too_big_for_the_tag)
{
    stage();
    uint8_t *src = (uint8_t*)alloc(kBuf, 's');
    ibv_mr *smr  = reg(*a, src, kBuf, kRemote);
    ASSERT_NE(nullptr, smr);
    ASSERT_NE(0u, add_tag(4, 0, 0x53, IBV_OPS_SIGNALED, 100));
    expect_op(IBV_WC_TM_ADD, 0x53);

    send_rndv(4, 0, src, smr->rkey, 101, 0x54);

    tm_wc w = next();
    EXPECT_TRUE(w.wc_flags & IBV_WC_TM_MATCH);
    w = next();
    EXPECT_EQ(IBV_WC_LOC_LEN_ERR, w.status);
    EXPECT_EQ(0x53u, w.wr_id);
    EXPECT_EQ(0, tbuf[0][0]) << "nothing lands";
    expect_sent(IBV_WC_REM_INV_REQ_ERR);
}

/* TAG_DEL: a deleted tag matches nothing; deleting a consumed tag
 * completes with IBV_WC_TM_ERR; a handle naming no tag is EINVAL */
TEST_P(tag_match, tag_del)
{
    stage();
    uint32_t h1 = add_tag(8, 0, 0x61);
    expect_op(IBV_WC_TM_ADD, 0x61);
    uint32_t h2 = add_tag(8, 1, 0x62);
    expect_op(IBV_WC_TM_ADD, 0x62);
    ASSERT_NE(0u, h1);
    ASSERT_NE(h1, h2);

    ASSERT_EQ(0, del_tag(h1, 0x63));
    expect_op(IBV_WC_TM_DEL, 0x63);
    send_tm(IBV_TMH_EAGER, 8, 0, 40, 'd');
    tm_wc w = next();
    EXPECT_EQ(0x62u, w.wr_id) << "the deleted tag matched";
    EXPECT_EQ(0, tbuf[0][0]);
    EXPECT_EQ('d', tbuf[1][0]);
    expect_sent();

    ASSERT_EQ(0, del_tag(h2, 0x64)); /* consumed */
    expect_op(IBV_WC_TM_DEL, 0x64, 0, IBV_WC_TM_ERR);

    ibv_ops_wr wr = {}, *bad = nullptr;
    wr.opcode    = IBV_WR_TAG_DEL;
    wr.tm.handle = caps.tm_caps.max_num_tags + 1;
    EXPECT_EQ(EINVAL, post_ops(srq, &wr, &bad));
    EXPECT_EQ(&wr, bad);
    wr.tm.handle = 0;
    bad = nullptr;
    EXPECT_EQ(EINVAL, post_ops(srq, &wr, &bad));
    EXPECT_EQ(&wr, bad);
}

/* max_num_tags of the SRQ, max_ops, tm_caps.max_sge: each enforced */
TEST_P(tag_match, caps_enforced)
{
    stage(2, 2);
    ASSERT_NE(0u, add_tag(1, 0, 0x71, 0));
    ASSERT_NE(0u, add_tag(2, 1, 0x72, 0));
    EXPECT_EQ(0u, add_tag(3, 2, 0x73, 0)) << "a third tag in a list of 2";
    EXPECT_EQ(ENOMEM, errno);

    /* a consumed tag's slot comes back once its completion is polled
     * (the sender's completion: the server took the message) */
    send_tm(IBV_TMH_EAGER, 1, 0, 20, 'a');
    expect_sent();
    EXPECT_EQ(0u, add_tag(3, 2, 0x73, 0)) << "the slot of a tag whose "
                                              "completion is not polled";
    EXPECT_EQ(ENOMEM, errno);
    EXPECT_EQ(0x71u, next().wr_id);
    ASSERT_NE(0u, add_tag(3, 2, 0x73, 0)) << strerror(errno);

    /* two signaled operations whose completions wait: the third waits */
    ASSERT_EQ(0, sync(0, 0x74));
    ASSERT_EQ(0, sync(0, 0x75));
    EXPECT_EQ(ENOMEM, sync(0, 0x76)) << "beyond max_ops";
    expect_op(IBV_WC_TM_SYNC, 0x74);
    EXPECT_EQ(0, sync(0, 0x76));
    expect_op(IBV_WC_TM_SYNC, 0x75);
    expect_op(IBV_WC_TM_SYNC, 0x76);

    EXPECT_EQ(0u, add_tag(9, 3, 0x78, 0, kBuf, kMask,
                          (int)caps.tm_caps.max_sge + 1));
    EXPECT_EQ(EINVAL, errno) << "more SGEs than tm_caps.max_sge";
}

/* Bad attributes and operations: EINVAL, nothing made */
TEST_P(tag_match, bad_attributes)
{
    ibv_cq_ex *cq0 = make_cq_ex(*b, IBV_WC_STANDARD_FLAGS |
                                    IBV_WC_EX_WITH_TM_INFO);
    ASSERT_NE(nullptr, cq0);
    ibv_cq *c = ibv_cq_ex_to_cq(cq0);
    ibv_srq_init_attr_ex attr;

    attr = tm_attr(c, 4, 4);
    attr.comp_mask &= ~IBV_SRQ_INIT_ATTR_CQ;
    EXPECT_EQ(nullptr, srq_ex(*b, attr));
    EXPECT_EQ(EINVAL, errno) << "no CQ";
    attr = tm_attr(c, 4, 4);
    attr.comp_mask &= ~IBV_SRQ_INIT_ATTR_TM;
    EXPECT_EQ(nullptr, srq_ex(*b, attr));
    EXPECT_EQ(EINVAL, errno) << "no list sizes";
    attr = tm_attr(c, 0, 4);
    EXPECT_EQ(nullptr, srq_ex(*b, attr));
    EXPECT_EQ(EINVAL, errno) << "no tags";
    attr = tm_attr(c, caps.tm_caps.max_num_tags + 1, 4);
    EXPECT_EQ(nullptr, srq_ex(*b, attr));
    EXPECT_EQ(EINVAL, errno) << "more tags than tm_caps";
    attr = tm_attr(c, 4, caps.tm_caps.max_ops + 1);
    EXPECT_EQ(nullptr, srq_ex(*b, attr));
    EXPECT_EQ(EINVAL, errno) << "more operations than tm_caps";
    attr = tm_attr(c, 4, 4);
    attr.comp_mask |= IBV_SRQ_INIT_ATTR_RESERVED;
    EXPECT_EQ(nullptr, srq_ex(*b, attr));
    EXPECT_EQ(EINVAL, errno) << "an unknown comp_mask bit";
    attr = tm_attr(c, 4, 4);
    attr.srq_type = IBV_SRQT_BASIC;
    EXPECT_EQ(nullptr, srq_ex(*b, attr));
    EXPECT_EQ(EINVAL, errno) << "list sizes for a basic SRQ";

    /* a TM SRQ takes RC QPs only */
    attr = tm_attr(c, 4, 4);
    ibv_srq *s = srq_ex(*b, attr);
    ASSERT_NE(nullptr, s) << strerror(errno);
    ibv_qp_init_attr qa = {};
    qa.send_cq = qa.recv_cq = c;
    qa.srq     = s;
    qa.qp_type = IBV_QPT_UD;
    qa.cap.max_send_wr = qa.cap.max_send_sge = 1;
    EXPECT_EQ(nullptr, srq_verbs_create_qp(b->dev, b->pd, &qa));
    EXPECT_EQ(EINVAL, errno) << "a UD QP on a TM SRQ";

    /* operations: an unknown opcode or flag; a basic SRQ has no list */
    ibv_ops_wr wr = {}, *bad = nullptr;
    srq = s;
    wr.opcode = (ibv_ops_wr_opcode)7;
    EXPECT_EQ(EINVAL, post_ops(s, &wr, &bad));
    EXPECT_EQ(&wr, bad);
    wr.opcode = IBV_WR_TAG_SYNC;
    wr.flags  = 1 << 5;
    EXPECT_EQ(EINVAL, post_ops(s, &wr, &bad));
    ibv_srq *basic = make_srq(*b, 16);
    ASSERT_NE(nullptr, basic);
    wr.flags = 0;
    bad = nullptr;
    EXPECT_EQ(EINVAL, post_ops(basic, &wr, &bad));
    EXPECT_EQ(&wr, bad);

    /* tm_info is there only when asked for */
    ibv_cq_ex *plain = make_cq_ex(*b, IBV_WC_STANDARD_FLAGS);
    ASSERT_NE(nullptr, plain);
    EXPECT_EQ(nullptr, (void*)plain->read_tm_info);
    EXPECT_NE(nullptr, (void*)cq0->read_tm_info);
}

SRQ_INSTANTIATE(tag_match);
