/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: on-demand paging (IBV_ACCESS_ON_DEMAND), on
 * both paths (the project's API, and libibverbs' under srq-run --verbs):
 *   - the ODP capabilities ibv_query_device_ex reports (soft0: exactly
 *     what it carries: RC SEND/RECV/SRQ_RECV/WRITE/READ/ATOMIC, UD
 *     SEND/RECV/SRQ_RECV, implicit regions);
 *   - an ODP region carries every operation the device reports for it;
 *   - registration needs no mapping: a region registered over an address
 *     range with nothing mapped, mapped afterwards, and remapped later, is
 *     reached as it is at the time of each access;
 *   - the implicit region (addr NULL, length SIZE_MAX) covers memory
 *     mapped after it was registered;
 *   - ibv_advise_mr prefetches (the pages become present, their contents
 *     unchanged), PREFETCH_NO_FAULT only checks, and bad input gets the
 *     man page's errno;
 *   - an access to pages of an ODP region with nothing mapped, or mapped
 *     without the access, fails as an HCA's page fault that finds no
 *     such mapping fails it (the remote ones REM_ACCESS_ERR, the local
 *     ones LOC_PROT_ERR), and neither process goes down: a peer's WRITE,
 *     READ or atomic, a SEND into such a receive, a SEND or READ of such
 *     local pages; each in order and behind an unacknowledged SEND, where
 *     the target executes it. A read of read-only pages succeeds.
 * A device that reports no ODP capability (an HCA without it) skips.
 */
#include "verbs_fixture.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace srq_test;

namespace {

const int kOdp    = IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE;
const int kRemote = kOdp | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                    IBV_ACCESS_REMOTE_ATOMIC;
const size_t kPages = 16;

size_t page_size()
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

} // namespace

class odp : public two_dev_test {
protected:
    /* soft0 on either path: its answers are known exactly */
    bool is_soft0(tdev_t &d) const
    {
        return strcmp(srq_verbs_dev_name(d.dev), "soft0") == 0;
    }

    /* The device's ODP capabilities (zero when none) */
    ibv_odp_caps odp_caps(tdev_t &d)
    {
        ibv_device_attr_ex attr;

        memset(&attr, 0xff, sizeof(attr));
        EXPECT_EQ(0, srq_verbs_query_device_ex(d.dev, &attr));
        return attr.odp_caps;
    }

    bool has_rc_odp(tdev_t &d, uint32_t caps)
    {
        ibv_odp_caps c = odp_caps(d);

        return (c.general_caps & IBV_ODP_SUPPORT) &&
               ((c.per_transport_caps.rc_odp_caps & caps) == caps);
    }

    /* @len bytes of fresh anonymous memory, unmapped in TearDown */
    char *map(size_t len, void *at = nullptr)
    {
        void *p = mmap(at, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0),
                       -1, 0);

