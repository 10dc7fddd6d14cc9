/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: memory windows, on both paths.
 *   - ibv_alloc_mw / ibv_dealloc_mw, max_mw reported and held to;
 *   - type 1: ibv_bind_mw; the window grants remote access its region
 *     does not, within its range only; binding again (length 0) revokes
 *     the old rkey;
 *   - type 2: IBV_WR_BIND_MW (ibv_post_send and ibv_wr_bind_mw) with the
 *     caller's key; serves the QP it was bound through only; invalidated
 *     by IBV_WR_LOCAL_INV, a peer's IBV_WR_SEND_WITH_INV (the receive
 *     says IBV_WC_WITH_INV) or ibv_dealloc_mw: then its rkey is refused
 *     with IBV_WC_REM_ACCESS_ERR;
 *   - a bind the region does not allow (no IBV_ACCESS_MW_BIND) completes
 *     with IBV_WC_MW_BIND_ERR; a region with a window bound cannot be
 *     deregistered (EBUSY).
 */
#include "verbs_fixture.h"

#include <errno.h>
#include <string.h>

using namespace srq_test;

namespace {

const uint32_t kLen = 4096;

} // namespace

class mw : public two_dev_test {
protected:
    /* qa (a) -> qb (b); b's region allows binds and local write only */
    void connect(int mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)
    {
        conn_opts_t o;

        o.timeout   = 8; /* refused accesses are not retried: short */
        o.retry_cnt = 1;
        qa   = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        qb   = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        connect_rc(*a, qa, *b, qb, o);
        lbuf = (char*)alloc(kLen, 'L');
        rbuf = (char*)alloc(kLen, 'R');
        lmr  = reg(*a, lbuf, kLen, IBV_ACCESS_LOCAL_WRITE);
        rmr  = reg(*b, rbuf, kLen, mr_access);
    }

    ibv_mw *alloc_mw(tdev_t &d, ibv_mw_type type)
    {
        ibv_mw *w = ibv_alloc_mw(d.pd, type);

        EXPECT_NE(nullptr, w) << strerror(errno);
        if (w != nullptr) {
            m_cleanup.push_back([this, w]() {
                if (m_dealloced.count(w) == 0) {
                    EXPECT_EQ(0, ibv_dealloc_mw(w));
                }
            });
        }
        return w;
    }

    void dealloc_mw(ibv_mw *w)
    {
        ASSERT_EQ(0, ibv_dealloc_mw(w));
        m_dealloced.insert(w);
    }

    ibv_mw_bind_info info(uint64_t off, uint64_t len,
                          int access = IBV_ACCESS_REMOTE_WRITE)
    {
        ibv_mw_bind_info bi = {};

        bi.mr              = rmr;
        bi.addr            = (uintptr_t)rbuf + off;
        bi.length          = len;
        bi.mw_access_flags = access;
        return bi;
    }

    /* A type 2 bind of @w on qb with @rkey: its completion's status */
    int bind2(ibv_mw *w, uint32_t rkey, const ibv_mw_bind_info &bi)
    {
        ibv_send_wr wr = {}, *bad = nullptr;

        wr.wr_id             = 50;
        wr.opcode            = IBV_WR_BIND_MW;
        wr.send_flags        = IBV_SEND_SIGNALED;
        wr.bind_mw.mw        = w;
        wr.bind_mw.rkey      = rkey;
        wr.bind_mw.bind_info = bi;
        EXPECT_EQ(0, ibv_post_send(qb, &wr, &bad));
        ibv_wc wc = poll1(scqb);
        if (wc.status == IBV_WC_SUCCESS) {
            EXPECT_EQ(IBV_WC_BIND_MW, wc.opcode);
        }
        return wc.status;
    }

    /* An RDMA WRITE of @len bytes from a into b at @off under @rkey: its
     * status */
    int write(uint32_t rkey, uint64_t off, uint32_t len, ibv_qp *q = nullptr,
              ibv_cq *cq = nullptr)
    {
        EXPECT_EQ(0, post_send(q ? q : qa, IBV_WR_RDMA_WRITE, lbuf, len,
                               lmr->lkey, 9, IBV_SEND_SIGNALED,
                               (uintptr_t)rbuf + off, rkey));
        return poll1(cq ? cq : scqa).status;
    }

    ibv_qp *qa = nullptr, *qb = nullptr;
    char *lbuf = nullptr, *rbuf = nullptr;
    ibv_mr *lmr = nullptr, *rmr = nullptr;
    std::set<ibv_mw*> m_dealloced;
};

