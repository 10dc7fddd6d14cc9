/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_srq for a program that sleeps: UCT's wakeup API (uct_iface_event_fd_get,
 * uct_iface_event_arm), which ucp_worker_wait and programs that epoll a
 * worker's fd use. One interface's owner is a thread that only ever
 * progresses after its event fd woke it - anything that needs it and does
 * not wake it leaves it asleep, and the test fails with "not woken".
 */
#include "srq_uct_fixture.h"

#include <poll.h>
#include <atomic>
#include <iostream>
#include <thread>

using namespace srq_test;

namespace {

/* Counts active messages */
struct am_count {
    std::atomic<int> n{0};

    static ucs_status_t cb(void *arg, void *data, size_t length,
                           unsigned flags)
    {
        ++static_cast<am_count*>(arg)->n;
        return UCS_OK;
    }
};

/* Counts endpoint errors */
struct err_count {
    std::atomic<int> n{0};

    static ucs_status_t cb(void *arg, uct_ep_h ep, ucs_status_t status)
    {
        ++static_cast<err_count*>(arg)->n;
        return UCS_OK;
    }
};

/*
 * The sleeper's loop, as ucp_worker_wait runs it: progress until @done;
 * when progress finds nothing, arm (UCS_ERR_BUSY: progress again) and
 * sleep on the fd. Returns "" when done, else what went wrong. Between
 * the arm and the sleep nothing looks at the interface.
 */
std::string sleep_until(entity &e, const std::function<bool()> &done,
                        int wake_ms = 10000)
{
    ucs_status_t status;
    int fd;

    if (uct_iface_event_fd_get(e.iface(), &fd) != UCS_OK) {
        return "no event fd";
    }
    while (!done()) {
        if (e.progress() != 0) {
            continue;
        }
        status = uct_iface_event_arm(e.iface(),
                                     UCT_EVENT_SEND_COMP | UCT_EVENT_RECV);
        if (status == UCS_ERR_BUSY) {
            continue;
        }
        if (status != UCS_OK) {
            return std::string("arm: ") + ucs_status_string(status);
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, wake_ms) != 1) {
            return "not woken in " + std::to_string(wake_ms) + " ms";
        }
    }
    return "";
}

/* No idle check within a test's bound: its probe of an idle connection
 * would wake a sleeper that nothing else woke */
const config_t no_idle_check = {{"CONN_IDLE_CHECK", "600s"}};

} // namespace

/* Armed before any connection exists: the peer's handshake and then its
 * message wake the receiver. (Before the handshake's CQ was on the channel
 * this passed too: UCX's async thread answered the peer within
 * ASYNC_INTERVAL and the message, on an armed CQ, woke the receiver; the
 * sender's side below is what hung) */
TEST(rc_srq_wakeup, receiver_armed_before_first_connection)
{
    entity sender(no_idle_check), receiver(no_idle_check);
    am_count got;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver.iface(), 1,
                                               am_count::cb, &got, 0));
    std::string res;
    std::thread sleeper([&] {
        res = sleep_until(receiver, [&] { return got.n > 0; });
    });

    uct_ep_h ep = sender.connect(receiver);
    ucs_status_t status;
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (((status = uct_ep_am_short(ep, 1, 0, NULL, 0)) ==
            UCS_ERR_NO_RESOURCE) && (std::chrono::steady_clock::now() < end)) {
        sender.progress();
    }
    EXPECT_EQ(UCS_OK, status);
    /* its ACK needs our progress, the receiver's answers itself */
    while ((got.n == 0) && (std::chrono::steady_clock::now() < end)) {
        sender.progress();
    }
    sleeper.join();
    EXPECT_EQ("", res);
    EXPECT_EQ(1, got.n);
}

/* The sleeper is the one that connects: its message waits in the
 * connection until the peer's reply (REP) comes, which must wake it - UCX's
 * async thread may take that reply for it, and then it must say so - and
 * its flush completes on the peer's ACK, which must wake it too */
TEST(rc_srq_wakeup, sender_woken_by_handshake_reply_and_flush)
{
    entity sender(no_idle_check), receiver(no_idle_check);
    am_count got;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver.iface(), 1,
                                               am_count::cb, &got, 0));
    uct_ep_h ep = sender.connect(receiver);
    std::atomic<bool> stop{false};
    test_comp comp;
    std::string res;
    std::thread sleeper([&] {
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        bool flushing       = false;
        res = sleep_until(sender, [&] {
            if (status == UCS_ERR_NO_RESOURCE) {
                status = uct_ep_am_short(ep, 1, 0, NULL, 0);
            }
            if ((status == UCS_OK) && !flushing) {
                ucs_status_t fst = uct_ep_flush(ep, 0, &comp.comp);
                if (fst == UCS_OK) {
                    ++comp.done;
                }
                flushing = (fst != UCS_ERR_NO_RESOURCE);
            }
            return (comp.done > 0) || stop;
        });
        EXPECT_EQ(UCS_OK, status);
    });
    /* the receiver polls: it answers at once */
    bool delivered = progress_until({&receiver}, [&] { return got.n > 0; },
                                    20);
    /* its ACK goes out with the receiver's progress */
    progress_until({&receiver}, [&] { return comp.done > 0; }, 20);
    stop = true;
    sleeper.join();
    EXPECT_TRUE(delivered);
    EXPECT_EQ("", res);
    EXPECT_EQ(1, comp.done);
    EXPECT_EQ(UCS_OK, comp.status);
}

/* Every handshake datagram of the sleeper is lost: nothing arrives to wake
 * it, so its timer must - to retransmit, and at CONN_TIMEOUT to find the
 * connection failed and report it */
TEST(rc_srq_wakeup, sleeper_woken_by_its_handshake_timer)
{
    err_count errors;
    entity_params params;
    params.config      = {{"CONN_DROP", "100"}, {"CONN_TIMEOUT", "500ms"},
                          {"CONN_RETRY", "50ms"}};
    params.err_handler = err_count::cb;
    params.err_arg     = &errors;
    entity sender(params), receiver;
    uct_ep_h ep = sender.connect(receiver);
    ucs_status_t status = uct_ep_am_short(ep, 1, 0, NULL, 0);
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_ERR_NO_RESOURCE))
        << ucs_status_string(status);

    auto t0 = std::chrono::steady_clock::now();
    std::string res = sleep_until(sender, [&] { return errors.n > 0; });
    EXPECT_EQ("", res);
    EXPECT_EQ(1, errors.n);
    /* no bound on the time: printed, as a wake-up latency */
    std::cout << "connection failure reported after "
              << std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - t0).count()
              << " ms (CONN_TIMEOUT 500 ms)" << std::endl;
}
