/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: IB atomics on RC (IBV_WR_ATOMIC_FETCH_AND_ADD,
 * IBV_WR_ATOMIC_CMP_AND_SWP): the original value and the new one; exact
 * results when requester QPs, the target's CPU and another process add to
 * one word at once; the completion errors of a bad rkey, an MR or a QP
 * without remote atomics, an address out of bounds; the post-time checks
 * (scatter list of 8 bytes, aligned address, RC only); a misaligned request
 * refused by the responder; a duplicate request answered from the replay
 * cache, never executed twice.
 *
 * The tests of what the soft device decides where the IB spec leaves a
 * choice (post-time EINVAL as rxe, packet injection) run on soft0 only.
 */
#include "verbs_fixture.h"

extern "C" {
#include "verbs/soft/fabric/soft_pkt.h"
}

#include <algorithm>
#include <atomic>
#include <poll.h>
#include <set>
#include <string.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace srq_test;

namespace {

const int kQpAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
const int kTargetAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
const size_t kBufLen = 64 * 1024;

int post_atomic(ibv_qp *qp, ibv_wr_opcode op, ibv_sge *sge, int nsge,
                uint64_t raddr, uint32_t rkey, uint64_t cmp_add,
                uint64_t swap, uint64_t wr_id, int flags = IBV_SEND_SIGNALED)
{
    ibv_send_wr wr = {}, *bad = nullptr;

    wr.wr_id                 = wr_id;
    wr.sg_list               = sge;
    wr.num_sge               = nsge;
    wr.opcode                = op;
    wr.send_flags            = flags;
    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey        = rkey;
    wr.wr.atomic.compare_add = cmp_add;
    wr.wr.atomic.swap        = swap;
    return ibv_post_send(qp, &wr, &bad);
}

/* A requester in another process: @count fetch-adds of 1 to the word the
 * parent describes, at most 16 in flight; the original values go back
 * through @wfd. Exit status 0 when every one succeeded. */
int fadd_child(const std::string &name, int rfd, int wfd, int count)
{
    srq_verbs_dev_t *dev;
    peer_info_t me{}, peer{};
    ibv_qp_attr a;
    ibv_wc wc[16];
    int posted = 0, done = 0, rc = 0, n;

    if (srq_verbs_open(name.c_str(), &dev) != 0) {
        return 10;
    }
    ibv_pd *pd = srq_verbs_alloc_pd(dev);
    ibv_cq *cq = srq_verbs_create_cq(dev, 256, nullptr, nullptr, 0);
    std::vector<uint64_t> res(count, ~0ull);
    ibv_mr *mr = srq_verbs_reg_mr(dev, pd, res.data(), count * 8,
                                  IBV_ACCESS_LOCAL_WRITE);
    ibv_qp_init_attr init = {};
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = init.cap.max_recv_wr = 64;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    ibv_qp *qp = (pd && cq && mr) ? srq_verbs_create_qp(dev, pd, &init) :
                                    nullptr;
    if (qp == nullptr) {
        return 11;
    }
    srq_verbs_port_addr(dev, 1, &me.addr);
    me.qpn = qp->qp_num;
    if (!write_full(wfd, &me, sizeof(me)) ||
        !read_full(rfd, &peer, sizeof(peer))) {
        return 12;
    }

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = kQpAccess;
    rc |= srq_verbs_modify_qp(dev, qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                              IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = peer.qpn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 1;
    rc |= srq_verbs_ah_attr(dev, 1, &peer.addr, &a.ah_attr);
    rc |= srq_verbs_modify_qp(dev, qp, &a, IBV_QP_STATE | IBV_QP_AV |
                              IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                              IBV_QP_MIN_RNR_TIMER);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 16;
    rc |= srq_verbs_modify_qp(dev, qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
                              IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                              IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc != 0) {
        return 13;
    }

    uint64_t end = now_ms() + 20000;
    while ((done < count) && (now_ms() < end)) {
        while ((posted < count) && (posted - done < 32)) {
            ibv_sge sge = { (uintptr_t)&res[posted], 8, mr->lkey };
            if (post_atomic(qp, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, 1,
                            peer.buf, peer.rkey, 1, 0, posted) != 0) {
                return 14;
            }
            ++posted;
        }
        n = ibv_poll_cq(cq, 16, wc);
        for (int i = 0; i < n; ++i) {
            if ((wc[i].status != IBV_WC_SUCCESS) ||
                (wc[i].opcode != IBV_WC_FETCH_ADD)) {
                return 15;
            }
        }
        done += (n > 0) ? n : 0;
    }
    if ((done < count) || !write_full(wfd, res.data(), count * 8)) {
        return 16;
    }
    srq_verbs_destroy_qp(dev, qp);
    srq_verbs_dereg_mr(dev, mr);
    srq_verbs_destroy_cq(dev, cq);
    srq_verbs_dealloc_pd(dev, pd);
    srq_verbs_close(dev);
    return 0;
}

} // namespace

class atomic : public two_dev_test {
protected:
    void SetUp() override
    {
        two_dev_test::SetUp();
        if (IsSkipped()) {
            return;
        }
        ibv_device_attr dattr;
        ASSERT_EQ(0, srq_verbs_query_device(a->dev, &dattr));
        if (is_soft()) {
            ASSERT_EQ(IBV_ATOMIC_HCA, dattr.atomic_cap); /* never skipped */
        } else if (dattr.atomic_cap == IBV_ATOMIC_NONE) {
            GTEST_SKIP() << "the device reports no atomics";
        }
        res    = (uint64_t*)alloc(kBufLen);
        target = (uint64_t*)alloc(kBufLen);
        lmr    = reg(*a, res, kBufLen, IBV_ACCESS_LOCAL_WRITE);
        tmr    = reg(*b, target, kBufLen, kTargetAccess);
    }

