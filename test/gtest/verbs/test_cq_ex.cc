/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: the CQ verbs current programs use beside
 * ibv_create_cq/ibv_poll_cq:
 *   - extended CQs (ibv_create_cq_ex): polled with ibv_start_poll /
 *     ibv_next_poll / ibv_end_poll, each field read with ibv_wc_read_*;
 *     what the device cannot give is refused at creation (EOPNOTSUPP, an
 *     unknown wc flag too, as libibverbs answers), an unknown creation
 *     flag is EINVAL;
 *   - ibv_resize_cq: the completions waiting stay, in order; a size
 *     below what the CQ holds is EINVAL.
 * On the built-in soft0 and, under srq-run --verbs, through libibverbs.
 */
#include "verbs_fixture.h"

#include <errno.h>
#include <string.h>

using namespace srq_test;

class cq_ex : public two_dev_test {
protected:
    ibv_cq_init_attr_ex std_attr(uint64_t wc_flags = IBV_WC_STANDARD_FLAGS)
    {
        ibv_cq_init_attr_ex attr = {};

        attr.cqe      = 64;
        attr.wc_flags = wc_flags;
        return attr;
    }

    /* ibv_start_poll until a completion comes or @timeout_ms passes: its
     * return value (ENOENT when none came); the poll is left started */
    int start_poll(ibv_cq_ex *cq, int timeout_ms = 5000)
    {
        ibv_poll_cq_attr pattr = {};
        uint64_t end = now_ms() + timeout_ms;
        int ret;

        while (((ret = ibv_start_poll(cq, &pattr)) == ENOENT) &&
               (now_ms() < end)) {
            pump_once();
        }
        return ret;
    }

    /* Count the completions sent to @cq, start to end */
    int drain(ibv_cq_ex *cq, int expect, int timeout_ms = 5000)
    {
        int n = 0;

        if (start_poll(cq, timeout_ms) != 0) {
            return 0;
        }
        do {
            EXPECT_EQ(IBV_WC_SUCCESS, cq->status);
            ++n;
        } while ((n < expect) && (ibv_next_poll(cq) == 0));
        ibv_end_poll(cq);
        return n;
    }
};

/* A SEND with immediate data from a to b, both QPs' CQs extended: every
 * standard field reads back as ibv_poll_cq would give it */
TEST_P(cq_ex, standard_fields_read_back)
{
    ibv_cq_init_attr_ex attr = std_attr();
    ibv_cq_ex *scq = make_cq_ex(*a, attr);
    ASSERT_NE(nullptr, scq) << strerror(errno);
    ibv_cq_ex *rcq = make_cq_ex(*b, attr);
    ASSERT_NE(nullptr, rcq) << strerror(errno);

    ibv_qp *qa = make_qp(*a, IBV_QPT_RC, ibv_cq_ex_to_cq(scq), rcqa);
    ibv_qp *qb = make_qp(*b, IBV_QPT_RC, scqb, ibv_cq_ex_to_cq(rcq));
    ASSERT_TRUE((qa != nullptr) && (qb != nullptr));
    connect_rc(*a, qa, *b, qb);

    char *sbuf = (char*)alloc(100, 's');
    char *rbuf = (char*)alloc(256, 0);
    ibv_mr *smr = reg(*a, sbuf, 100, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmr = reg(*b, rbuf, 256, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_EQ(0, post_recv(qb, rbuf, 256, rmr->lkey, 0x77));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND_WITH_IMM, sbuf, 100, smr->lkey,
                           0x55, IBV_SEND_SIGNALED, 0, 0, htobe32(0xabcd)));

    ASSERT_EQ(0, start_poll(rcq));
    EXPECT_EQ(0x77u, rcq->wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, rcq->status);
    EXPECT_EQ(IBV_WC_RECV, ibv_wc_read_opcode(rcq));
    EXPECT_EQ(100u, ibv_wc_read_byte_len(rcq));
    EXPECT_EQ(qb->qp_num, ibv_wc_read_qp_num(rcq));
    EXPECT_EQ(qa->qp_num, ibv_wc_read_src_qp(rcq));
    EXPECT_TRUE(ibv_wc_read_wc_flags(rcq) & IBV_WC_WITH_IMM);
    EXPECT_EQ(htobe32(0xabcd), ibv_wc_read_imm_data(rcq));
    EXPECT_EQ(0u, ibv_wc_read_vendor_err(rcq));
    EXPECT_EQ(0, ibv_wc_read_sl(rcq));
    EXPECT_EQ(0, ibv_wc_read_dlid_path_bits(rcq));
    ibv_port_attr pa = {};
    ASSERT_EQ(0, srq_verbs_query_port(a->dev, 1, &pa));
    EXPECT_EQ(pa.lid, ibv_wc_read_slid(rcq));
    EXPECT_EQ(ENOENT, ibv_next_poll(rcq)) << "one completion only";
    ibv_end_poll(rcq);

    ASSERT_EQ(0, start_poll(scq));
    EXPECT_EQ(0x55u, scq->wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, scq->status);
    EXPECT_EQ(IBV_WC_SEND, ibv_wc_read_opcode(scq));
    EXPECT_EQ(qa->qp_num, ibv_wc_read_qp_num(scq));
    ibv_end_poll(scq);
    EXPECT_EQ(0, memcmp(rbuf, sbuf, 100));
}

/* Many completions come one by one through ibv_next_poll, in order, and
 * an empty CQ answers ENOENT */
