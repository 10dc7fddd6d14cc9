/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: memory regions changed in place
 * (ibv_rereg_mr: IBV_REREG_MR_CHANGE_TRANSLATION, _PD, _ACCESS) and
 * zero-length regions. What a region grants is checked the way a peer
 * sees it, by RDMA WRITEs from another device instance through its rkey:
 *   - after a change the region grants what it says now, under the same
 *     keys (as HCAs keep them: rdma-core's tests count on it), and the
 *     old translation nothing;
 *   - a refused change leaves the region as it was;
 *   - a zero-length region registers, and grants no byte.
 */
#include "verbs_fixture.h"

#include <errno.h>
#include <string.h>

using namespace srq_test;

namespace {

const uint32_t kLen = 4096;
const int kRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

} // namespace

class mr_rereg : public two_dev_test {
protected:
    void SetUp() override
    {
        two_dev_test::SetUp();
        if (IsSkipped() || HasFailure()) {
            return;
        }
        conn_opts_t o;
        o.timeout   = 8; /* a refused write is not retried: short */
        o.retry_cnt = 1;
        qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        rc_to_rts(*a, qa, b->addr, qb->qp_num, o);
        rc_to_rts(*b, qb, a->addr, qa->qp_num, o);
        lbuf = (char*)alloc(kLen, 'L');
        lmr  = reg(*a, lbuf, kLen, IBV_ACCESS_LOCAL_WRITE);
    }

    /* An RDMA WRITE of @len bytes to @raddr through @rkey: its status */
    int write(void *raddr, uint32_t rkey, uint32_t len = 64)
    {
        EXPECT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE, lbuf, len, lmr->lkey,
                               ++wr_id, IBV_SEND_SIGNALED,
                               (uintptr_t)raddr, rkey));
        return poll1(scqa).status;
    }

    /* A second PD of b, deallocated in TearDown (after what uses it) */
    ibv_pd *other_pd()
    {
        ibv_pd *pd = srq_verbs_alloc_pd(b->dev);

        EXPECT_NE(nullptr, pd) << strerror(errno);
        if (pd != nullptr) {
            srq_verbs_dev_t *dev = b->dev;
            m_cleanup.push_back([dev, pd]() {
                EXPECT_EQ(0, srq_verbs_dealloc_pd(dev, pd));
            });
        }
        return pd;
    }

    ibv_qp   *qa = nullptr, *qb = nullptr;
    char     *lbuf = nullptr;
    ibv_mr   *lmr = nullptr;
    uint64_t  wr_id = 0;
};

/* CHANGE_TRANSLATION: the region moves; a write through its rkey lands
 * in the new memory, the old memory is no longer reachable */
TEST_P(mr_rereg, change_translation_moves_the_region)
{
    char *old_buf = (char*)alloc(kLen, 'o');
    char *new_buf = (char*)alloc(kLen / 2, 'n');
    ibv_mr *mr = reg(*b, old_buf, kLen, kRemote);
    ASSERT_NE(nullptr, mr);
    uint32_t old_rkey = mr->rkey;

    ASSERT_EQ(0, srq_verbs_rereg_mr(b->dev, mr, IBV_REREG_MR_CHANGE_TRANSLATION,
                                    nullptr, new_buf, kLen / 2, 0))
        << strerror(errno);
    EXPECT_EQ(new_buf, mr->addr);
    EXPECT_EQ(kLen / 2, mr->length);
    EXPECT_EQ(b->pd, mr->pd);
    EXPECT_EQ(old_rkey, mr->rkey) << "the keys changed";

    ASSERT_EQ(IBV_WC_SUCCESS, write(new_buf, mr->rkey));
    EXPECT_EQ(0, memcmp(new_buf, lbuf, 64));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(old_buf, mr->rkey))
        << "the old translation still grants access";
    EXPECT_EQ('o', old_buf[0]);
}

