/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive-queue management of rc_srq: incast into a tiny SRQ (fixed and
 * adaptive), SRQ limit events, shrinking without dropping a posted buffer,
 * per-QP receive queues, partial post failures, and descriptors kept by
 * handlers beyond the pool's limit.
 */
#include "srq_uct_fixture.h"

extern "C" {
#include <verbs/srq_verbs.h>
}

#include <cerrno>
#include <dlfcn.h>
#include <iostream>
#include <thread>
#include <unistd.h>

using namespace srq_test;

namespace {

/* Every buffer ever posted was consumed (its completion seen) or is still
 * posted: none was dropped */
/*
 * Every receive descriptor taken from the pool (the pool's own count) is
 * either posted now (the receive queue's count) or held by an AM handler
 * (the test's own count: @held_by_test); one that is neither was lost.
 * Three counts kept in three places, one of them by the test.
 */
void expect_no_buffer_lost(const uct_srq_iface_counters_t &c,
                           uint64_t held_by_test = 0)
{
    EXPECT_EQ(held_by_test, c.rx_held) << "descriptors kept by handlers";
    EXPECT_EQ(c.rx_descs_in_use, c.rx_queue_now + held_by_test)
        << "taken from the pool " << c.rx_descs_in_use << ", posted now "
        << c.rx_queue_now << ", held by handlers " << held_by_test;
}

/* @senders interfaces (sharing one md and worker) flooding @receiver */
class incast {
public:
    incast(entity &receiver, int senders, uint8_t am_id = 1,
           const config_t &sender_config = {
               {"RX_QUEUE_MIN", "16"}, {"RX_QUEUE_MAX", "16"},
               {"RX_BATCH", "16"}, {"TX_QUEUE_LEN", "64"}})
        : m_receiver(receiver), m_am_id(am_id), m_got(senders),
          m_next(senders, 0)
    {
        entity_params params;
        params.config = sender_config;
        for (int i = 0; i < senders; ++i) {
            m_senders.emplace_back(new entity(params));
            params.share = m_senders.front().get();
            m_eps.push_back(m_senders.back()->connect(receiver));
        }
        EXPECT_EQ(UCS_OK, uct_iface_set_am_handler(receiver.iface(), am_id,
                                                   am_cb, this, 0));
    }

    ~incast()
    {
        /* the first sender owns the md and worker the others use */
        while (!m_senders.empty()) {
            m_senders.pop_back();
        }
    }

    /* Each sender sends @per_sender more; true when all arrived (those of
     * a burst() before too). With a @window, a sender has at most that
     * many messages sent and not yet handled by the receiver (paced, as a
     * credit-based sender is) */
    bool run(uint32_t per_sender, double seconds = 120.0,
             const std::function<void()> &between = {}, uint32_t window = 0)
    {
        std::vector<uint32_t> end = ends(per_sender);
        size_t target = 0;
        for (auto e : end) {
            target += e;
        }
        return progress_until({&m_receiver, m_senders.front().get()}, [&] {
            send(end, window);
            if (between) {
                between();
            }
            return m_total == target;
        }, seconds);
    }

    /* Up to @per_sender more from each sender, with the receiver's
     * progress stopped for @seconds: the device takes the messages into
     * the SRQ (refused with RNR NAKs once it is empty) and no refill puts
     * buffers back - the queue is drawn down whatever the host's timing */
    void burst(uint32_t per_sender, double seconds)
    {
        std::vector<uint32_t> end = ends(per_sender);
        auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration<double>(seconds);
        progress_until({m_senders.front().get()}, [&] {
            send(end, 0);
            return std::chrono::steady_clock::now() >= until;
        }, seconds + 1.0);
    }
    /* Exactly once, in order, per connection */
    void check() const
    {
        for (size_t s = 0; s < m_got.size(); ++s) {
            ASSERT_EQ((size_t)m_next[s], m_got[s].size()) << "sender " << s;
            for (size_t i = 0; i < m_got[s].size(); ++i) {
                ASSERT_EQ((uint32_t)i, m_got[s][i]) << "sender " << s
                                                    << " message " << i;
            }
        }
    }

    size_t total() const { return m_total; }
    entity &sender(int i) { return *m_senders[i]; }

private:
    std::vector<uint32_t> ends(uint32_t per_sender) const
    {
        std::vector<uint32_t> end(m_next);
        for (auto &e : end) {
            e += per_sender;
        }
        return end;
    }