    /* qpa (device a) <-> qpb (device b), @depth atomics in flight */
    void pair(int access = kQpAccess, uint8_t depth = 16)
    {
        qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 256);
        qpb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        connect_rc(*a, qpa, *b, qpb, opts(access, depth));
    }

    static conn_opts_t opts(int access, uint8_t depth)
    {
        conn_opts_t o;

        o.access             = access;
        o.max_rd_atomic      = depth;
        o.max_dest_rd_atomic = depth;
        return o;
    }

    /* One atomic from qpa, its original value to res[0]: the completion */
    ibv_wc run(ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
               uint64_t cmp_add, uint64_t swap = 0)
    {
        ibv_sge sge = { (uintptr_t)res, 8, lmr->lkey };

        res[0] = 0xdeadbeefull;
        EXPECT_EQ(0, post_atomic(qpa, op, &sge, 1, raddr, rkey, cmp_add, swap,
                                 77));
        return poll1(scqa);
    }

    int post_one(ibv_qp *qp, uint32_t len, uint64_t raddr, int flags = 0)
    {
        ibv_sge sge = { (uintptr_t)res, len, lmr->lkey };

        return post_atomic(qp, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, 1, raddr,
                           tmr->rkey, 1, 0, 1, IBV_SEND_SIGNALED | flags);
    }

    srq_soft_stats_t stats(tdev_t &d)
    {
        srq_soft_stats_t st{};
        EXPECT_EQ(0, srq_soft_query_stats(d.dev, &st));
        return st;
    }

    /* An atomic request as qpa's requester would send it, put straight
     * into b's inbound queue */
    void inject(uint8_t opcode, uint32_t psn, uint64_t raddr, uint64_t add)
    {
        struct {
            srq_soft_pkt_t        h;
            srq_soft_pkt_atomic_t a;
        } pkt = {};

        pkt.h.opcode        = opcode;
        pkt.h.dst_qpn       = qpb->qp_num;
        pkt.h.src_qpn       = qpa->qp_num;
        pkt.h.psn           = psn;
        pkt.h.length        = 8;
        pkt.a.addr          = raddr;
        pkt.a.compare_add   = add;
        pkt.a.rkey          = tmr->rkey;
        ASSERT_EQ(0, srq_soft_test_instance(a->dev, pkt.h.src_inst));
        ASSERT_EQ(0, srq_soft_inject(a->dev, b->dev, &pkt, sizeof(pkt),
                                     SRQ_SOFT_INJECT_FRAME));
    }

    uint64_t *res = nullptr, *target = nullptr;
    ibv_mr *lmr = nullptr, *tmr = nullptr;
    ibv_qp *qpa = nullptr, *qpb = nullptr;
};

