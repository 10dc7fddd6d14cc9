/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance tests: shared fixture.
 *
 * Every test is parameterised over the devices srq_verbs_get_device_list()
 * reports (soft devices always included). When no rdma-core device exists
 * a placeholder parameter makes that visible as a skipped test.
 *
 * Tests talk to the device only through the srq_verbs_* control API and
 * the standard inline data-path verbs (ibv_post_send, ibv_poll_cq, ...).
 */
#ifndef SRQ_TEST_VERBS_FIXTURE_H_
#define SRQ_TEST_VERBS_FIXTURE_H_

#include <gtest/gtest.h>

extern "C" {
#include "verbs/srq_verbs.h"
#include "verbs/soft/device/soft_test_hooks.h"
#include "verbs/soft/srq_soft_api.h"
}

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/types.h>

namespace srq_test {

extern const char *const kNoRdmaDevice;

std::vector<std::string> device_params();
std::string param_name(const ::testing::TestParamInfo<std::string> &info);

uint64_t now_ms();
uint64_t now_us();

/* An opened device with a protection domain */
struct tdev_t {
    srq_verbs_dev_t *dev = nullptr;
    ibv_pd          *pd  = nullptr;
    srq_verbs_port_addr_t addr{};
};

struct conn_opts_t {
    uint8_t  min_rnr_timer = 1;   /* 0.01 ms */
    uint8_t  rnr_retry     = 7;
    uint8_t  retry_cnt     = 7;
    uint8_t  timeout       = 14;  /* ~67 ms */
    int      access        = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ;
    bool     lid_only      = false; /* address the peer by LID, no GRH */
    uint8_t  max_rd_atomic      = 1;  /* RDMA reads/atomics in flight */
    uint8_t  max_dest_rd_atomic = 1;
};

class verbs_test : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override;
    void TearDown() override;

    bool is_soft() const;

    /* @d (a soft device) stops answering for itself: it moves only when
     * polled, for the tests of what a peer sees while it does not run.
     * Before any completion channel of @d */
    void still(tdev_t &d);

    /* objects are destroyed in reverse order of creation in TearDown */
    tdev_t &open_dev();
    ibv_cq *make_cq(tdev_t &d, int cqe = 256,
                    ibv_comp_channel *ch = nullptr);
    /* An extended CQ of @d, destroyed in TearDown; nullptr and errno set
     * if the device refuses @attr */
    ibv_cq_ex *make_cq_ex(tdev_t &d, ibv_cq_init_attr_ex &attr);
    ibv_comp_channel *make_channel(tdev_t &d);
    ibv_srq *make_srq(tdev_t &d, uint32_t max_wr, uint32_t max_sge = 1);
    ibv_qp *make_qp(tdev_t &d, ibv_qp_type type, ibv_cq *scq, ibv_cq *rcq,
                    ibv_srq *srq = nullptr, uint32_t max_send_wr = 64,
                    uint32_t max_recv_wr = 64, uint32_t max_sge = 4,
                    uint32_t max_inline = 64, bool sig_all = false);
    ibv_mr *reg(tdev_t &d, void *buf, size_t len, int access);
    void *alloc(size_t len, uint8_t fill = 0);
    ibv_ah *make_ah(tdev_t &d, const srq_verbs_port_addr_t &to);
    /* destroy now, and not again in TearDown */
    void destroy_qp(tdev_t &d, ibv_qp *qp);

    /* RC: both QPs RESET -> INIT -> RTR -> RTS, pointing at each other */
    void connect_rc(tdev_t &da, ibv_qp *a, tdev_t &db, ibv_qp *b,
                    const conn_opts_t &o = conn_opts_t());
    void rc_to_rts(tdev_t &d, ibv_qp *qp, const srq_verbs_port_addr_t &peer,
                   uint32_t dest_qpn, const conn_opts_t &o);
    void ud_to_rts(tdev_t &d, ibv_qp *qp, uint32_t qkey);
    ibv_qp_state qp_state(tdev_t &d, ibv_qp *qp);
    /* A fresh RC connection from @a to @b carries @count messages, each
     * received and its send completed */
    void check_traffic_flows(tdev_t &a, tdev_t &b, int count);

