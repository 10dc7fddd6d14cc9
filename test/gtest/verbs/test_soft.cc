/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device specifics: receive progress is O(1) in the number of
 * QPs, the inbound queue survives garbage, the segment is owner-only, a
 * thread waiting for the device's lock gives its CPU to the holder.
 */
#include "verbs_fixture.h"

extern "C" {
#include "verbs/soft/fabric/soft_pkt.h"
#include "verbs/soft/fabric/soft_shm.h"
}

#include <atomic>
#include <cstddef>
#include <pthread.h>
#include <random>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <thread>
#include <vector>

using namespace srq_test;

class soft : public verbs_test {
protected:
    void SetUp() override
    {
        verbs_test::SetUp();
        if (!IsSkipped()) {
            SRQ_SKIP_UNLESS_SOFT();
        }
    }

    void sends_while_device_held(ibv_qp_type type);

    srq_soft_stats_t stats(tdev_t &d)
    {
        srq_soft_stats_t st{};
        EXPECT_EQ(0, srq_soft_query_stats(d.dev, &st));
        return st;
    }

    /* QPs inspected by @polls empty polls, and by delivering one message */
    void measure(int idle_pairs, uint64_t *idle, uint64_t *one_msg)
    {
        tdev_t &a = open_dev();
        tdev_t &b = open_dev();
        still(a); /* the counts are of the polls below, not the thread's */
        still(b);
        ibv_cq *cqa = make_cq(a, 4096), *cqb = make_cq(b, 4096);
        char *buf = (char*)alloc(64);
        ibv_mr *mra = reg(a, buf, 64, 0);
        ibv_mr *mrb = reg(b, buf, 64, IBV_ACCESS_LOCAL_WRITE);
        ibv_wc wc;

        for (int i = 0; i < idle_pairs; ++i) {
            ibv_qp *x = make_qp(a, IBV_QPT_RC, cqa, cqa, nullptr, 4, 4, 1, 0);
            ibv_qp *y = make_qp(b, IBV_QPT_RC, cqb, cqb, nullptr, 4, 4, 1, 0);
            connect_rc(a, x, b, y);
        }
        ibv_qp *qa = make_qp(a, IBV_QPT_RC, cqa, cqa);
        ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);
        connect_rc(a, qa, b, qb);

        uint64_t before = stats(b).qps_inspected;
        for (int i = 0; i < 100; ++i) {
            ibv_poll_cq(cqb, 1, &wc);
        }
        *idle = stats(b).qps_inspected - before;

        ASSERT_EQ(0, post_recv(qb, buf, 64, mrb->lkey, 1));
        ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, buf, 8, mra->lkey, 1, 0));
        before = stats(b).qps_inspected;
        ASSERT_EQ(IBV_WC_SUCCESS, poll1(cqb).status);
        *one_msg = stats(b).qps_inspected - before;
    }
};

TEST_P(soft, receive_progress_is_o1_in_qps)
{
    uint64_t idle1, msg1, idle1000, msg1000;

    measure(0, &idle1, &msg1);
    TearDown();
    measure(500, &idle1000, &msg1000); /* 1000 idle QPs over two devices */
    EXPECT_EQ(0u, idle1);
    EXPECT_EQ(0u, idle1000) << "an idle poll looked at QPs";
    EXPECT_EQ(msg1, msg1000) << "receiving one message looked at more QPs "
                                "with 1000 idle ones";
    EXPECT_LE(msg1000, 2u);
}

TEST_P(soft, segment_is_owner_only)
{
    tdev_t &d = open_dev();
    char name[64];
    struct stat st;

    ASSERT_EQ(0, srq_soft_segment_name(d.dev, name, sizeof(name)));
    ASSERT_EQ(0, stat(name, &st)) << name;
    EXPECT_EQ(0600u, st.st_mode & 0777);
    EXPECT_EQ(getuid(), st.st_uid);
}

