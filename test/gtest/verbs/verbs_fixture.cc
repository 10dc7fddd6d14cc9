/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance tests: shared fixture.
 */
#include "verbs_fixture.h"
#include "verbs/soft/fabric/soft_pkt.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace srq_test {

const char *const kNoRdmaDevice = "no_rdma_core_device";

std::vector<std::string> device_params()
{
    std::vector<std::string> names;
    srq_verbs_dev_info_t *list;
    bool have_rdma = false;
    int num, i;

    if (srq_verbs_get_device_list(SRQ_VERBS_SOFT_YES, &list, &num) == 0) {
        for (i = 0; i < num; ++i) {
            names.push_back(list[i].name);
            have_rdma |= (list[i].kind == SRQ_VERBS_DEV_RDMA);
        }
        srq_verbs_free_device_list(list);
    }
    if (!have_rdma) {
        names.push_back(kNoRdmaDevice);
    }
    return names;
}

std::string param_name(const ::testing::TestParamInfo<std::string> &info)
{
    std::string s = info.param;

    for (auto &c : s) {
        if (!isalnum((unsigned char)c)) {
            c = '_';
        }
    }
    return s;
}

uint64_t now_us()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t now_ms()
{
    return now_us() / 1000;
}

/* Move all @len bytes, retrying what a signal interrupts. Reading waits at
 * most @timeout_ms for each chunk. */
static bool io_full(int fd, char *p, size_t len, bool reading, int timeout_ms)
{
    struct pollfd pfd = { fd, POLLIN, 0 };
    ssize_t n;

    while (len > 0) {
        if (reading && (poll(&pfd, 1, timeout_ms) <= 0)) {
            return false;
        }
        n = reading ? read(fd, p, len) : write(fd, p, len);
        if (n <= 0) {
            if ((n < 0) && (errno == EINTR)) {
                continue;
            }
            return false;
        }
        p   += n;
        len -= n;
    }
    return true;
}

bool write_full(int fd, const void *buf, size_t len)
{
    return io_full(fd, (char*)buf, len, false, 0);
}

bool read_full(int fd, void *buf, size_t len, int timeout_ms)
{
    return io_full(fd, (char*)buf, len, true, timeout_ms);
}

void verbs_test::SetUp()
{
    if (GetParam() == kNoRdmaDevice) {
        GTEST_SKIP() << "no rdma-core device on this machine (no HCA, no "
                        "rxe/siw): conformance runs on the soft device only";
    }
}

void verbs_test::TearDown()
{
    for (pid_t pid : m_children) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
    m_children.clear();
    while (!m_cleanup.empty()) {
        m_cleanup.back()();
        m_cleanup.pop_back();
    }
    for (void *b : m_bufs) {
        free(b);
    }
    m_bufs.clear();
    m_cqs.clear();
    m_devs.clear();
    m_destroyed.clear();
}

void verbs_test::still(tdev_t &d)
{
    ASSERT_EQ(0, srq_soft_test_stop_thread(d.dev));
}

void verbs_test::fill_queue(tdev_t &from, tdev_t &of)
{
    std::vector<char> pad(64 * 1024, 0);
    size_t len;
    int i, ret = 0;

    ((srq_soft_pkt_t*)pad.data())->opcode = SRQ_SOFT_OP_PAD;
    /* large frames, then smaller ones into what is left: the head need
     * not sit on a large frame's boundary (@of's device may have taken
     * frames before it stopped) */
    for (len = pad.size(); len >= SRQ_SOFT_CELL; len /= 2) {
        for (i = 0, ret = 0; (i < 64) && (ret == 0); ++i) {
            ret = srq_soft_inject(from.dev, of.dev, pad.data(), len,
                                  SRQ_SOFT_INJECT_FRAME);
        }
        ASSERT_EQ(EAGAIN, ret);
    }
}