TEST_P(atomic, fetch_add)
{
    pair();
    target[0] = 100;
    ibv_wc wc = run(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)target,
                    tmr->rkey, 5);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_FETCH_ADD, wc.opcode);
    EXPECT_EQ(8u, wc.byte_len);
    EXPECT_EQ(77u, wc.wr_id);
    EXPECT_EQ(100u, res[0]);
    EXPECT_EQ(105u, target[0]);

    /* 64-bit: the carry crosses into the upper half; and it wraps */
    target[1] = 0xffffffffull;
    wc = run(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)&target[1], tmr->rkey,
             1);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0xffffffffull, res[0]);
    EXPECT_EQ(0x100000000ull, target[1]);
    wc = run(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)target, tmr->rkey,
             (uint64_t)-106);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(105u, res[0]);
    EXPECT_EQ(~0ull, target[0]);
}

TEST_P(atomic, cmp_swap)
{
    pair();
    target[0] = 105;
    ibv_wc wc = run(IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)target, tmr->rkey,
                    105, 7);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_COMP_SWAP, wc.opcode);
    EXPECT_EQ(8u, wc.byte_len);
    EXPECT_EQ(105u, res[0]);
    EXPECT_EQ(7u, target[0]);

    /* compare fails: nothing written, the current value returned */
    wc = run(IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)target, tmr->rkey, 1, 9);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, res[0]);
    EXPECT_EQ(7u, target[0]);

    /* all 64 bits are compared */
    target[0] = 0x100000007ull;
    wc = run(IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)target, tmr->rkey, 7, 9);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0x100000007ull, res[0]);
    EXPECT_EQ(0x100000007ull, target[0]);
    wc = run(IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)target, tmr->rkey,
             0x100000007ull, 0xfedcba9876543210ull);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0xfedcba9876543210ull, target[0]);
}

/*
 * Fetch-adds of 1 to one word at once from: two requester QPs on two other
 * devices (one with 16 atomics in flight, one with 1), the target process's
 * own CPU (a thread, while the responder executes in this one) and, on the
 * soft device, a requester in another process. The word ends at the
 * number of adds and no two device atomics saw the same original value:
 * none lost, none executed twice.
 */