TEST_P(soft, segment_removed_on_close)
{
    srq_verbs_dev_t *dev;
    char name[64];
    struct stat st;

    ASSERT_EQ(0, srq_verbs_open(GetParam().c_str(), &dev));
    ASSERT_EQ(0, srq_soft_segment_name(dev, name, sizeof(name)));
    ASSERT_EQ(0, stat(name, &st)) << name;
    srq_verbs_close(dev);
    EXPECT_NE(0, stat(name, &st)) << name;
}

TEST_P(soft, fuzz_frames_dropped_and_counted)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqb = make_cq(b);
    std::mt19937 rng(1234);
    uint64_t expect = 0;
    uint8_t pkt[512];
    ibv_wc wc;

    uint64_t before = stats(b).rx_dropped;
    for (int i = 0; i < 2000; ++i) {
        size_t len = 1 + rng() % sizeof(pkt);
        for (auto &c : pkt) {
            c = (uint8_t)rng();
        }
        ASSERT_EQ(0, srq_soft_inject(a.dev, b.dev, pkt, len,
                                     SRQ_SOFT_INJECT_FRAME));
        /* every frame is dropped, but padding, which is skipped */
        const size_t op = offsetof(srq_soft_pkt_t, opcode);
        expect += (len <= op) || (pkt[op] != SRQ_SOFT_OP_PAD);
        if (i % 100 == 0) {
            ibv_poll_cq(cqb, 1, &wc);
        }
    }
    for (int i = 0; i < 200; ++i) {
        ibv_poll_cq(cqb, 1, &wc);
    }
    EXPECT_EQ(expect, stats(b).rx_dropped - before);

    /* raw bytes bypassing all framing: dropped, the queue recovers */
    before = stats(b).rx_dropped;
    for (int i = 0; i < 200; ++i) {
        size_t len = 1 + rng() % sizeof(pkt);
        for (auto &c : pkt) {
            c = (uint8_t)rng();
        }
        ASSERT_EQ(0, srq_soft_inject(a.dev, b.dev, pkt, len,
                                     SRQ_SOFT_INJECT_SCRIBBLE));
        ibv_poll_cq(cqb, 1, &wc);
    }
    EXPECT_GT(stats(b).rx_dropped - before, 0u);

    /* and real traffic still flows */
    check_traffic_flows(a, b, 10);
}

/* A producer claims its frame (moving the tail past it), then fills and
 * publishes it. An owner that finds the tail beyond a claimed frame waits
 * for a live producer: no corruption, nothing dropped (a frame taken for
 * corruption drops what was published up to the tail, and stalls the
 * senders for the ACK timeout) */
TEST_P(soft, claimed_frame_waits_for_its_live_producer)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqb = make_cq(b);
    srq_soft_pkt_t pad{};
    ibv_wc wc;

    pad.opcode = SRQ_SOFT_OP_PAD;
    uint64_t before = stats(b).rx_dropped;
    ASSERT_EQ(0, srq_soft_inject(a.dev, b.dev, &pad, sizeof(pad),
                                 SRQ_SOFT_INJECT_CLAIM));
    /* b looks at the claim now and then, and leaves it alone */
    for (int i = 0; i < 4096; ++i) {
        ibv_poll_cq(cqb, 1, &wc);
    }
    EXPECT_EQ(before, stats(b).rx_dropped);
    ASSERT_EQ(0, srq_soft_inject(a.dev, b.dev, nullptr, 0,
                                 SRQ_SOFT_INJECT_PUBLISH));
    check_traffic_flows(a, b, 10);
    EXPECT_EQ(before, stats(b).rx_dropped);
}

