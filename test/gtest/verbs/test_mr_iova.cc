/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: where remote accesses address a region, on
 * both paths. Checked the way a peer sees it, by RDMA from another device
 * instance through the region's rkey:
 *   - a zero-based region (IBV_ACCESS_ZERO_BASED) is addressed by offset:
 *     remote address 0 is its first byte, its virtual address is outside
 *     it; its lkey still takes SGEs by virtual address;
 *   - a region registered at an IOVA (ibv_reg_mr_iova2) is addressed from
 *     there, for RDMA WRITE, READ and atomics alike;
 *   - a window bound to such a region takes its range in the region's
 *     remote addresses; a window bound zero-based (IBV_ACCESS_ZERO_BASED
 *     in its access) is addressed by offset from its own start;
 *   - a refused access ends its connection: each test makes one, last;
 *   - ibv_rereg_mr of a zero-based region to another buffer keeps it
 *     zero-based.
 */
#include "verbs_fixture.h"

#include <errno.h>
#include <string.h>

using namespace srq_test;

namespace {

const uint32_t kLen    = 4096;
const int      kRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
/* an IOVA no user buffer of this process is at */
const uint64_t kIova   = 0x1000;

} // namespace

class mr_iova : public two_dev_test {
protected:
    void SetUp() override
    {
        two_dev_test::SetUp();
        if (IsSkipped() || HasFailure()) {
            return;
        }
        conn_opts_t o;
        o.timeout   = 8; /* a refused access is not retried: short */
        o.retry_cnt = 1;
        o.access    = kRemote;
        qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        rc_to_rts(*a, qa, b->addr, qb->qp_num, o);
        rc_to_rts(*b, qb, a->addr, qa->qp_num, o);
        lbuf = (char*)alloc(kLen, 'L');
        rbuf = (char*)alloc(kLen, 'R');
        lmr  = reg(*a, lbuf, kLen, IBV_ACCESS_LOCAL_WRITE);
    }

    /* An RDMA @op of @len bytes between lbuf and remote @raddr through
     * @rkey: its status */
    int rdma(ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
             uint32_t len = 64)
    {
        EXPECT_EQ(0, post_send(qa, op, lbuf, len, lmr->lkey, ++wr_id,
                               IBV_SEND_SIGNALED, raddr, rkey));
        return poll1(scqa).status;
    }

    /* A fetch-and-add of @add at remote @raddr: its status, the value
     * before in lbuf */
    int fetch_add(uint64_t raddr, uint32_t rkey, uint64_t add)
    {
        ibv_sge sge = { (uintptr_t)lbuf, 8, lmr->lkey };
        ibv_send_wr wr = {}, *bad = nullptr;

        wr.wr_id                 = ++wr_id;
        wr.sg_list               = &sge;
        wr.num_sge               = 1;
        wr.opcode                = IBV_WR_ATOMIC_FETCH_AND_ADD;
        wr.send_flags            = IBV_SEND_SIGNALED;
        wr.wr.atomic.remote_addr = raddr;
        wr.wr.atomic.rkey        = rkey;
        wr.wr.atomic.compare_add = add;
        EXPECT_EQ(0, ibv_post_send(qa, &wr, &bad));
        return poll1(scqa).status;
    }

    /* b's region over rbuf, at @iova (or zero-based), deregistered in
     * TearDown */
    ibv_mr *reg_iova(uint64_t iova, int access)
    {
        ibv_mr *mr = srq_verbs_reg_mr_iova(b->dev, b->pd, rbuf, kLen, iova,
                                           access);

        EXPECT_NE(nullptr, mr) << strerror(errno);
        if (mr != nullptr) {
            srq_verbs_dev_t *dev = b->dev;
            m_cleanup.push_back([dev, mr]() {
                EXPECT_EQ(0, srq_verbs_dereg_mr(dev, mr));
            });
        }
        return mr;
    }

    /* A type 1 window of b over offsets [1024, 1536) of a zero-based
     * region over rbuf that grants binds only, bound with remote write and
     * @extra; deallocated in TearDown, before its region */
    ibv_mw *window_on_zero_based(int extra)
    {
        ibv_mr *mr = reg(*b, rbuf, kLen, IBV_ACCESS_LOCAL_WRITE |
                                         IBV_ACCESS_MW_BIND |
                                         IBV_ACCESS_ZERO_BASED);
        ibv_mw *w  = (mr != nullptr) ? ibv_alloc_mw(b->pd, IBV_MW_TYPE_1) :
                                       nullptr;
        ibv_mw_bind bind = {};

        EXPECT_NE(nullptr, w) << strerror(errno);
        if (w == nullptr) {
            return nullptr;
        }
        m_cleanup.push_back([w]() { EXPECT_EQ(0, ibv_dealloc_mw(w)); });
        bind.send_flags                = IBV_SEND_SIGNALED;
        bind.bind_info.mr              = mr;
        bind.bind_info.addr            = 1024;
        bind.bind_info.length          = 512;
        bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | extra;
        EXPECT_EQ(0, ibv_bind_mw(qb, w, &bind));
        EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqb).status);
        return w;
    }

    ibv_qp  *qa = nullptr, *qb = nullptr;
    char    *lbuf = nullptr, *rbuf = nullptr;
    ibv_mr  *lmr = nullptr;
    uint64_t wr_id = 0;
};