    /* Each sender sends until @end, the transport refuses, or it has
     * @window (0: any number) not yet handled by the receiver */
    void send(const std::vector<uint32_t> &end, uint32_t window)
    {
        for (size_t s = 0; s < m_eps.size(); ++s) {
            while ((m_next[s] < end[s]) &&
                   ((window == 0) || (m_next[s] - m_got[s].size() < window))) {
                uint32_t v[2] = {(uint32_t)s, m_next[s]};
                if (uct_ep_am_short(m_eps[s], m_am_id, 0, v,
                                    sizeof(v)) != UCS_OK) {
                    break;
                }
                ++m_next[s];
            }
        }
    }

    static ucs_status_t am_cb(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        incast *self = static_cast<incast*>(arg);
        uint32_t v[2];
        memcpy(v, static_cast<char*>(data) + 8, sizeof(v));
        self->m_got.at(v[0]).push_back(v[1]);
        ++self->m_total;
        return UCS_OK;
    }

    entity                               &m_receiver;
    uint8_t                               m_am_id;
    std::vector<std::unique_ptr<entity>>  m_senders;
    std::vector<uct_ep_h>                 m_eps;
    std::vector<std::vector<uint32_t>>    m_got;
    std::vector<uint32_t>                 m_next;
    size_t                                m_total = 0;
};

void print(const char *what, const uct_srq_iface_counters_t &c)
{
    std::cout << what << ": consumed " << c.rx_consumed << ", refills "
              << c.rx_refills << ", depth " << c.rx_queue_target << " (peak "
              << c.rx_queue_peak << "), limit events " << c.rx_limit_events
              << ", RNR " << c.rx_rnr << ", grows " << c.rx_grows
              << ", shrinks " << c.rx_shrinks << ", retired " << c.rx_retired
              << ", demand " << c.rx_queue_demand << ", pressure while saturated "
              << c.rx_saturated
              << ", " << c.rx_bytes_held << " bytes held, periods "
              << c.rx_periods << std::endl;
}

/*
 * The adaptation periods a shrink needs at most, from the law
 * (srq_rx_depth.c): the window opens at the first period whose target is
 * low enough and the shrink comes at the first period RX_SHRINK_DELAY
 * after it - a period lasts at least RX_ADAPT_INTERVAL, so at most
 * delay/interval + 2 periods; then the retire cycle, which runs on
 * completions, and the period after it, which trims the pool: 2 more.
 * Twice that, for a margin.
 *
 * Periods, not seconds: the depth's clock runs on progress calls (a period
 * ends at a refill or every 256 idle polls, once the interval passed), and
 * a loaded host calls progress rarely - there a period lasts far longer
 * than the interval, and a bound in seconds measured the host.
 */
uint64_t shrink_periods(unsigned delay_ms, unsigned interval_ms)
{
    return 2 * ((delay_ms + interval_ms - 1) / interval_ms + 2 + 2);
}

/*
 * Progress @entities until @cond holds or @receiver ended @periods more
 * adaptation periods; whether @cond held. The wall-clock limit only keeps
 * a stopped clock (no progress at all) from hanging the test.
 */
bool progress_for_periods(entity &receiver,
                          const std::vector<entity*> &entities,
                          const std::function<bool()> &cond, uint64_t periods,
                          uint64_t *took = NULL)
{
    const uint64_t start = receiver.counters().rx_periods;
    uint64_t now         = start;
    bool held            = progress_until(entities, [&] {
        if (cond()) {
            return true;
        }
        now = receiver.counters().rx_periods;
        return now - start >= periods;
    }, 600.0) && cond();

    if (took != NULL) {
        *took = now - start;
    }
    return held;
}

} // namespace

/*
 * Incast: 16 senders flood one receiver whose SRQ holds 16 buffers, at a
 * fixed depth. The queue runs dry again and again; senders wait (RNR) and
 * retry, nothing is lost or duplicated, every connection's messages arrive
 * in order, and the run ends.
 */