TEST_P(soft, foreign_connection_packets_dropped)
{
    /* a packet claiming to be from another instance/QP than the RC
     * connection's is dropped: build one by hand from a third device */
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);
    char *buf = (char*)alloc(64);
    ibv_mr *mrb = reg(b, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    connect_rc(a, qa, b, qb);
    ASSERT_EQ(0, post_recv(qb, buf, 64, mrb->lkey, 1));

    struct {
        srq_soft_pkt_t h;
        char           data[8];
    } pkt = {};
    pkt.h.opcode  = SRQ_SOFT_OP_SEND;
    pkt.h.dst_qpn = qb->qp_num;
    pkt.h.src_qpn = qa->qp_num;
    pkt.h.length  = 8;
    /* not the peer's instance */
    ASSERT_EQ(0, srq_soft_test_instance(b.dev, pkt.h.src_inst));
    uint64_t before = stats(b).rx_dropped;
    ASSERT_EQ(0, srq_soft_inject(a.dev, b.dev, &pkt, sizeof(pkt),
                                 SRQ_SOFT_INJECT_FRAME));
    ibv_wc wc;
    EXPECT_EQ(0, poll(cqb, 1, &wc, 50));
    EXPECT_EQ(before + 1, stats(b).rx_dropped);

    pkt.h.src_qpn = qa->qp_num + 1; /* right instance, wrong QP */
    ASSERT_EQ(0, srq_soft_test_instance(a.dev, pkt.h.src_inst));
    ASSERT_EQ(0, srq_soft_inject(a.dev, b.dev, &pkt, sizeof(pkt),
                                 SRQ_SOFT_INJECT_FRAME));
    EXPECT_EQ(0, poll(cqb, 1, &wc, 50));
    EXPECT_EQ(before + 2, stats(b).rx_dropped);

    pkt.h.src_qpn = qa->qp_num; /* genuine: accepted */
    ASSERT_EQ(0, srq_soft_inject(a.dev, b.dev, &pkt, sizeof(pkt),
                                 SRQ_SOFT_INJECT_FRAME));
    EXPECT_EQ(IBV_WC_SUCCESS, poll1(cqb).status);
}

namespace {

/* A thread holding the device lock, and one waiting for it, on one CPU */
struct lock_on_one_cpu_t {
    ibv_cq            *cq;
    pthread_t         waiter;
    int               created = -1;
    std::atomic<bool> waiting{false};
};

void *lock_waiter(void *arg)
{
    auto *s = static_cast<lock_on_one_cpu_t*>(arg);
    ibv_wc wc;

    s->waiting = true;
    (void)ibv_poll_cq(s->cq, 1, &wc); /* takes the device lock */
    return nullptr;
}

/* Under the lock: start the waiter, and give it the CPU. Running again
 * means the waiter gave it back while it still waited for the lock. */
void lock_holder(void *arg)
{
    auto *s = static_cast<lock_on_one_cpu_t*>(arg);

    s->created = pthread_create(&s->waiter, nullptr, lock_waiter, s);
    while ((s->created == 0) && !s->waiting) {
        sched_yield();
    }
}

} // namespace

/*
 * The holder of the device lock lost its CPU to a thread waiting for that
 * lock (UCX's async thread and the main thread of a rank, on one core). Both
 * run SCHED_FIFO at one priority on one CPU: nothing but the waiter's own
 * yield lets the holder run again, so a lock that only spins never comes
 * back (the child is killed at the timeout).
 */
TEST_P(soft, lock_waiter_gives_its_cpu_to_the_holder)
{
    pid_t pid = fork_child([this]() {
        tdev_t &d = open_dev();
        lock_on_one_cpu_t s;
        sched_param sp{};
        cpu_set_t cpus;

        s.cq = make_cq(d);
        CPU_ZERO(&cpus);
        CPU_SET(sched_getcpu(), &cpus);
        sp.sched_priority = 1;
        if (sched_setaffinity(0, sizeof(cpus), &cpus) != 0) {
            return 2;
        }
        if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
            return 77; /* not allowed here */
        }
        /* the waiter inherits the policy and the CPU */
        if ((srq_soft_test_with_dev_lock(d.dev, lock_holder, &s) != 0) ||
            (s.created != 0)) {
            return 3;
        }
        pthread_join(s.waiter, nullptr);
        return 0;
    });
    int rc = wait_child(pid, 10000);
    if (rc == 77) {
        GTEST_SKIP() << "SCHED_FIFO not permitted (needs CAP_SYS_NICE)";
    }
    EXPECT_EQ(0, rc) << "-1: the waiter never gave its CPU back";
}