TEST_P(mr_iova, zero_based_region_is_addressed_by_offset)
{
    ibv_mr *mr = reg(*b, rbuf, kLen, kRemote | IBV_ACCESS_ZERO_BASED);
    ASSERT_NE(nullptr, mr);
    EXPECT_EQ((void*)rbuf, mr->addr) << "the region is where it is";

    EXPECT_EQ(IBV_WC_SUCCESS, rdma(IBV_WR_RDMA_WRITE, 100, mr->rkey));
    EXPECT_EQ('L', rbuf[100]);
    EXPECT_EQ('L', rbuf[163]);
    EXPECT_EQ('R', rbuf[99]) << "offset 100 is the 101st byte";
    EXPECT_EQ('R', rbuf[164]);

    rbuf[kLen - 1] = 'e';
    EXPECT_EQ(IBV_WC_SUCCESS, rdma(IBV_WR_RDMA_READ, kLen - 1, mr->rkey, 1));
    EXPECT_EQ('e', lbuf[0]);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, kLen - 8, mr->rkey, 64))
        << "past its end";
}

TEST_P(mr_iova, zero_based_region_refuses_its_virtual_address)
{
    ibv_mr *mr = reg(*b, rbuf, kLen, kRemote | IBV_ACCESS_ZERO_BASED);
    ASSERT_NE(nullptr, mr);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, (uintptr_t)rbuf, mr->rkey, 8));
    EXPECT_EQ('R', rbuf[0]);
}

/* Local SGEs address every region by virtual address */
TEST_P(mr_iova, zero_based_lkey_takes_virtual_addresses)
{
    ibv_mr *mr = reg(*b, rbuf, kLen, kRemote | IBV_ACCESS_ZERO_BASED);
    ASSERT_NE(nullptr, mr);
    ASSERT_EQ(0, post_recv(qb, rbuf + 256, 64, mr->lkey, 7));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 16, lmr->lkey, 1));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, wc.wr_id);
    EXPECT_EQ('L', rbuf[256 + 15]);
}

TEST_P(mr_iova, region_at_an_iova_is_addressed_from_there)
{
    ibv_mr *mr = reg_iova(kIova, kRemote);
    ASSERT_NE(nullptr, mr);
    EXPECT_EQ((void*)rbuf, mr->addr);

    EXPECT_EQ(IBV_WC_SUCCESS, rdma(IBV_WR_RDMA_WRITE, kIova + 8, mr->rkey, 8));
    EXPECT_EQ('L', rbuf[8]);
    EXPECT_EQ('R', rbuf[7]);
    EXPECT_EQ('R', rbuf[16]);

    rbuf[2000] = 'r';
    EXPECT_EQ(IBV_WC_SUCCESS,
              rdma(IBV_WR_RDMA_READ, kIova + 2000, mr->rkey, 1));
    EXPECT_EQ('r', lbuf[0]);

    uint64_t *counter = (uint64_t*)(rbuf + 64);
    *counter = 40;
    EXPECT_EQ(IBV_WC_SUCCESS, fetch_add(kIova + 64, mr->rkey, 2));
    EXPECT_EQ(40u, *(uint64_t*)lbuf);
    EXPECT_EQ(42u, *counter);

    /* (a refused access ends the connection: the last one) */
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, kIova + kLen - 4, mr->rkey, 8))
        << "past its end";
}

TEST_P(mr_iova, region_at_an_iova_refuses_its_virtual_address)
{
    ibv_mr *mr = reg_iova(kIova, kRemote);
    ASSERT_NE(nullptr, mr);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, (uintptr_t)rbuf, mr->rkey, 8));
    EXPECT_EQ('R', rbuf[0]);
}

TEST_P(mr_iova, iova_range_that_wraps_refused)
{
    errno = 0;
    ibv_mr *mr = srq_verbs_reg_mr_iova(b->dev, b->pd, rbuf, kLen,
                                       UINT64_MAX - 16, kRemote);
    if (mr != nullptr) {
        srq_verbs_dereg_mr(b->dev, mr);
    }
    EXPECT_EQ(nullptr, mr);
    EXPECT_EQ(EINVAL, errno);
}

/* A window's range is in its region's offsets; bound without
 * IBV_ACCESS_ZERO_BASED it is addressed by them */
TEST_P(mr_iova, window_on_a_zero_based_region)
{
    ibv_mw *w = window_on_zero_based(0);
    ASSERT_NE(nullptr, w);
    EXPECT_EQ(IBV_WC_SUCCESS, rdma(IBV_WR_RDMA_WRITE, 1024, w->rkey, 8));
    EXPECT_EQ('L', rbuf[1024]);
    EXPECT_EQ('R', rbuf[1023]);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, 1024 + 512 - 4, w->rkey, 8))
        << "past the window's end";
}

/* Bound zero-based, a window is addressed from its own start */
TEST_P(mr_iova, zero_based_window)
{
    ibv_mw *w = window_on_zero_based(IBV_ACCESS_ZERO_BASED);
    ASSERT_NE(nullptr, w);
    EXPECT_EQ(IBV_WC_SUCCESS, rdma(IBV_WR_RDMA_WRITE, 16, w->rkey, 8));
    EXPECT_EQ('L', rbuf[1024 + 16]);
    EXPECT_EQ('R', rbuf[16]);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, 512 - 4, w->rkey, 8))
        << "past the window's end";
}

TEST_P(mr_iova, rereg_keeps_a_region_zero_based)
{
    ibv_mr *mr = reg(*b, rbuf, kLen, kRemote | IBV_ACCESS_ZERO_BASED);
    ASSERT_NE(nullptr, mr);
    char *other = (char*)alloc(kLen, 'O');
    ASSERT_EQ(0, srq_verbs_rereg_mr(b->dev, mr,
                                    IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
                                    other, kLen, 0));
    EXPECT_EQ(IBV_WC_SUCCESS, rdma(IBV_WR_RDMA_WRITE, 32, mr->rkey, 8));
    EXPECT_EQ('L', other[32]);
    EXPECT_EQ('R', rbuf[32]);
}

SRQ_INSTANTIATE(mr_iova);