        EXPECT_NE(MAP_FAILED, p) << strerror(errno);
        if (p == MAP_FAILED) {
            return nullptr;
        }
        if (at == nullptr) {
            m_cleanup.push_back([p, len]() { munmap(p, len); });
        }
        return (char*)p;
    }

    /* An address range of @len bytes with nothing mapped there (now):
     * in the middle of a much larger range freed, so that the program's
     * next mappings do not land in it */
    char *hole(size_t len)
    {
        const size_t big = (size_t)1 << 30;
        char *p = (char*)mmap(nullptr, big, PROT_NONE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                              -1, 0);

        EXPECT_NE(MAP_FAILED, p) << strerror(errno);
        EXPECT_EQ(0, munmap(p, big));
        return p + big / 2 - len;
    }

    /* @len bytes with nothing mapped (@prot -1), or mapped with @prot */
    char *bad_pages(size_t len, int prot)
    {
        char *p;

        if (prot == -1) {
            return hole(len);
        }
        p = map(len);
        EXPECT_EQ(0, mprotect(p, len, prot)) << strerror(errno);
        return p;
    }

    /* How many of the @n pages at @p are present */
    size_t resident(const char *p, size_t n)
    {
        std::vector<unsigned char> vec(n);
        size_t count = 0;

        EXPECT_EQ(0, mincore((void*)p, n * page_size(), vec.data()))
            << strerror(errno);
        for (unsigned char v : vec) {
            count += v & 1;
        }
        return count;
    }

    int advise(tdev_t &d, ibv_advise_mr_advice advice, uint32_t flags,
               void *addr, uint32_t len, uint32_t lkey)
    {
        ibv_sge sge = { (uintptr_t)addr, len, lkey };

        return srq_verbs_advise_mr(d.dev, d.pd, advice, flags, &sge, 1);
    }

    void make_pair(ibv_srq *srqb = nullptr)
    {
        conn_opts_t o;

        /* the regions' access, as rdma-core's ODP tests give it: a QP
         * ignores ON_DEMAND, as HCAs do */
        o.access = kRemote;
        qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa);
        qpb = make_qp(*b, IBV_QPT_RC, scqb, rcqb, srqb);
        ASSERT_NE(nullptr, qpa);
        ASSERT_NE(nullptr, qpb);
        connect_rc(*a, qpa, *b, qpb, o);
    }

    /* a SENDs @len bytes of @src (@lkey) to b's @dst (@rkey_b: b's lkey),
     * through b's SRQ when @srq */
    void send_recv(char *src, uint32_t lkey, char *dst, uint32_t lkey_b,
                   uint32_t len, ibv_srq *srq = nullptr)
    {
        if (srq != nullptr) {
            ASSERT_EQ(0, post_srq_recv(srq, dst, len, lkey_b, 7));
        } else {
            ASSERT_EQ(0, post_recv(qpb, dst, len, lkey_b, 7));
        }
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, src, len, lkey, 1));
        ibv_wc wc = poll1(rcqb);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(len, wc.byte_len);
        EXPECT_EQ(0, memcmp(src, dst, len));
        EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    }

    /* a's one-sided @op of @len bytes between @local and b's @remote */
    void rdma(ibv_wr_opcode op, char *local, uint32_t lkey, char *remote,
              uint32_t rkey, uint32_t len)
    {
        ASSERT_EQ(0, post_send(qpa, op, local, len, lkey, 2,
                               IBV_SEND_SIGNALED, (uintptr_t)remote, rkey));
        ibv_wc wc = poll1(scqa);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(0, memcmp(local, remote, len));
    }

    void fetch_add(uint64_t *local, uint32_t lkey, uint64_t *remote,
                   uint32_t rkey, uint64_t add)
    {
        ibv_sge sge = { (uintptr_t)local, 8, lkey };
        ibv_send_wr wr = {}, *bad = nullptr;
        uint64_t before = *remote;

        wr.wr_id                 = 3;
        wr.sg_list               = &sge;
        wr.num_sge               = 1;
        wr.opcode                = IBV_WR_ATOMIC_FETCH_AND_ADD;
        wr.send_flags            = IBV_SEND_SIGNALED;
        wr.wr.atomic.remote_addr = (uintptr_t)remote;
        wr.wr.atomic.rkey        = rkey;
        wr.wr.atomic.compare_add = add;
        ASSERT_EQ(0, ibv_post_send(qpa, &wr, &bad));
        ibv_wc wc = poll1(scqa);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(before, *local);
        EXPECT_EQ(before + add, *remote);
    }

    /* a posts @op on pages of an ODP region with nothing mapped (@prot
     * -1) or mapped with @prot only (b's when @remote_hole, else its
     * own) and gets @want; b is told nothing but what an HCA tells it (a
     * receive's status, when @recv_st is not -1). @behind: after a SEND
     * not yet acknowledged (b does not run meanwhile, where it can be
     * stopped), so that b's responder executes it */
    void fault(ibv_wr_opcode op, bool remote_hole, bool behind,
               ibv_wc_status want, int recv_st = -1, int prot = -1)
    {
        const size_t len = 2 * page_size();
        char *la = map(len), *lb = map(len);
        char *ha = bad_pages(len, prot), *hb = bad_pages(len, prot);
        ibv_mr *ia = reg(*a, nullptr, SIZE_MAX, kRemote);
        ibv_mr *ib = reg(*b, nullptr, SIZE_MAX, kRemote);
        char *local = remote_hole ? la : ha, *remote = remote_hole ? hb : lb;

        ASSERT_TRUE(ia && ib);
        /* through rdma-core b runs a progress thread of its own, which
         * may acknowledge the SEND first: the outcome is the same */
        if (behind && !b_still && is_soft()) {
            still(*b);
            b_still = true;
        }
        make_pair();
        ASSERT_EQ(0, post_recv(qpb, lb + 256, 64, ib->lkey, 6));
        ASSERT_EQ(0, post_recv(qpb, (op == IBV_WR_SEND) ? remote : lb, 64,
                               ib->lkey, 7));
        ASSERT_EQ(0, post_send(qpa, IBV_WR_SEND, la + 256, 64, ia->lkey, 1,
                               0));
        if (!behind) {
            ASSERT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status) << "the SEND";
        }
        ASSERT_EQ(0, post_send(qpa, op, local, 8, ia->lkey, 2,
                               IBV_SEND_SIGNALED, (uintptr_t)remote,
                               ib->rkey));
        ibv_wc wc = poll1(scqa);
        EXPECT_EQ(2u, wc.wr_id);
        EXPECT_EQ(want, wc.status) << ibv_wc_status_str(wc.status);
        if (behind) {
            ASSERT_EQ(IBV_WC_SUCCESS, poll1(rcqb).status) << "the SEND";
        }
        pump(20); /* the target goes on */
        if (recv_st != -1) {
            wc = poll1(rcqb);
            EXPECT_EQ(7u, wc.wr_id);
            EXPECT_EQ(recv_st, (int)wc.status)
                << ibv_wc_status_str(wc.status);
        }
        /* the next case starts from empty CQs */
        destroy_qp(*a, qpa);
        destroy_qp(*b, qpb);
        for (ibv_cq *cq : {scqa, rcqa, scqb, rcqb}) {
            while (ibv_poll_cq(cq, 1, &wc) > 0) {
            }
        }
    }

    ibv_qp *qpa = nullptr, *qpb = nullptr;
    bool b_still = false;
};

