/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: device memory (ibv_alloc_dm,
 * ibv_memcpy_to_dm/_from_dm, ibv_free_dm, ibv_reg_dm_mr). The project API
 * has no DM call: on the built-in path the soft device's own
 * (srq_soft_api.h), on the rdma-core path libibverbs' (soft0 through
 * libibverbs under test/verbs_gtest_ibv.sh; a device without device
 * memory skips).
 *   - capacity: max_dm_size is reported and enforced per context (ENOMEM
 *     past what is left, EINVAL past the maximum), and freed memory can
 *     be allocated again; log_align_req beyond a page and an unknown
 *     comp_mask are refused;
 *   - copies take word-aligned offsets and lengths inside the memory
 *     (EINVAL otherwise) and land where they say;
 *   - a region on it must be zero-based and lie inside it; its SGEs give
 *     offsets, for SEND/RECV, WRITE and READ (both ends) and atomics;
 *   - ibv_free_dm while a region is on it: EBUSY, errno set.
 */
#include "verbs_fixture.h"
#include "../../../src/verbs/soft/srq_soft_api.h"

#include <errno.h>
#include <string.h>

#include <set>
#include <string>

using namespace srq_test;

namespace {

const int kRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                    IBV_ACCESS_ZERO_BASED;
const uint32_t kDmLen = 4096;

} // namespace

class dm : public two_dev_test {
protected:
    void SetUp() override
    {
        two_dev_test::SetUp();
        if (IsSkipped() || HasFailure()) {
            return;
        }
        ibv_device_attr_ex attr;
        ASSERT_EQ(0, srq_verbs_query_device_ex(a->dev, &attr));
        max_dm = attr.max_dm_size;
        if (!is_soft() && (max_dm == 0)) {
            GTEST_SKIP() << "the device has no device memory";
        }
    }

    /* The verbs on either path */
    ibv_dm *dm_alloc(tdev_t &d, ibv_alloc_dm_attr *attr)
    {
        return is_soft() ? srq_soft_alloc_dm(d.dev, attr) :
                           ibv_alloc_dm(srq_verbs_context(d.dev), attr);
    }

    int dm_free(tdev_t &d, ibv_dm *m)
    {
        return is_soft() ? srq_soft_free_dm(d.dev, m) : ibv_free_dm(m);
    }

    ibv_mr *dm_reg(tdev_t &d, ibv_dm *m, uint64_t off, size_t len,
                   unsigned access)
    {
        return is_soft() ? srq_soft_reg_dm_mr(d.dev, d.pd, m, off, len, access) :
                           ibv_reg_dm_mr(d.pd, m, off, len, access);
    }

    /* @d's device memory of @len bytes; freed in TearDown unless the test
     * freed it (then it sets the pointer to nullptr) */
    ibv_dm *alloc_dm(tdev_t &d, size_t len, uint32_t log_align = 0)
    {
        ibv_alloc_dm_attr attr = { len, log_align, 0 };
        ibv_dm *m = dm_alloc(d, &attr);

        if (m != nullptr) {
            tdev_t *dp = &d;
            live.insert(m);
            m_cleanup.push_back([this, dp, m]() {
                if (live.erase(m) > 0) {
                    EXPECT_EQ(0, dm_free(*dp, m));
                }
            });
        }
        return m;
    }

    int free_dm(tdev_t &d, ibv_dm *m)
    {
        int ret = dm_free(d, m);

        if (ret == 0) {
            live.erase(m);
        }
        return ret;
    }

    ibv_mr *reg_dm(tdev_t &d, ibv_dm *m, uint64_t off, size_t len,
                   int access = kRemote)
    {
        ibv_mr *mr = dm_reg(d, m, off, len, (unsigned)access);
        if (mr != nullptr) {
            srq_verbs_dev_t *dev = d.dev;
            m_cleanup.push_back([dev, mr]() {
                EXPECT_EQ(0, srq_verbs_dereg_mr(dev, mr));
            });
        }
        return mr;
    }

    void connect()
    {
        conn_opts_t o;
        o.timeout   = 8;
        o.retry_cnt = 1;
        o.access    = kRemote & ~IBV_ACCESS_ZERO_BASED;
        qa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        qb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        rc_to_rts(*a, qa, b->addr, qb->qp_num, o);
        rc_to_rts(*b, qb, a->addr, qa->qp_num, o);
    }

