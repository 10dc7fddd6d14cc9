/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: thread domains and parent domains
 * (ibv_alloc_td(3), ibv_alloc_parent_domain(3)).
 *   - a parent domain serves wherever a PD does: RC and UD traffic with
 *     QPs, an SRQ, AHs and an extended CQ (IBV_CQ_INIT_ATTR_MASK_PD) in
 *     it, MRs of it or of its protection PD;
 *   - its allocators are called for the queue memory of what is made in
 *     it, with the pd_context, a power-of-two alignment and a size; memory
 *     they return is given back to free exactly, with its resource type;
 *     IBV_ALLOCATOR_USE_DEFAULT leaves it to the device; NULL fails the
 *     create;
 *   - bad comp_mask bits and arguments are refused with EINVAL;
 *   - ibv_dealloc_pd of a parent domain frees it, EBUSY while an object is
 *     in it; the protection PD and the TD are busy while it lives.
 */
#include "verbs_fixture.h"

#include <map>
#include <string>
#include <vector>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

using namespace srq_test;

namespace {

/* What a parent domain's allocator saw; its pd_context */
struct alloc_log_t {
    ibv_pd                  *pd          = nullptr; /* the parent domain */
    bool                     use_default = false;
    bool                     refuse      = false;
    bool                     soft0       = false; /* soft0's types only */
    int                      calls       = 0;
    int                      frees       = 0;
    std::map<uint64_t, int>  by_type;
    std::map<void*, uint64_t> live;      /* given out: its resource type */
    std::vector<std::string> errors;
};

void *log_alloc(ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
                uint64_t resource_type)
{
    alloc_log_t *log = (alloc_log_t*)pd_context;
    void *p          = nullptr;

    ++log->calls;
    ++log->by_type[resource_type];
    if ((log->pd != nullptr) && (pd != log->pd)) {
        log->errors.push_back("alloc: not the parent domain");
    }
    if ((alignment == 0) || (alignment & (alignment - 1))) {
        log->errors.push_back("alloc: alignment " + std::to_string(alignment));
    }
    if (size == 0) {
        log->errors.push_back("alloc: size 0");
    }
    if (log->soft0 && (resource_type != SRQ_SOFT_RES_TYPE_QP) &&
        (resource_type != SRQ_SOFT_RES_TYPE_SRQ) &&
        (resource_type != SRQ_SOFT_RES_TYPE_CQ)) {
        log->errors.push_back("alloc: type " + std::to_string(resource_type));
    }
    if (log->refuse) {
        return nullptr;
    }
    if (log->use_default) {
        return IBV_ALLOCATOR_USE_DEFAULT;
    }
    if (posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) :
                                                       alignment, size)) {
        return nullptr;
    }
    memset(p, 0xa5, size); /* the device must not take it as zeroed */
    log->live[p] = resource_type;
    return p;
}

void log_free(ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type)
{
    alloc_log_t *log = (alloc_log_t*)pd_context;
    auto it          = log->live.find(ptr);

    ++log->frees;
    if (pd != log->pd) {
        log->errors.push_back("free: not the parent domain");
    }
    if (it == log->live.end()) {
        log->errors.push_back("free: a pointer alloc did not return");
        return;
    }
    if (it->second != resource_type) {
        log->errors.push_back("free: resource type " +
                              std::to_string(resource_type) + " for " +
                              std::to_string(it->second));
    }
    log->live.erase(it);
    free(ptr);
}

} // namespace

class parent_domain : public verbs_test {
protected:
    /* soft0, built in or through libibverbs: its resource types known */
    bool soft0() const
    {
        return is_soft() || (GetParam() == "soft0");
    }