TEST(rc_srq_rx, incast_fixed_16)
{
    entity receiver(config_t{{"RX_QUEUE_MIN", "16"}, {"RX_QUEUE_MAX", "16"},
                             {"RX_BATCH", "16"}});
    incast flood(receiver, 16);
    ASSERT_TRUE(flood.run(2000)) << "received " << flood.total();
    flood.check();

    uct_srq_iface_counters_t c = receiver.counters();
    EXPECT_EQ(16u, c.rx_queue_target);
    EXPECT_EQ(16u, c.rx_queue_peak);
    EXPECT_EQ(0u, c.rx_grows);
    /* every buffer the SRQ gave up carried exactly one of the messages */
    EXPECT_EQ(16u * 2000, c.rx_consumed);
    EXPECT_EQ(0u, c.rx_dropped);
    expect_no_buffer_lost(c);
    print("fixed 16", c);
}

/* The same flood into an SRQ that starts at 16 and may grow */
TEST(rc_srq_rx, incast_adaptive_from_16)
{
    entity receiver(config_t{{"RX_QUEUE_MIN", "16"}, {"RX_QUEUE_MAX", "1024"},
                             {"RX_BATCH", "16"}});
    EXPECT_EQ(16u, receiver.counters().rx_queue_target);
    incast flood(receiver, 16);
    ASSERT_TRUE(flood.run(2000)) << "received " << flood.total();
    flood.check();

    uct_srq_iface_counters_t c = receiver.counters();
    EXPECT_GE(c.rx_grows, 1u);
    EXPECT_GT(c.rx_queue_target, 16u);
    EXPECT_GT(c.rx_queue_peak, 16u);
    EXPECT_LE(c.rx_queue_peak, 1024u);
    EXPECT_EQ(16u * 2000, c.rx_consumed);
    EXPECT_EQ(0u, c.rx_dropped);
    expect_no_buffer_lost(c);
    print("adaptive 16..1024", c);
}

/* The SRQ limit event fires, is weighed (grows the queue, or is set aside
 * while the receiver is saturated) and is re-armed, again and again */
TEST(rc_srq_rx, limit_event_grows_and_rearms)
{
    entity receiver(config_t{{"RX_QUEUE_MIN", "16"}, {"RX_QUEUE_MAX", "256"},
                             {"RX_BATCH", "16"},
                             {"RX_ADAPT_INTERVAL", "60s"},
                             {"RX_SHRINK_DELAY", "60s"}});
    incast flood(receiver, 8);
    uct_srq_iface_counters_t c;
    /* the events come asynchronously (through libibverbs' async fd under
     * srq-run --verbs): on a loaded host one flood may end before any is
     * taken, so flood again, a bounded number of times */
    for (int round = 0; round < 10; ++round) {
        ASSERT_TRUE(flood.run(3000)) << "received " << flood.total();
        c = receiver.counters();
        if (c.rx_limit_events >= 2) {
            break;
        }
    }
    flood.check();

    EXPECT_GE(c.rx_limit_events, 2u) << "the limit was not re-armed";
    EXPECT_GE(c.rx_grows + c.rx_saturated, 1u) << "no limit event was weighed";
    expect_no_buffer_lost(c);
    print("limit events", c);
}

/*
 * RNR is a signal for the interface whose SRQ ran dry, and for no other: a
 * flood into one interface's tiny fixed SRQ makes the device send RNR
 * NAKs, while a second interface on the same device (the same md: another
 * rank on an HCA's port shares its port counters the same way) adapts on
 * its own traffic alone and stays at its floor.
 */
TEST(rc_srq_rx, rnr_of_one_interface_does_not_grow_another)
{
    entity flooded(config_t{{"RX_QUEUE_MIN", "16"}, {"RX_QUEUE_MAX", "16"},
                            {"RX_BATCH", "16"}, {"RNR_TIMER", "1"}});
    entity_params params;
    params.config = {{"RX_QUEUE_MIN", "16"}, {"RX_QUEUE_MAX", "256"},
                     {"RX_BATCH", "16"},
                     {"RX_ADAPT_INTERVAL", "1ms"}, {"RX_SHRINK_DELAY", "60s"}};
    params.share = &flooded;
    entity bystander(params);

    incast flood(flooded, 8);
    ASSERT_TRUE(flood.run(2000)) << "received " << flood.total();
    flood.check();
    /* a few more of the bystander's adaptation periods */
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    progress_until({&flooded}, [&] {
        return std::chrono::steady_clock::now() >= until;
    });

    uct_srq_iface_counters_t f = flooded.counters();
    if (f.rx_rnr == 0) {
        GTEST_SKIP() << "the device counts no RNR NAKs per SRQ";
    }
    uct_srq_iface_counters_t b = bystander.counters();
    EXPECT_EQ(0u, b.rx_rnr) << "the flooded interface's RNR NAKs (" << f.rx_rnr
                            << ") were counted for the bystander";
    EXPECT_EQ(0u, b.rx_grows);
    EXPECT_EQ(16u, b.rx_queue_target);
}