bool verbs_test::is_soft() const
{
    srq_verbs_dev_info_t *list;
    bool soft = false;
    int num, i;

    if (srq_verbs_get_device_list(SRQ_VERBS_SOFT_YES, &list, &num) != 0) {
        return false;
    }
    for (i = 0; i < num; ++i) {
        if (GetParam() == list[i].name) {
            soft = (list[i].kind == SRQ_VERBS_DEV_SOFT);
        }
    }
    srq_verbs_free_device_list(list);
    return soft;
}

tdev_t &verbs_test::open_dev()
{
    tdev_t *d = new tdev_t;
    int ret;

    ret = srq_verbs_open(GetParam().c_str(), &d->dev);
    EXPECT_EQ(0, ret) << strerror(ret);
    if (ret != 0) {
        delete d;
        throw std::runtime_error("open failed");
    }
    d->pd = srq_verbs_alloc_pd(d->dev);
    EXPECT_NE(nullptr, d->pd);
    EXPECT_EQ(0, srq_verbs_port_addr(d->dev, 1, &d->addr));
    m_cleanup.push_back([d]() {
        srq_verbs_dealloc_pd(d->dev, d->pd);
        srq_verbs_close(d->dev);
        delete d;
    });
    m_devs.push_back(d);
    return *d;
}

ibv_cq *verbs_test::make_cq(tdev_t &d, int cqe, ibv_comp_channel *ch)
{
    ibv_cq *cq = srq_verbs_create_cq(d.dev, cqe, nullptr, ch, 0);

    EXPECT_NE(nullptr, cq) << strerror(errno);
    if (cq != nullptr) {
        srq_verbs_dev_t *dev = d.dev;
        m_cleanup.push_back([dev, cq]() {
            EXPECT_EQ(0, srq_verbs_destroy_cq(dev, cq));
        });
        m_cqs.push_back(cq);
    }
    return cq;
}

ibv_cq_ex *verbs_test::make_cq_ex(tdev_t &d, ibv_cq_init_attr_ex &attr)
{
    ibv_cq_ex *cq = srq_verbs_create_cq_ex(d.dev, &attr);

    if (cq != nullptr) {
        srq_verbs_dev_t *dev = d.dev;
        m_cleanup.push_back([dev, cq]() {
            EXPECT_EQ(0, srq_verbs_destroy_cq(dev, ibv_cq_ex_to_cq(cq)));
        });
    }
    return cq;
}

ibv_comp_channel *verbs_test::make_channel(tdev_t &d)
{
    ibv_comp_channel *ch = srq_verbs_create_comp_channel(d.dev);

    EXPECT_NE(nullptr, ch) << strerror(errno);
    if (ch != nullptr) {
        srq_verbs_dev_t *dev = d.dev;
        m_cleanup.push_back([dev, ch]() {
            EXPECT_EQ(0, srq_verbs_destroy_comp_channel(dev, ch));
        });
    }
    return ch;
}

ibv_srq *verbs_test::make_srq(tdev_t &d, uint32_t max_wr, uint32_t max_sge)
{
    ibv_srq_init_attr attr = {};
    ibv_srq *srq;

    attr.attr.max_wr  = max_wr;
    attr.attr.max_sge = max_sge;
    srq = srq_verbs_create_srq(d.dev, d.pd, &attr);
    EXPECT_NE(nullptr, srq) << strerror(errno);
    if (srq != nullptr) {
        srq_verbs_dev_t *dev = d.dev;
        m_cleanup.push_back([dev, srq]() {
            EXPECT_EQ(0, srq_verbs_destroy_srq(dev, srq));
        });
    }
    return srq;
}

