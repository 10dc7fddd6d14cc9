/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: threads of one process on one device, as UCX's
 * workers share a device context: each thread with its own QPs and CQs,
 * and several threads polling one CQ. Every message arrives once, in
 * order, whole; every completion is taken by exactly one poller. Run under
 * ThreadSanitizer too (test/tsan.sh): the device's locks (soft0: the CQ's
 * own lock on the poll path, doc/architecture.md) leave no race.
 */
#include "verbs_fixture.h"

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <string.h>

using namespace srq_test;

namespace {

const int THREAD_MSGS = 2000;
const uint32_t MSG_LEN = 48;
const int RECV_DEPTH = 32;

/* A thread's own connection from a to b, with its own four CQs */
struct lane_t {
    ibv_cq *scqa, *rcqa, *scqb, *rcqb;
    ibv_qp *qa, *qb;
    char   *sbuf, *rbuf;
    ibv_mr *smr, *rmr;
    std::string error;     /* what went wrong, empty if nothing */
};

} // namespace

class threads : public two_dev_test {
protected:
    void make_lane(lane_t &l)
    {
        l.scqa = make_cq(*a, 256);
        l.rcqa = make_cq(*a, 256);
        l.scqb = make_cq(*b, 256);
        l.rcqb = make_cq(*b, 256);
        l.qa   = make_qp(*a, IBV_QPT_RC, l.scqa, l.rcqa, nullptr, 64, RECV_DEPTH);
        l.qb   = make_qp(*b, IBV_QPT_RC, l.scqb, l.rcqb, nullptr, 64, RECV_DEPTH);
        ASSERT_NE(nullptr, l.qa);
        ASSERT_NE(nullptr, l.qb);
        connect_rc(*a, l.qa, *b, l.qb);
        l.sbuf = (char*)alloc(MSG_LEN * 64);
        l.rbuf = (char*)alloc(MSG_LEN * RECV_DEPTH);
        l.smr  = reg(*a, l.sbuf, MSG_LEN * 64, 0);
        l.rmr  = reg(*b, l.rbuf, MSG_LEN * RECV_DEPTH, IBV_ACCESS_LOCAL_WRITE);
    }

    /* Post receive @slot of lane @l (its wr_id is the slot) */
    static int repost(lane_t &l, int slot)
    {
        ibv_sge sge = { (uint64_t)(uintptr_t)(l.rbuf + slot * MSG_LEN), MSG_LEN,
                        l.rmr->lkey };
        ibv_recv_wr wr = {}, *bad;

        wr.wr_id   = (uint64_t)slot;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        return ibv_post_recv(l.qb, &wr, &bad);
    }

    static int send(lane_t &l, int seq)
    {
        char *p = l.sbuf + (seq % 64) * MSG_LEN;
        ibv_sge sge = { (uint64_t)(uintptr_t)p, MSG_LEN, l.smr->lkey };
        ibv_send_wr wr = {}, *bad;

        snprintf(p, MSG_LEN, "lane %p message %d", (void*)&l, seq);
        wr.wr_id      = (uint64_t)seq;
        wr.sg_list    = &sge;
        wr.num_sge    = 1;
        wr.opcode     = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        return ibv_post_send(l.qa, &wr, &bad);
    }