#define SKIP_UNLESS_RC_ODP(_d, _caps) \
    do { \
        if (!has_rc_odp(_d, _caps)) { \
            GTEST_SKIP() << "the device reports no such RC ODP capability"; \
        } \
    } while (0)

TEST_P(odp, soft0_reports_exactly_what_it_carries)
{
    ibv_device_attr_ex ex;
    ibv_device_attr attr;

    if (!is_soft0(*a)) {
        GTEST_SKIP() << "soft0's capabilities";
    }
    memset(&ex, 0xff, sizeof(ex));
    ASSERT_EQ(0, srq_verbs_query_device_ex(a->dev, &ex));
    ASSERT_EQ(0, srq_verbs_query_device(a->dev, &attr));
    EXPECT_EQ(0, memcmp(&attr, &ex.orig_attr, sizeof(attr)))
        << "the extended query repeats the plain one";
    EXPECT_EQ((uint64_t)(IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT),
              ex.odp_caps.general_caps);
    EXPECT_EQ((uint32_t)(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                         IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
                         IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV),
              ex.odp_caps.per_transport_caps.rc_odp_caps);
    /* UD has no one-sided operations and no atomics */
    EXPECT_EQ((uint32_t)(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                         IBV_ODP_SUPPORT_SRQ_RECV),
              ex.odp_caps.per_transport_caps.ud_odp_caps);
    EXPECT_EQ(0u, ex.odp_caps.per_transport_caps.uc_odp_caps) << "no UC";
    /* XRC as RC: its receives are an SRQ's */
    EXPECT_EQ(ex.odp_caps.per_transport_caps.rc_odp_caps, ex.xrc_odp_caps);
    EXPECT_EQ(attr.phys_port_cnt, ex.phys_port_cnt_ex);
}

TEST_P(odp, rc_send_write_read_atomic)
{
    SKIP_UNLESS_RC_ODP(*a, IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                           IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
                           IBV_ODP_SUPPORT_ATOMIC);
    make_pair();
    char *la = map(kPages * page_size()), *lb = map(kPages * page_size());
    ibv_mr *ma = reg(*a, la, kPages * page_size(), kRemote);
    ibv_mr *mb = reg(*b, lb, kPages * page_size(), kRemote);
    ASSERT_TRUE(ma && mb);

    /* nothing touched yet: every access faults its pages in */
    memset(la, 's', 300);
    send_recv(la, ma->lkey, lb + page_size(), mb->lkey, 300);
    memset(la + 2 * page_size(), 'w', 5000);
    rdma(IBV_WR_RDMA_WRITE, la + 2 * page_size(), ma->lkey,
         lb + 3 * page_size(), mb->rkey, 5000);
    memset(lb + 8 * page_size(), 'r', 7000);
    rdma(IBV_WR_RDMA_READ, la + 8 * page_size(), ma->lkey,
         lb + 8 * page_size(), mb->rkey, 7000);
    fetch_add((uint64_t*)(la + 14 * page_size()), ma->lkey,
              (uint64_t*)(lb + 14 * page_size()), mb->rkey, 5);
}

