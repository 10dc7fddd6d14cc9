/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: XRC (extended reliable connected) - domains,
 * XRC SRQs, initiator (IBV_QPT_XRC_SEND) and target (IBV_QPT_XRC_RECV)
 * QPs. The project API has no XRC domain: on the built-in path the soft
 * device's own calls (srq_soft_api.h), through libibverbs
 * (test/verbs_gtest_ibv.sh) libibverbs' ibv_open_xrcd, ibv_create_srq_ex,
 * ibv_get_srq_num; QPs on both through srq_verbs_create_qp_ex. A device
 * without XRC skips.
 *   - traffic initiator -> target -> SRQ: SEND (its completion on the
 *     SRQ's CQ, with the target QP's number), RDMA WRITE and READ with
 *     keys of the SRQ's PD;
 *   - the SRQ number routes: two SRQs of one domain, each message lands
 *     in the one it names;
 *   - an SRQ of another domain is refused: the sender's WR completes with
 *     IBV_WC_REM_ACCESS_ERR, the target QP goes to error, nothing lands;
 *   - domains opened on one file are one domain;
 *   - ibv_close_xrcd while an SRQ or a target QP of it lives: EBUSY;
 *   - bad attributes: EINVAL (EEXIST for O_EXCL on a domain that exists).
 */
#include "verbs_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace srq_test;

namespace {

const uint32_t kLen = 4096;
const int kRemote   = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                      IBV_ACCESS_REMOTE_READ;
const int kFdMask   = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;

} // namespace

class xrc : public two_dev_test {
protected:
    void SetUp() override
    {
        two_dev_test::SetUp();
        if (IsSkipped() || HasFailure()) {
            return;
        }
        ibv_device_attr attr;
        ASSERT_EQ(0, srq_verbs_query_device(a->dev, &attr));
        if (!(attr.device_cap_flags & IBV_DEVICE_XRC)) {
            GTEST_SKIP() << "the device has no XRC";
        }
        char path[] = "/tmp/srq-xrc-XXXXXX";
        file_fd = mkstemp(path);
        ASSERT_LE(0, file_fd);
        unlink(path); /* the inode lives while the fd is open */
    }

    void TearDown() override
    {
        two_dev_test::TearDown(); /* objects go before their domains */
        if (file_fd >= 0) {
            close(file_fd);
        }
    }

    /* The verbs on either path: errno set on failure, as libibverbs */
    ibv_xrcd *xrcd_open(tdev_t &d, int fd, int oflags,
                        uint32_t mask = kFdMask, bool keep = true)
    {
        ibv_xrcd_init_attr attr = {};

        attr.comp_mask = mask;
        attr.fd        = fd;
        attr.oflags    = oflags;
        ibv_xrcd *x = is_soft() ? srq_soft_open_xrcd(d.dev, &attr) :
                      ibv_open_xrcd(srq_verbs_context(d.dev), &attr);
        if ((x != nullptr) && keep) {
            srq_verbs_dev_t *dev = d.dev;
            bool soft = is_soft();
            m_cleanup.push_back([this, dev, x, soft]() {
                if (!closed.count(x)) {
                    EXPECT_EQ(0, soft ? srq_soft_close_xrcd(dev, x) :
                                        ibv_close_xrcd(x));
                }
            });
        }
        return x;
    }

    int xrcd_close(tdev_t &d, ibv_xrcd *x)
    {
        int ret = is_soft() ? srq_soft_close_xrcd(d.dev, x) :
                              ibv_close_xrcd(x);
        if (ret == 0) {
            closed.insert(x);
        }
        return ret;
    }