TEST_P(mw, alloc_and_dealloc)
{
    ibv_device_attr attr;
    tdev_t &d = *a;

    ASSERT_EQ(0, srq_verbs_query_device(d.dev, &attr));
    EXPECT_GT(attr.max_mw, 0);
    ibv_mw *w1 = alloc_mw(d, IBV_MW_TYPE_1);
    ibv_mw *w2 = alloc_mw(d, IBV_MW_TYPE_2);
    ASSERT_NE(nullptr, w1);
    ASSERT_NE(nullptr, w2);
    EXPECT_EQ(IBV_MW_TYPE_1, w1->type);
    EXPECT_EQ(IBV_MW_TYPE_2, w2->type);
    EXPECT_EQ(d.pd, w1->pd);
    EXPECT_NE(w1->rkey, w2->rkey);
    errno = 0;
    EXPECT_EQ(nullptr, ibv_alloc_mw(d.pd, (ibv_mw_type)3));
    EXPECT_EQ(EINVAL, errno);
    /* a PD with a window is in use */
    EXPECT_EQ(EBUSY, srq_verbs_dealloc_pd(d.dev, d.pd));
}

TEST_P(mw, max_mw_held)
{
    if (GetParam() != "soft0") {
        GTEST_SKIP() << "allocates every window the device has";
    }
    ibv_device_attr attr;
    std::vector<ibv_mw*> all;
    ibv_mw *w;

    ASSERT_EQ(0, srq_verbs_query_device(a->dev, &attr));
    for (int i = 0; i < attr.max_mw; ++i) {
        w = ibv_alloc_mw(a->pd, IBV_MW_TYPE_2);
        ASSERT_NE(nullptr, w) << i;
        all.push_back(w);
    }
    errno = 0;
    EXPECT_EQ(nullptr, ibv_alloc_mw(a->pd, IBV_MW_TYPE_2));
    EXPECT_EQ(ENOMEM, errno);
    for (ibv_mw *x : all) {
        EXPECT_EQ(0, ibv_dealloc_mw(x));
    }
}

TEST_P(mw, type1_grants_its_range_and_rebind_revokes)
{
    connect();
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_1);
    ibv_mw_bind bind = {};
    uint32_t old;

    ASSERT_NE(nullptr, w);
    old                = w->rkey;
    bind.wr_id         = 1;
    bind.send_flags    = IBV_SEND_SIGNALED;
    bind.bind_info     = info(1024, 512);
    ASSERT_EQ(0, ibv_bind_mw(qb, w, &bind));
    EXPECT_NE(old, w->rkey) << "a bind gives a type 1 window a new rkey";
    ibv_wc wc = poll1(scqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_BIND_MW, wc.opcode);
    EXPECT_EQ(1u, wc.wr_id);
    /* the region grants no remote write: the window does, in its range */
    EXPECT_EQ(IBV_WC_SUCCESS, write(w->rkey, 1024, 512));
    EXPECT_EQ(0, memcmp(rbuf + 1024, lbuf, 512));
    EXPECT_EQ(EBUSY, srq_verbs_dereg_mr(b->dev, rmr));
    /* bound again with nothing: the old rkey grants nothing */
    old                = w->rkey;
    bind.bind_info     = info(0, 0, 0);
    bind.bind_info.mr  = nullptr;
    bind.bind_info.addr = 0;
    ASSERT_EQ(0, ibv_bind_mw(qb, w, &bind));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqb).status);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(old, 1024, 8));
}

TEST_P(mw, type1_outside_its_range_refused)
{
    connect();
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_1);
    ibv_mw_bind bind = {};

    ASSERT_NE(nullptr, w);
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_info  = info(1024, 512);
    ASSERT_EQ(0, ibv_bind_mw(qb, w, &bind));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqb).status);
    /* inside the region, one byte past the window */
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(w->rkey, 1024, 513));
    EXPECT_EQ(0, memcmp(rbuf + 1024, std::string(513, 'R').data(), 513));
}

TEST_P(mw, type2_bind_and_local_invalidate)
{
    connect();
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_2);
    uint32_t rkey;

    ASSERT_NE(nullptr, w);
    rkey = ibv_inc_rkey(w->rkey);
    ASSERT_EQ(IBV_WC_SUCCESS, bind2(w, rkey, info(0, kLen)));
    EXPECT_EQ(rkey, w->rkey);
    EXPECT_EQ(IBV_WC_SUCCESS, write(rkey, 100, 64));
    EXPECT_EQ(0, memcmp(rbuf + 100, lbuf, 64));
    ibv_send_wr wr = {}, *bad = nullptr;
    wr.wr_id           = 60;
    wr.opcode          = IBV_WR_LOCAL_INV;
    wr.send_flags      = IBV_SEND_SIGNALED;
    wr.invalidate_rkey = rkey;
    ASSERT_EQ(0, ibv_post_send(qb, &wr, &bad));
    ibv_wc wc = poll1(scqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_LOCAL_INV, wc.opcode);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(rkey, 100, 8));
}