TEST_P(odp, rc_srq_recv)
{
    SKIP_UNLESS_RC_ODP(*a, IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV);
    ibv_srq *srq = make_srq(*b, 16);
    make_pair(srq);
    char *la = map(page_size()), *lb = map(page_size());
    ibv_mr *ma = reg(*a, la, page_size(), kOdp);
    ibv_mr *mb = reg(*b, lb, page_size(), kOdp);
    ASSERT_TRUE(ma && mb);

    memset(la, 'q', 100);
    send_recv(la, ma->lkey, lb, mb->lkey, 100, srq);
}

TEST_P(odp, ud_send_recv)
{
    ibv_odp_caps c = odp_caps(*a);
    uint32_t need  = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;

    if (!(c.general_caps & IBV_ODP_SUPPORT) ||
        ((c.per_transport_caps.ud_odp_caps & need) != need)) {
        GTEST_SKIP() << "the device reports no UD ODP";
    }
    ibv_cq *cqa = make_cq(*a), *cqb = make_cq(*b);
    ibv_qp *qa = make_qp(*a, IBV_QPT_UD, cqa, cqa);
    ibv_srq *srq = make_srq(*b, 16);
    ibv_qp *qb = make_qp(*b, IBV_QPT_UD, cqb, cqb, srq);
    char *sbuf = map(page_size()), *rbuf = map(page_size());
    ibv_mr *smr = reg(*a, sbuf, page_size(), kOdp);
    ibv_mr *rmr = reg(*b, rbuf, page_size(), kOdp);
    ibv_ah *ah = make_ah(*a, b->addr);

    ASSERT_TRUE(smr && rmr && ah);
    ud_to_rts(*a, qa, 0x11);
    ud_to_rts(*b, qb, 0x11);
    /* into the SRQ: UD's SRQ_RECV with the same region */
    ASSERT_EQ(0, post_srq_recv(srq, rbuf, 40 + 64, rmr->lkey, 9));
    memset(sbuf, 'u', 64);
    ASSERT_EQ(0, post_ud_send(qa, ah, qb->qp_num, 0x11, sbuf, 64, smr->lkey,
                              4));
    ibv_wc wc = poll1(cqb);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(0, memcmp(rbuf + 40, sbuf, 64));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(cqa).status);
}

/* Registration pins and probes nothing: a range with nothing mapped is
 * registered, mapped afterwards, and remapped; each access reaches what
 * is there at the time */
TEST_P(odp, registered_before_mapped_and_remapped)
{
    SKIP_UNLESS_RC_ODP(*a, IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_WRITE);
    const size_t len = 4 * page_size();
    make_pair();
    char *la = map(len), *lb = hole(len);
    ibv_mr *ma = reg(*a, la, len, kRemote);
    ibv_mr *mb = reg(*b, lb, len, kRemote);
    ASSERT_TRUE(ma && mb);

    ASSERT_EQ(lb, map(len, lb)) << "mapped after its registration";
    memset(lb, 'o', len);
    rdma(IBV_WR_RDMA_READ, la, ma->lkey, lb, mb->rkey, 3000);
    /* new pages at the same addresses: the region is what is there now */
    ASSERT_EQ(lb, map(len, lb));
    memset(lb, 'n', len);
    rdma(IBV_WR_RDMA_READ, la, ma->lkey, lb, mb->rkey, 3000);
    EXPECT_EQ('n', la[0]);
    memset(la, 'x', 3000);
    rdma(IBV_WR_RDMA_WRITE, la, ma->lkey, lb + page_size(), mb->rkey, 3000);
    EXPECT_EQ(0, munmap(lb, len));
}

TEST_P(odp, implicit_region_covers_later_mappings)
{
    ibv_odp_caps c = odp_caps(*a);

    if (!(c.general_caps & IBV_ODP_SUPPORT_IMPLICIT)) {
        GTEST_SKIP() << "the device reports no implicit ODP";
    }
    make_pair();
    ibv_mr *ia = reg(*a, nullptr, SIZE_MAX, kRemote);
    ibv_mr *ib = reg(*b, nullptr, SIZE_MAX, kRemote);
    ASSERT_TRUE(ia && ib);
    EXPECT_EQ(nullptr, ia->addr);
    EXPECT_EQ(SIZE_MAX, ia->length);

    /* memory that did not exist when the regions were registered */
    char *la = map(2 * page_size()), *lb = map(2 * page_size());
    uint64_t *word = (uint64_t*)(alloc(64));
    memset(la, 'i', 500);
    send_recv(la, ia->lkey, lb, ib->lkey, 500);
    rdma(IBV_WR_RDMA_WRITE, la, ia->lkey, lb + page_size(), ib->rkey, 700);
    memset(lb, 'j', 900);
    rdma(IBV_WR_RDMA_READ, la + page_size(), ia->lkey, lb, ib->rkey, 900);
    *(uint64_t*)lb = 40;
    fetch_add(word, ia->lkey, (uint64_t*)lb, ib->rkey, 2);
}

