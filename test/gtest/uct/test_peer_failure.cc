/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer process killed during traffic: the survivor's error handler runs
 * within a bounded time, nothing hangs, and nothing of the dead peer is
 * left in the file system.
 */
#include "srq_uct_fixture.h"

#include <atomic>
#include <fstream>
#include <thread>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace srq_test;

namespace {

std::vector<char> from_hex(const std::string &hex)
{
    std::vector<char> v;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        v.push_back((char)strtoul(hex.substr(i, 2).c_str(), NULL, 16));
    }
    return v;
}

std::string to_hex(const std::vector<char> &v)
{
    std::string hex;
    char b[3];
    for (char c : v) {
        snprintf(b, sizeof(b), "%02x", (unsigned char)c);
        hex += b;
    }
    return hex;
}

/* A uct_peer process; killed and reaped in the destructor in any case */
class peer_process {
public:
    /* @connect_to: the peer connects to this interface first; @req_only:
     * it sends the REQ and no more (uct_peer's "req") */
    explicit peer_process(const entity *connect_to = NULL,
                          bool req_only = false)
    {
        const char *builddir = getenv("SRQ_TEST_BUILDDIR");
        std::string tool = std::string(builddir ? builddir : ".") +
                           "/test/tools/uct_peer";
        int out[2], in[2];
        posix_spawn_file_actions_t fa;
        std::string dev_hex, iface_hex;
        if (connect_to != NULL) {
            dev_hex   = to_hex(connect_to->dev_addr());
            iface_hex = to_hex(connect_to->iface_addr());
        }
        char *argv[] = {(char*)tool.c_str(),
                        connect_to ? (char*)dev_hex.c_str() : NULL,
                        (char*)iface_hex.c_str(),
                        req_only ? (char*)"req" : NULL, NULL};

        if ((pipe(out) != 0) || (pipe(in) != 0)) {
            throw std::runtime_error("pipe");
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_addclose(&fa, out[0]);
        posix_spawn_file_actions_addclose(&fa, in[1]);
        int ret = posix_spawn(&m_pid, tool.c_str(), &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(out[1]);
        close(in[0]);
        m_stdin = in[1];
        if (ret != 0) {
            close(out[0]);
            m_pid = -1;
            throw std::runtime_error("cannot start " + tool);
        }

        /* one line: "<dev hex> <iface hex>" */
        std::string line;
        char c;
        while ((read(out[0], &c, 1) == 1) && (c != '\n')) {
            line += c;
        }
        close(out[0]);
        size_t sp = line.find(' ');
        if (sp == std::string::npos) {
            throw std::runtime_error("uct_peer gave no address: '" + line + "'");
        }
        m_dev   = from_hex(line.substr(0, sp));
        m_iface = from_hex(line.substr(sp + 1));
    }

    ~peer_process()
    {
        kill_now();
        if (m_stdin >= 0) {
            close(m_stdin);
        }
    }

    void kill_now()
    {
        if (m_pid > 0) {
            kill(m_pid, SIGKILL);
            waitpid(m_pid, NULL, 0);
            m_pid = -1;
        }
    }

    /* An endpoint of @self's interface to the peer's */
    ucs_status_t connect(const entity &self, uct_ep_h *ep_p) const
    {
        uct_ep_params_t params = {};

        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = self.iface();
        params.dev_addr   = (const uct_device_addr_t*)m_dev.data();
        params.iface_addr = (const uct_iface_addr_t*)m_iface.data();
        return uct_ep_create(&params, ep_p);
    }

    /* what the name of the soft device's shared memory (memfds) of the
     * peer's instance begins with: its port's id without the serial (the
     * peer has one instance; soft_port.h) */
    std::string shm_name() const
    {
        char hex[3];
        std::string name = "srq-soft-";
        /* the port address: kind, port, lid(2), "soft", 12-byte port id */
        for (size_t i = 8; i < 18 && i < m_dev.size(); ++i) {
            snprintf(hex, sizeof(hex), "%02x", (unsigned char)m_dev[i]);
            name += hex;
        }
        return name;
    }

    std::vector<char> m_dev, m_iface;
    pid_t             m_pid   = -1;
    int               m_stdin = -1;
};

/* A mapping of this process whose name contains @name */
bool maps_contain(const std::string &name)
{
    std::ifstream maps("/proc/self/maps");
    std::string line;

    while (std::getline(maps, line)) {
        if (line.find(name) != std::string::npos) {
            return true;
        }
    }
    return false;
}

struct err_count {
    int          count = 0;
    ucs_status_t status = UCS_OK;

    static ucs_status_t cb(void *arg, uct_ep_h ep, ucs_status_t status)
    {
        err_count *self = static_cast<err_count*>(arg);
        ++self->count;
        self->status = status;
        return UCS_OK;
    }
};

/* Send @n active messages (id 1, counted in @sent) and flush them: the
 * peer took them all */
bool deliver(entity &self, uct_ep_h ep, uint64_t n, uint64_t *sent)
{
    return progress_until({&self}, [&] {
               if (uct_ep_am_short(ep, 1, *sent, NULL, 0) == UCS_OK) {
                   ++*sent;
               }
               return *sent >= n;
           }) &&
           progress_until({&self}, [&] {
               return uct_ep_flush(ep, 0, NULL) == UCS_OK;
           });
}

} // namespace

/* Keep sending (and checking) on @ep until the error handler ran, at most
 * 30 s: whether it did */
static bool sends_until_error(entity &self, uct_ep_h ep, uint64_t *sent,
                              const err_count &errors)
{
    return progress_until({&self}, [&] {
        if ((errors.count == 0) &&
            (uct_ep_am_short(ep, 1, *sent, NULL, 0) == UCS_OK)) {
            ++*sent;
        }
        uct_ep_check(ep, 0, NULL);
        return errors.count > 0;
    }, 30.0);
}

TEST(rc_srq_peer, killed_peer_reported_within_bound)
{
    std::unique_ptr<peer_process> peer(new peer_process());
    err_count errors;
    entity_params params;
    params.err_handler = err_count::cb;
    params.err_arg     = &errors;
    entity self(params);
    uct_ep_h ep;
    ASSERT_EQ(UCS_OK, peer->connect(self, &ep));

    /* traffic flows: sent and acknowledged. Sends accepted while the
     * connection is still being set up wait in it; killed then, the peer
     * is one that never answered, reported only after CONN_TIMEOUT (30 s,
     * the bound below) - not what this test is about */
    uint64_t sent = 0;
    ASSERT_TRUE(deliver(self, ep, 100, &sent))
        << "the peer did not take the messages";
    /* we map the peer's memory: its instance is the one we talk to */
    std::string shm = peer->shm_name();
    EXPECT_TRUE(maps_contain(shm)) << shm << " should be mapped while alive";

    peer->kill_now();

    /* keep sending: the error handler must run, within a bound */
    auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(sends_until_error(self, ep, &sent, errors))
        << "no error reported for a dead peer";
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                start).count();
    EXPECT_NE(UCS_OK, errors.status);
    RecordProperty("seconds_to_error", std::to_string(took));
    std::cout << "error reported " << took << " s after the peer died" << std::endl;