/*
 * The consumer owns only the low 8 bits of a type 2 window's R_Key (the
 * IB spec's key byte): a bind takes those of the WR's rkey and keeps the
 * window's index, as mlx5 (it writes rkey & 0xff) and rxe do, whatever
 * the upper bits the program passed.
 */
TEST_P(mw, type2_bind_takes_the_low_8_bits_of_the_key)
{
    uint32_t k = 0, eff = 0;

    connect();
    for (uint32_t key : { 17u, 0xbau, 1024u, 0xffffff01u }) {
        ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_2);
        ASSERT_NE(nullptr, w);
        k   = key;
        eff = (w->rkey & ~0xffu) | (k & 0xffu);
        ASSERT_EQ(IBV_WC_SUCCESS, bind2(w, k, info(0, kLen)))
            << "key " << k;
        EXPECT_EQ(eff, w->rkey);
        EXPECT_EQ(IBV_WC_SUCCESS, write(eff, 64 * (k & 0xf), 32))
            << "key " << k << ": the window's rkey " << eff;
        EXPECT_EQ(0, memcmp(rbuf + 64 * (k & 0xf), lbuf, 32));
    }
    /* the key as passed names no window (the last: upper bits all set) */
    ASSERT_NE(k, eff);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(k, 0, 8));
}

/* ibv_bind_mw posts without looking the window up, as mlx5 and rxe do: a
 * window the device does not know (here: its handle overwritten) fails as
 * the bind's completion, and the QP goes to error */
TEST_P(mw, type1_bind_of_an_unknown_window_completes_in_error)
{
    connect();
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_1);
    ibv_mw_bind bind = {};

    ASSERT_NE(nullptr, w);
    uint32_t h = w->handle;
    w->handle  = h ^ 1;
    bind.wr_id      = 3;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_info  = info(0, 64);
    EXPECT_EQ(0, ibv_bind_mw(qb, w, &bind));
    ibv_wc wc = poll1(scqb);
    w->handle = h;
    EXPECT_EQ(IBV_WC_MW_BIND_ERR, wc.status);
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*b, qb));
}

TEST_P(mw, type2_rebound_before_invalidation_fails)
{
    connect();
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_2);

    ASSERT_NE(nullptr, w);
    ASSERT_EQ(IBV_WC_SUCCESS, bind2(w, ibv_inc_rkey(w->rkey), info(0, 64)));
    EXPECT_EQ(IBV_WC_MW_BIND_ERR, bind2(w, ibv_inc_rkey(w->rkey),
                                        info(0, 64)));
}

TEST_P(mw, type2_send_with_invalidate)
{
    connect();
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_2);
    char *rb  = (char*)alloc(64, 0);
    ibv_mr *m = reg(*b, rb, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_send_wr wr = {}, *bad = nullptr;
    ibv_sge sge = { (uintptr_t)lbuf, 16, lmr->lkey };
    uint32_t rkey;

    ASSERT_NE(nullptr, w);
    rkey = ibv_inc_rkey(w->rkey);
    ASSERT_EQ(IBV_WC_SUCCESS, bind2(w, rkey, info(0, kLen)));
    ASSERT_EQ(0, post_recv(qb, rb, 64, m->lkey, 5));
    wr.wr_id           = 70;
    wr.opcode          = IBV_WR_SEND_WITH_INV;
    wr.send_flags      = IBV_SEND_SIGNALED;
    wr.sg_list         = &sge;
    wr.num_sge         = 1;
    wr.invalidate_rkey = rkey;
    ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(16u, wc.byte_len);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_INV);
    EXPECT_FALSE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(rkey, wc.invalidated_rkey);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(rkey, 0, 8));
}

/* A SEND with invalidate naming a type 1 window, which only a bind may
 * change: the receive WQE completes with IBV_WC_REM_INV_REQ_ERR, the QP
 * goes to error and no NAK goes out (IB class J, as rxe): the sender's WR
 * is never answered and exhausts its retries */