ibv_qp *verbs_test::make_qp(tdev_t &d, ibv_qp_type type, ibv_cq *scq,
                            ibv_cq *rcq, ibv_srq *srq, uint32_t max_send_wr,
                            uint32_t max_recv_wr, uint32_t max_sge,
                            uint32_t max_inline, bool sig_all)
{
    ibv_qp_init_attr attr = {};
    ibv_qp *qp;

    attr.send_cq             = scq;
    attr.recv_cq             = rcq;
    attr.srq                 = srq;
    attr.qp_type             = type;
    attr.sq_sig_all          = sig_all;
    attr.cap.max_send_wr     = max_send_wr;
    attr.cap.max_recv_wr     = srq ? 0 : max_recv_wr;
    attr.cap.max_send_sge    = max_sge;
    attr.cap.max_recv_sge    = srq ? 0 : max_sge;
    attr.cap.max_inline_data = max_inline;
    qp = srq_verbs_create_qp(d.dev, d.pd, &attr);
    EXPECT_NE(nullptr, qp) << strerror(errno);
    if (qp != nullptr) {
        srq_verbs_dev_t *dev = d.dev;
        m_cleanup.push_back([this, dev, qp]() {
            /* may have been destroyed by the test: see destroy_qp() */
            if (m_destroyed.count(qp) == 0) {
                EXPECT_EQ(0, srq_verbs_destroy_qp(dev, qp));
            }
        });
    }
    return qp;
}

void verbs_test::destroy_qp(tdev_t &d, ibv_qp *qp)
{
    /* TearDown must not destroy it again */
    ASSERT_EQ(0, srq_verbs_destroy_qp(d.dev, qp));
    m_destroyed.insert(qp);
}

ibv_mr *verbs_test::reg(tdev_t &d, void *buf, size_t len, int access)
{
    ibv_mr *mr = srq_verbs_reg_mr(d.dev, d.pd, buf, len, access);

    EXPECT_NE(nullptr, mr) << strerror(errno);
    if (mr != nullptr) {
        srq_verbs_dev_t *dev = d.dev;
        m_cleanup.push_back([dev, mr]() {
            EXPECT_EQ(0, srq_verbs_dereg_mr(dev, mr));
        });
    }
    return mr;
}

void *verbs_test::alloc(size_t len, uint8_t fill)
{
    void *p = nullptr;

    EXPECT_EQ(0, posix_memalign(&p, 64, len ? len : 1));
    memset(p, fill, len);
    m_bufs.push_back(p);
    return p;
}

ibv_ah *verbs_test::make_ah(tdev_t &d, const srq_verbs_port_addr_t &to)
{
    ibv_ah_attr attr;
    ibv_ah *ah;

    EXPECT_EQ(0, srq_verbs_ah_attr(d.dev, 1, &to, &attr));
    ah = srq_verbs_create_ah(d.dev, d.pd, &attr);
    EXPECT_NE(nullptr, ah) << strerror(errno);
    if (ah != nullptr) {
        srq_verbs_dev_t *dev = d.dev;
        m_cleanup.push_back([dev, ah]() {
            EXPECT_EQ(0, srq_verbs_destroy_ah(dev, ah));
        });
    }
    return ah;
}