    /* A thread's whole run on its lane: @THREAD_MSGS sends, at most 16
     * outstanding, every receive checked in order; polls only its own CQs
     * (each poll may run the device's progress for all lanes) */
    static void run_lane(lane_t &l)
    {
        int sent = 0, send_done = 0, recvd = 0, n, i;
        uint64_t end = now_ms() + 60000;
        ibv_wc wc[16];
        char want[MSG_LEN];

        for (i = 0; i < RECV_DEPTH; ++i) {
            if (repost(l, i) != 0) {
                l.error = "ibv_post_recv failed";
                return;
            }
        }
        while ((send_done < THREAD_MSGS) || (recvd < THREAD_MSGS)) {
            if (now_ms() > end) {
                l.error = "timeout: " + std::to_string(send_done) + " sends done, " +
                          std::to_string(recvd) + " received";
                return;
            }
            while ((sent < THREAD_MSGS) && (sent - send_done < 16) &&
                   (sent - recvd < RECV_DEPTH)) {
                if (send(l, sent) != 0) {
                    l.error = "ibv_post_send failed at " + std::to_string(sent);
                    return;
                }
                ++sent;
            }
            n = ibv_poll_cq(l.scqa, 16, wc);
            for (i = 0; i < n; ++i, ++send_done) {
                if ((wc[i].status != IBV_WC_SUCCESS) ||
                    (wc[i].wr_id != (uint64_t)send_done)) {
                    l.error = "send completion " + std::to_string(send_done) +
                              ": wr_id " + std::to_string(wc[i].wr_id) + " status " +
                              ibv_wc_status_str(wc[i].status);
                    return;
                }
            }
            n = ibv_poll_cq(l.rcqb, 16, wc);
            for (i = 0; i < n; ++i, ++recvd) {
                snprintf(want, sizeof(want), "lane %p message %d", (void*)&l, recvd);
                if ((wc[i].status != IBV_WC_SUCCESS) || (wc[i].byte_len != MSG_LEN) ||
                    strcmp(l.rbuf + wc[i].wr_id * MSG_LEN, want)) {
                    l.error = std::string("receive ") + std::to_string(recvd) +
                              ": got '" + (l.rbuf + wc[i].wr_id * MSG_LEN) +
                              "' status " + ibv_wc_status_str(wc[i].status);
                    return;
                }
                if (repost(l, (int)wc[i].wr_id) != 0) {
                    l.error = "ibv_post_recv (again) failed";
                    return;
                }
            }
            /* the other CQs of the lane: progress, and nothing to find */
            if ((ibv_poll_cq(l.rcqa, 1, wc) != 0) || (ibv_poll_cq(l.scqb, 1, wc) != 0)) {
                l.error = "a completion where none is due";
                return;
            }
        }
    }
};

/* Each thread its own QPs and CQs on the two shared devices: all arrive,
 * in order, whole */
TEST_P(threads, own_lanes_on_shared_devices)
{
    const int nthreads = 4;
    std::vector<lane_t> lanes(nthreads);
    std::vector<std::thread> th;

    for (auto &l : lanes) {
        make_lane(l);
        if (HasFatalFailure()) {
            return;
        }
    }
    for (auto &l : lanes) {
        th.emplace_back([&l] { run_lane(l); });
    }
    for (auto &t : th) {
        t.join();
    }
    for (int i = 0; i < nthreads; ++i) {
        EXPECT_EQ("", lanes[i].error) << "thread " << i;
    }
}

/* Several threads poll one CQ while one thread posts: each completion is
 * taken by exactly one of them */
