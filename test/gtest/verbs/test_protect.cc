/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: memory protection as on InfiniBand.
 *
 *   - a memory region belongs to its protection domain: a QP of another PD
 *     can use it neither locally (lkey: IBV_WC_LOC_PROT_ERR) nor remotely
 *     (rkey: the requester sees IBV_WC_REM_ACCESS_ERR);
 *   - the target QP's remote access flags (ibv_modify_qp qp_access_flags)
 *     are enforced; a destroyed target QP, or one in the error state,
 *     accepts nothing (its requester's retries run out);
 *   - nothing lands after ibv_dereg_mr returns, even from a large write
 *     already in flight in another process (test_multiproc.cc);
 *   - keys do not come back: a stale rkey never reaches a later region;
 *   - peers cannot rewrite the memory-region table they all trust.
 */
#include "verbs_fixture.h"

#include <fcntl.h>
#include <set>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace srq_test;

namespace {

const uint32_t kLen = 4096;

/* A failing request is retried: keep that short */
conn_opts_t quick_fail_opts()
{
    conn_opts_t o;

    o.timeout   = 8;  /* ~1 ms */
    o.retry_cnt = 1;
    return o;
}

} // namespace

class protect : public two_dev_test {
protected:
    /* a second protection domain of @d, freed in TearDown */
    ibv_pd *other_pd(tdev_t &d)
    {
        ibv_pd *pd = srq_verbs_alloc_pd(d.dev);

        EXPECT_NE(nullptr, pd);
        if (pd != nullptr) {
            srq_verbs_dev_t *dev = d.dev;
            m_cleanup.push_back([dev, pd]() {
                EXPECT_EQ(0, srq_verbs_dealloc_pd(dev, pd));
            });
        }
        return pd;
    }

    ibv_mr *reg_in(tdev_t &d, ibv_pd *pd, void *buf, size_t len, int access)
    {
        ibv_mr *mr = srq_verbs_reg_mr(d.dev, pd, buf, len, access);

        EXPECT_NE(nullptr, mr) << strerror(errno);
        if (mr != nullptr) {
            srq_verbs_dev_t *dev = d.dev;
            m_cleanup.push_back([dev, mr]() {
                EXPECT_EQ(0, srq_verbs_dereg_mr(dev, mr));
            });
        }
        return mr;
    }

    /* qa (a) <-> qb (b), each with its own access flags */
    void connect(int access_a, int access_b,
                 const conn_opts_t &base = conn_opts_t())
    {
        conn_opts_t oa = base, ob = base;

        qa        = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        qb        = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        oa.access = access_a;
        ob.access = access_b;
        rc_to_rts(*a, qa, b->addr, qb->qp_num, oa);
        rc_to_rts(*b, qb, a->addr, qa->qp_num, ob);
    }

    /* One RDMA WRITE or READ of kLen from qa (gather/scatter @lkey) to b's
     * rbuf: its completion status */
    int rdma(ibv_wr_opcode op, uint32_t lkey, uint32_t rkey)
    {
        EXPECT_EQ(0, post_send(qa, op, lbuf, kLen, lkey, 7, IBV_SEND_SIGNALED,
                               (uintptr_t)rbuf, rkey));
        ibv_wc wc = poll1(scqa);
        EXPECT_EQ(7u, wc.wr_id);
        return wc.status;
    }

    void buffers()
    {
        lbuf = (char*)alloc(kLen, 'L');
        rbuf = (char*)alloc(kLen, 'R');
        lmr  = reg(*a, lbuf, kLen, IBV_ACCESS_LOCAL_WRITE);
    }

    /* b's buffer still holds only what it was filled with */
    bool rbuf_untouched() const
    {
        for (uint32_t i = 0; i < kLen; ++i) {
            if (rbuf[i] != 'R') {
                return false;
            }
        }
        return true;
    }

    static const int kRemote = IBV_ACCESS_LOCAL_WRITE |
                               IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ;

    ibv_qp *qa = nullptr, *qb = nullptr;
    char   *lbuf = nullptr, *rbuf = nullptr;
    ibv_mr *lmr = nullptr;
};

/* An lkey of another PD in a gather list: a local protection error, and
 * nothing leaves */
TEST_P(protect, lkey_of_another_pd_gather)
{
    buffers();
    connect(kRemote, kRemote);
    ibv_mr *foreign = reg_in(*a, other_pd(*a), lbuf, kLen,
                             IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmr     = reg(*b, rbuf, kLen, kRemote);

    EXPECT_EQ(IBV_WC_LOC_PROT_ERR,
              rdma(IBV_WR_RDMA_WRITE, foreign->lkey, rmr->rkey));
    EXPECT_TRUE(rbuf_untouched());
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*a, qa));
}