namespace {

/* A thread holding the device lock until the main thread's poll came back,
 * or a few seconds */
struct lock_held_t {
    std::atomic<bool> held{false}, polled{false}, polled_under_lock{false};
};

void hold_until_polled(void *arg)
{
    auto *s      = static_cast<lock_held_t*>(arg);
    uint64_t end = now_ms() + 5000;

    s->held = true;
    while (!s->polled && (now_ms() < end)) {
        sched_yield();
    }
    s->polled_under_lock = s->polled.load();
}

} // namespace

/*
 * An empty CQ whose device progressed since its last poll is answered
 * without the device lock: UCX polls its send CQ right after its receive
 * CQ (whose poll ran the device), and an HCA's empty poll reads one line.
 * With the lock taken, the poll waits for the holder, 5 s here.
 */
TEST_P(soft, empty_poll_after_progress_takes_no_lock)
{
    tdev_t &d = open_dev();
    ibv_cq *first = make_cq(d), *second = make_cq(d);
    lock_held_t s;
    ibv_wc wc;

    ASSERT_EQ(0, ibv_poll_cq(second, 1, &wc));
    uint64_t since = stats(d).progress_calls;
    /* a CQ polled twice with nothing come in between runs the device */
    ASSERT_EQ(0, ibv_poll_cq(first, 1, &wc));
    ASSERT_EQ(0, ibv_poll_cq(first, 1, &wc));
    ASSERT_GT(stats(d).progress_calls, since);
    std::thread holder([&]() {
        EXPECT_EQ(0, srq_soft_test_with_dev_lock(d.dev, hold_until_polled,
                                                 &s));
    });
    while (!s.held) {
        sched_yield();
    }
    EXPECT_EQ(0, ibv_poll_cq(second, 1, &wc));
    s.polled = true;
    holder.join();
    EXPECT_TRUE(s.polled_under_lock) << "the empty poll waited for the lock";
}

/* Run @poll while another thread holds @d's device lock: true if it came
 * back before the holder let go (it waited for nothing) */
static bool returns_while_device_held(tdev_t &d, const std::function<void()> &poll)
{
    lock_held_t s;

    std::thread holder([&]() {
        EXPECT_EQ(0, srq_soft_test_with_dev_lock(d.dev, hold_until_polled, &s));
    });
    while (!s.held) {
        sched_yield();
    }
    poll();
    s.polled = true;
    holder.join();
    return s.polled_under_lock;
}

/*
 * A CQ guards itself (issue 49): completions waiting in a CQ are taken
 * under the CQ's own lock, whatever another thread does on the device; a
 * poll the CQ cannot satisfy tries the device and, when another thread
 * holds it, returns what it has rather than wait. Before, both waited for
 * the holder: 5 s here.
 */