TEST_P(atomic, concurrent_fetch_adds_exact)
{
    const int kPerQp = 2000, kChild = 500;
    const bool with_child = is_soft();
    tdev_t &c = open_dev();
    ibv_cq *scqc = make_cq(c, 256);
    uint64_t *resc = (uint64_t*)alloc(kPerQp * 8);
    ibv_mr *lmrc = reg(c, resc, kPerQp * 8, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp *qpc = make_qp(c, IBV_QPT_RC, scqc, scqc, nullptr, 256);
    ibv_qp *qpb2 = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    std::vector<uint64_t> originals;
    int p2c[2] = {-1, -1}, c2p[2] = {-1, -1};
    pid_t child = -1;

    ASSERT_LE((size_t)kPerQp * 8, kBufLen);
    pair(kQpAccess, 16);
    connect_rc(c, qpc, *b, qpb2, opts(kQpAccess, 1));
    target[0] = 0;

    if (with_child) {
        ASSERT_EQ(0, pipe(p2c));
        ASSERT_EQ(0, pipe(c2p));
        m_cleanup.push_back([p2c, c2p]() {
            close(p2c[0]); close(p2c[1]); close(c2p[0]); close(c2p[1]);
        });
        std::string name = GetParam();
        child = fork_child([&]() {
            return fadd_child(name, p2c[0], c2p[1], kChild);
        });
        ASSERT_GT(child, 0);
        peer_info_t ci{}, me{};
        ASSERT_TRUE(read_full(c2p[0], &ci, sizeof(ci)));
        ibv_qp *qpb3 = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
        rc_to_rts(*b, qpb3, ci.addr, ci.qpn, opts(kQpAccess, 16));
        me.addr = b->addr;
        me.qpn  = qpb3->qp_num;
        me.rkey = tmr->rkey;
        me.buf  = (uintptr_t)target;
        ASSERT_TRUE(write_full(p2c[1], &me, sizeof(me)));
    }

    /* the target's CPU adds for as long as the device does; it has added
     * again each time a batch of device atomics is posted (not left to the
     * scheduler: on a loaded machine the thread could otherwise run only
     * before or after the device's few milliseconds) */
    uint64_t cpu_adds = 0, cpu_first = 0, cpu_last = 0;
    std::atomic<bool> go{false}, stop{false};
    std::atomic<uint64_t> cpu_progress{0};
    std::thread cpu([&]() {
        while (!go.load()) {
        }
        cpu_first = __atomic_fetch_add(&target[0], 1, __ATOMIC_SEQ_CST);
        for (cpu_adds = 1; !stop.load(); ++cpu_adds) {
            cpu_progress.store(cpu_adds);
            cpu_last = __atomic_fetch_add(&target[0], 1, __ATOMIC_SEQ_CST);
        }
    });
    uint64_t cpu_seen = 0;
    auto cpu_added_again = [&]() {
        while (cpu_progress.load() == cpu_seen) {
            std::this_thread::yield();
        }
        cpu_seen = cpu_progress.load();
    };

    struct req_t {
        ibv_qp *qp; ibv_cq *cq; uint64_t *res; uint32_t lkey;
        int posted, done;
    } reqs[2] = { { qpa, scqa, res, lmr->lkey, 0, 0 },
                  { qpc, scqc, resc, lmrc->lkey, 0, 0 } };
    bool child_done = !with_child;
    uint64_t end = now_ms() + 30000;
    ibv_wc wc[16];

    go = true;
    while ((reqs[0].done < kPerQp || reqs[1].done < kPerQp || !child_done) &&
           (now_ms() < end)) {
        for (req_t &r : reqs) {
            if ((r.posted < kPerQp) && (r.posted - r.done < 64)) {
                cpu_added_again();
            }
            while ((r.posted < kPerQp) && (r.posted - r.done < 64)) {
                ibv_sge sge = { (uintptr_t)&r.res[r.posted], 8, r.lkey };
                ASSERT_EQ(0, post_atomic(r.qp, IBV_WR_ATOMIC_FETCH_AND_ADD,
                                         &sge, 1, (uintptr_t)target,
                                         tmr->rkey, 1, 0, r.posted));
                ++r.posted;
            }
            int n = ibv_poll_cq(r.cq, 16, wc);
            ASSERT_GE(n, 0);
            for (int i = 0; i < n; ++i) {
                ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status);
                ASSERT_EQ(IBV_WC_FETCH_ADD, wc[i].opcode);
            }
            r.done += n;
        }
        pump_once(); /* b's responder */
        if (!child_done) {
            pollfd pfd = { c2p[0], POLLIN, 0 };
            if (::poll(&pfd, 1, 0) == 1) {
                std::vector<uint64_t> co(kChild);
                ASSERT_TRUE(read_full(c2p[0], co.data(), kChild * 8));
                originals.insert(originals.end(), co.begin(), co.end());
                child_done = true;
            }
        }
    }
    stop = true;
    cpu.join();
    ASSERT_EQ(kPerQp, reqs[0].done);
    ASSERT_EQ(kPerQp, reqs[1].done);
    ASSERT_TRUE(child_done) << "the child's requester did not finish";
    if (with_child) {
        EXPECT_EQ(0, wait_child(child));
    }

    originals.insert(originals.end(), res, res + kPerQp);
    originals.insert(originals.end(), resc, resc + kPerQp);
    /* they did run at the same time: the CPU's values interleave */
    uint64_t dev_min = *std::min_element(originals.begin(), originals.end());
    uint64_t dev_max = *std::max_element(originals.begin(), originals.end());
    EXPECT_LT(cpu_first, dev_max);
    EXPECT_GT(cpu_last, dev_min);

    /* nothing lost, nothing twice */
    const uint64_t total = originals.size() + cpu_adds;
    RecordProperty("cpu_adds", std::to_string(cpu_adds));
    EXPECT_EQ(total, target[0]);
    std::set<uint64_t> seen(originals.begin(), originals.end());
    EXPECT_EQ(originals.size(), seen.size())
        << "an original value returned twice";
    EXPECT_LT(dev_max, total);
}

TEST_P(atomic, bad_rkey_rem_access_err)
{
    pair();
    target[0] = 3;
    ibv_wc wc = run(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)target,
                    tmr->rkey ^ 0x10000, 1); /* another generation */
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(3u, target[0]);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*a, qpa));
}