    /* @d with a parent domain of @d.pd as its PD (and @td, @log's
     * allocators when given); deallocated in TearDown after everything
     * made in it, @log then checked: every buffer given back, exactly */
    tdev_t &in_parent(tdev_t &d, alloc_log_t *log = nullptr,
                      ibv_td *td = nullptr)
    {
        ibv_parent_domain_init_attr attr = {};
        tdev_t *p = new tdev_t(d);

        attr.pd = d.pd;
        attr.td = td;
        if (log != nullptr) {
            log->soft0      = soft0();
            attr.comp_mask  = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                              IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
            attr.alloc      = log_alloc;
            attr.free       = log_free;
            attr.pd_context = log;
        }
        p->pd = srq_verbs_alloc_parent_domain(d.dev, &attr);
        EXPECT_NE(nullptr, p->pd) << strerror(errno);
        if (log != nullptr) {
            log->pd = p->pd;
        }
        m_cleanup.push_back([p, log]() {
            if (p->pd != nullptr) {
                EXPECT_EQ(0, srq_verbs_dealloc_pd(p->dev, p->pd));
            }
            if (log != nullptr) {
                EXPECT_TRUE(log->live.empty())
                    << log->live.size() << " buffers never freed";
                EXPECT_EQ(std::vector<std::string>(), log->errors);
            }
            delete p;
        });
        return *p;
    }

    /* An extended CQ in the parent domain of @p */
    ibv_cq *make_pd_cq(tdev_t &p, int cqe = 64)
    {
        ibv_cq_init_attr_ex attr = {};
        ibv_cq_ex *cq;

        attr.cqe           = cqe;
        attr.wc_flags      = IBV_WC_STANDARD_FLAGS;
        attr.comp_mask     = IBV_CQ_INIT_ATTR_MASK_PD;
        attr.parent_domain = p.pd;
        cq = srq_verbs_create_cq_ex(p.dev, &attr);
        EXPECT_NE(nullptr, cq) << strerror(errno);
        if (cq == nullptr) {
            return nullptr;
        }
        srq_verbs_dev_t *dev = p.dev;
        m_cleanup.push_back([dev, cq]() {
            EXPECT_EQ(0, srq_verbs_destroy_cq(dev, ibv_cq_ex_to_cq(cq)));
        });
        m_cqs.push_back(ibv_cq_ex_to_cq(cq));
        return ibv_cq_ex_to_cq(cq);
    }

    /* @count sends from @qa to @qb (receives on @qb, or on @srq) */
    void rc_traffic(tdev_t &a, ibv_qp *qa, ibv_cq *cqa, tdev_t &b,
                    ibv_qp *qb, ibv_cq *cqb, ibv_srq *srq, int count,
                    ibv_pd *rpd)
    {
        char *sbuf = (char*)alloc(64, 's'), *rbuf = (char*)alloc(64);
        /* the sender's MR is its parent domain's, the receiver's of @rpd
         * (the protection PD of its parent domain: both protect as the
         * same PD) */
        ibv_mr *mra = reg(a, sbuf, 64, 0);
        ibv_mr *mrb = srq_verbs_reg_mr(b.dev, rpd, rbuf, 64,
                                       IBV_ACCESS_LOCAL_WRITE);

        ASSERT_NE(nullptr, mrb);
        connect_rc(a, qa, b, qb);
        for (int i = 0; i < count; ++i) {
            snprintf(sbuf, 64, "message %d", i);
            ASSERT_EQ(0, srq ? post_srq_recv(srq, rbuf, 64, mrb->lkey, i) :
                               post_recv(qb, rbuf, 64, mrb->lkey, i));
            ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, sbuf, 16, mra->lkey, i));
            ibv_wc wc = poll1(cqb);
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
            EXPECT_EQ((uint64_t)i, wc.wr_id);
            EXPECT_STREQ(sbuf, rbuf);
            ASSERT_EQ(IBV_WC_SUCCESS, poll1(cqa).status);
        }
        EXPECT_EQ(0, srq_verbs_dereg_mr(b.dev, mrb));
    }

    /* @count datagrams from @qa to @qb, an AH of @a's (parent) domain */
    void ud_traffic(tdev_t &a, ibv_qp *qa, ibv_cq *cqa, tdev_t &b,
                    ibv_qp *qb, ibv_cq *cqb, int count)
    {
        char *sbuf = (char*)alloc(64, 'u'), *rbuf = (char*)alloc(128);
        ibv_mr *smr = reg(a, sbuf, 64, 0);
        ibv_mr *rmr = reg(b, rbuf, 128, IBV_ACCESS_LOCAL_WRITE);
        ibv_ah *ah  = make_ah(a, b.addr);

        ud_to_rts(a, qa, 0x77);
        ud_to_rts(b, qb, 0x77);
        for (int i = 0; i < count; ++i) {
            snprintf(sbuf, 24, "datagram %d", i);
            ASSERT_EQ(0, post_recv(qb, rbuf, 128, rmr->lkey, i));
            ASSERT_EQ(0, post_ud_send(qa, ah, qb->qp_num, 0x77, sbuf, 24,
                                      smr->lkey, i));
            ibv_wc wc = poll1(cqb);
            ASSERT_EQ(IBV_WC_SUCCESS, wc.status) << ibv_wc_status_str(wc.status);
            EXPECT_EQ(40u + 24u, wc.byte_len);
            EXPECT_STREQ(sbuf, rbuf + 40);
            ASSERT_EQ(IBV_WC_SUCCESS, poll1(cqa).status);
        }
    }

    ibv_td *make_td(tdev_t &d)
    {
        ibv_td_init_attr attr = {};
        ibv_td *td = srq_verbs_alloc_td(d.dev, &attr);

        EXPECT_NE(nullptr, td) << strerror(errno);
        if (td != nullptr) {
            srq_verbs_dev_t *dev = d.dev;
            m_cleanup.push_back([dev, td]() {
                EXPECT_EQ(0, srq_verbs_dealloc_td(dev, td));
            });
        }
        return td;
    }
};