    /* nothing hangs: flush and destroy return */
    uct_ep_pending_purge(ep, NULL, NULL);
    uct_ep_destroy(ep);

    /* nothing of the dead peer is left in the file system (its memory is
     * in memfds, which go with the last process that maps them) */
    struct stat st;
    EXPECT_NE(0, stat(("/dev/shm/" + shm).c_str(), &st)) << shm
                                                           << " left behind";
}

/*
 * Tag matching on both sides (UCX_RC_SRQ_TM_ENABLE=y, the peer process
 * inherits it): a peer killed while our receives sit in the device's
 * list. Its failure is reported as without; the tags stay ours, each
 * removed with a cancel, and the list still matches a live sender's
 * message afterwards.
 */
TEST(rc_srq_peer, killed_peer_with_tags_posted)
{
    env_guard tm("UCX_RC_SRQ_TM_ENABLE", "y");
    std::unique_ptr<peer_process> peer(new peer_process());
    err_count errors;
    entity_params params;
    params.err_handler = err_count::cb;
    params.err_arg     = &errors;
    entity self(params);
    struct recv {
        uct_tag_context_t ctx = {};
        int               done = 0;
        ucs_status_t      status = UCS_ERR_NO_PROGRESS;
    } recvs[8];
    std::vector<std::unique_ptr<mem_buffer>> bufs;
    uct_ep_h ep;

    ASSERT_NE(0u, self.attr().cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
    for (int i = 0; i < 8; ++i) {
        recvs[i].ctx.tag_consumed_cb = [](uct_tag_context_t*) {};
        recvs[i].ctx.completed_cb = [](uct_tag_context_t *c, uct_tag_t,
                                       uint64_t, size_t, void*,
                                       ucs_status_t s) {
            recv *r = ucs_container_of(c, recv, ctx);
            ++r->done;
            r->status = s;
        };
        bufs.emplace_back(new mem_buffer(self.md(), 64));
        uct_iov_t iov = {bufs[i]->ptr(), 64, bufs[i]->memh(), 0, 1};
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(self.iface(), 40 + i,
                                                   ~0ull, &iov, 1,
                                                   &recvs[i].ctx));
    }
    ASSERT_EQ(UCS_OK, peer->connect(self, &ep));
    uint64_t sent = 0;
    ASSERT_TRUE(deliver(self, ep, 100, &sent))
        << "the peer did not take the messages";

    peer->kill_now();
    EXPECT_TRUE(sends_until_error(self, ep, &sent, errors))
        << "no error reported for a dead peer";
    uct_ep_pending_purge(ep, NULL, NULL);
    uct_ep_destroy(ep);

    /* the tags are ours still: removed one by one, without callbacks but
     * the one asked for (not forced) */
    for (int i = 1; i < 8; ++i) {
        EXPECT_EQ(UCS_OK, uct_iface_tag_recv_cancel(self.iface(),
                                                    &recvs[i].ctx, 1)) << i;
    }
    EXPECT_EQ(UCS_ERR_NO_ELEM,
              uct_iface_tag_recv_cancel(self.iface(), &recvs[1].ctx, 1))
        << "a forced cancel leaves the receive gone";

    /* a live sender's message still finds tag 40 in the list */
    entity sender;
    uct_ep_h ep2 = sender.connect(self);
    std::string data(48, 'z');
    struct pack { static size_t cb(void *d, void *a) {
        memcpy(d, a, 48); return 48; } };
    ASSERT_TRUE(progress_until({&sender, &self}, [&] {
        return uct_ep_tag_eager_bcopy(ep2, 40, 0, pack::cb, &data[0], 0) >= 0;
    }));
    ASSERT_TRUE(progress_until({&sender, &self}, [&] {
        return recvs[0].done > 0;
    }));
    EXPECT_EQ(UCS_OK, recvs[0].status);
    EXPECT_EQ(data, std::string(bufs[0]->ptr(), 48));
    for (int i = 1; i < 8; ++i) {
        EXPECT_EQ(0, recvs[i].done) << "a forced cancel calls nothing";
    }
}