static void qp_init(srq_verbs_dev_t *dev, ibv_qp *qp, int access)
{
    ibv_qp_attr a = {};

    a.qp_state        = IBV_QPS_INIT;
    a.pkey_index      = 0;
    a.port_num        = 1;
    a.qp_access_flags = access;
    ASSERT_EQ(0, srq_verbs_modify_qp(dev, qp, &a,
                                     IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
}

static void qp_rtr(srq_verbs_dev_t *dev, ibv_qp *qp,
                   const srq_verbs_port_addr_t &peer, uint32_t dest_qpn,
                   const conn_opts_t &o)
{
    ibv_qp_attr a = {};

    a.qp_state           = IBV_QPS_RTR;
    a.path_mtu           = IBV_MTU_1024;
    a.dest_qp_num        = dest_qpn;
    a.rq_psn             = 0;
    a.max_dest_rd_atomic = o.max_dest_rd_atomic;
    a.min_rnr_timer      = o.min_rnr_timer;
    ASSERT_EQ(0, srq_verbs_ah_attr(dev, 1, &peer, &a.ah_attr));
    if (o.lid_only) {
        a.ah_attr.is_global = 0;
    }
    ASSERT_EQ(0, srq_verbs_modify_qp(dev, qp, &a,
                                     IBV_QP_STATE | IBV_QP_AV |
                                     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                     IBV_QP_MIN_RNR_TIMER));
}

static void qp_rts(srq_verbs_dev_t *dev, ibv_qp *qp, const conn_opts_t &o)
{
    ibv_qp_attr a = {};

    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = o.timeout;
    a.retry_cnt     = o.retry_cnt;
    a.rnr_retry     = o.rnr_retry;
    a.sq_psn        = 0;
    a.max_rd_atomic = o.max_rd_atomic;
    ASSERT_EQ(0, srq_verbs_modify_qp(dev, qp, &a,
                                     IBV_QP_STATE | IBV_QP_TIMEOUT |
                                     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
}

void verbs_test::rc_to_rts(tdev_t &d, ibv_qp *qp,
                           const srq_verbs_port_addr_t &peer,
                           uint32_t dest_qpn, const conn_opts_t &o)
{
    qp_init(d.dev, qp, o.access);
    qp_rtr(d.dev, qp, peer, dest_qpn, o);
    qp_rts(d.dev, qp, o);
}

void verbs_test::connect_rc(tdev_t &da, ibv_qp *a, tdev_t &db, ibv_qp *b,
                            const conn_opts_t &o)
{
    qp_init(da.dev, a, o.access);
    qp_init(db.dev, b, o.access);
    qp_rtr(da.dev, a, db.addr, b->qp_num, o);
    qp_rtr(db.dev, b, da.addr, a->qp_num, o);
    qp_rts(da.dev, a, o);
    qp_rts(db.dev, b, o);
}

void verbs_test::ud_to_rts(tdev_t &d, ibv_qp *qp, uint32_t qkey)
{
    ibv_qp_attr a = {};

    a.qp_state   = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num   = 1;
    a.qkey       = qkey;
    ASSERT_EQ(0, srq_verbs_modify_qp(d.dev, qp, &a,
                                     IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                     IBV_QP_PORT | IBV_QP_QKEY));
    a.qp_state = IBV_QPS_RTR;
    ASSERT_EQ(0, srq_verbs_modify_qp(d.dev, qp, &a, IBV_QP_STATE));
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn   = 0;
    ASSERT_EQ(0, srq_verbs_modify_qp(d.dev, qp, &a,
                                     IBV_QP_STATE | IBV_QP_SQ_PSN));
}

ibv_qp_state verbs_test::qp_state(tdev_t &d, ibv_qp *qp)
{
    ibv_qp_attr a = {};
    ibv_qp_init_attr ia = {};

    EXPECT_EQ(0, srq_verbs_query_qp(d.dev, qp, &a, IBV_QP_STATE, &ia));
    return a.qp_state;
}

void verbs_test::pump_once()
{
    ibv_wc wc;

    for (ibv_cq *cq : m_cqs) {
        ibv_poll_cq(cq, 0, &wc);
    }
}

void verbs_test::pump(int ms)
{
    uint64_t end = now_ms() + ms;

    while (now_ms() < end) {
        pump_once();
        usleep(100);
    }
}

int verbs_test::poll(ibv_cq *cq, int n, ibv_wc *wc, int timeout_ms)
{
    uint64_t end = now_ms() + timeout_ms;
    int got = 0, ret;

    while (got < n) {
        ret = ibv_poll_cq(cq, n - got, wc + got);
        if (ret < 0) {
            return ret;
        }
        got += ret;
        if (got == n) {
            break;
        }
        if (now_ms() > end) {
            break;
        }
        pump_once();
    }
    return got;
}

void verbs_test::check_traffic_flows(tdev_t &a, tdev_t &b, int count)
{
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);
    char *buf = (char*)alloc(64, 'k');
    ibv_mr *mra = reg(a, buf, 64, 0);
    ibv_mr *mrb = reg(b, buf, 64, IBV_ACCESS_LOCAL_WRITE);

    connect_rc(a, qa, b, qb);
    for (int i = 0; i < count; ++i) {
        ASSERT_EQ(0, post_recv(qb, buf, 64, mrb->lkey, i));
        ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, buf, 8, mra->lkey, i));
        ASSERT_EQ(IBV_WC_SUCCESS, poll1(cqb).status);
        ASSERT_EQ(IBV_WC_SUCCESS, poll1(cqa).status);
    }
}

ibv_wc verbs_test::poll1(ibv_cq *cq, int timeout_ms)
{
    ibv_wc wc = {};

    wc.status = IBV_WC_GENERAL_ERR;
    wc.wr_id  = UINT64_MAX;
    EXPECT_EQ(1, poll(cq, 1, &wc, timeout_ms)) << "no completion";
    return wc;
}

ibv_wc verbs_test::poll1_alone(ibv_cq *cq, int timeout_ms)
{
    uint64_t end = now_ms() + timeout_ms;
    ibv_wc wc = {};
    int n;

    wc.status = IBV_WC_GENERAL_ERR;
    wc.wr_id  = UINT64_MAX;
    while (((n = ibv_poll_cq(cq, 1, &wc)) == 0) && (now_ms() < end)) {
    }
    EXPECT_EQ(1, n) << "no completion";
    return wc;
}

int verbs_test::post_send(ibv_qp *qp, ibv_wr_opcode op, void *buf,
                          uint32_t len, uint32_t lkey, uint64_t wr_id,
                          int flags, uint64_t raddr, uint32_t rkey,
                          uint32_t imm)
{
    ibv_sge sge = { (uint64_t)(uintptr_t)buf, len, lkey };
    ibv_send_wr wr = {}, *bad = nullptr;

    wr.wr_id               = wr_id;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.opcode              = op;
    wr.send_flags          = flags;
    wr.imm_data            = imm;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey        = rkey;
    return ibv_post_send(qp, &wr, &bad);
}

int verbs_test::post_ud_send(ibv_qp *qp, ibv_ah *ah, uint32_t qpn,
                             uint32_t qkey, void *buf, uint32_t len,
                             uint32_t lkey, uint64_t wr_id)
{
    ibv_sge sge = { (uint64_t)(uintptr_t)buf, len, lkey };
    ibv_send_wr wr = {}, *bad = nullptr;

    wr.wr_id             = wr_id;
    wr.sg_list           = &sge;
    wr.num_sge           = 1;
    wr.opcode            = IBV_WR_SEND;
    wr.send_flags        = IBV_SEND_SIGNALED;
    wr.wr.ud.ah          = ah;
    wr.wr.ud.remote_qpn  = qpn;
    wr.wr.ud.remote_qkey = qkey;
    return ibv_post_send(qp, &wr, &bad);
}

int verbs_test::post_recv(ibv_qp *qp, void *buf, uint32_t len, uint32_t lkey,
                          uint64_t wr_id)
{
    ibv_sge sge = { (uint64_t)(uintptr_t)buf, len, lkey };
    ibv_recv_wr wr = {}, *bad = nullptr;

    wr.wr_id   = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_recv(qp, &wr, &bad);
}

int verbs_test::post_srq_recv(ibv_srq *srq, void *buf, uint32_t len,
                              uint32_t lkey, uint64_t wr_id)
{
    ibv_sge sge = { (uint64_t)(uintptr_t)buf, len, lkey };
    ibv_recv_wr wr = {}, *bad = nullptr;

    wr.wr_id   = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_srq_recv(srq, &wr, &bad);
}

pid_t verbs_test::fork_child(const std::function<int()> &body)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        int rc = 99;
        try {
            rc = body();
        } catch (...) {
        }
        _exit(rc);
    }
    EXPECT_GT(pid, 0);
    if (pid > 0) {
        m_children.push_back(pid);
    }
    return pid;
}

/* exit status of the child, or -1 on timeout/signal */
int verbs_test::wait_child(pid_t pid, int timeout_ms)
{
    uint64_t end = now_ms() + timeout_ms;
    int status;

    while (now_ms() < end) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            for (auto it = m_children.begin(); it != m_children.end(); ++it) {
                if (*it == pid) {
                    m_children.erase(it);
                    break;
                }
            }
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        usleep(1000);
    }
    return -1;
}

} // namespace srq_test