TEST_P(parent_domain, rc_traffic_without_allocators)
{
    tdev_t &db = open_dev();
    tdev_t &a = in_parent(open_dev()), &b = in_parent(db);
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);

    ASSERT_TRUE(qa && qb);
    EXPECT_EQ(a.pd, qa->pd);
    rc_traffic(a, qa, cqa, b, qb, cqb, nullptr, 10, db.pd);
}

/* Every queue of an RC pair, an SRQ and extended CQs from the program's
 * allocator: counted by resource type, each buffer freed exactly */
TEST_P(parent_domain, rc_traffic_with_allocators)
{
    alloc_log_t *la = new alloc_log_t, *lb = new alloc_log_t;
    m_cleanup.push_back([la, lb]() { delete la; delete lb; });
    tdev_t &db = open_dev();
    tdev_t &a = in_parent(open_dev(), la), &b = in_parent(db, lb);
    ibv_cq *cqa = make_pd_cq(a), *cqb = make_pd_cq(b);
    ibv_srq *srq = make_srq(b, 16);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, cqa, cqa, nullptr, 32, 32, 2);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb, srq);

    ASSERT_TRUE(qa && qb && srq);
    EXPECT_EQ(b.pd, srq->pd);
    if (soft0()) {
        /* soft0's queues (libibverbs' provider or the built-in device):
         * a QP's send and receive arrays, an SRQ ring, a CQ ring */
        EXPECT_EQ(1, la->by_type[SRQ_SOFT_RES_TYPE_CQ]);
        EXPECT_EQ(2, la->by_type[SRQ_SOFT_RES_TYPE_QP]);
        EXPECT_EQ(1, lb->by_type[SRQ_SOFT_RES_TYPE_CQ]);
        EXPECT_EQ(1, lb->by_type[SRQ_SOFT_RES_TYPE_SRQ]);
        EXPECT_EQ(1, lb->by_type[SRQ_SOFT_RES_TYPE_QP]) << "on an SRQ: "
                                                          "no receive array";
    }
    EXPECT_GT(la->calls, 0) << "the allocator was never called";
    EXPECT_GT(lb->calls, 0) << "the allocator was never called";
    rc_traffic(a, qa, cqa, b, qb, cqb, srq, 20, db.pd);
}