/*
 * uct_ep_check alone finds a dead peer: after the traffic is done and
 * acknowledged nothing else is sent, so no send can fail; the check must
 * find out by itself and report through the error handler.
 */
TEST(rc_srq_peer, ep_check_alone_detects_dead_peer)
{
    std::unique_ptr<peer_process> peer(new peer_process());
    err_count errors;
    entity_params params;
    params.err_handler = err_count::cb;
    params.err_arg     = &errors;
    entity self(params);
    uct_ep_h ep;
    ASSERT_EQ(UCS_OK, peer->connect(self, &ep));

    /* connected, and every send acknowledged */
    ASSERT_TRUE(progress_until({&self}, [&] {
        return uct_ep_am_short(ep, 1, 0, NULL, 0) == UCS_OK;
    }));
    ASSERT_TRUE(progress_until({&self}, [&] {
        return uct_ep_flush(ep, 0, NULL) == UCS_OK;
    }));
    EXPECT_EQ(UCS_OK, uct_ep_check(ep, 0, NULL)) << "a live peer";
    for (int i = 0; i < 1000; ++i) {
        self.progress();
    }
    ASSERT_EQ(0, errors.count) << "an error for a live peer";

    peer->kill_now();

    /* nothing but checks and progress */
    EXPECT_TRUE(progress_until({&self}, [&] {
        uct_ep_check(ep, 0, NULL);
        return errors.count > 0;
    }, 30.0)) << "uct_ep_check did not find the dead peer";
    EXPECT_NE(UCS_OK, errors.status);

    uct_ep_pending_purge(ep, NULL, NULL);
    uct_ep_destroy(ep);
}