TEST_P(threads, pollers_share_one_cq)
{
    const int npollers = 3, total = 6000;
    lane_t l;
    std::atomic<int> taken{0};
    std::atomic<bool> bad{false};
    std::vector<std::vector<uint64_t>> got(npollers);
    std::vector<std::thread> th;

    make_lane(l);
    if (HasFatalFailure()) {
        return;
    }
    for (int p = 0; p < npollers; ++p) {
        th.emplace_back([&, p] {
            uint64_t end = now_ms() + 60000;
            ibv_wc wc[4];
            int n;

            while ((taken.load() < total) && (now_ms() < end)) {
                n = ibv_poll_cq(l.scqa, 4, wc);
                for (int i = 0; i < n; ++i) {
                    if (wc[i].status != IBV_WC_SUCCESS) {
                        bad = true;
                    }
                    got[p].push_back(wc[i].wr_id);
                }
                taken += (n > 0) ? n : 0;
            }
        });
    }
    /* the poster: RDMA WRITEs (no receive needed), at most 48 outstanding */
    {
        uint64_t end = now_ms() + 60000;
        char *dst    = (char*)alloc(4096);
        ibv_mr *dmr  = reg(*b, dst, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        ibv_sge sge  = { (uint64_t)(uintptr_t)l.sbuf, MSG_LEN, l.smr->lkey };
        ibv_send_wr wr = {}, *badwr;

        wr.sg_list             = &sge;
        wr.num_sge             = 1;
        wr.opcode              = IBV_WR_RDMA_WRITE;
        wr.send_flags          = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
        wr.wr.rdma.rkey        = dmr->rkey;
        for (int s = 0; (s < total) && (now_ms() < end);) {
            if (s - taken.load() >= 48) {
                std::this_thread::yield();
                continue;
            }
            wr.wr_id = (uint64_t)s;
            if (ibv_post_send(l.qa, &wr, &badwr) != 0) {
                ADD_FAILURE() << "ibv_post_send failed at " << s;
                break;
            }
            ++s;
        }
    }
    for (auto &t : th) {
        t.join();
    }
    std::set<uint64_t> all;
    size_t count = 0;
    for (auto &v : got) {
        count += v.size();
        all.insert(v.begin(), v.end());
    }
    EXPECT_FALSE(bad.load());
    EXPECT_EQ((size_t)total, count) << "completions taken";
    EXPECT_EQ((size_t)total, all.size()) << "distinct completions (a duplicate: "
                                            "two pollers took one)";
}

/* Several threads post to one QP (its send queue's own lock, and the
 * device's doorbell when another has the device) while this one takes the
 * receives and completions: every message arrives once, whole, each
 * poster's in its order; every send completes once */
TEST_P(threads, posters_share_one_qp)
{
    const int nposters = 3, per = 2000, total = nposters * per;
    lane_t l;
    std::atomic<int> credits{RECV_DEPTH};
    std::vector<std::string> error(nposters);
    std::vector<std::thread> th;
    std::vector<int> next(nposters, 0);
    int recvd = 0, sends_done = 0;
    uint64_t end = now_ms() + 60000;
    ibv_wc wc[16];

    make_lane(l);
    if (HasFatalFailure()) {
        return;
    }
    char *bufs  = (char*)alloc(MSG_LEN * RECV_DEPTH * nposters);
    ibv_mr *bmr = reg(*a, bufs, MSG_LEN * RECV_DEPTH * nposters, 0);
    for (int i = 0; i < RECV_DEPTH; ++i) {
        ASSERT_EQ(0, repost(l, i));
    }
    for (int p = 0; p < nposters; ++p) {
        th.emplace_back([&, p] {
            for (int k = 0; (k < per) && (now_ms() < end);) {
                /* a receive for it at b (no RNR), and a buffer of ours it
                 * has finished with (its receive was taken) */
                if (credits.fetch_sub(1) <= 0) {
                    credits.fetch_add(1);
                    std::this_thread::yield();
                    continue;
                }
                char *m = bufs + (p * RECV_DEPTH + k % RECV_DEPTH) * MSG_LEN;
                ibv_sge sge = { (uint64_t)(uintptr_t)m, MSG_LEN, bmr->lkey };
                ibv_send_wr wr = {}, *badwr;

                snprintf(m, MSG_LEN, "poster %d message %d", p, k);
                wr.wr_id      = (uint64_t)p << 32 | (uint64_t)k;
                wr.sg_list    = &sge;
                wr.num_sge    = 1;
                wr.opcode     = IBV_WR_SEND;
                wr.send_flags = IBV_SEND_SIGNALED;
                int ret = ibv_post_send(l.qa, &wr, &badwr);
                if (ret == ENOMEM) { /* the queue is full until polled */
                    credits.fetch_add(1);
                    std::this_thread::yield();
                    continue;
                }
                if (ret != 0) {
                    error[p] = "ibv_post_send: " + std::string(strerror(ret));
                    return;
                }
                ++k;
            }
        });
    }
    while (((recvd < total) || (sends_done < total)) && (now_ms() < end)) {
        int n = ibv_poll_cq(l.rcqb, 16, wc), p, k;

        for (int i = 0; i < n; ++i, ++recvd) {
            const char *got = l.rbuf + wc[i].wr_id * MSG_LEN;
            ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status) << "receive " << recvd;
            ASSERT_EQ(2, sscanf(got, "poster %d message %d", &p, &k)) << got;
            ASSERT_TRUE((p >= 0) && (p < nposters)) << got;
            ASSERT_EQ(next[p], k) << "poster " << p << ": out of order";
            ++next[p];
            ASSERT_EQ(0, repost(l, (int)wc[i].wr_id));
            credits.fetch_add(1);
        }
        n = ibv_poll_cq(l.scqa, 16, wc);
        for (int i = 0; i < n; ++i, ++sends_done) {
            ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status) << "send " << sends_done;
        }
    }
    for (auto &t : th) {
        t.join();
    }
    for (int p = 0; p < nposters; ++p) {
        EXPECT_EQ("", error[p]) << "poster " << p;
        EXPECT_EQ(per, next[p]) << "poster " << p << "'s messages received";
    }
    EXPECT_EQ(total, sends_done);
    EXPECT_EQ(0, ibv_poll_cq(l.scqa, 16, wc)) << "a send completed twice";
    /* how many posts found the device taken: timing, not a result (the
     * built-in soft0's statistics; through libibverbs there are none) */
    srq_soft_stats_t st;
    if (srq_soft_query_stats(a->dev, &st) == 0) {
        printf("posts that rang the doorbell: %llu of %d\n",
               (unsigned long long)st.tx_doorbells, total);
    }
}