    ibv_srq *xsrq_make(tdev_t &d, ibv_xrcd *x, ibv_cq *cq,
                       uint32_t mask = IBV_SRQ_INIT_ATTR_TYPE |
                                       IBV_SRQ_INIT_ATTR_PD |
                                       IBV_SRQ_INIT_ATTR_XRCD |
                                       IBV_SRQ_INIT_ATTR_CQ)
    {
        ibv_srq_init_attr_ex attr = {};

        attr.attr.max_wr  = 16;
        attr.attr.max_sge = 1;
        attr.comp_mask    = mask;
        attr.srq_type     = IBV_SRQT_XRC;
        attr.pd           = d.pd;
        attr.xrcd         = x;
        attr.cq           = cq;
        ibv_srq *s = is_soft() ? srq_soft_create_srq_ex(d.dev, &attr) :
                     ibv_create_srq_ex(srq_verbs_context(d.dev), &attr);
        if (s != nullptr) {
            srq_verbs_dev_t *dev = d.dev;
            m_cleanup.push_back([this, dev, s]() {
                if (!gone_srqs.count(s)) {
                    EXPECT_EQ(0, srq_verbs_destroy_srq(dev, s));
                }
            });
        }
        return s;
    }

    uint32_t srqn(tdev_t &d, ibv_srq *s)
    {
        uint32_t n = 0;

        EXPECT_EQ(0, is_soft() ? srq_soft_get_srq_num(d.dev, s, &n) :
                                 ibv_get_srq_num(s, &n));
        return n;
    }

    ibv_qp *qp_make(tdev_t &d, ibv_qp_init_attr_ex &attr)
    {
        ibv_qp *qp = srq_verbs_create_qp_ex(d.dev, &attr);

        if (qp != nullptr) {
            srq_verbs_dev_t *dev = d.dev;
            m_cleanup.push_back([this, dev, qp]() {
                if (!m_destroyed.count(qp)) {
                    EXPECT_EQ(0, srq_verbs_destroy_qp(dev, qp));
                }
            });
        }
        return qp;
    }

    ibv_qp_init_attr_ex tgt_attr(ibv_xrcd *x)
    {
        ibv_qp_init_attr_ex attr = {};

        attr.qp_type   = IBV_QPT_XRC_RECV;
        attr.comp_mask = IBV_QP_INIT_ATTR_XRCD;
        attr.xrcd      = x;
        return attr;
    }

    ibv_qp_init_attr_ex ini_attr(tdev_t &d, ibv_cq *cq)
    {
        ibv_qp_init_attr_ex attr = {};

        attr.qp_type          = IBV_QPT_XRC_SEND;
        attr.comp_mask        = IBV_QP_INIT_ATTR_PD;
        attr.pd               = d.pd;
        attr.send_cq          = cq;
        attr.cap.max_send_wr  = 16;
        attr.cap.max_send_sge = 1;
        return attr;
    }

    /* An initiator on a, a target on b in @x, connected */
    void xrc_pair(ibv_xrcd *x)
    {
        ibv_qp_init_attr_ex ia = ini_attr(*a, scqa);
        ibv_qp_init_attr_ex ta = tgt_attr(x);

        ini = qp_make(*a, ia);
        tgt = qp_make(*b, ta);
        ASSERT_NE(nullptr, ini) << errno;
        ASSERT_NE(nullptr, tgt) << errno;
        rc_to_rts(*a, ini, b->addr, tgt->qp_num, conn_opts_t());
        rc_to_rts(*b, tgt, a->addr, ini->qp_num, conn_opts_t());
    }

    int post_xrc(ibv_wr_opcode op, void *buf, uint32_t len, uint32_t lkey,
                 uint32_t remote_srqn, uint64_t wr_id, uint64_t raddr = 0,
                 uint32_t rkey = 0)
    {
        ibv_sge sge = { (uintptr_t)buf, len, lkey };
        ibv_send_wr wr = {}, *bad = nullptr;

        wr.wr_id      = wr_id;
        wr.opcode     = op;
        wr.sg_list    = &sge;
        wr.num_sge    = 1;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey        = rkey;
        wr.qp_type.xrc.remote_srqn = remote_srqn;
        return ibv_post_send(ini, &wr, &bad);
    }