/* Whether process @pid is stopped (state T in /proc/PID/stat) */
static bool process_stopped(pid_t pid)
{
    std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
    std::string line;

    std::getline(stat_file, line);
    size_t paren = line.rfind(')');
    return (paren != std::string::npos) && (paren + 2 < line.size()) &&
           (line[paren + 2] == 'T');
}

/*
 * A peer stopped with SIGSTOP is alive: no error for it, however long it
 * stays stopped, and what was sent meanwhile arrives once it runs again.
 * Stricter than the defaults: an ACK timeout of ~17 ms (TIMEOUT 12), so
 * that a peer taken for dead would be reported after ~120 ms, and the peer
 * stays stopped 2 s while we keep sending and checking it.
 */
TEST(rc_srq_peer, stopped_peer_is_not_failed)
{
    std::unique_ptr<peer_process> peer(new peer_process());
    err_count errors;
    entity_params params;
    params.config      = config_t{{"TIMEOUT", "12"}};
    params.err_handler = err_count::cb;
    params.err_arg     = &errors;
    entity self(params);
    uct_ep_h ep;
    ASSERT_EQ(UCS_OK, peer->connect(self, &ep));

    uint64_t sent = 0;
    ASSERT_TRUE(deliver(self, ep, 100, &sent))
        << "the peer did not take the messages";

    ASSERT_EQ(0, kill(peer->m_pid, SIGSTOP));
    ASSERT_TRUE(progress_until({&self}, [&] {
        return process_stopped(peer->m_pid);
    }, 10.0));
    uint64_t before = sent;
    progress_until({&self}, [&] {
        if (uct_ep_am_short(ep, 1, sent, NULL, 0) == UCS_OK) {
            ++sent;
        }
        uct_ep_check(ep, 0, NULL);
        return errors.count > 0;
    }, 2.0);
    EXPECT_EQ(0, errors.count) << "a stopped peer was reported: "
                               << ucs_status_string(errors.status);
    EXPECT_GT(sent, before) << "nothing was sent toward the stopped peer";
    EXPECT_TRUE(process_stopped(peer->m_pid)) << "it ran meanwhile";

    ASSERT_EQ(0, kill(peer->m_pid, SIGCONT));
    EXPECT_TRUE(progress_until({&self}, [&] {
        return uct_ep_flush(ep, 0, NULL) == UCS_OK;
    }, 30.0)) << "what was sent to it did not arrive after SIGCONT";
    EXPECT_EQ(0, errors.count);
    uct_ep_destroy(ep);
}

/*
 * A connection that never comes up - every handshake datagram lost, as
 * when the peer has no room to map us - fails its endpoints at
 * CONN_TIMEOUT, also one that sent nothing: a ping-pong's responder,
 * waiting for its peer's first message, was never told, and spun in
 * progress for ever (issue 51: ucx_perftest under ulimit -v).
 */
TEST(rc_srq_peer, idle_endpoint_told_its_connection_never_came_up)
{
    err_count errors;
    entity_params params;
    params.config      = {{"CONN_DROP", "100"}, {"CONN_TIMEOUT", "300ms"},
                          {"CONN_RETRY", "50ms"}};
    params.err_handler = err_count::cb;
    params.err_arg     = &errors;
    entity self(params), peer;

    self.connect(peer); /* and nothing sent on it */
    EXPECT_TRUE(progress_until({&self, &peer}, [&] {
        return errors.count > 0;
    }, 30.0)) << "the endpoint was never told";
    EXPECT_EQ(1, errors.count);
    EXPECT_EQ(UCS_ERR_UNREACHABLE, errors.status);
}

/*
 * A long-running server keeps the connections peers asked for (for
 * endpoints to come), but not those of peers that died without a word: a
 * connection no endpoint uses is probed every CONN_IDLE_CHECK, the probe to
 * a dead peer fails, the connection and its QP go.
 */