    /* Poll @cq until @n completions arrived or @timeout_ms passed, driving
     * progress of every CQ this test created meanwhile */
    int poll(ibv_cq *cq, int n, ibv_wc *wc, int timeout_ms = 5000);
    ibv_wc poll1(ibv_cq *cq, int timeout_ms = 5000);
    /* One completion of @cq, polling @cq alone (no other CQ is pumped):
     * only @cq's device moves meanwhile */
    ibv_wc poll1_alone(ibv_cq *cq, int timeout_ms = 10000);
    /* Drive progress of every CQ for a while, taking no completions */
    void pump(int ms);
    void pump_once();

    int post_send(ibv_qp *qp, ibv_wr_opcode op, void *buf, uint32_t len,
                  uint32_t lkey, uint64_t wr_id, int flags = IBV_SEND_SIGNALED,
                  uint64_t raddr = 0, uint32_t rkey = 0, uint32_t imm = 0);
    /* UD: a signaled SEND of @len bytes to QP @qpn through @ah */
    int post_ud_send(ibv_qp *qp, ibv_ah *ah, uint32_t qpn, uint32_t qkey,
                     void *buf, uint32_t len, uint32_t lkey, uint64_t wr_id);
    int post_recv(ibv_qp *qp, void *buf, uint32_t len, uint32_t lkey,
                  uint64_t wr_id);
    /* @n messages at once from @qs to @qr, completed (test_soft.cc); UD:
     * through @ah with @qkey */
    void warm_send_queue(ibv_qp *qs, ibv_qp *qr, ibv_cq *cqs, ibv_cq *cqr,
                         char *sbuf, uint32_t lkey, char *rbuf,
                         uint32_t rkey, int n, ibv_ah *ah = nullptr,
                         uint32_t qkey = 0);
    int post_srq_recv(ibv_srq *srq, void *buf, uint32_t len, uint32_t lkey,
                      uint64_t wr_id);

    /* Fill the inbound queue of soft device @of (stopped: still()) with
     * padding frames from @from, to the last cell */
    void fill_queue(tdev_t &from, tdev_t &of);

    /* Child processes: killed and reaped in TearDown whatever happens */
    pid_t fork_child(const std::function<int()> &body);
    int wait_child(pid_t pid, int timeout_ms = 10000);

    std::vector<tdev_t*>               m_devs;
    std::vector<ibv_cq*>              m_cqs;
    std::vector<std::function<void()>> m_cleanup;
    std::vector<void*>                m_bufs;
    std::vector<pid_t>                m_children;
    std::set<ibv_qp*>                 m_destroyed;
};

/* Two device instances of this process, each with a send and a receive CQ:
 * the stage of the RC, SRQ and post-time tests */
class two_dev_test : public verbs_test {
protected:
    void SetUp() override
    {
        verbs_test::SetUp();
        if (IsSkipped()) {
            return;
        }
        a    = &open_dev();
        b    = &open_dev();
        scqa = make_cq(*a);
        rcqa = make_cq(*a);
        scqb = make_cq(*b);
        rcqb = make_cq(*b, rcqb_len);
    }

    int     rcqb_len = 256;
    tdev_t *a = nullptr, *b = nullptr;
    ibv_cq *scqa = nullptr, *rcqa = nullptr, *scqb = nullptr, *rcqb = nullptr;
};

/* A simple (addr, rkey, len, qpn, port address) record exchanged between
 * processes */
struct peer_info_t {
    srq_verbs_port_addr_t addr;
    uint32_t              qpn;
    uint32_t              rkey;
    uint64_t              buf;
    uint64_t              len;
    char                  seg_name[64];
};

bool write_full(int fd, const void *buf, size_t len);
bool read_full(int fd, void *buf, size_t len, int timeout_ms = 10000);

} // namespace srq_test

/* Skip the rest of the test (GTEST_SKIP returns from the function it is
 * in: it must be the test body) unless the device is the soft device
 * reached through the project's own API - soft0 as libibverbs shows it
 * (srq-run --verbs) is an rdma-core device, whose internals (statistics,
 * test hooks, segments) a test cannot reach */
#define SRQ_SKIP_UNLESS_SOFT() \
    do { \
        if (!is_soft()) { \
            GTEST_SKIP() << "soft-device specific"; \
        } \
    } while (0)

#define SRQ_INSTANTIATE(_suite) \
    INSTANTIATE_TEST_SUITE_P(dev, _suite, \
                             ::testing::ValuesIn(srq_test::device_params()), \
                             srq_test::param_name)

#endif