/*
 * Grow under a flood, keep a trickle of traffic while the demand is
 * small, then go quiet: the depth comes down to what the trickle needs and
 * then to the floor, the surplus buffers are retired (consumed by the
 * interface's own empty messages, never dropped) while traffic goes on,
 * the pool gives memory back, and every message still arrives once and in
 * order.
 */
TEST(rc_srq_rx, shrink_never_drops_posted_buffers)
{
    entity receiver(config_t{{"RX_QUEUE_MIN", "16"}, {"RX_QUEUE_MAX", "1024"},
                             {"RX_BATCH", "16"}, {"RX_ADAPT_INTERVAL", "2ms"},
                             {"RX_SHRINK_DELAY", "30ms"}});
    const uint64_t floor_bytes = receiver.counters().rx_bytes_held;
    incast flood(receiver, 16);
    uct_srq_iface_counters_t grown;
    /* the trickle's demand (2 batches) must be at most half of it. On a
     * loaded host a flood may find the receiver saturated (RNR is then the
     * flow control: no growth) or, paused, shrink it again (30 ms): more
     * of the flood until it has grown, as long as it keeps arriving */
    for (int round = 0; round < 10; ++round) {
        ASSERT_TRUE(flood.run((round == 0) ? 2000 : 500))
            << "received " << flood.total();
        grown = receiver.counters();
        if (grown.rx_queue_target >= 4u * 16) {
            break;
        }
    }
    ASSERT_GE(grown.rx_queue_target, 4u * 16)
        << "the flood did not grow it: " << flood.total() << " messages";
    print("grown", grown);

    /* one message per millisecond from one sender, for 300 ms: the drawdown
     * is a batch (a refill comes once a batch is missing), the demand twice
     * that, and the depth stays within the hysteresis band above it (a
     * depth shrinks once the demand is at or below half of it) */
    const uint64_t periods = shrink_periods(30, 2);
    incast trickle(receiver, 1, 2);
    auto last  = std::chrono::steady_clock::now();
    auto until = last + std::chrono::milliseconds(300);
    progress_for_periods(receiver, {&receiver, &flood.sender(0),
                                    &trickle.sender(0)}, [&] {
        auto now = std::chrono::steady_clock::now();
        if (now - last > std::chrono::milliseconds(1)) {
            trickle.run(1, 1.0);
            last = now;
        }
        /* a shrink of its own: on a slow host the flood may have had one */
        return (now >= until) &&
               (receiver.counters().rx_retired > grown.rx_retired);
    }, periods);
    uct_srq_iface_counters_t c = receiver.counters();
    print("trickle", c);
    EXPECT_LE(c.rx_queue_demand, 2u * 16) << "the trickle's demand";
    EXPECT_LE(c.rx_queue_target, 2u * 2 * 16) << "above the band";
    EXPECT_GT(c.rx_retired, grown.rx_retired) << "shrunk while traffic went on";

    /* quiet: back to the floor, and to the floor's memory */
    uint64_t took;
    ASSERT_TRUE(progress_for_periods(receiver, {&receiver, &flood.sender(0),
                                                &trickle.sender(0)}, [&] {
        c = receiver.counters();
        return (c.rx_queue_target == 16) && (c.rx_queue_now <= 16) &&
               (c.rx_bytes_held == floor_bytes);
    }, periods, &took)) << "depth " << c.rx_queue_target << ", posted "
              << c.rx_queue_now << ", held " << c.rx_bytes_held << " (the "
              << "floor's " << floor_bytes << ", grown " << grown.rx_bytes_held
              << ") after " << took << " periods of quiet";
    print("quiet", c);
    EXPECT_GE(c.rx_shrinks, 1u);
    expect_no_buffer_lost(c);

    /* and traffic goes on */
    ASSERT_TRUE(flood.run(500));
    flood.check();
    trickle.check();

    c = receiver.counters();
    print("flooded again", c);
    EXPECT_EQ(0u, c.rx_dropped);
    /* every completion is a message or a retired buffer */
    EXPECT_EQ(c.rx_consumed, flood.total() + trickle.total() + c.rx_retired);
    expect_no_buffer_lost(c);
}