/* ... in the scatter list of an RDMA READ */
TEST_P(protect, lkey_of_another_pd_read_scatter)
{
    buffers();
    connect(kRemote, kRemote);
    ibv_mr *foreign = reg_in(*a, other_pd(*a), lbuf, kLen,
                             IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *rmr     = reg(*b, rbuf, kLen, kRemote);

    EXPECT_EQ(IBV_WC_LOC_PROT_ERR,
              rdma(IBV_WR_RDMA_READ, foreign->lkey, rmr->rkey));
    EXPECT_EQ('L', lbuf[0]) << "read into a region of another PD";
}

/* ... in a receive WQE: the responder refuses to place the message */
TEST_P(protect, lkey_of_another_pd_receive)
{
    buffers();
    connect(kRemote, kRemote);
    ibv_mr *foreign = reg_in(*b, other_pd(*b), rbuf, kLen,
                             IBV_ACCESS_LOCAL_WRITE);

    ASSERT_EQ(0, post_recv(qb, rbuf, kLen, foreign->lkey, 3));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, lbuf, 64, lmr->lkey, 4));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
    EXPECT_TRUE(rbuf_untouched());
    EXPECT_NE(IBV_WC_SUCCESS, poll1(scqa).status);
}

/* An rkey of a region in another PD than the target QP's */
TEST_P(protect, rkey_of_another_pd)
{
    buffers();
    connect(kRemote, kRemote);
    ibv_mr *foreign = reg_in(*b, other_pd(*b), rbuf, kLen, kRemote);

    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, lmr->lkey, foreign->rkey));
    EXPECT_TRUE(rbuf_untouched());
}

TEST_P(protect, rkey_of_another_pd_read)
{
    buffers();
    connect(kRemote, kRemote);
    ibv_mr *foreign = reg_in(*b, other_pd(*b), rbuf, kLen, kRemote);

    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_READ, lmr->lkey, foreign->rkey));
    EXPECT_EQ('L', lbuf[0]) << "read a region of another PD";
}

/* The target QP was not given remote write (or read) */
TEST_P(protect, target_qp_without_remote_write)
{
    buffers();
    connect(kRemote, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    ibv_mr *rmr = reg(*b, rbuf, kLen, kRemote);

    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, lmr->lkey, rmr->rkey));
    EXPECT_TRUE(rbuf_untouched());
}

TEST_P(protect, target_qp_without_remote_read)
{
    buffers();
    connect(kRemote, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ibv_mr *rmr = reg(*b, rbuf, kLen, kRemote);

    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_READ, lmr->lkey, rmr->rkey));
    EXPECT_EQ('L', lbuf[0]);
}

/* Access flags taken away by ibv_modify_qp (RTS -> RTS) apply at once */
TEST_P(protect, target_qp_access_revoked_by_modify)
{
    buffers();
    connect(kRemote, kRemote);
    ibv_mr *rmr = reg(*b, rbuf, kLen, kRemote);

    ASSERT_EQ(IBV_WC_SUCCESS, rdma(IBV_WR_RDMA_WRITE, lmr->lkey, rmr->rkey));
    EXPECT_EQ('L', rbuf[kLen - 1]);
    memset(rbuf, 'R', kLen);

    ibv_qp_attr attr = {};
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qb, &attr, IBV_QP_ACCESS_FLAGS));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, lmr->lkey, rmr->rkey));
    EXPECT_TRUE(rbuf_untouched());
}

/* A target QP in the error state drops requests: the requester's retries
 * run out */
TEST_P(protect, target_qp_in_error_accepts_nothing)
{
    buffers();
    connect(kRemote, kRemote, quick_fail_opts());
    ibv_mr *rmr = reg(*b, rbuf, kLen, kRemote);

    ibv_qp_attr attr = {};
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qb, &attr, IBV_QP_STATE));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR,
              rdma(IBV_WR_RDMA_WRITE, lmr->lkey, rmr->rkey));
    EXPECT_TRUE(rbuf_untouched());
}

TEST_P(protect, target_qp_in_error_read_nothing)
{
    buffers();
    connect(kRemote, kRemote, quick_fail_opts());
    ibv_mr *rmr = reg(*b, rbuf, kLen, kRemote);

    ibv_qp_attr attr = {};
    attr.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, srq_verbs_modify_qp(b->dev, qb, &attr, IBV_QP_STATE));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR,
              rdma(IBV_WR_RDMA_READ, lmr->lkey, rmr->rkey));
    EXPECT_EQ('L', lbuf[0]);
}

/* A destroyed target QP accepts nothing */
TEST_P(protect, destroyed_target_qp_accepts_nothing)
{
    buffers();
    connect(kRemote, kRemote, quick_fail_opts());
    ibv_mr *rmr = reg(*b, rbuf, kLen, kRemote);

    destroy_qp(*b, qb);
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR,
              rdma(IBV_WR_RDMA_WRITE, lmr->lkey, rmr->rkey));
    EXPECT_TRUE(rbuf_untouched());
}

/* A target QP that is not yet ready to receive (INIT) drops requests
 * until it is: a write sent early lands once it is, as retries on a
 * fabric would */