TEST_P(odp, unmapped_remote_pages_fail_the_request_not_the_target)
{
    if (!(odp_caps(*a).general_caps & IBV_ODP_SUPPORT_IMPLICIT)) {
        GTEST_SKIP() << "the device reports no implicit ODP";
    }
    for (bool behind : {false, true}) {
        SCOPED_TRACE(behind ? "behind a SEND" : "in order");
        fault(IBV_WR_RDMA_WRITE, true, behind, IBV_WC_REM_ACCESS_ERR);
        fault(IBV_WR_RDMA_READ, true, behind, IBV_WC_REM_ACCESS_ERR);
        fault(IBV_WR_ATOMIC_FETCH_AND_ADD, true, behind,
              IBV_WC_REM_ACCESS_ERR);
        fault(IBV_WR_SEND, true, behind, IBV_WC_REM_OP_ERR,
              IBV_WC_LOC_PROT_ERR);
        /* mapped, without the access */
        fault(IBV_WR_RDMA_WRITE, true, behind, IBV_WC_REM_ACCESS_ERR, -1,
              PROT_NONE);
        fault(IBV_WR_RDMA_READ, true, behind, IBV_WC_REM_ACCESS_ERR, -1,
              PROT_NONE);
        fault(IBV_WR_RDMA_WRITE, true, behind, IBV_WC_REM_ACCESS_ERR, -1,
              PROT_READ);
        fault(IBV_WR_ATOMIC_FETCH_AND_ADD, true, behind,
              IBV_WC_REM_ACCESS_ERR, -1, PROT_READ);
        fault(IBV_WR_SEND, true, behind, IBV_WC_REM_OP_ERR,
              IBV_WC_LOC_PROT_ERR, PROT_READ);
        fault(IBV_WR_RDMA_READ, true, behind, IBV_WC_SUCCESS, -1, PROT_READ);
    }
}

TEST_P(odp, unmapped_local_pages_fail_the_request)
{
    if (!(odp_caps(*a).general_caps & IBV_ODP_SUPPORT_IMPLICIT)) {
        GTEST_SKIP() << "the device reports no implicit ODP";
    }
    for (bool behind : {false, true}) {
        SCOPED_TRACE(behind ? "behind a SEND" : "in order");
        fault(IBV_WR_SEND, false, behind, IBV_WC_LOC_PROT_ERR);
        fault(IBV_WR_RDMA_WRITE, false, behind, IBV_WC_LOC_PROT_ERR);
        fault(IBV_WR_RDMA_READ, false, behind, IBV_WC_LOC_PROT_ERR);
        fault(IBV_WR_SEND, false, behind, IBV_WC_LOC_PROT_ERR, -1,
              PROT_NONE);
        fault(IBV_WR_RDMA_READ, false, behind, IBV_WC_LOC_PROT_ERR, -1,
              PROT_READ);
        fault(IBV_WR_SEND, false, behind, IBV_WC_SUCCESS, -1, PROT_READ);
    }
}

TEST_P(odp, implicit_needs_odp_and_no_iova)
{
    if (!is_soft0(*a)) {
        GTEST_SKIP() << "soft0's answers";
    }
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_reg_mr(a->dev, a->pd, nullptr, SIZE_MAX,
                                        IBV_ACCESS_LOCAL_WRITE))
        << "the whole address space without ODP";
    EXPECT_EQ(EINVAL, errno);
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_reg_mr_iova(a->dev, a->pd, nullptr,
                                             SIZE_MAX, 0x1000, kOdp));
    EXPECT_EQ(EINVAL, errno) << "an implicit region has no IOVA of its own";
}