TEST_P(soft, poll_takes_completions_while_another_thread_holds_the_device)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *scq = make_cq(a), *rcq = make_cq(a), *cqb = make_cq(b);
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(3 * 64);
    ibv_mr *mra = reg(a, sbuf, 64, 0);
    ibv_mr *mrb = reg(b, rbuf, 3 * 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, scq, rcq);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);
    ibv_wc wc[4];
    uint64_t end;
    int n = 0;

    connect_rc(a, qa, b, qb);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(0, post_recv(qb, rbuf + 64 * i, 64, mrb->lkey, i));
        ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, sbuf, 8, mra->lkey, 10 + i));
    }
    /* b takes the messages and ACKs them; a's receive CQ runs a, which
     * writes the send completions into scq, not polled yet */
    for (end = now_ms() + 5000; (n < 3) && (now_ms() < end);) {
        n += std::max(0, ibv_poll_cq(cqb, 4 - n, wc + n));
    }
    ASSERT_EQ(3, n);
    for (end = now_ms() + 5000; now_ms() < end;) {
        (void)ibv_poll_cq(cqb, 1, wc);
        ASSERT_EQ(0, ibv_poll_cq(rcq, 1, wc));
        if (srq_soft_test_cq_pending(scq) == 3) {
            break;
        }
    }
    ASSERT_EQ(3, srq_soft_test_cq_pending(scq));
    n = -1;
    EXPECT_TRUE(returns_while_device_held(a, [&] { n = ibv_poll_cq(scq, 4, wc); }))
        << "the poll waited for the device lock";
    ASSERT_EQ(3, n);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ((uint64_t)(10 + i), wc[i].wr_id);
        EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
    }
    /* empty now, and the device ran since: this poll needs the engine,
     * which another thread holds; it does not wait for it */
    ASSERT_EQ(0, ibv_poll_cq(scq, 1, wc));
    n = -1;
    EXPECT_TRUE(returns_while_device_held(a, [&] { n = ibv_poll_cq(scq, 1, wc); }))
        << "a poll that needs progress waited for the device lock";
    EXPECT_EQ(0, n);
    /* and with the device free again it runs it (a look of the device's
     * own thread may hold it at that moment: a few polls) */
    uint64_t since = stats(a).progress_calls;
    for (end = now_ms() + 1000; (stats(a).progress_calls == since) && (now_ms() < end);) {
        EXPECT_EQ(0, ibv_poll_cq(scq, 1, wc));
    }
    EXPECT_GT(stats(a).progress_calls, since);
}

/*
 * A QP's receive queue guards itself, as an SRQ does: ibv_post_recv writes
 * WQEs under the queue's lock and publishes them to the engine with one
 * store, so a post does not wait for another thread's device work (it
 * did: 5 s here). What it posted is then received, in order.
 */
TEST_P(soft, post_recv_while_another_thread_holds_the_device)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(4 * 64);
    ibv_mr *mra = reg(a, sbuf, 64, 0);
    ibv_mr *mrb = reg(b, rbuf, 4 * 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);
    int ret = -1;

    connect_rc(a, qa, b, qb);
    EXPECT_TRUE(returns_while_device_held(b, [&] {
        ret = 0;
        for (int i = 0; i < 4; ++i) {
            ret |= post_recv(qb, rbuf + 64 * i, 64, mrb->lkey, 100 + i);
        }
    })) << "ibv_post_recv waited for the device lock";
    ASSERT_EQ(0, ret);
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, sbuf, 8 + i, mra->lkey, i));
    }
    for (int i = 0; i < 4; ++i) {
        ibv_wc wc = poll1(cqb);
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
        EXPECT_EQ((uint64_t)(100 + i), wc.wr_id);
        EXPECT_EQ((uint32_t)(8 + i), wc.byte_len);
    }
}

/* @n messages from @qs to @qr in one ibv_post_send, all completed: the
 * send queue's arrays start at one WQE and grow with what is outstanding,
 * which takes the device lock (soft_post.c); grown, they stay. One call:
 * no WQE of it is sent, so none acknowledged, before all are in (posted
 * one by one, an early ACK kept the arrays small, and a later post grew
 * them with the device held: CI's TSan run) */
void verbs_test::warm_send_queue(ibv_qp *qs, ibv_qp *qr, ibv_cq *cqs,
                                 ibv_cq *cqr, char *sbuf, uint32_t lkey,
                                 char *rbuf, uint32_t rkey, int n,
                                 ibv_ah *ah, uint32_t qkey)
{
    std::vector<ibv_send_wr> wr(n);
    ibv_sge sge = { (uint64_t)(uintptr_t)sbuf, 8, lkey };
    ibv_send_wr *bad = nullptr;

    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(0, post_recv(qr, rbuf, 64, rkey, 1000 + i));
        wr[i]            = {};
        wr[i].wr_id      = 1000 + i;
        wr[i].sg_list    = &sge;
        wr[i].num_sge    = 1;
        wr[i].opcode     = IBV_WR_SEND;
        wr[i].send_flags = IBV_SEND_SIGNALED;
        wr[i].next       = (i + 1 < n) ? &wr[i + 1] : nullptr;
        if (ah != nullptr) {
            wr[i].wr.ud.ah          = ah;
            wr[i].wr.ud.remote_qpn  = qr->qp_num;
            wr[i].wr.ud.remote_qkey = qkey;
        }
    }
    ASSERT_EQ(0, ibv_post_send(qs, wr.data(), &bad));
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(IBV_WC_SUCCESS, poll1(cqr).status);
        ASSERT_EQ(IBV_WC_SUCCESS, poll1(cqs).status);
    }
}