TEST_P(protect, target_qp_ready_later_gets_the_retry)
{
    buffers();
    conn_opts_t o;
    o.timeout   = 8;
    o.retry_cnt = 7;
    qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
    qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    o.access = kRemote;
    rc_to_rts(*a, qa, b->addr, qb->qp_num, o);
    ibv_mr *rmr = reg(*b, rbuf, kLen, kRemote);

    ASSERT_EQ(0, post_send(qa, IBV_WR_RDMA_WRITE, lbuf, kLen, lmr->lkey, 7,
                           IBV_SEND_SIGNALED, (uintptr_t)rbuf, rmr->rkey));
    rc_to_rts(*b, qb, a->addr, qa->qp_num, o);
    ibv_wc wc = poll1(scqa);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
    EXPECT_EQ('L', rbuf[kLen - 1]);
}

/* Atomics: an rkey of another PD than the target QP's */
TEST_P(protect, atomic_rkey_of_another_pd)
{
    ibv_device_attr dattr;
    ASSERT_EQ(0, srq_verbs_query_device(a->dev, &dattr));
    if (dattr.atomic_cap == IBV_ATOMIC_NONE) {
        GTEST_SKIP() << "the device reports no atomics";
    }
    buffers();
    connect(kRemote | IBV_ACCESS_REMOTE_ATOMIC,
            kRemote | IBV_ACCESS_REMOTE_ATOMIC);
    ibv_mr *foreign = reg_in(*b, other_pd(*b), rbuf, kLen,
                             kRemote | IBV_ACCESS_REMOTE_ATOMIC);

    ibv_sge sge = { (uintptr_t)lbuf, 8, lmr->lkey };
    ibv_send_wr wr = {}, *bad;
    wr.wr_id                 = 9;
    wr.sg_list               = &sge;
    wr.num_sge               = 1;
    wr.opcode                = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.send_flags            = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = (uintptr_t)rbuf;
    wr.wr.atomic.rkey        = foreign->rkey;
    wr.wr.atomic.compare_add = 1;
    ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, poll1(scqa).status);
    EXPECT_TRUE(rbuf_untouched());
}

SRQ_INSTANTIATE(protect);

/* ---- soft device: keys, the shared table ----------------------------- */

class protect_soft : public protect {
protected:
    void SetUp() override
    {
        protect::SetUp();
        if (!IsSkipped()) {
            SRQ_SKIP_UNLESS_SOFT();
        }
    }
};

/*
 * Keys do not come back. The old key was (16-bit generation << 16 |
 * index), the index reused at once: after 65535 re-registrations a key
 * pointed at a different region. A stale rkey must never grant access to
 * a later region, however many registrations later.
 */
TEST_P(protect_soft, keys_do_not_come_back)
{
    const int n = 70000;
    buffers();
    connect(kRemote, kRemote);
    std::set<uint32_t> keys;
    uint32_t stale;

    ibv_mr *first = srq_verbs_reg_mr(b->dev, b->pd, rbuf, kLen, kRemote);
    ASSERT_NE(nullptr, first);
    stale = first->rkey;
    keys.insert(stale);
    ASSERT_EQ(0, srq_verbs_dereg_mr(b->dev, first));
    for (int i = 1; i < n; ++i) {
        ibv_mr *m = srq_verbs_reg_mr(b->dev, b->pd, rbuf, kLen, kRemote);
        ASSERT_NE(nullptr, m);
        ASSERT_TRUE(keys.insert(m->rkey).second)
            << "key 0x" << std::hex << m->rkey << " came back after "
            << std::dec << i << " registrations";
        ASSERT_EQ(0, srq_verbs_dereg_mr(b->dev, m));
    }
    /* a region that is registered now: the stale key does not reach it */
    ibv_mr *live = reg(*b, rbuf, kLen, kRemote);
    EXPECT_NE(stale, live->rkey);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(IBV_WR_RDMA_WRITE, lmr->lkey, stale));
    EXPECT_TRUE(rbuf_untouched());
}

/*
 * The table peers trust (rkeys, bounds, access, the QPs' PDs and access
 * flags) cannot be rewritten by anyone who opens it: it opens for reading
 * only. srq_soft_segment_name names what a peer opens.
 */
TEST_P(protect_soft, peers_cannot_rewrite_the_mr_table)
{
    char name[128];
    ASSERT_EQ(0, srq_soft_segment_name(a->dev, name, sizeof(name)));

    /* a path under /proc (opened with open()), or a POSIX shm name */
    bool proc = (strncmp(name, "/proc/", 6) == 0);
    int fd = proc ? open(name, O_RDWR | O_CLOEXEC) :
                    shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd >= 0) {
        struct stat st;
        ASSERT_EQ(0, fstat(fd, &st));
        void *p = mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE,
                       MAP_SHARED, fd, 0);
        EXPECT_EQ(MAP_FAILED, p) << "the table maps writable";
        if (p != MAP_FAILED) {
            munmap(p, st.st_size);
        }
        char c = 0;
        EXPECT_EQ(-1, pwrite(fd, &c, 1, st.st_size / 2))
            << "the table can be written";
        close(fd);
    }
    /* and it still opens for reading, as peers do */
    fd = proc ? open(name, O_RDONLY | O_CLOEXEC) :
                shm_open(name, O_RDONLY | O_CLOEXEC, 0);
    ASSERT_LE(0, fd) << name << ": " << strerror(errno);
    close(fd);
}

SRQ_INSTANTIATE(protect_soft);