TEST_P(parent_domain, ud_traffic_with_allocators)
{
    alloc_log_t *la = new alloc_log_t, *lb = new alloc_log_t;
    m_cleanup.push_back([la, lb]() { delete la; delete lb; });
    tdev_t &a = in_parent(open_dev(), la), &b = in_parent(open_dev(), lb);
    ibv_cq *cqa = make_pd_cq(a), *cqb = make_pd_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_UD, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_UD, cqb, cqb);

    ASSERT_TRUE(qa && qb);
    EXPECT_GT(la->calls, 0) << "the allocator was never called";
    if (soft0()) {
        EXPECT_EQ(2, la->by_type[SRQ_SOFT_RES_TYPE_QP]);
        EXPECT_EQ(1, lb->by_type[SRQ_SOFT_RES_TYPE_CQ]);
    }
    ud_traffic(a, qa, cqa, b, qb, cqb, 10);
}

/* IBV_ALLOCATOR_USE_DEFAULT: the device allocates, and frees nothing
 * through the program's free */
TEST_P(parent_domain, use_default)
{
    alloc_log_t *la = new alloc_log_t, *lb = new alloc_log_t;
    m_cleanup.push_back([la, lb]() {
        EXPECT_EQ(0, la->frees);
        EXPECT_EQ(0, lb->frees);
        delete la;
        delete lb;
    });
    la->use_default = lb->use_default = true;
    tdev_t &a = in_parent(open_dev(), la), &b = in_parent(open_dev(), lb);
    ibv_cq *cqa = make_pd_cq(a), *cqb = make_pd_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);

    ASSERT_TRUE(qa && qb);
    EXPECT_GT(la->calls, 0);
    rc_traffic(a, qa, cqa, b, qb, cqb, nullptr, 5, b.pd);
}

/* An allocator that returns NULL fails the create (ENOMEM); nothing it did
 * not give is freed, and the parent domain stays free to go */
TEST_P(parent_domain, refusing_allocator_fails_the_create)
{
    alloc_log_t *log = new alloc_log_t;
    m_cleanup.push_back([log]() { delete log; });
    tdev_t &d = in_parent(open_dev(), log);
    ibv_cq *cq = make_cq(d);
    ibv_qp_init_attr qattr = {};
    ibv_srq_init_attr sattr = {};

    log->refuse = true;
    qattr.send_cq = qattr.recv_cq = cq;
    qattr.qp_type = IBV_QPT_RC;
    qattr.cap.max_send_wr = qattr.cap.max_recv_wr = 8;
    qattr.cap.max_send_sge = qattr.cap.max_recv_sge = 1;
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_create_qp(d.dev, d.pd, &qattr));
    EXPECT_EQ(ENOMEM, errno);
    sattr.attr.max_wr = sattr.attr.max_sge = 1;
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_create_srq(d.dev, d.pd, &sattr));
    EXPECT_EQ(ENOMEM, errno);
    EXPECT_GE(log->calls, 2);
    EXPECT_EQ(0, log->frees);
}

TEST_P(parent_domain, bad_attributes)
{
    tdev_t &d = open_dev();
    tdev_t &p = in_parent(d);
    ibv_parent_domain_init_attr attr = {};
    ibv_td_init_attr tattr = {};

    attr.pd        = d.pd;
    attr.comp_mask = 1u << 7; /* no such field */
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_alloc_parent_domain(d.dev, &attr));
    EXPECT_EQ(EINVAL, errno);
    attr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
    attr.alloc     = log_alloc; /* and no free */
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_alloc_parent_domain(d.dev, &attr));
    EXPECT_EQ(EINVAL, errno);
    attr = {};
    attr.pd = p.pd; /* a parent domain of a parent domain */
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_alloc_parent_domain(d.dev, &attr));
    EXPECT_EQ(EINVAL, errno);
    tattr.comp_mask = 1; /* no such field */
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_alloc_td(d.dev, &tattr));
    EXPECT_EQ(EINVAL, errno);
}