    int                 file_fd = -1;
    ibv_qp             *ini = nullptr, *tgt = nullptr;
    std::set<ibv_xrcd*> closed;
    std::set<ibv_srq*>  gone_srqs;
};

/* SEND into the SRQ named, WRITE and READ with the SRQ's PD's keys */
TEST_P(xrc, send_write_read)
{
    ibv_xrcd *x = xrcd_open(*b, -1, O_CREAT);
    ASSERT_NE(nullptr, x) << errno;
    ibv_srq *s = xsrq_make(*b, x, rcqb);
    ASSERT_NE(nullptr, s) << errno;
    xrc_pair(x);
    if (HasFatalFailure()) {
        return;
    }
    char *src = (char*)alloc(kLen, 'a'), *dst = (char*)alloc(kLen, 0);
    ibv_mr *smr = reg(*a, src, kLen, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *dmr = reg(*b, dst, kLen, kRemote);

    ASSERT_EQ(0, post_srq_recv(s, dst, kLen, dmr->lkey, 7));
    ASSERT_EQ(0, post_xrc(IBV_WR_SEND, src, 100, smr->lkey, srqn(*b, s), 1));
    ibv_wc wc = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_EQ(100u, wc.byte_len);
    EXPECT_EQ(tgt->qp_num, wc.qp_num) << "the target QP's number";
    EXPECT_EQ(ini->qp_num, wc.src_qp);
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    EXPECT_EQ(0, memcmp(dst, src, 100));

    memset(src, 'w', kLen);
    ASSERT_EQ(0, post_xrc(IBV_WR_RDMA_WRITE, src, 512, smr->lkey,
                          srqn(*b, s), 2, (uintptr_t)dst + 1024, dmr->rkey));
    wc = poll1(scqa);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(0, memcmp(dst + 1024, src, 512));

    memset(dst + 2048, 'r', 256);
    ASSERT_EQ(0, post_xrc(IBV_WR_RDMA_READ, src, 256, smr->lkey,
                          srqn(*b, s), 3, (uintptr_t)dst + 2048, dmr->rkey));
    wc = poll1(scqa);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(0, memcmp(src, dst + 2048, 256));
}

/* The ibv_wr_* API names the SRQ with ibv_wr_set_xrc_srqn */
TEST_P(xrc, wr_api_names_the_srq)
{
    ibv_xrcd *x = xrcd_open(*b, -1, O_CREAT);
    ASSERT_NE(nullptr, x) << errno;
    ibv_cq *cq2 = make_cq(*b);
    ibv_srq *s1 = xsrq_make(*b, x, rcqb), *s2 = xsrq_make(*b, x, cq2);
    ASSERT_NE(nullptr, s1) << errno;
    ASSERT_NE(nullptr, s2) << errno;
    ibv_qp_init_attr_ex ia = ini_attr(*a, scqa), ta = tgt_attr(x);
    ia.comp_mask     |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    ia.send_ops_flags = IBV_QP_EX_WITH_SEND;
    ini = qp_make(*a, ia);
    tgt = qp_make(*b, ta);
    ASSERT_NE(nullptr, ini) << errno;
    ASSERT_NE(nullptr, tgt) << errno;
    rc_to_rts(*a, ini, b->addr, tgt->qp_num, conn_opts_t());
    rc_to_rts(*b, tgt, a->addr, ini->qp_num, conn_opts_t());
    char *src = (char*)alloc(64, 'x'), *b1 = (char*)alloc(64, 0);
    char *b2 = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, src, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *m1 = reg(*b, b1, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *m2 = reg(*b, b2, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp_ex *qpx = ibv_qp_to_qp_ex(ini);
    ASSERT_NE(nullptr, qpx);

    ASSERT_EQ(0, post_srq_recv(s1, b1, 64, m1->lkey, 1));
    ASSERT_EQ(0, post_srq_recv(s2, b2, 64, m2->lkey, 2));
    ibv_wr_start(qpx);
    qpx->wr_id    = 9;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(qpx);
    ibv_wr_set_xrc_srqn(qpx, srqn(*b, s2));
    ibv_wr_set_sge(qpx, smr->lkey, (uintptr_t)src, 32);
    ASSERT_EQ(0, ibv_wr_complete(qpx));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    ibv_wc wc = poll1(cq2);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(2u, wc.wr_id) << "the SRQ named";
    EXPECT_EQ(0, memcmp(b2, src, 32));
    EXPECT_EQ(0, b1[0]);
}

/* A key of a PD other than the SRQ's does not open the target's memory */
TEST_P(xrc, rkey_of_another_pd_refused)
{
    ibv_xrcd *x = xrcd_open(*b, -1, O_CREAT);
    ASSERT_NE(nullptr, x) << errno;
    ibv_srq *s = xsrq_make(*b, x, rcqb);
    ASSERT_NE(nullptr, s) << errno;
    xrc_pair(x);
    if (HasFatalFailure()) {
        return;
    }
    ibv_pd *other = srq_verbs_alloc_pd(b->dev);
    ASSERT_NE(nullptr, other);
    char *src = (char*)alloc(kLen, 'a'), *dst = (char*)alloc(kLen, 0);
    ibv_mr *smr = reg(*a, src, kLen, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *omr = srq_verbs_reg_mr(b->dev, other, dst, kLen, kRemote);
    ASSERT_NE(nullptr, omr);

    ASSERT_EQ(0, post_xrc(IBV_WR_RDMA_WRITE, src, 64, smr->lkey,
                          srqn(*b, s), 1, (uintptr_t)dst, omr->rkey));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, poll1(scqa).status);
    EXPECT_EQ(0, dst[0]) << "nothing lands";
    EXPECT_EQ(0, srq_verbs_dereg_mr(b->dev, omr));
    EXPECT_EQ(0, srq_verbs_dealloc_pd(b->dev, other));
}

/* Two SRQs of one domain: each message lands in the one it names */
TEST_P(xrc, srq_number_routes)
{
    ibv_xrcd *x = xrcd_open(*b, -1, O_CREAT);
    ASSERT_NE(nullptr, x) << errno;
    ibv_cq *cq2 = make_cq(*b);
    ibv_srq *s1 = xsrq_make(*b, x, rcqb), *s2 = xsrq_make(*b, x, cq2);
    ASSERT_NE(nullptr, s1) << errno;
    ASSERT_NE(nullptr, s2) << errno;
    EXPECT_NE(srqn(*b, s1), srqn(*b, s2));
    xrc_pair(x);
    if (HasFatalFailure()) {
        return;
    }
    char *src = (char*)alloc(64, 0);
    char *b1 = (char*)alloc(64, 0), *b2 = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, src, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *m1 = reg(*b, b1, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *m2 = reg(*b, b2, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_wc wc[2];

    ASSERT_EQ(0, post_srq_recv(s1, b1, 64, m1->lkey, 11));
    ASSERT_EQ(0, post_srq_recv(s2, b2, 64, m2->lkey, 22));
    strcpy(src, "to-two");
    ASSERT_EQ(0, post_xrc(IBV_WR_SEND, src, 7, smr->lkey, srqn(*b, s2), 1));
    ASSERT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    wc[0] = poll1(cq2);
    EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(22u, wc[0].wr_id);
    EXPECT_STREQ("to-two", b2);
    EXPECT_EQ(0, b1[0]) << "the other SRQ's buffer is untouched";
    EXPECT_EQ(0, poll(rcqb, 1, wc, 100)) << "nothing on the other SRQ's CQ";

    strcpy(src, "to-one");
    ASSERT_EQ(0, post_xrc(IBV_WR_SEND, src, 7, smr->lkey, srqn(*b, s1), 2));
    ASSERT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    wc[0] = poll1(rcqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(11u, wc[0].wr_id);
    EXPECT_STREQ("to-one", b1);
}

/* An SRQ of another domain: a remote access error, the target in error */
TEST_P(xrc, srq_of_another_domain_refused)
{
    ibv_xrcd *x1 = xrcd_open(*b, -1, O_CREAT);
    ibv_xrcd *x2 = xrcd_open(*b, -1, O_CREAT);
    ASSERT_NE(nullptr, x1) << errno;
    ASSERT_NE(nullptr, x2) << errno;
    ibv_srq *s2 = xsrq_make(*b, x2, rcqb);
    ASSERT_NE(nullptr, s2) << errno;
    xrc_pair(x1);
    if (HasFatalFailure()) {
        return;
    }
    char *src = (char*)alloc(64, 'z'), *dst = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, src, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *dmr = reg(*b, dst, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_wc wc;

    ASSERT_EQ(0, post_srq_recv(s2, dst, 64, dmr->lkey, 5));
    ASSERT_EQ(0, post_xrc(IBV_WR_SEND, src, 8, smr->lkey, srqn(*b, s2), 1));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, poll1(scqa).status);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*b, tgt));
    EXPECT_EQ(0, dst[0]) << "nothing lands";
    EXPECT_EQ(0, poll(rcqb, 1, &wc, 100)) << "the SRQ's WQE is not taken";
}

/* Domains opened on one file are one: an SRQ of one handle takes what a
 * target QP of the other receives; O_EXCL refuses a second */
TEST_P(xrc, one_domain_per_file)
{
    ibv_xrcd *x1 = xrcd_open(*b, file_fd, O_CREAT);
    ASSERT_NE(nullptr, x1) << errno;
    errno = 0;
    EXPECT_EQ(nullptr, xrcd_open(*b, file_fd, O_CREAT | O_EXCL));
    EXPECT_EQ(EEXIST, errno);
    ibv_xrcd *x2 = xrcd_open(*b, file_fd, 0); /* exists: opened */
    ASSERT_NE(nullptr, x2) << errno;
    ibv_srq *s = xsrq_make(*b, x2, rcqb);
    ASSERT_NE(nullptr, s) << errno;
    xrc_pair(x1);
    if (HasFatalFailure()) {
        return;
    }
    char *src = (char*)alloc(64, 'q'), *dst = (char*)alloc(64, 0);
    ibv_mr *smr = reg(*a, src, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_mr *dmr = reg(*b, dst, 64, IBV_ACCESS_LOCAL_WRITE);

    ASSERT_EQ(0, post_srq_recv(s, dst, 64, dmr->lkey, 9));
    ASSERT_EQ(0, post_xrc(IBV_WR_SEND, src, 16, smr->lkey, srqn(*b, s), 1));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    EXPECT_EQ(9u, poll1(rcqb).wr_id);
    EXPECT_EQ(0, memcmp(dst, src, 16));
}

/* A file's domain is one process's: soft0 has no table of domains
 * shared between processes, so another process's open of the file is
 * refused (EOPNOTSUPP), not given a second domain; once that process
 * closed it, the file is free again */
TEST_P(xrc, soft_file_domain_of_another_process_refused)
{
    SRQ_SKIP_UNLESS_SOFT();
    int sv[2];
    ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    m_cleanup.push_back([sv]() { close(sv[0]); close(sv[1]); });
    std::string name = GetParam();
    int fd = file_fd, s = sv[1];
    pid_t pid = fork_child([name, fd, s]() {
        srq_verbs_dev_t *dev = nullptr;
        ibv_xrcd_init_attr attr = { kFdMask, fd, O_CREAT };
        char c = 0;

        if (srq_verbs_open(name.c_str(), &dev) != 0) {
            return 2;
        }
        ibv_xrcd *x = srq_soft_open_xrcd(dev, &attr);
        c = (x != nullptr) ? 'y' : 'n';
        if (!write_full(s, &c, 1) || !read_full(s, &c, 1, 30000)) {
            return 3;
        }
        if (x != nullptr) {
            srq_soft_close_xrcd(dev, x);
        }
        srq_verbs_close(dev);
        return (c == 'q') ? 0 : 4;
    });
    ASSERT_GT(pid, 0);
    char c = 0;
    ASSERT_TRUE(read_full(sv[0], &c, 1));
    ASSERT_EQ('y', c) << "the child has the file's domain";
    errno = 0;
    EXPECT_EQ(nullptr, xrcd_open(*b, file_fd, O_CREAT));
    EXPECT_EQ(EOPNOTSUPP, errno);
    c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid));
    EXPECT_NE(nullptr, xrcd_open(*b, file_fd, O_CREAT)) << errno;
}

/* ibv_close_xrcd while an SRQ or a target QP of it lives: EBUSY */
TEST_P(xrc, close_busy)
{
    ibv_xrcd *x = xrcd_open(*b, -1, O_CREAT);
    ASSERT_NE(nullptr, x) << errno;
    ibv_srq *s = xsrq_make(*b, x, rcqb);
    ASSERT_NE(nullptr, s) << errno;
    bool soft = is_soft();
    errno = 0;
    EXPECT_EQ(EBUSY, xrcd_close(*b, x));
    int err = errno;
    if (!soft) {
        EXPECT_EQ(EBUSY, err) << "libibverbs' callers read errno";
    }
    ASSERT_EQ(0, srq_verbs_destroy_srq(b->dev, s));
    gone_srqs.insert(s);
    ibv_qp_init_attr_ex ta = tgt_attr(x);
    ibv_qp *t = qp_make(*b, ta);
    ASSERT_NE(nullptr, t) << errno;
    EXPECT_EQ(EBUSY, xrcd_close(*b, x));
    destroy_qp(*b, t);
    EXPECT_EQ(0, xrcd_close(*b, x));
}

/* What ibv_open_xrcd, ibv_create_srq_ex and ibv_create_qp_ex refuse */
TEST_P(xrc, bad_attributes)
{
    errno = 0;
    EXPECT_EQ(nullptr, xrcd_open(*b, -1, O_CREAT, kFdMask | (1u << 5)));
    EXPECT_EQ(EINVAL, errno) << "unknown comp_mask";
    errno = 0;
    EXPECT_EQ(nullptr, xrcd_open(*b, -1, 0));
    EXPECT_EQ(EINVAL, errno) << "fd -1 without O_CREAT";
    errno = 0;
    EXPECT_EQ(nullptr, xrcd_open(*b, file_fd, 0));
    EXPECT_EQ(EINVAL, errno) << "no domain on the file, none to be made";

    ibv_xrcd *x = xrcd_open(*b, -1, O_CREAT);
    ASSERT_NE(nullptr, x) << errno;
    errno = 0;
    EXPECT_EQ(nullptr, xsrq_make(*b, x, rcqb, IBV_SRQ_INIT_ATTR_TYPE |
                                              IBV_SRQ_INIT_ATTR_PD |
                                              IBV_SRQ_INIT_ATTR_XRCD));
    EXPECT_EQ(EINVAL, errno) << "XRC SRQ without a CQ";
    errno = 0;
    EXPECT_EQ(nullptr, xsrq_make(*b, x, rcqb, IBV_SRQ_INIT_ATTR_TYPE |
                                              IBV_SRQ_INIT_ATTR_PD |
                                              IBV_SRQ_INIT_ATTR_CQ));
    EXPECT_EQ(EINVAL, errno) << "XRC SRQ without a domain";

    ibv_qp_init_attr_ex ta = tgt_attr(x);
    ta.comp_mask = 0;
    errno = 0;
    EXPECT_EQ(nullptr, qp_make(*b, ta));
    EXPECT_EQ(EINVAL, errno) << "target without a domain";
    ibv_qp_init_attr_ex ia = ini_attr(*a, scqa);
    ia.comp_mask = 0;
    errno = 0;
    EXPECT_EQ(nullptr, qp_make(*a, ia));
    EXPECT_EQ(EINVAL, errno) << "initiator without a PD";
}

SRQ_INSTANTIATE(xrc);