/*
 * Several threads post datagrams, each through its own UD QP, all through
 * one AH (as UCX keeps one per address for every interface of a device),
 * each in turn to a QP of every context of b's port (the QP number picks
 * the context). soft0 finds a destination in the AH under the AH's own
 * lock, and maps a new one under the device's: here the AH's array grows
 * (past 4) while other posters look in it, and every post moves the AH's
 * last-used entry (test/tsan.sh). Every datagram arrives once, whole, at
 * its context, each poster's to a context in its order; every send
 * completes once.
 */
TEST_P(threads, ud_posters_share_one_ah)
{
    const int nposters = 6, per = 996; /* per / nposters to each context */
    const int depth = 64;
    const uint32_t qkey = 0x5eed, slot = 40 + MSG_LEN; /* GRH, message */
    struct dest_t {
        ibv_cq          *cq;
        ibv_qp          *qp;
        char            *buf;
        std::vector<int> last; /* per poster, the last message it had */
    };
    std::vector<dest_t> dest(nposters);
    std::vector<ibv_qp*> qa(nposters);
    std::vector<std::string> error(nposters);
    std::vector<std::atomic<int>> credits(nposters); /* free send slots */
    std::vector<std::thread> th;
    ibv_cq *scq  = make_cq(*a, nposters * depth);
    ibv_ah *ah   = make_ah(*a, b->addr);
    char *sbufs  = (char*)alloc(MSG_LEN * per * nposters);
    ibv_mr *smr  = reg(*a, sbufs, MSG_LEN * per * nposters, 0);
    std::atomic<int> ready{0};
    int sends_done = 0, recvd = 0;
    uint64_t end = now_ms() + 60000;
    ibv_wc wc[16];

    ASSERT_NE(nullptr, ah);
    for (int p = 0; p < nposters; ++p) {
        qa[p] = make_qp(*a, IBV_QPT_UD, scq, scq, nullptr, depth, 1);
        ASSERT_NE(nullptr, qa[p]);
        ud_to_rts(*a, qa[p], qkey);
        credits[p] = depth;
    }
    for (dest_t &d : dest) {
        tdev_t &c = open_dev();
        d.cq = make_cq(c, per);
        d.qp = make_qp(c, IBV_QPT_UD, d.cq, d.cq, nullptr, 1, per);
        ASSERT_NE(nullptr, d.qp);
        d.buf = (char*)alloc(slot * per);
        d.last.assign(nposters, -1);
        ibv_mr *mr = reg(c, d.buf, slot * per, IBV_ACCESS_LOCAL_WRITE);
        ud_to_rts(c, d.qp, qkey);
        /* the send queues grown (a post that grows one waits for the
         * device), one context mapped */
        for (int p = 0; (&d == &dest[0]) && (p < nposters); ++p) {
            warm_send_queue(qa[p], d.qp, scq, d.cq, sbufs, smr->lkey, d.buf,
                            mr->lkey, depth, ah, qkey);
        }
        for (int k = 0; k < per; ++k) {
            ASSERT_EQ(0, post_recv(d.qp, d.buf + k * slot, slot, mr->lkey, k));
        }
    }
    for (int p = 0; p < nposters; ++p) {
        th.emplace_back([&, p] {
            /* all at once: the first posts of some, which map their
             * destinations, beside the others' lookups */
            for (ready.fetch_add(1); ready.load() < nposters;) {
                std::this_thread::yield();
            }
            for (int k = 0; (k < per) && (now_ms() < end);) {
                char *m = sbufs + (p * per + k) * MSG_LEN;
                int to  = (p + k) % nposters;

                /* a post into a full queue would wait for the device (it
                 * fails ENOMEM there) */
                if (credits[p].load() == 0) {
                    std::this_thread::yield();
                    continue;
                }
                --credits[p];
                snprintf(m, MSG_LEN, "poster %d message %d to %d", p, k, to);
                int ret = post_ud_send(qa[p], ah, dest[to].qp->qp_num, qkey,
                                       m, MSG_LEN, smr->lkey,
                                       (uint64_t)p << 32 | (uint64_t)k);
                if (ret != 0) {
                    error[p] = "ibv_post_send: " + std::string(strerror(ret));
                    return;
                }
                ++k;
            }
        });
    }
    while (((sends_done < nposters * per) || (recvd < nposters * per)) &&
           (now_ms() < end)) {
        int n = ibv_poll_cq(scq, 16, wc);

        for (int i = 0; i < n; ++i, ++sends_done) {
            ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status) << "send " << sends_done;
            ++credits[wc[i].wr_id >> 32];
        }
        for (int d = 0; d < nposters; ++d) {
            n = ibv_poll_cq(dest[d].cq, 16, wc);
            for (int i = 0; i < n; ++i, ++recvd) {
                const char *got = dest[d].buf + wc[i].wr_id * slot + 40;
                int gp = -1, gk = -1, gto = -1;

                ASSERT_EQ(IBV_WC_SUCCESS, wc[i].status) << "at " << d;
                ASSERT_EQ(40 + MSG_LEN, wc[i].byte_len) << "at " << d;
                ASSERT_EQ(3, sscanf(got, "poster %d message %d to %d", &gp,
                                    &gk, &gto)) << got;
                ASSERT_EQ(d, gto) << "a datagram at the wrong context";
                ASSERT_TRUE((gp >= 0) && (gp < nposters)) << got;
                EXPECT_LT(dest[d].last[gp], gk) << "poster " << gp << " to "
                                                << d << ": out of order";
                dest[d].last[gp] = gk;
            }
        }
    }
    for (auto &t : th) {
        t.join();
    }
    for (int p = 0; p < nposters; ++p) {
        EXPECT_EQ("", error[p]) << "poster " << p;
    }
    EXPECT_EQ(nposters * per, sends_done);
    EXPECT_EQ(nposters * per, recvd);
    EXPECT_EQ(0, ibv_poll_cq(scq, 16, wc)) << "a send completed twice";
    srq_soft_stats_t st; /* timing, not a result, as above */
    if (srq_soft_query_stats(a->dev, &st) == 0) {
        printf("posts that rang the doorbell: %llu of %d\n",
               (unsigned long long)st.tx_doorbells, nposters * per);
    }
}

SRQ_INSTANTIATE(threads);