/* Four SENDs on a QP of @type posted while another thread holds the
 * device: true if the posts returned before the holder let go; received
 * at b in order, whole, while nobody polls a */
void soft::sends_while_device_held(ibv_qp_type type)
{
    const bool ud       = (type == IBV_QPT_UD);
    const uint32_t grh  = ud ? 40 : 0, qkey = 0x4d;
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(4 * 64);
    ibv_mr *mra = reg(a, sbuf, 64, 0);
    ibv_mr *mrb = reg(b, rbuf, 4 * 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp *qa = make_qp(a, type, cqa, cqa);
    ibv_qp *qb = make_qp(b, type, cqb, cqb);
    ibv_ah *ah = ud ? make_ah(a, b.addr) : nullptr;
    int ret = -1;

    if (ud) {
        ud_to_rts(a, qa, qkey);
        ud_to_rts(b, qb, qkey);
    } else {
        connect_rc(a, qa, b, qb);
    }
    warm_send_queue(qa, qb, cqa, cqb, sbuf, mra->lkey, rbuf, mrb->lkey, 8,
                    ah, qkey);
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(0, post_recv(qb, rbuf + 64 * i, 64, mrb->lkey, 100 + i));
    }
    memset(sbuf, 0x5a, 64);
    /* a's thread asleep, not looking: its looks at a polling user stop
     * within SRQ_SOFT_THREAD_LOOK_MAX_MS of the last poll */
    usleep(200 * 1000);
    EXPECT_TRUE(returns_while_device_held(a, [&] {
        ret = 0;
        for (int i = 0; i < 4; ++i) {
            ret |= ud ? post_ud_send(qa, ah, qb->qp_num, qkey, sbuf, 8 + i,
                                     mra->lkey, i) :
                        post_send(qa, IBV_WR_SEND, sbuf, 8 + i, mra->lkey, i);
        }
    })) << "ibv_post_send waited for the device lock";
    ASSERT_EQ(0, ret);
    for (int i = 0; i < 4; ++i) {
        ibv_wc wc = poll1_alone(cqb);
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
        EXPECT_EQ((uint64_t)(100 + i), wc.wr_id);
        EXPECT_EQ(grh + 8 + i, wc.byte_len);
        EXPECT_EQ(0x5a, rbuf[64 * i + grh + 7 + i]);
    }
    for (int i = 0; i < 4; ++i) {
        ibv_wc wc = poll1(cqa);
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
        EXPECT_EQ((uint64_t)i, wc.wr_id);
    }
}

/*
 * A QP's send queue guards itself too: ibv_post_send writes its WQEs
 * under the queue's lock and, finding the device taken, rings its
 * doorbell and returns (soft_doorbell.h). The holder here is no engine
 * (a control verb's, as the hook's): the post pokes the device, whose
 * progress thread sends the WQEs once the holder lets go - nobody polls
 * a meanwhile, only b's CQ moves. Before, the post waited for the holder, 5 s here; without
 * the poke the messages wait for a's next poll (b's 10 s poll fails).
 */
TEST_P(soft, post_send_while_another_thread_holds_the_device)
{
    sends_while_device_held(IBV_QPT_RC);
}

/*
 * The same for datagrams: a UD post finds its destination in the AH
 * under the AH's own lock, and rings the doorbell like an RC post. Only
 * a destination the AH has not mapped yet waits for the device (the
 * warm-up maps this one). Before, every UD post waited for it.
 */
TEST_P(soft, ud_post_while_another_thread_holds_the_device)
{
    sends_while_device_held(IBV_QPT_UD);
}