TEST_P(odp, advise_mr_prefetches_without_changing_contents)
{
    SKIP_UNLESS_RC_ODP(*a, IBV_ODP_SUPPORT_SEND);
    const size_t ps = page_size();
    char *p = map(kPages * ps);
    ibv_mr *mr = reg(*a, p, kPages * ps, kOdp);
    ASSERT_NE(nullptr, mr);
    ASSERT_EQ(0u, resident(p, kPages)) << "fresh memory, nothing present";

    /* NO_FAULT only checks: nothing becomes present */
    EXPECT_EQ(0, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
                        IBV_ADVISE_MR_FLAG_FLUSH, p, kPages * ps, mr->lkey));
    EXPECT_EQ(0u, resident(p, kPages));
    /* pages 0..3 for write, synchronously (a range not page aligned) */
    EXPECT_EQ(0, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                        IBV_ADVISE_MR_FLAG_FLUSH, p + 10, 4 * ps - 20,
                        mr->lkey));
    EXPECT_EQ(4u, resident(p, 4));
    EXPECT_EQ(0u, resident(p + 4 * ps, kPages - 4));
    /* pages 4..7 for read, without FLUSH */
    EXPECT_EQ(0, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, p + 4 * ps,
                        4 * ps, mr->lkey));
    EXPECT_EQ(8u, resident(p, 8));
    EXPECT_EQ(0u, resident(p + 8 * ps, kPages - 8));
    for (size_t i = 0; i < 8 * ps; ++i) {
        ASSERT_EQ(0, p[i]) << "byte " << i << " changed";
    }
    /* present pages with data keep it */
    memset(p + 8 * ps, 0x5a, 2 * ps);
    EXPECT_EQ(0, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                        IBV_ADVISE_MR_FLAG_FLUSH, p + 8 * ps, 2 * ps,
                        mr->lkey));
    for (size_t i = 8 * ps; i < 10 * ps; ++i) {
        ASSERT_EQ(0x5a, p[i]) << "byte " << i << " changed";
    }
}

TEST_P(odp, advise_mr_bad_input)
{
    SKIP_UNLESS_RC_ODP(*a, IBV_ODP_SUPPORT_SEND);
    const size_t ps = page_size();
    char *p = map(4 * ps), *q = map(ps);
    ibv_mr *mr  = reg(*a, p, 4 * ps, kOdp);
    ibv_mr *pin = reg(*a, q, ps, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *ro  = reg(*a, q, ps, IBV_ACCESS_ON_DEMAND);
    ibv_pd *pd2 = srq_verbs_alloc_pd(a->dev);
    ASSERT_TRUE(mr && pin && ro && pd2);
    ibv_mr *other = srq_verbs_reg_mr(a->dev, pd2, q, ps, kOdp);
    ASSERT_NE(nullptr, other);
    const auto F = IBV_ADVISE_MR_FLAG_FLUSH;

    EXPECT_EQ(EINVAL, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, p, 64,
                             mr->lkey)) << "an unknown flag";
    EXPECT_EQ(EOPNOTSUPP, advise(*a, (ibv_advise_mr_advice)77, F, p, 64,
                                 mr->lkey)) << "an unknown advice";
    EXPECT_EQ(EFAULT, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, F, q, 64,
                             pin->lkey)) << "a region without ODP";
    EXPECT_EQ(EFAULT, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, F, p, 64,
                             mr->lkey ^ 0x100)) << "no region's key";
    EXPECT_EQ(EFAULT, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, F, p + ps,
                             3 * ps + 1, mr->lkey)) << "past its end";
    EXPECT_EQ(EFAULT, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, F, p - 1,
                             64, mr->lkey)) << "before its start";
    EXPECT_EQ(EFAULT, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, F, q,
                             64, ro->lkey)) << "for write without LOCAL_WRITE";
    EXPECT_EQ(0, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, F, q, 64,
                        ro->lkey)) << "for read it may";
    EXPECT_EQ(EFAULT, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, F, q, 64,
                             other->lkey)) << "a region of another PD";
    /* a range of the region with nothing mapped: FLUSH reports it, the
     * asynchronous prefetch (whose outcome an HCA never reports) not */
    ASSERT_EQ(0, munmap(p + 2 * ps, ps));
    EXPECT_EQ(EFAULT, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, F, p + ps,
                             3 * ps, mr->lkey)) << "a page not mapped";
    EXPECT_EQ(0, advise(*a, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, p + ps, 3 * ps,
                        mr->lkey));
    EXPECT_EQ(0, srq_verbs_advise_mr(a->dev, a->pd,
                                     IBV_ADVISE_MR_ADVICE_PREFETCH, F,
                                     nullptr, 0)) << "an empty list";
    EXPECT_EQ(0, srq_verbs_dereg_mr(a->dev, other));
    EXPECT_EQ(0, srq_verbs_dealloc_pd(a->dev, pd2));
}

SRQ_INSTANTIATE(odp);