/*
 * A steady flood that a small fixed queue carries without RNR (4 senders,
 * each with at most 16 messages the receiver has not handled yet): the
 * adaptive queue (16 .. 4096) settles near what the flood needs - at most
 * twice that fixed depth, far below its ceiling.
 *
 * The law measures time (consumption per interval, refill latency): a
 * receiver descheduled mid-flood (make -j2 check runs suites side by side
 * on 2 cores) really needs more buffers, and grows one step more (seen once:
 * peak 208 of 192). So the adaptive flood runs up to 3 times, each on a
 * fresh interface, and one of them must settle within the bound; a law
 * that overshoots does so every time.
 */
TEST(rc_srq_rx, depth_settles_below_the_ceiling_under_a_steady_flood)
{
    const unsigned fixed_depth = 96, senders = 4, window = 16, msgs = 5000;
    uct_srq_iface_counters_t fixed, adaptive;
    {
        entity receiver(config_t{{"RX_QUEUE_MIN", std::to_string(fixed_depth)},
                                 {"RX_QUEUE_MAX", std::to_string(fixed_depth)},
                                 {"RX_BATCH", "16"}});
        incast flood(receiver, senders);
        ASSERT_TRUE(flood.run(msgs, 120.0, {}, window));
        flood.check();
        fixed = receiver.counters();
        print("fixed", fixed);
    }
    ASSERT_EQ(0u, fixed.rx_rnr) << "the fixed depth did not carry the flood";
    for (int attempt = 0; attempt < 3; ++attempt) {
        entity receiver(config_t{{"RX_QUEUE_MIN", "16"},
                                 {"RX_QUEUE_MAX", "4096"},
                                 {"RX_BATCH", "16"}});
        incast flood(receiver, senders);
        ASSERT_TRUE(flood.run(msgs, 120.0, {}, window));
        flood.check();
        adaptive = receiver.counters();
        print("adaptive", adaptive);
        if (adaptive.rx_queue_peak <= 2 * fixed_depth) {
            break;
        }
    }
    EXPECT_LE(adaptive.rx_queue_peak, 2 * fixed_depth)
        << "more than twice the fixed depth that carried the flood";
    EXPECT_LE(adaptive.rx_queue_target, 2 * fixed_depth);
    EXPECT_GT(adaptive.rx_queue_target, 16u) << "it followed no demand";
    expect_no_buffer_lost(adaptive);
}

/* SRQ=n: every QP has its own receive queue of RX_QP_LEN buffers */
TEST(rc_srq_rx, per_qp_receive_queues)
{
    entity receiver(config_t{{"SRQ", "n"}, {"RX_QP_LEN", "16"},
                             {"RX_BATCH", "8"}});
    uct_srq_iface_counters_t c0 = receiver.counters();
    EXPECT_EQ(0u, c0.rx_srq);
    EXPECT_EQ(0u, c0.rx_queue_now);

    incast flood(receiver, 8);
    ASSERT_TRUE(flood.run(1000)) << "received " << flood.total();
    flood.check();
    /* a queue is refilled once a batch is missing: let the receiver's
     * next polls repost what is due */
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    progress_until({&receiver}, [&] {
        return std::chrono::steady_clock::now() >= until;
    });

    uct_srq_iface_counters_t c = receiver.counters();
    EXPECT_EQ(8u, c.conns);
    /* receive memory grows with the peers: each queue within a batch of
     * its 16 */
    EXPECT_EQ(8u * 16, c.rx_queue_target);
    EXPECT_EQ(8u * 16, c.rx_queue_peak);
    EXPECT_LE(c.rx_queue_now, 8u * 16);
    EXPECT_GT(c.rx_queue_now, 8u * (16 - 8));
    EXPECT_EQ(8u * 1000, c.rx_consumed);
    expect_no_buffer_lost(c);
    print("per-QP", c);
}

/*
 * Handlers keep every descriptor: the pool reaches RX_MAX_BUFS, the
 * condition is counted (and warned about), the senders wait; releasing the
 * descriptors lets the rest of the traffic in.
 */