TEST_P(atomic, mr_without_remote_atomic_rem_access_err)
{
    uint64_t *other = (uint64_t*)alloc(64);
    ibv_mr *mr = reg(*b, other, 64, IBV_ACCESS_LOCAL_WRITE |
                                    IBV_ACCESS_REMOTE_WRITE |
                                    IBV_ACCESS_REMOTE_READ);
    pair();
    other[0] = 3;
    ibv_wc wc = run(IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)other, mr->rkey, 3,
                    4);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(3u, other[0]);
}

TEST_P(atomic, out_of_bounds_rem_access_err)
{
    uint64_t *last = &target[kBufLen / 8 - 1];

    pair();
    *last = 1; /* the last word is inside */
    ibv_wc wc = run(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)last, tmr->rkey,
                    1);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(2u, *last);
    wc = run(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)(last + 1), tmr->rkey,
             1);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
}

/* The original value is written locally: the scatter list's MR must
 * grant local write. The key is checked when the response lands, as an
 * HCA checks it: the responder has executed the atomic by then */
TEST_P(atomic, local_sge_needs_local_write)
{
    uint64_t *ro = (uint64_t*)alloc(64);
    ibv_mr *mr = reg(*a, ro, 64, 0);
    ibv_sge sge = { (uintptr_t)ro, 8, mr->lkey };

    pair();
    target[0] = 3;
    ro[0] = 42;
    ASSERT_EQ(0, post_atomic(qpa, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, 1,
                             (uintptr_t)target, tmr->rkey, 1, 0, 1));
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, poll1(scqa).status);
    EXPECT_EQ(42u, ro[0]);
    EXPECT_EQ(4u, target[0]) << "executed by the responder";

    /* a compare-and-swap whose local key names no region: the same */
    pair();
    ibv_sge bad = { (uintptr_t)res, 8, lmr->lkey + 0x1000 };
    ASSERT_EQ(0, post_atomic(qpa, IBV_WR_ATOMIC_CMP_AND_SWP, &bad, 1,
                             (uintptr_t)target, tmr->rkey, 4, 9, 2));
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, poll1(scqa).status);
    EXPECT_EQ(9u, target[0]) << "executed by the responder";
}

TEST_P(atomic, qp_without_remote_atomic_rem_inv_req_err)
{
    SRQ_SKIP_UNLESS_SOFT(); /* rxe's answer; the IB spec leaves the class open */
    pair(kQpAccess & ~IBV_ACCESS_REMOTE_ATOMIC);
    target[0] = 3;
    ibv_wc wc = run(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)target,
                    tmr->rkey, 1);
    EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status);
    EXPECT_EQ(3u, target[0]);
}

/* What mlx5's library checks is refused at post time (inline); what the
 * HCA finds is posted and completes in error, as mlx5 reports it: a
 * scatter list that is not 8 bytes (IBV_WC_LOC_LEN_ERR, at the
 * requester), a misaligned target (IBV_WC_REM_INV_REQ_ERR, the
 * responder's); the target untouched, the QP in error */