/* A CQ's PD can only be a parent domain (ibv_create_cq_ex(3)) */
TEST_P(parent_domain, cq_in_a_plain_pd_is_refused)
{
    tdev_t &d = open_dev();
    ibv_cq_init_attr_ex attr = {};

    attr.cqe           = 8;
    attr.wc_flags      = IBV_WC_STANDARD_FLAGS;
    attr.comp_mask     = IBV_CQ_INIT_ATTR_MASK_PD;
    attr.parent_domain = d.pd;
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_create_cq_ex(d.dev, &attr));
    EXPECT_EQ(EINVAL, errno);
}

/* ibv_dealloc_pd of a parent domain: EBUSY while a QP or a CQ is in it;
 * its protection PD is busy while it lives */
TEST_P(parent_domain, dealloc_order)
{
    tdev_t &d = open_dev();
    ibv_parent_domain_init_attr attr = {};
    ibv_cq_init_attr_ex cq_attr = {};
    ibv_pd *pd;
    ibv_cq *cq;
    ibv_qp *qp;

    attr.pd = d.pd;
    pd = srq_verbs_alloc_parent_domain(d.dev, &attr);
    ASSERT_NE(nullptr, pd) << strerror(errno);
    tdev_t p = d;
    p.pd = pd;
    cq_attr.cqe           = 8;
    cq_attr.wc_flags      = IBV_WC_STANDARD_FLAGS;
    cq_attr.comp_mask     = IBV_CQ_INIT_ATTR_MASK_PD;
    cq_attr.parent_domain = pd;
    cq = ibv_cq_ex_to_cq(srq_verbs_create_cq_ex(d.dev, &cq_attr));
    ASSERT_NE(nullptr, cq) << strerror(errno);
    qp = make_qp(p, IBV_QPT_RC, cq, cq);
    ASSERT_NE(nullptr, qp);
    EXPECT_EQ(EBUSY, srq_verbs_dealloc_pd(d.dev, pd));
    EXPECT_EQ(EBUSY, errno);
    EXPECT_EQ(EBUSY, srq_verbs_dealloc_pd(d.dev, d.pd)) << "protection PD";
    destroy_qp(d, qp);
    EXPECT_EQ(EBUSY, srq_verbs_dealloc_pd(d.dev, pd)) << "its CQ";
    ASSERT_EQ(0, srq_verbs_destroy_cq(d.dev, cq));
    EXPECT_EQ(EBUSY, srq_verbs_dealloc_pd(d.dev, d.pd)) << "protection PD";
    EXPECT_EQ(0, srq_verbs_dealloc_pd(d.dev, pd));
    /* the protection PD is free again: TearDown deallocates it */
}

/* A thread domain: a hint soft0 takes (its device thread needs the locks
 * whatever the program promises); busy while a parent domain names it */
TEST_P(parent_domain, thread_domain)
{
    tdev_t &a = open_dev(), &b = open_dev();
    ibv_td *td = make_td(a);
    ibv_parent_domain_init_attr attr = {};
    ibv_pd *pd;

    ASSERT_NE(nullptr, td);
    attr.pd = a.pd;
    attr.td = td;
    pd = srq_verbs_alloc_parent_domain(a.dev, &attr);
    ASSERT_NE(nullptr, pd) << strerror(errno);
    EXPECT_EQ(EBUSY, srq_verbs_dealloc_td(a.dev, td));
    EXPECT_EQ(0, srq_verbs_dealloc_pd(a.dev, pd));

    /* traffic through QPs in a TD's parent domain */
    tdev_t &pa = in_parent(a, nullptr, td);
    ibv_cq *cqa = make_cq(pa), *cqb = make_cq(b);
    ibv_qp *qa = make_qp(pa, IBV_QPT_RC, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);

    ASSERT_TRUE(qa && qb);
    rc_traffic(pa, qa, cqa, b, qb, cqb, nullptr, 5, b.pd);
}

SRQ_INSTANTIATE(parent_domain);