TEST(rc_srq_rx, kept_descriptors_beyond_max_bufs_reported)
{
    entity receiver(config_t{{"RX_QUEUE_MIN", "16"}, {"RX_QUEUE_MAX", "16"},
                             {"RX_BATCH", "16"}, {"RX_MAX_BUFS", "32"}});
    entity sender;
    std::vector<void*> kept;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver.iface(), 1,
            [](void *arg, void *data, size_t length, unsigned flags) {
                static_cast<std::vector<void*>*>(arg)->push_back(data);
                return (flags & UCT_CB_PARAM_FLAG_DESC) ? UCS_INPROGRESS :
                                                          UCS_OK;
            }, &kept, 0));
    uct_ep_h ep = sender.connect(receiver);

    const uint64_t count = 48;
    uint64_t sent = 0;
    auto send_all = [&] {
        while ((sent < count) &&
               (uct_ep_am_short(ep, 1, sent, NULL, 0) == UCS_OK)) {
            ++sent;
        }
    };
    /* 32 descriptors: 16 held + 16 posted, then they are all held */
    ASSERT_TRUE(progress_until({&receiver, &sender}, [&] {
        send_all();
        return kept.size() == 32;
    }));
    for (int i = 0; i < 50; ++i) {
        receiver.progress();
        sender.progress();
    }
    uct_srq_iface_counters_t c = receiver.counters();
    EXPECT_EQ(32u, kept.size()) << "more than RX_MAX_BUFS descriptors";
    EXPECT_EQ(32u, c.rx_held);
    EXPECT_EQ(1u, c.rx_starved);
    EXPECT_EQ(0u, c.rx_queue_now);
    expect_no_buffer_lost(c, kept.size());

    for (size_t i = 0; i < kept.size(); ++i) {
        uint64_t v;
        memcpy(&v, kept[i], sizeof(v));
        EXPECT_EQ(i, v) << "out of order";
        uct_iface_release_desc(kept[i]);
    }
    size_t released = kept.size();
    ASSERT_TRUE(progress_until({&receiver, &sender}, [&] {
        send_all();
        while (kept.size() > released) {
            uct_iface_release_desc(kept[released++]);
        }
        return (sent == count) && (kept.size() == count);
    })) << kept.size() << " of " << count << " received";
    c = receiver.counters();
    EXPECT_EQ(0u, c.rx_held);
    EXPECT_EQ(count, c.rx_consumed);
    expect_no_buffer_lost(c);
}

/*
 * A post of a refill chain fails at WR k (soft device fault hook): the WRs
 * before it are posted, it and the rest go back to the pool, and a later
 * refill posts them. With RX_MAX_BUFS leaving 8 spare descriptors, three
 * faults would exhaust the pool if any descriptor were lost.
 */
TEST(rc_srq_rx, partial_post_failure_loses_nothing)
{
    typedef srq_verbs_dev_t *(*md_dev_func_t)(uct_md_h);
    typedef int (*fail_post_func_t)(srq_verbs_dev_t*, unsigned, int);
    auto md_dev    = (md_dev_func_t)plugin_symbol("uct_srq_md_verbs_dev");
    auto fail_post = (fail_post_func_t)plugin_symbol(
                                             "srq_soft_test_fail_post");
    ASSERT_TRUE((md_dev != NULL) && (fail_post != NULL))
        << "the plugin's test hooks are not exported";

    entity receiver(config_t{{"RX_QUEUE_MIN", "32"},
                             {"RX_QUEUE_MAX", "32"}, {"RX_BATCH", "8"},
                             {"RX_MAX_BUFS", "40"}});
    SRQ_TEST_REQUIRE_BUILTIN_SOFT(receiver.md());
    srq_verbs_dev_t *dev = md_dev(receiver.md());
    ASSERT_NE(nullptr, dev);
    incast flow(receiver, 1);
    ASSERT_EQ(32u, receiver.counters().rx_queue_now);

    for (unsigned k : {3u, 5u, 7u}) {
        SCOPED_TRACE("fault at WR " + std::to_string(k));
        ASSERT_EQ(0, fail_post(dev, k, ENOMEM));
        /* 8 consumed: the refill chain of 8 stops at WR k */
        ASSERT_TRUE(flow.run(8));
        for (int i = 0; i < 10; ++i) {
            receiver.progress();
        }
        EXPECT_EQ(32u - 8 + k, receiver.counters().rx_queue_now);
        /* the next refills post the rest. A refill tops the queue up once
         * a whole batch is missing, so the last messages may leave up to
         * 7 of 32 unposted (how many depends on how the polls took them):
         * single messages then bring it to a refill, and each round
         * starts full */
        ASSERT_TRUE(flow.run(200));
        for (int i = 0; (i < 8) && (receiver.counters().rx_queue_now != 32);
             ++i) {
            ASSERT_TRUE(flow.run(1));
        }
        ASSERT_EQ(32u, receiver.counters().rx_queue_now);
    }
    flow.check();

    uct_srq_iface_counters_t c = receiver.counters();
    EXPECT_EQ(0u, c.rx_starved);
    EXPECT_EQ(flow.total(), c.rx_consumed);
    expect_no_buffer_lost(c);
}