/* CHANGE_ACCESS: remote write granted, then withdrawn again */
TEST_P(mr_rereg, change_access_grants_and_withdraws)
{
    char *buf = (char*)alloc(kLen, 'r');
    ibv_mr *mr = reg(*b, buf, kLen, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(nullptr, mr);

    ASSERT_EQ(0, srq_verbs_rereg_mr(b->dev, mr, IBV_REREG_MR_CHANGE_ACCESS,
                                    nullptr, nullptr, 0, kRemote))
        << strerror(errno);
    EXPECT_EQ(buf, mr->addr) << "the translation stays";
    ASSERT_EQ(IBV_WC_SUCCESS, write(buf, mr->rkey));
    EXPECT_EQ(0, memcmp(buf, lbuf, 64));

    ASSERT_EQ(0, srq_verbs_rereg_mr(b->dev, mr, IBV_REREG_MR_CHANGE_ACCESS,
                                    nullptr, nullptr, 0,
                                    IBV_ACCESS_LOCAL_WRITE));
    memset(buf, 'r', 64);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(buf, mr->rkey))
        << "remote write withdrawn, still granted";
    EXPECT_EQ('r', buf[0]);
}

/* CHANGE_PD: a region moved to another PD is out of reach of the QPs of
 * its old one */
TEST_P(mr_rereg, change_pd_moves_it_out_of_reach)
{
    ibv_pd *pd2 = other_pd();
    ASSERT_NE(nullptr, pd2);
    char *buf = (char*)alloc(kLen, 'r');
    ibv_mr *mr = reg(*b, buf, kLen, kRemote);
    ASSERT_NE(nullptr, mr);
    ASSERT_EQ(IBV_WC_SUCCESS, write(buf, mr->rkey));

    ASSERT_EQ(0, srq_verbs_rereg_mr(b->dev, mr, IBV_REREG_MR_CHANGE_PD, pd2,
                                    nullptr, 0, 0)) << strerror(errno);
    EXPECT_EQ(pd2, mr->pd);
    memset(buf, 'r', 64);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(buf, mr->rkey))
        << "a QP of the old PD still reaches it";
    EXPECT_EQ('r', buf[0]);
    /* the region is pd2's now: pd2 cannot go while it is */
    EXPECT_EQ(EBUSY, srq_verbs_dealloc_pd(b->dev, pd2)) << "pd2 holds it";
}

/* A refused change changes nothing: the region still grants what it did,
 * through the same key */
TEST_P(mr_rereg, refused_change_leaves_it_as_it_was)
{
    char *buf = (char*)alloc(kLen, 'r');
    ibv_mr *mr = reg(*b, buf, kLen, kRemote);
    ASSERT_NE(nullptr, mr);
    uint32_t rkey = mr->rkey;

    EXPECT_EQ(EINVAL, srq_verbs_rereg_mr(b->dev, mr, 0, nullptr, nullptr, 0,
                                         0)) << "no flag";
    EXPECT_EQ(EINVAL, srq_verbs_rereg_mr(b->dev, mr,
                                         IBV_REREG_MR_CHANGE_ACCESS << 1,
                                         nullptr, nullptr, 0, 0))
        << "a bit beyond the three flags";
    EXPECT_EQ(EINVAL, srq_verbs_rereg_mr(b->dev, mr,
                                         IBV_REREG_MR_CHANGE_ACCESS, nullptr,
                                         nullptr, 0, IBV_ACCESS_REMOTE_WRITE))
        << "remote write without local write";
    EXPECT_EQ(EINVAL, srq_verbs_rereg_mr(b->dev, mr, IBV_REREG_MR_CHANGE_PD,
                                         a->pd, nullptr, 0, 0))
        << "a PD of another context";
    EXPECT_EQ(rkey, mr->rkey);
    EXPECT_EQ(b->pd, mr->pd);
    EXPECT_EQ(buf, mr->addr);
    ASSERT_EQ(IBV_WC_SUCCESS, write(buf, rkey));
    EXPECT_EQ(0, memcmp(buf, lbuf, 64));
}

/* A zero-length region registers and grants no byte (a zero-length
 * access needs no region at all) */
TEST_P(mr_rereg, zero_length_region)
{
    char *buf = (char*)alloc(kLen, 'z');
    ibv_mr *mr = reg(*b, buf, 0, kRemote);
    ASSERT_NE(nullptr, mr) << "a zero-length region is refused";
    EXPECT_EQ(0u, mr->length);
    EXPECT_EQ(IBV_WC_SUCCESS, write(buf, mr->rkey, 0));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, write(buf, mr->rkey, 1))
        << "a byte beyond a zero-length region";
    EXPECT_EQ('z', buf[0]);
}

SRQ_INSTANTIATE(mr_rereg);