TEST_P(atomic, post_time_checks)
{
    SRQ_SKIP_UNLESS_SOFT(); /* the device's statuses, on soft0 */
    pair();
    ibv_sge sge[2] = { { (uintptr_t)res, 4, lmr->lkey },
                       { (uintptr_t)res + 4, 4, lmr->lkey } };
    ibv_wc wc;

    EXPECT_EQ(EINVAL, post_one(qpa, 8, (uintptr_t)target, IBV_SEND_INLINE))
        << "inline";
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*a, qpa));
    EXPECT_EQ(0, poll(scqa, 1, &wc, 50)) << "a refused WR completes";

    struct { uint32_t len; int nsge; uint64_t off; ibv_wc_status st;
             const char *what; } bad[] = {
        { 4,  1, 0, IBV_WC_LOC_LEN_ERR,     "4 bytes" },
        { 16, 1, 0, IBV_WC_LOC_LEN_ERR,     "16 bytes" },
        { 8,  0, 0, IBV_WC_LOC_LEN_ERR,     "no scatter list" },
        { 8,  1, 4, IBV_WC_REM_INV_REQ_ERR, "misaligned" },
    };
    for (auto &c : bad) {
        if (&c != bad) {
            pair(); /* the last one took its QPs down */
        }
        ibv_sge one = { (uintptr_t)res, c.len, lmr->lkey };
        ASSERT_EQ(0, post_atomic(qpa, IBV_WR_ATOMIC_FETCH_AND_ADD, &one,
                                 c.nsge, (uintptr_t)target + c.off,
                                 tmr->rkey, 1, 0, 1)) << c.what;
        wc = poll1(scqa);
        EXPECT_EQ(c.st, wc.status) << c.what;
        EXPECT_EQ(1u, wc.wr_id) << c.what;
        EXPECT_EQ(IBV_QPS_ERR, qp_state(*a, qpa)) << c.what;
        EXPECT_EQ(0u, target[0]) << c.what;
        EXPECT_EQ(0u, target[1]) << c.what;
    }

    pair();

    /* 8 bytes in two pieces are fine: the original value is scattered */
    target[0] = 0x1122334455667788ull;
    ASSERT_EQ(0, post_atomic(qpa, IBV_WR_ATOMIC_FETCH_AND_ADD, sge, 2,
                             (uintptr_t)target, tmr->rkey, 1, 0, 2));
    ASSERT_EQ(IBV_WC_SUCCESS, poll1(scqa).status);
    EXPECT_EQ(0x1122334455667788ull, res[0]);
    EXPECT_EQ(0x1122334455667789ull, target[0]);
}

TEST_P(atomic, ud_qp_fails_as_its_completion)
{
    SRQ_SKIP_UNLESS_SOFT();
    ibv_qp *ud = make_qp(*a, IBV_QPT_UD, scqa, rcqa);
    ud_to_rts(*a, ud, 0x11);
    ibv_ah *ah = make_ah(*a, b->addr);
    ibv_sge sge = { (uintptr_t)res, 8, lmr->lkey };
    ibv_send_wr wr = {}, *bad = nullptr;

    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.opcode     = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah   = ah;
    wr.wr.ud.remote_qpn  = 1;
    wr.wr.ud.remote_qkey = 0x11;
    /* posted, as mlx5 posts it; the device fails it */
    ASSERT_EQ(0, ibv_post_send(ud, &wr, &bad));
    EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, poll1(scqa).status);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*a, ud));
}

/* A misaligned request never passes the requester's post check; one that
 * arrives anyway (a foreign or broken requester) is refused by the
 * responder: invalid request, its QP in error, memory untouched */
TEST_P(atomic, misaligned_request_refused_by_responder)
{
    SRQ_SKIP_UNLESS_SOFT();
    pair();
    target[0] = 5;
    target[1] = 0;
    /* psn 0 of the connection, well formed: executed (the control) */
    inject(SRQ_SOFT_OP_FETCH_ADD, 0, (uintptr_t)target, 1);
    pump(20);
    ASSERT_EQ(6u, target[0]);
    ASSERT_EQ(IBV_QPS_RTS, qp_state(*b, qpb));

    inject(SRQ_SOFT_OP_FETCH_ADD, 1, (uintptr_t)target + 4, 1);
    pump(20);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(*b, qpb));
    EXPECT_EQ(6u, target[0]);
    EXPECT_EQ(0u, target[1]);
}

/* The requester keeps at most max_rd_atomic atomics in flight: with 1,
 * eight posted atomics reach the target one at a time */
TEST_P(atomic, max_rd_atomic_bounds_in_flight)
{
    SRQ_SKIP_UNLESS_SOFT(); /* counts the target's packets */
    still(*a); /* each takes in only what it polls for */
    still(*b);
    pair(kQpAccess, 1);
    ibv_wc wc[8];

    for (int i = 0; i < 8; ++i) {
        ibv_sge sge = { (uintptr_t)&res[i], 8, lmr->lkey };
        ASSERT_EQ(0, post_atomic(qpa, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, 1,
                                 (uintptr_t)target, tmr->rkey, 1, 0, i));
    }
    for (int i = 0; i < 8; ++i) {
        uint64_t before = stats(*b).rx_packets;
        ibv_poll_cq(scqb, 0, wc); /* b drains what reached it */
        EXPECT_EQ(before + 1, stats(*b).rx_packets) << "round " << i;
        ASSERT_EQ(IBV_WC_SUCCESS, poll1_alone(scqa).status);
    }
    EXPECT_EQ(8u, target[0]);
}