    /* An @op WR of one SGE from/to offset @off of @mr on qa: its status */
    int post_one(ibv_wr_opcode op, uint64_t off, uint32_t len, uint32_t lkey,
                 uint64_t raddr = 0, uint32_t rkey = 0)
    {
        ibv_sge sge = { off, len, lkey };
        ibv_send_wr wr = {}, *bad = nullptr;

        wr.wr_id      = ++wr_id;
        wr.sg_list    = &sge;
        wr.num_sge    = 1;
        wr.opcode     = op;
        wr.send_flags = IBV_SEND_SIGNALED;
        if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
            wr.wr.atomic.remote_addr = raddr;
            wr.wr.atomic.rkey        = rkey;
            wr.wr.atomic.compare_add = 5;
        } else {
            wr.wr.rdma.remote_addr = raddr;
            wr.wr.rdma.rkey        = rkey;
        }
        EXPECT_EQ(0, ibv_post_send(qa, &wr, &bad));
        return poll1(scqa).status;
    }

    std::string from_dm(ibv_dm *m, uint64_t off, size_t len)
    {
        std::string s(len, '\0');
        EXPECT_EQ(0, ibv_memcpy_from_dm(&s[0], m, off, len));
        return s;
    }

    std::set<ibv_dm*> live; /* allocated, not freed yet */
    uint64_t max_dm = 0;
    ibv_qp  *qa = nullptr, *qb = nullptr;
    uint64_t wr_id = 0;
};

TEST_P(dm, capacity_is_reported_and_enforced)
{
    ASSERT_GT(max_dm, 0u);
    ibv_dm *half = alloc_dm(*a, max_dm / 2);
    ASSERT_NE(nullptr, half) << strerror(errno);
    ibv_dm *rest = alloc_dm(*a, max_dm / 2);
    ASSERT_NE(nullptr, rest) << strerror(errno);

    errno = 0;
    EXPECT_EQ(nullptr, alloc_dm(*a, 4)) << "nothing is left";
    EXPECT_EQ(ENOMEM, errno);
    EXPECT_NE(nullptr, alloc_dm(*b, 4)) << "the capacity is per context";

    ASSERT_EQ(0, free_dm(*a, half));
    EXPECT_NE(nullptr, alloc_dm(*a, max_dm / 2)) << "freed memory comes back";
}

TEST_P(dm, bad_attributes_refused)
{
    errno = 0;
    EXPECT_EQ(nullptr, alloc_dm(*a, max_dm + 1));
    EXPECT_EQ(EINVAL, errno) << "over max_dm_size";
    errno = 0;
    EXPECT_EQ(nullptr, alloc_dm(*a, 0));
    EXPECT_EQ(EINVAL, errno);
    errno = 0;
    EXPECT_EQ(nullptr, alloc_dm(*a, 64, 13));
    EXPECT_EQ(EINVAL, errno) << "an alignment beyond a page";
    ibv_alloc_dm_attr attr = { 64, 0, 1 };
    errno = 0;
    EXPECT_EQ(nullptr, dm_alloc(*a, &attr));
    EXPECT_EQ(EINVAL, errno) << "an unknown comp_mask";
}

TEST_P(dm, alignment_as_asked)
{
    /* the alignment is of the device's address, which it keeps: seen
     * through a region's remote address 0 only as "allocations work";
     * what can be checked is that every alignment up to a page does */
    for (uint32_t log = 0; log <= 12; ++log) {
        EXPECT_NE(nullptr, alloc_dm(*a, 100, log)) << log;
    }
}

TEST_P(dm, copies_with_offsets_and_bounds)
{
    ibv_dm *m = alloc_dm(*a, kDmLen);
    ASSERT_NE(nullptr, m);
    EXPECT_EQ(std::string(8, '\0'), from_dm(m, 0, 8)) << "starts zeroed";
    EXPECT_EQ(0, ibv_memcpy_to_dm(m, 100, "abcdefgh", 8));
    EXPECT_EQ("abcdefgh", from_dm(m, 100, 8));
    EXPECT_EQ("efgh", from_dm(m, 104, 4));
    EXPECT_EQ(0, ibv_memcpy_to_dm(m, kDmLen - 4, "last", 4));
    EXPECT_EQ("last", from_dm(m, kDmLen - 4, 4));

    char buf[16] = {};
    struct { uint64_t off; size_t len; } bad[] = {
        { kDmLen - 4, 8 },   /* past the end */
        { kDmLen, 4 },       /* at the end */
        { UINT64_MAX - 3, 8 }, /* wraps */
        { 3, 4 },            /* offset not a word */
        { 4, 3 },            /* length not a word */
    };
    for (auto &c : bad) {
        errno = 0;
        EXPECT_EQ(EINVAL, ibv_memcpy_to_dm(m, c.off, buf, c.len)) << c.off;
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(EINVAL, ibv_memcpy_from_dm(buf, m, c.off, c.len)) << c.off;
    }
    EXPECT_EQ("abcdefgh", from_dm(m, 100, 8)) << "a refused copy changes nothing";
}