TEST_P(mw, send_with_invalidate_of_a_type1_window_is_not_naked)
{
    connect();
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_1);
    char *rb  = (char*)alloc(64, 0);
    ibv_mr *m = reg(*b, rb, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mw_bind bind = {};
    ibv_send_wr wr = {}, *bad = nullptr;
    ibv_sge sge = { (uintptr_t)lbuf, 16, lmr->lkey };

    ASSERT_NE(nullptr, w);
    bind.wr_id      = 1;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_info  = info(0, 64);
    ASSERT_EQ(0, ibv_bind_mw(qb, w, &bind));
    ASSERT_EQ(IBV_WC_SUCCESS, poll1(scqb).status);
    ASSERT_EQ(0, post_recv(qb, rb, 64, m->lkey, 5));
    wr.wr_id           = 71;
    wr.opcode          = IBV_WR_SEND_WITH_INV;
    wr.send_flags      = IBV_SEND_SIGNALED;
    wr.sg_list         = &sge;
    wr.num_sge         = 1;
    wr.invalidate_rkey = w->rkey;
    ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*b, qb));
    wc = poll1(scqa, 5000);
    EXPECT_EQ(71u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status) << "a NAK came back";
}

TEST_P(mw, type2_serves_its_qp_only)
{
    connect();
    ibv_mw *w   = alloc_mw(*b, IBV_MW_TYPE_2);
    ibv_qp *qa2 = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    ibv_qp *qb2 = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    conn_opts_t o;
    uint32_t rkey;

    ASSERT_NE(nullptr, w);
    o.timeout   = 8;
    o.retry_cnt = 1;
    connect_rc(*a, qa2, *b, qb2, o);
    rkey = ibv_inc_rkey(w->rkey);
    ASSERT_EQ(IBV_WC_SUCCESS, bind2(w, rkey, info(0, kLen)));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(rkey, 0, 8, qa2));
    EXPECT_EQ(IBV_WC_SUCCESS, write(rkey, 0, 8));
}

TEST_P(mw, type2_dealloc_invalidates)
{
    connect();
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_2);
    uint32_t rkey;

    ASSERT_NE(nullptr, w);
    rkey = ibv_inc_rkey(w->rkey);
    ASSERT_EQ(IBV_WC_SUCCESS, bind2(w, rkey, info(0, kLen)));
    EXPECT_EQ(IBV_WC_SUCCESS, write(rkey, 0, 8));
    dealloc_mw(w);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(rkey, 0, 8));
}

TEST_P(mw, bind_needs_mw_bind_on_the_region)
{
    connect(IBV_ACCESS_LOCAL_WRITE);
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_2);

    ASSERT_NE(nullptr, w);
    EXPECT_EQ(IBV_WC_MW_BIND_ERR, bind2(w, ibv_inc_rkey(w->rkey),
                                        info(0, 64)));
}

TEST_P(mw, wr_api_bind_invalidate)
{
    connect();
    ibv_mw *w = alloc_mw(*b, IBV_MW_TYPE_2);
    ibv_qp_init_attr_ex x;
    ibv_mw_bind_info bi;
    ibv_qp *qx;
    ibv_qp_ex *ex;
    uint32_t rkey;

    ASSERT_NE(nullptr, w);
    /* an extended QP on b with the memory window operations, to qa2 */
    memset(&x, 0, sizeof(x));
    x.send_cq = scqb; x.recv_cq = rcqb; x.qp_type = IBV_QPT_RC;
    x.cap.max_send_wr = 8; x.cap.max_recv_wr = 8;
    x.cap.max_send_sge = 1; x.cap.max_recv_sge = 1;
    x.comp_mask      = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    x.pd             = b->pd;
    x.send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
    qx = srq_verbs_create_qp_ex(b->dev, &x);
    ASSERT_NE(nullptr, qx) << strerror(errno);
    m_cleanup.push_back([this, qx]() {
        EXPECT_EQ(0, srq_verbs_destroy_qp(b->dev, qx));
    });
    ibv_qp *qa2 = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    conn_opts_t o;
    o.timeout = 8; o.retry_cnt = 1;
    connect_rc(*a, qa2, *b, qx, o);
    ex   = ibv_qp_to_qp_ex(qx);
    ASSERT_NE(nullptr, ex);
    rkey = ibv_inc_rkey(w->rkey);
    bi   = info(0, kLen);
    ibv_wr_start(ex);
    ex->wr_id    = 80;
    ex->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_bind_mw(ex, w, rkey, &bi);
    ASSERT_EQ(0, ibv_wr_complete(ex));
    EXPECT_EQ(IBV_WC_BIND_MW, poll1(scqb).opcode);
    EXPECT_EQ(IBV_WC_SUCCESS, write(rkey, 0, 8, qa2));
    ibv_wr_start(ex);
    ex->wr_id = 81;
    ibv_wr_local_inv(ex, rkey);
    ASSERT_EQ(0, ibv_wr_complete(ex));
    EXPECT_EQ(IBV_WC_LOCAL_INV, poll1(scqb).opcode);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(rkey, 0, 8, qa2));
}

SRQ_INSTANTIATE(mw);