/*
 * UCX_RC_SRQ_ALLOC (the interface's allocation methods, UCX's common
 * setting) decides how the receive and send pools get their memory: from
 * the heap a chunk is exactly what the pool asked for, from mmap whole
 * pages; and a method that cannot allocate here (md: the srq md allocates
 * nothing) leaves the interface unable to open, with an error.
 */
TEST(rc_srq_rx, alloc_methods_are_honoured)
{
    const size_t page = sysconf(_SC_PAGESIZE);
    entity heap(config_t{{"ALLOC", "heap"}});
    entity mapped(config_t{{"ALLOC", "mmap"}});
    uint64_t heap_bytes = heap.counters().rx_bytes_held;
    uint64_t mmap_bytes = mapped.counters().rx_bytes_held;

    EXPECT_NE(0u, heap_bytes % page) << heap_bytes << " bytes from the heap";
    EXPECT_EQ(0u, mmap_bytes % page) << mmap_bytes << " bytes from mmap";
    EXPECT_LT(heap_bytes, mmap_bytes);

    EXPECT_THROW(entity(config_t{{"ALLOC", "md"}}), std::runtime_error);
}

/*
 * A flood that grows the queue to less than twice its floor, then quiet:
 * it comes back to the floor (depth and registered memory) one shrink
 * delay later. The hysteresis shrinks only to a target at most half the
 * depth, and the floor was never that: before, such a queue kept its
 * grown depth and memory for good. The ceiling (112, below twice the
 * floor of 64) makes any growth such a one. The flood starts with a
 * burst the receiver does not progress through: the queue goes below
 * its watermark, and the limit event (the signal that grows it here) has
 * 50 ms to come through UCX's async thread. A flood alone lasts about
 * 5 ms, and under srq-run --verbs the event came after its end in 1 run
 * in 100: nothing grew. The quiet is bounded in adaptation periods
 * (shrink_periods): a bound of 5 s failed beside a stress loop.
 */
TEST(rc_srq_rx, quiet_brings_a_small_growth_back_to_the_floor)
{
    const unsigned floor_depth = 64;
    entity receiver(config_t{{"RX_QUEUE_MIN", std::to_string(floor_depth)},
                             {"RX_QUEUE_MAX", "112"}, {"RX_BATCH", "16"},
                             {"RX_ADAPT_INTERVAL", "2ms"},
                             {"RX_SHRINK_DELAY", "50ms"}});
    const uint64_t floor_bytes = receiver.counters().rx_bytes_held;
    incast flood(receiver, 4);
    uct_srq_iface_counters_t c;

    flood.burst(64, 0.05);
    ASSERT_TRUE(flood.run(2000));
    flood.check();
    c = receiver.counters();
    print("grown", c);
    ASSERT_GT(c.rx_grows, 0u) << "the flood did not grow it";

    uint64_t took;
    EXPECT_TRUE(progress_for_periods(receiver, {&receiver}, [&] {
        c = receiver.counters();
        return (c.rx_queue_target == floor_depth) &&
               (c.rx_bytes_held == floor_bytes);
    }, shrink_periods(50, 2), &took))
        << "depth " << c.rx_queue_target << ", held " << c.rx_bytes_held
        << " (floor " << floor_bytes << ") after " << took
        << " periods of quiet";
    EXPECT_GT(c.rx_shrinks, 0u);
    print("quiet", c);
    expect_no_buffer_lost(c);
}