TEST(rc_srq_peer, server_reclaims_connection_of_killed_peer)
{
    entity server(config_t{{"CONN_IDLE_CHECK", "100ms"}});
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(server.iface(), 1,
        [](void*, void*, size_t, unsigned) { return UCS_OK; }, NULL, 0));
    /* the server must progress while the peer connects: it answers */
    std::unique_ptr<peer_process> peer;
    std::atomic<bool> started(false);
    std::thread starter([&] {
        peer.reset(new peer_process(&server));
        started = true;
    });
    while (!started) {
        server.progress();
    }
    starter.join();
    ASSERT_TRUE(progress_until({&server}, [&] {
        return server.counters().conns == 1;
    }, 10.0)) << "the peer did not connect";

    /* alive and idle: the probes find it and keep the connection */
    ASSERT_FALSE(progress_until({&server}, [&] {
        return server.counters().conns != 1;
    }, 0.5)) << "a live peer's connection was dropped";

    peer->kill_now();
    EXPECT_TRUE(progress_until_no_connections(server, 20.0))
        << "the connection of a dead peer is still there: "
              << server.counters().conns << " live, "
              << server.counters().conns_failed << " failed";
}

/*
 * A client that dies between its REQ and its RTU (its RTU, posted as it
 * exits, dies with it): the connection it asked for waits for an RTU that
 * never comes. It is freed at the idle check (a probe on its QP, which our
 * REP connected, finds the peer gone), not at the handshake's timeout:
 * 1 in 1000 short-lived clients left one for 30 s (issue 51).
 */
TEST(rc_srq_peer, handshake_left_by_dead_peer_freed_at_idle_check)
{
    entity server(config_t{{"CONN_IDLE_CHECK", "100ms"},
                           {"CONN_TIMEOUT", "60s"}});
    /* the peer's async thread does not answer our REP (its owner never
     * progresses again): no RTU comes */
    setenv("UCX_RC_SRQ_ASYNC_INTERVAL", "60s", 1);
    std::unique_ptr<peer_process> peer;
    try {
        peer.reset(new peer_process(&server, true));
    } catch (...) {
        unsetenv("UCX_RC_SRQ_ASYNC_INTERVAL");
        throw;
    }
    unsetenv("UCX_RC_SRQ_ASYNC_INTERVAL");
    ASSERT_TRUE(progress_until({&server}, [&] {
        return server.counters().conns == 1;
    }, 10.0)) << "the peer's REQ did not come";
    /* the REP is out; the peer is gone before it answers */
    server.progress();
    peer->kill_now();
    EXPECT_TRUE(progress_until_no_connections(server, 20.0))
        << "the handshake of a dead peer is still there: "
              << server.counters().conns << " live, "
              << server.counters().conns_failed << " failed";
}

/*
 * Sends delivered but unsignaled (TX_CQ_MODERATION) when the peer goes:
 * the QP in error gives no completion for WRs that completed before, so
 * the failed connection posts a signaled marker behind them. The error is
 * reported, and the interface's flush ends with nothing outstanding.
 */
TEST(rc_srq_peer, closed_peer_leaves_no_unsignaled_tail)
{
    err_count errors;
    entity_params params;
    params.err_handler = err_count::cb;
    params.err_arg     = &errors;
    entity sender(params);
    std::unique_ptr<entity> receiver(new entity());
    std::atomic<int> got{0};
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver->iface(), 1,
                              [](void *arg, void*, size_t, unsigned) {
                                  ++*static_cast<std::atomic<int>*>(arg);
                                  return UCS_OK;
                              }, &got, 0));
    uct_ep_h ep = sender.connect(*receiver);

    for (uint64_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(progress_until({&sender, receiver.get()}, [&] {
            return uct_ep_am_short(ep, 1, i, NULL, 0) == UCS_OK;
        }));
    }
    ASSERT_TRUE(progress_until({&sender, receiver.get()},
                               [&] { return got == 3; }));
    for (int i = 0; i < 100; ++i) {
        sender.progress();
    }
    ASSERT_EQ(3u, sender.counters().tx_outstanding) << "the tail is signaled: "
                                                       "nothing to test";

    receiver.reset(); /* it tells us at once */
    EXPECT_TRUE(progress_until({&sender}, [&] { return errors.count > 0; }))
            << "the closed peer was not reported";
    EXPECT_TRUE(progress_until({&sender}, [&] {
        return uct_iface_flush(sender.iface(), 0, NULL) == UCS_OK;
    })) << sender.counters().tx_outstanding << " WRs never completed";
    EXPECT_EQ(0u, sender.counters().tx_outstanding);
}