/*
 * A QP destroyed while its doorbell is rung leaves the device's doorbell
 * stack; the other QPs on it stay and are sent. Where the destroy takes
 * the device before the progress thread, a stack that kept the freed QP
 * is read after the free: test/tsan.sh reports it (4 runs in 5 of the
 * TSan copy, watched), valgrind too.
 */
TEST_P(soft, destroy_of_a_qp_with_its_doorbell_rung)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(2 * 64);
    ibv_mr *mra = reg(a, sbuf, 64, 0);
    ibv_mr *mrb = reg(b, rbuf, 2 * 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp *gone = make_qp(a, IBV_QPT_RC, cqa, cqa);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, cqa, cqa);
    ibv_qp *qb1 = make_qp(b, IBV_QPT_RC, cqb, cqb);
    ibv_qp *qb2 = make_qp(b, IBV_QPT_RC, cqb, cqb);
    std::thread destroyer;
    int ret = -1;

    connect_rc(a, gone, b, qb1);
    connect_rc(a, qa, b, qb2);
    warm_send_queue(gone, qb1, cqa, cqb, sbuf, mra->lkey, rbuf, mrb->lkey, 2);
    warm_send_queue(qa, qb2, cqa, cqb, sbuf, mra->lkey, rbuf, mrb->lkey, 2);
    ASSERT_EQ(0, post_recv(qb1, rbuf, 64, mrb->lkey, 1));
    ASSERT_EQ(0, post_recv(qb2, rbuf + 64, 64, mrb->lkey, 2));
    EXPECT_TRUE(returns_while_device_held(a, [&] {
        ret  = post_send(gone, IBV_WR_SEND, sbuf, 8, mra->lkey, 10);
        ret |= post_send(qa, IBV_WR_SEND, sbuf, 16, mra->lkey, 20);
        /* waits for the device: gets it before the thread, or after */
        destroyer = std::thread([&] { destroy_qp(a, gone); });
    }));
    ASSERT_EQ(0, ret);
    destroyer.join();
    for (uint64_t end = now_ms() + 5000; now_ms() < end;) {
        ibv_wc wc;
        if (ibv_poll_cq(cqb, 1, &wc) == 1) {
            if (wc.wr_id == 2) {
                EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
                EXPECT_EQ(16u, wc.byte_len);
                return;
            }
        }
    }
    ADD_FAILURE() << "the QP left on the doorbell stack was never sent";
}

/*
 * The other side of it: a completion that the receive CQ's poll wrote into
 * the send CQ (the ACK came in while it ran the device) is found by the
 * send CQ's next poll, which takes the lock-free answer only when empty.
 */
TEST_P(soft, send_completion_written_by_other_poll_is_found)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *scq = make_cq(a), *rcq = make_cq(a), *cqb = make_cq(b);
    char *buf = (char*)alloc(64);
    ibv_mr *mra = reg(a, buf, 64, 0);
    ibv_mr *mrb = reg(b, buf, 64, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, scq, rcq);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);
    uint64_t end;
    int n = 0;
    ibv_wc wc;

    connect_rc(a, qa, b, qb);
    ASSERT_EQ(0, post_recv(qb, buf, 64, mrb->lkey, 1));
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, buf, 8, mra->lkey, 7));
    /* only b's CQ: b takes the message and ACKs it */
    for (end = now_ms() + 5000; (n == 0) && (now_ms() < end);) {
        n = ibv_poll_cq(cqb, 1, &wc);
    }
    ASSERT_EQ(1, n);
    ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    /* a polls as UCX does: its receive CQ (the device runs, the ACK
     * completes the send), then its send CQ */
    for (n = 0, end = now_ms() + 5000; (n == 0) && (now_ms() < end);) {
        (void)ibv_poll_cq(cqb, 1, &wc); /* b sends an ACK it held back */
        EXPECT_EQ(0, ibv_poll_cq(rcq, 1, &wc));
        n = ibv_poll_cq(scq, 1, &wc);
    }
    ASSERT_EQ(1, n) << "the send completion was never found";
    EXPECT_EQ(7u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

SRQ_INSTANTIATE(soft);