TEST_P(cq_ex, next_poll_walks_every_completion_in_order)
{
    const int n = 20;
    ibv_cq_init_attr_ex attr = std_attr();
    ibv_cq_ex *scq = make_cq_ex(*a, attr);
    ASSERT_NE(nullptr, scq) << strerror(errno);
    ibv_poll_cq_attr pattr = {};
    EXPECT_EQ(ENOENT, ibv_start_poll(scq, &pattr)) << "an empty CQ";

    ibv_qp *qa = make_qp(*a, IBV_QPT_RC, ibv_cq_ex_to_cq(scq), rcqa);
    ibv_qp *qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    connect_rc(*a, qa, *b, qb);
    char *buf = (char*)alloc(64, 1);
    ibv_mr *mra = reg(*a, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *mrb = reg(*b, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(0, post_recv(qb, buf, 64, mrb->lkey, i));
    }
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, buf, 8, mra->lkey, 100 + i));
    }
    ibv_wc wc[n];
    ASSERT_EQ(n, poll(rcqb, n, wc));

    uint64_t next = 100;
    ASSERT_EQ(0, start_poll(scq));
    do {
        EXPECT_EQ(next, scq->wr_id);
        ++next;
    } while (ibv_next_poll(scq) == 0);
    ibv_end_poll(scq);
    EXPECT_EQ(100u + n, next);
}

/* What soft0 cannot give is refused, as a provider refuses what its
 * hardware lacks; an unknown flag is an error of the caller */
TEST_P(cq_ex, refuses_what_it_cannot_give)
{
    ibv_cq_init_attr_ex ts = std_attr(IBV_WC_STANDARD_FLAGS |
                                      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP);
    errno = 0;
    EXPECT_EQ(nullptr, make_cq_ex(*a, ts));
    EXPECT_EQ(EOPNOTSUPP, errno) << "a time stamp";

    /* libibverbs answers a wc flag it does not know as unsupported */
    ibv_cq_init_attr_ex unknown = std_attr(IBV_WC_STANDARD_FLAGS | (1ull << 40));
    errno = 0;
    EXPECT_EQ(nullptr, make_cq_ex(*a, unknown));
    EXPECT_EQ(EOPNOTSUPP, errno) << "an unknown wc flag";

    ibv_cq_init_attr_ex bad_flag = std_attr();
    bad_flag.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    bad_flag.flags     = 1u << 20;
    errno = 0;
    EXPECT_EQ(nullptr, make_cq_ex(*a, bad_flag));
    EXPECT_EQ(EINVAL, errno) << "an unknown creation flag";

    ibv_cq_init_attr_ex overrun = std_attr();
    overrun.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    overrun.flags     = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
    errno = 0;
    EXPECT_EQ(nullptr, make_cq_ex(*a, overrun));
    EXPECT_EQ(EOPNOTSUPP, errno) << "a CQ that ignores overruns";

    ibv_cq_init_attr_ex big = std_attr();
    ibv_device_attr dattr = {};
    ASSERT_EQ(0, srq_verbs_query_device(a->dev, &dattr));
    big.cqe = (uint32_t)dattr.max_cqe + 1;
    errno = 0;
    EXPECT_EQ(nullptr, make_cq_ex(*a, big));
    EXPECT_EQ(EINVAL, errno) << "more entries than max_cqe";

    ibv_cq_init_attr_ex single = std_attr();
    single.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    single.flags     = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
    EXPECT_NE(nullptr, make_cq_ex(*a, single)) << strerror(errno);
}

/* ibv_resize_cq keeps what the CQ holds, in order, and refuses a size
 * that cannot hold it */
TEST_P(cq_ex, resize_keeps_completions)
{
    ibv_cq *cq = make_cq(*a, 4);
    ASSERT_NE(nullptr, cq);
    char *buf = (char*)alloc(64, 1);
    ibv_mr *mr = reg(*a, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    uint64_t wr_id = 0;

    /* @n receives posted to a fresh QP, then flushed into @cq: a QP
     * moved to error completes what it holds at once */
    auto flush = [&](int n) {
        ibv_qp *qp = make_qp(*a, IBV_QPT_RC, scqa, cq);
        ASSERT_NE(nullptr, qp);
        ibv_qp_attr attr = {};
        attr.qp_state = IBV_QPS_INIT;
        attr.port_num = 1;
        ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, qp, &attr,
                                         IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                         IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(0, post_recv(qp, buf, 64, mr->lkey, wr_id++));
        }
        attr = {};
        attr.qp_state = IBV_QPS_ERR;
        ASSERT_EQ(0, srq_verbs_modify_qp(a->dev, qp, &attr, IBV_QP_STATE));
    };

    flush(3);
    EXPECT_EQ(EINVAL, srq_verbs_resize_cq(a->dev, cq, 0));
    EXPECT_EQ(EINVAL, srq_verbs_resize_cq(a->dev, cq, 1))
        << "a size below the 3 completions it holds";
    ASSERT_EQ(0, srq_verbs_resize_cq(a->dev, cq, 100)) << strerror(errno);
    EXPECT_GE(cq->cqe, 100);
    flush(6); /* 9 in all: more than the old size held */

    ibv_wc wc[9];
    ASSERT_EQ(9, poll(cq, 9, wc));
    for (int i = 0; i < 9; ++i) {
        EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
        EXPECT_EQ((uint64_t)i, wc[i].wr_id) << "in order across the resize";
    }
    /* and smaller again, empty */
    ASSERT_EQ(0, srq_verbs_resize_cq(a->dev, cq, 8)) << strerror(errno);
    EXPECT_GE(cq->cqe, 8);
    EXPECT_LT(cq->cqe, 100);
    flush(8);
    ASSERT_EQ(8, poll(cq, 8, wc));
    EXPECT_EQ(9u, wc[0].wr_id);
}

SRQ_INSTANTIATE(cq_ex);