TEST_P(dm, region_must_be_zero_based_and_inside)
{
    ibv_dm *m = alloc_dm(*a, kDmLen);
    ASSERT_NE(nullptr, m);
    errno = 0;
    EXPECT_EQ(nullptr, reg_dm(*a, m, 0, kDmLen,
                              kRemote & ~IBV_ACCESS_ZERO_BASED));
    EXPECT_EQ(EINVAL, errno) << "not zero-based";
    errno = 0;
    EXPECT_EQ(nullptr, reg_dm(*a, m, 8, kDmLen));
    EXPECT_EQ(EINVAL, errno) << "past the memory's end";
    EXPECT_NE(nullptr, reg_dm(*a, m, 0, 0)) << "zero length is a region";
}

TEST_P(dm, free_while_registered_is_busy)
{
    ibv_dm *m = alloc_dm(*a, kDmLen);
    ASSERT_NE(nullptr, m);
    ibv_mr *mr = dm_reg(*a, m, 0, kDmLen, (unsigned)kRemote);
    ASSERT_NE(nullptr, mr);
    errno = 0;
    EXPECT_EQ(EBUSY, free_dm(*a, m));
    EXPECT_EQ(EBUSY, errno);
    EXPECT_EQ(0, ibv_memcpy_to_dm(m, 0, "live", 4)) << "still there";
    EXPECT_EQ(0, srq_verbs_dereg_mr(a->dev, mr));
    EXPECT_EQ(0, free_dm(*a, m));
}

/* Local SGEs of a region on device memory are offsets in it: a SEND
 * gathers from it, a RECV scatters into it */
TEST_P(dm, send_and_recv_by_offset)
{
    connect();
    ibv_dm *ma = alloc_dm(*a, kDmLen), *mb = alloc_dm(*b, kDmLen);
    ASSERT_TRUE(ma != nullptr && mb != nullptr);
    /* the regions start 64 bytes in: their offsets count from there */
    ibv_mr *ra = reg_dm(*a, ma, 64, 1024), *rb = reg_dm(*b, mb, 64, 1024);
    ASSERT_TRUE(ra != nullptr && rb != nullptr);
    ASSERT_EQ(0, ibv_memcpy_to_dm(ma, 64 + 16, "sent by offset..", 16));

    ASSERT_EQ(0, post_recv(qb, (void*)(uintptr_t)256, 32, rb->lkey, 9));
    EXPECT_EQ(IBV_WC_SUCCESS, post_one(IBV_WR_SEND, 16, 16, ra->lkey));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(16u, wc.byte_len);
    EXPECT_EQ("sent by offset..", from_dm(mb, 64 + 256, 16));

    /* an offset past the region: a local protection error */
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR,
              post_one(IBV_WR_SEND, 1024 - 8, 16, ra->lkey));
}

TEST_P(dm, write_read_and_atomic_by_offset)
{
    connect();
    ibv_dm *ma = alloc_dm(*a, kDmLen), *mb = alloc_dm(*b, kDmLen);
    ASSERT_TRUE(ma != nullptr && mb != nullptr);
    ibv_mr *ra = reg_dm(*a, ma, 0, kDmLen), *rb = reg_dm(*b, mb, 0, kDmLen);
    ASSERT_TRUE(ra != nullptr && rb != nullptr);

    /* WRITE: from a's offset 32 to b's remote offset 512 */
    ASSERT_EQ(0, ibv_memcpy_to_dm(ma, 32, "writewri", 8));
    EXPECT_EQ(IBV_WC_SUCCESS,
              post_one(IBV_WR_RDMA_WRITE, 32, 8, ra->lkey, 512, rb->rkey));
    EXPECT_EQ("writewri", from_dm(mb, 512, 8));

    /* READ: b's remote offset 1000 into a's offset 2000 */
    ASSERT_EQ(0, ibv_memcpy_to_dm(mb, 1000, "readread", 8));
    EXPECT_EQ(IBV_WC_SUCCESS,
              post_one(IBV_WR_RDMA_READ, 2000, 8, ra->lkey, 1000, rb->rkey));
    EXPECT_EQ("readread", from_dm(ma, 2000, 8));

    /* fetch-and-add on b's offset 64, the value before into a's 128 */
    uint64_t v = 37;
    ASSERT_EQ(0, ibv_memcpy_to_dm(mb, 64, &v, 8));
    EXPECT_EQ(IBV_WC_SUCCESS,
              post_one(IBV_WR_ATOMIC_FETCH_AND_ADD, 128, 8, ra->lkey, 64,
                       rb->rkey));
    ASSERT_EQ(0, ibv_memcpy_from_dm(&v, mb, 64, 8));
    EXPECT_EQ(42u, v);
    ASSERT_EQ(0, ibv_memcpy_from_dm(&v, ma, 128, 8));
    EXPECT_EQ(37u, v);
}

SRQ_INSTANTIATE(dm);