/* Results the requester's full queue cannot take yet are held and sent
 * as soon as it has room, oldest first, without the requester having to
 * retransmit (which would show as duplicates at the target) */
TEST_P(atomic, results_held_while_requester_queue_full)
{
    SRQ_SKIP_UNLESS_SOFT(); /* fills a queue by injection */
    conn_opts_t o = opts(kQpAccess, 16);
    o.timeout = 16; /* ~270 ms: a retransmission is a failure here */
    qpa = make_qp(*a, IBV_QPT_RC, scqa, rcqa, nullptr, 256);
    qpb = make_qp(*b, IBV_QPT_RC, scqb, rcqb);
    connect_rc(*a, qpa, *b, qpb, o);

    /* fill a's inbound queue with frames it drops, to the last cell */
    std::vector<uint8_t> junk(64 * 1024);
    size_t len = junk.size(), frames = 0;
    ((srq_soft_pkt_t*)junk.data())->opcode = 0x7f;
    while (len >= sizeof(srq_soft_pkt_t)) {
        int ret = srq_soft_inject(b->dev, a->dev, junk.data(), len,
                                  SRQ_SOFT_INJECT_FRAME);
        if (ret == EAGAIN) {
            len /= 2;
            continue;
        }
        ASSERT_EQ(0, ret);
        ++frames;
    }
    ASSERT_GT(frames, 16u);

    const int kN = 4;
    for (int i = 0; i < kN; ++i) {
        ibv_sge sge = { (uintptr_t)&res[i], 8, lmr->lkey };
        ASSERT_EQ(0, post_atomic(qpa, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, 1,
                                 (uintptr_t)target, tmr->rkey, 1, 0, i));
    }
    /* b executes them; their results find no room at a. A post that found
     * a's device taken (its progress thread) left them on the doorbell,
     * sent when the thread lets go: b polls until they are in */
    ibv_wc wc[kN];
    for (uint64_t end = now_ms() + 5000;
         (__atomic_load_n(&target[0], __ATOMIC_RELAXED) != (uint64_t)kN) &&
         (now_ms() < end);) {
        ibv_poll_cq(scqb, 0, wc);
    }
    ASSERT_EQ((uint64_t)kN, target[0]);
    uint64_t dup_before = stats(*b).rx_out_of_seq;

    /* a drains the junk, b sends what it held */
    ASSERT_EQ(kN, poll(scqa, kN, wc));
    std::set<uint64_t> seen;
    for (int i = 0; i < kN; ++i) {
        EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
        EXPECT_EQ((uint64_t)i, wc[i].wr_id);
        seen.insert(res[i]);
    }
    EXPECT_EQ((size_t)kN, seen.size());
    EXPECT_EQ((uint64_t)kN - 1, *seen.rbegin());
    EXPECT_EQ((uint64_t)kN, target[0]);
    EXPECT_EQ(dup_before, stats(*b).rx_out_of_seq) << "retransmitted";
}

/* A retransmitted atomic (same PSN) is answered from the replay cache and
 * not executed again (IB spec) */
TEST_P(atomic, duplicate_not_executed_twice)
{
    SRQ_SKIP_UNLESS_SOFT();
    pair();
    target[0] = 0;
    ibv_wc wc = run(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)target,
                    tmr->rkey, 5); /* psn 0 */
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    ASSERT_EQ(5u, target[0]);

    uint64_t dup_before = stats(*b).rx_out_of_seq;
    uint64_t rx_before  = stats(*a).rx_packets;
    inject(SRQ_SOFT_OP_FETCH_ADD, 0, (uintptr_t)target, 5);
    pump(20);
    EXPECT_EQ(dup_before + 1, stats(*b).rx_out_of_seq);
    EXPECT_EQ(5u, target[0]) << "a duplicate was executed";
    /* the kept result went back (and the ACK behind it) */
    EXPECT_GE(stats(*a).rx_packets, rx_before + 2);
    EXPECT_EQ(IBV_QPS_RTS, qp_state(*b, qpb));

    /* the connection goes on in sequence */
    wc = run(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)target, tmr->rkey, 1);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(5u, res[0]);
    EXPECT_EQ(6u, target[0]);
}

SRQ_INSTANTIATE(atomic);
