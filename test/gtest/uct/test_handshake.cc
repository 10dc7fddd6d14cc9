/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection handshake under hostile datagrams: what a peer (or any
 * local process on the soft device) sends to an interface's handshake QP
 * must not take away its ability to accept connections.
 */
#include "srq_uct_fixture.h"

#include <verbs/srq_verbs.h>

#include <cerrno>
#include <arpa/inet.h>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <vector>

using namespace srq_test;

namespace {

/* The plugin's own copy of a verbs-layer function (the test plugin exports
 * every symbol; the test does not link the verbs layer a second time) */
#define SRQ_VERBS(_name) \
    reinterpret_cast<decltype(&_name)>(plugin_symbol(#_name))

/* The handshake's qkey (srq_hs.c): a datagram without it is dropped by the
 * device before it takes a buffer, which is not what is tested here */
const uint32_t HS_QKEY = 0x1ee75a5cu;

/* A UD QP of its own on soft0, sending raw datagrams to an interface */
class raw_ud_sender {
public:
    raw_ud_sender(const std::vector<char> &dev_addr)
    {
        auto open      = SRQ_VERBS(srq_verbs_open);
        auto alloc_pd  = SRQ_VERBS(srq_verbs_alloc_pd);
        auto create_cq = SRQ_VERBS(srq_verbs_create_cq);
        auto create_qp = SRQ_VERBS(srq_verbs_create_qp);
        auto modify_qp = SRQ_VERBS(srq_verbs_modify_qp);
        auto ah_attr   = SRQ_VERBS(srq_verbs_ah_attr);
        auto create_ah = SRQ_VERBS(srq_verbs_create_ah);
        auto reg_mr    = SRQ_VERBS(srq_verbs_reg_mr);
        if (!open || !alloc_pd || !create_cq || !create_qp || !modify_qp ||
            !ah_attr || !create_ah || !reg_mr) {
            throw std::runtime_error("the test plugin does not export the "
                                     "verbs layer");
        }
        if (open("soft0", &m_dev) != 0) {
            throw std::runtime_error("cannot open soft0");
        }
        m_pd = alloc_pd(m_dev);
        m_cq = create_cq(m_dev, 256, NULL, NULL, 0);

        if ((m_pd == NULL) || (m_cq == NULL)) {
            throw std::runtime_error("cannot create the raw UD QP's PD, CQ");
        }
        new_qp();

        srq_verbs_port_addr_t addr;
        std::memcpy(&addr, dev_addr.data(), sizeof(addr));
        struct ibv_ah_attr ah = {};
        if ((ah_attr(m_dev, 1, &addr, &ah) != 0) ||
            ((m_ah = create_ah(m_dev, m_pd, &ah)) == NULL)) {
            throw std::runtime_error("cannot reach the interface");
        }
        m_buf.resize(4096, 'x');
        m_mr = reg_mr(m_dev, m_pd, m_buf.data(), m_buf.size(), 0);
        if (m_mr == NULL) {
            throw std::runtime_error("cannot register the datagram buffer");
        }
    }

    ~raw_ud_sender()
    {
        SRQ_VERBS(srq_verbs_destroy_ah)(m_dev, m_ah);
        SRQ_VERBS(srq_verbs_destroy_qp)(m_dev, m_qp);
        SRQ_VERBS(srq_verbs_dereg_mr)(m_dev, m_mr);
        SRQ_VERBS(srq_verbs_destroy_cq)(m_dev, m_cq);
        SRQ_VERBS(srq_verbs_dealloc_pd)(m_dev, m_pd);
        SRQ_VERBS(srq_verbs_close)(m_dev);
    }

    /* Send from another UD QP (another QP number) from now on: each
     * handshake QP is another interface to the receiver */
    void new_qp()
    {
        auto create_qp = SRQ_VERBS(srq_verbs_create_qp);
        auto modify_qp = SRQ_VERBS(srq_verbs_modify_qp);

        if (m_qp != NULL) {
            SRQ_VERBS(srq_verbs_destroy_qp)(m_dev, m_qp);
        }
        struct ibv_qp_init_attr init = {};
        init.send_cq          = m_cq;
        init.recv_cq          = m_cq;
        init.qp_type          = IBV_QPT_UD;
        init.cap.max_send_wr  = 128;
        init.cap.max_recv_wr  = 1;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        m_qp = create_qp(m_dev, m_pd, &init);
        if (m_qp == NULL) {
            throw std::runtime_error("cannot create the raw UD QP");
        }

        struct ibv_qp_attr attr = {};
        attr.qp_state = IBV_QPS_INIT;
        attr.port_num = 1;
        attr.qkey     = HS_QKEY;
        int ret = modify_qp(m_dev, m_qp, &attr, IBV_QP_STATE |
                            IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
        attr.qp_state = IBV_QPS_RTR;
        ret = ret ?: modify_qp(m_dev, m_qp, &attr, IBV_QP_STATE);
        attr.qp_state = IBV_QPS_RTS;
        ret = ret ?: modify_qp(m_dev, m_qp, &attr,
                               IBV_QP_STATE | IBV_QP_SQ_PSN);
        if (ret != 0) {
            throw std::runtime_error("cannot bring the raw UD QP up");
        }
    }

    /* This QP's own address, as a handshake datagram carries it */
    srq_verbs_port_addr_t port_addr() const
    {
        srq_verbs_port_addr_t addr = {};
        SRQ_VERBS(srq_verbs_port_addr)(m_dev, 1, &addr);
        return addr;
    }

    uint32_t qpn() const { return m_qp->qp_num; }

    /* Send @data to UD QP @qpn and wait for its send completion */
    bool send(uint32_t qpn, const void *data, size_t len)
    {
        std::memcpy(m_buf.data(), data, len);
        return send(qpn, len);
    }

    /* Send @len bytes to UD QP @qpn and wait for its send completion */
    bool send(uint32_t qpn, size_t len)
    {
        struct ibv_sge sge = {(uintptr_t)m_buf.data(), (uint32_t)len,
                              m_mr->lkey};
        struct ibv_send_wr wr = {}, *bad_wr;
        wr.sg_list           = &sge;
        wr.num_sge           = 1;
        wr.opcode            = IBV_WR_SEND;
        wr.send_flags        = IBV_SEND_SIGNALED;
        wr.wr.ud.ah          = m_ah;
        wr.wr.ud.remote_qpn  = qpn;
        wr.wr.ud.remote_qkey = HS_QKEY;
        if (ibv_post_send(m_qp, &wr, &bad_wr) != 0) {
            return false;
        }
        struct ibv_wc wc;
        for (int i = 0; i < 1000000; ++i) {
            int n = ibv_poll_cq(m_cq, 1, &wc);
            if (n != 0) {
                return (n == 1) && (wc.status == IBV_WC_SUCCESS);
            }
        }
        return false;
    }

private:
    srq_verbs_dev_t   *m_dev = NULL;
    struct ibv_pd     *m_pd  = NULL;
    struct ibv_cq     *m_cq  = NULL;
    struct ibv_qp     *m_qp  = NULL;
    struct ibv_ah     *m_ah  = NULL;
    struct ibv_mr     *m_mr  = NULL;
    std::vector<char>  m_buf;
};

/* The handshake QP number of @e's interface (its interface address) */
uint32_t hs_qpn(const entity &e)
{
    uint32_t qpn;
    std::vector<char> addr = e.iface_addr();
    std::memcpy(&qpn, addr.data(), sizeof(qpn));
    return le32toh(qpn);
}

/* A connect request as srq_hs.c lays it out (integers little endian),
 * from @raw's port and a handshake QP number of our choice */
struct UCS_S_PACKED hs_req {
    uint32_t              magic;
    uint8_t               version;
    uint8_t               type;
    uint16_t              reserved;
    srq_verbs_port_addr_t dev;
    uint32_t              ud_qpn;
    uint32_t              rc_qpn;

    hs_req(const srq_verbs_port_addr_t &port, uint32_t qpn)
    {
        std::memset(this, 0, sizeof(*this));
        magic   = htole32(0x43515253u);
        version = 2; /* UCT_SRQ_HS_VERSION */
        type    = 1; /* REQ */
        dev     = port;
        ud_qpn  = htole32(qpn);
        rc_qpn  = htole32(0x123);
    }
};

ucs_status_t count_am(void *arg, void *data, size_t length, unsigned flags)
{
    ++*static_cast<int*>(arg);
    return UCS_OK;
}

/* Send @req from @raw to the handshake QP @ud_qpn of @receiver, which must
 * drop it and make no connection; @what names the request in failures */
void expect_dropped(entity &receiver, raw_ud_sender &raw, uint32_t ud_qpn,
                    const hs_req &req, const std::string &what)
{
    uint64_t dropped = receiver.counters().conn_dropped;

    ASSERT_TRUE(raw.send(ud_qpn, &req, sizeof(req))) << what;
    ASSERT_TRUE(progress_until({&receiver}, [&] {
        return receiver.counters().conn_dropped > dropped;
    })) << what << " was not dropped";
    EXPECT_EQ(0u, receiver.counters().conns) << what;
}

} // namespace

/*
 * Datagrams longer than a handshake buffer: a device that completes them
 * in error (IBV_WC_LOC_LEN_ERR) must get each buffer back, and one that
 * drops them without a word (IB class D: rxe, and soft0) must lose none
 * either. After 3 x CONN_QUEUE_LEN of them an interface that lost its
 * buffers accepts no connection.
 */
TEST(rc_srq_handshake, oversize_datagrams_lose_no_buffer)
{
    const unsigned queue_len = 8, count = 3 * queue_len;
    entity receiver(config_t{{"CONN_QUEUE_LEN", std::to_string(queue_len)},
                             {"CONN_TIMEOUT", "5s"}});
    uint32_t ud_qpn = hs_qpn(receiver);

    raw_ud_sender raw(receiver.dev_addr());
    for (unsigned i = 0; i < count; ++i) {
        ASSERT_TRUE(raw.send(ud_qpn, 2048)) << "datagram " << i;
        /* the device takes each in before the next: reported as dropped,
         * or a while of progress */
        progress_until({&receiver}, [&] {
            return receiver.counters().conn_dropped > i;
        }, 0.02);
    }
    uint64_t dropped = receiver.counters().conn_dropped;
    EXPECT_TRUE((dropped == 0) || (dropped == count))
        << dropped << " of " << count << " reported";

    /* a real peer still gets a connection */
    entity sender;
    int received = 0;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver.iface(), 1, count_am,
                                               &received, 0));
    uct_ep_h ep = sender.connect(receiver);
    ASSERT_TRUE(progress_until({&sender, &receiver}, [&] {
        return uct_ep_am_short(ep, 1, 42, NULL, 0) == UCS_OK;
    })) << "no connection after " << count << " oversize datagrams";
    EXPECT_TRUE(progress_until({&sender, &receiver},
                               [&] { return received == 1; }));
}

/*
 * A connect request naming a port its device does not have is refused: the
 * interface would otherwise build an address handle and a QP towards it.
 * The same request with the real port makes a connection, so the message
 * built here is otherwise one the interface accepts.
 */
TEST(rc_srq_handshake, request_from_a_port_that_does_not_exist)
{
    entity receiver;
    uint32_t ud_qpn = hs_qpn(receiver);
    raw_ud_sender raw(receiver.dev_addr());
    hs_req req(raw.port_addr(), raw.qpn());

    for (uint8_t port : {0, 2, 77, 255}) {
        req.dev.port_num = port;
        expect_dropped(receiver, raw, ud_qpn, req,
                       "a request from port " + std::to_string(port));
    }

    req.dev.port_num = 1;
    ASSERT_TRUE(raw.send(ud_qpn, &req, sizeof(req)));
    EXPECT_TRUE(progress_until({&receiver}, [&] {
        return receiver.counters().conns == 1;
    })) << "the same request from port 1 made no connection";
}

/*
 * A request of another format version (an older plugin: version 1 sent the
 * am id as the message's first byte) is dropped, not connected to: the
 * two could not read each other's messages. The same request with the
 * current version makes a connection.
 */
TEST(rc_srq_handshake, request_of_another_version_is_dropped)
{
    entity receiver;
    uint32_t ud_qpn = hs_qpn(receiver);
    raw_ud_sender raw(receiver.dev_addr());
    hs_req req(raw.port_addr(), raw.qpn());
    const uint8_t current = req.version;

    for (uint8_t version : {0, 1, 3, 255}) {
        req.version = version;
        expect_dropped(receiver, raw, ud_qpn, req,
                       "a request of version " + std::to_string(version));
    }

    req.version = current;
    ASSERT_TRUE(raw.send(ud_qpn, &req, sizeof(req)));
    EXPECT_TRUE(progress_until({&receiver}, [&] {
        return receiver.counters().conns == 1;
    })) << "the same request of version " << (int)current
        << " made no connection";
}

/*
 * An owner that progresses, but seldom - an oversubscribed MPI rank that
 * yields its CPU between calls on a loaded host - still looks at its
 * handshake every ASYNC_INTERVAL, not only every UCT_SRQ_HS_POLLS_PER_LOOK
 * (1024) calls: at a few ms a call, 1024 of them outlast its peers'
 * handshake retries. Each request here follows a look (the one that
 * dropped the request before), so a look by the call count alone comes
 * 1024 calls after it.
 */
TEST(rc_srq_handshake, owner_that_progresses_seldom_looks_each_interval)
{
    const unsigned max_calls = 200; /* 10 ms intervals: 400 ms and more */
    entity receiver(config_t{{"ASYNC_INTERVAL", "10ms"}});
    uint32_t ud_qpn = hs_qpn(receiver);
    raw_ud_sender raw(receiver.dev_addr());
    hs_req req(raw.port_addr(), raw.qpn());
    req.dev.port_num = 2; /* dropped: its look is counted */

    expect_dropped(receiver, raw, ud_qpn, req, "the first request");
    for (int i = 0; i < 3; ++i) {
        uint64_t dropped = receiver.counters().conn_dropped;
        unsigned calls   = 0;
        ASSERT_TRUE(raw.send(ud_qpn, &req, sizeof(req)));
        while ((receiver.counters().conn_dropped == dropped) &&
               (calls < 1200)) {
            receiver.progress();
            ++calls;
            usleep(2000);
        }
        EXPECT_LT(calls, max_calls) << "request " << i << ": "
            << ((receiver.counters().conn_dropped == dropped) ?
                "never taken" : "taken") << " after " << calls
            << " progress calls 2 ms apart";
    }
}

/*
 * Connect requests that never complete (forged, or from a peer that died
 * half way) each cost a QP and an address handle. They time out, and a
 * failed connection nothing refers to is freed then, not at interface
 * close: a long-running server does not run out of QPs or memory.
 */
TEST(rc_srq_handshake, failed_connections_are_freed)
{
    const unsigned count = 50;
    entity receiver(config_t{{"CONN_TIMEOUT", "200ms"},
                             {"CONN_RETRY", "50ms"}});
    uint32_t ud_qpn = hs_qpn(receiver);
    raw_ud_sender raw(receiver.dev_addr());
    hs_req req(raw.port_addr(), 0);
    for (unsigned i = 0; i < count; ++i) {
        /* each from another handshake QP: another connection */
        raw.new_qp();
        req.ud_qpn = htole32(raw.qpn());
        ASSERT_TRUE(raw.send(ud_qpn, &req, sizeof(req)));
    }
    ASSERT_TRUE(progress_until({&receiver}, [&] {
        return receiver.counters().conns == count;
    })) << "the requests made " << receiver.counters().conns
        << " connections";

    /* no RTU ever comes: they time out and are freed */
    EXPECT_TRUE(progress_until_no_connections(receiver)) << "live " << receiver.counters().conns << ", failed and kept "
        << receiver.counters().conns_failed;
}

/*
 * Requests anyone can send cost a QP each while half open: at most
 * CONN_MAX_ACCEPTING at once, the rest dropped (their peers retry); once
 * those time out, a real peer connects.
 */
TEST(rc_srq_handshake, half_open_connections_bounded)
{
    const unsigned max = 10, count = 50;
    entity receiver(config_t{{"CONN_MAX_ACCEPTING", std::to_string(max)},
                             {"CONN_TIMEOUT", "300ms"},
                             {"CONN_RETRY", "50ms"}});
    uint32_t ud_qpn = hs_qpn(receiver);
    raw_ud_sender raw(receiver.dev_addr());
    hs_req req(raw.port_addr(), 0);
    uint64_t dropped = receiver.counters().conn_dropped;

    for (unsigned i = 0; i < count; ++i) {
        raw.new_qp();
        req.ud_qpn = htole32(raw.qpn());
        ASSERT_TRUE(raw.send(ud_qpn, &req, sizeof(req)));
        receiver.progress();
    }
    ASSERT_TRUE(progress_until({&receiver}, [&] {
        return receiver.counters().conn_dropped - dropped >= count - max;
    })) << "dropped " << receiver.counters().conn_dropped - dropped;
    EXPECT_EQ(max, receiver.counters().conns);

    /* they time out and go; then a real peer gets its connection */
    ASSERT_TRUE(progress_until({&receiver}, [&] {
        return receiver.counters().conns == 0;
    }));
    entity sender;
    int received = 0;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver.iface(), 1, count_am,
                                               &received, 0));
    uct_ep_h ep = sender.connect(receiver);
    ASSERT_TRUE(progress_until({&sender, &receiver}, [&] {
        return uct_ep_am_short(ep, 1, 42, NULL, 0) == UCS_OK;
    }));
    EXPECT_TRUE(progress_until({&sender, &receiver},
                               [&] { return received == 1; }));
}

/*
 * A datagram must come from the interface it names: its handshake QP and
 * port address are the connection's key. From any other QP or port
 * (found by fuzz_handshake: QP numbers are easy to guess) it could open
 * the connection of an interface that does not exist yet, and that
 * interface, once there, would be refused - its key taken. The same
 * request from its own QP and port is accepted, so the message built here
 * is otherwise one the interface takes.
 */
TEST(rc_srq_handshake, datagram_naming_another_source_is_dropped)
{
    entity receiver;
    uint32_t ud_qpn = hs_qpn(receiver);
    raw_ud_sender raw(receiver.dev_addr());
    hs_req req(raw.port_addr(), raw.qpn() + 1); /* another QP of ours */

    expect_dropped(receiver, raw, ud_qpn, req, "a request naming another QP");

    /* another port address (the receiver's own is the raw sender's too:
     * the contexts of a process share their port): one whose GID and LID
     * are not the sender's */
    req.dev = raw.port_addr();
    req.dev.gid[15] ^= 0x01;
    req.dev.lid      = htons(ntohs(req.dev.lid) ^ 0x1);
    req.ud_qpn = htole32(raw.qpn());
    expect_dropped(receiver, raw, ud_qpn, req,
                   "a request naming another port address");

    req.dev = raw.port_addr();
    ASSERT_TRUE(raw.send(ud_qpn, &req, sizeof(req)));
    EXPECT_TRUE(progress_until({&receiver}, [&] {
        return receiver.counters().conns == 1;
    })) << "the same request from its own QP and port made no connection";
}

/*
 * An owner that does not progress its interface (busy elsewhere, or waiting
 * for threads that send atomics at it, as UCX's atomic tests do) still
 * answers its peers: UCX's async thread takes its handshake datagrams
 * (ASYNC_INTERVAL) and, on the built-in soft device, runs the device,
 * which takes the message. Before, the request was never answered and the
 * sender's flush waited for CONN_TIMEOUT.
 */
TEST(rc_srq_handshake, answered_while_the_owner_does_not_progress)
{
    entity receiver(config_t{{"ASYNC_INTERVAL", "1ms"}});
    entity sender(config_t{{"CONN_TIMEOUT", "5s"}});
    int received = 0;
    ucs_status_t status;

    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver.iface(), 1, count_am,
                                               &received, 0));
    uct_ep_h ep = sender.connect(receiver);
    ASSERT_EQ(UCS_OK, uct_ep_am_short(ep, 1, 42, NULL, 0)); /* queued */
    /* only the sender progresses */
    EXPECT_TRUE(progress_until({&sender}, [&] {
        status = uct_ep_flush(ep, 0, NULL);
        return (status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE);
    }, 4.0)) << "the receiver never answered";
    EXPECT_EQ(UCS_OK, status);
    EXPECT_EQ(0, received) << "its handler runs from its owner's progress";
    /* the message waits for its owner */
    EXPECT_TRUE(progress_until({&receiver}, [&] { return received == 1; }));
}

/*
 * The async thread's look at an idle interface (ASYNC_INTERVAL, 10 ms by
 * default) lets the process sleep in between. It was one of UCX's own
 * timers, and UCX 1.13's async thread spins (epoll_wait with a timeout of
 * 0) through the last millisecond before each of them: an interface that
 * nobody used cost its process a tenth of a core, an idle MPI rank too.
 * The bound leaves room for a slow machine's wakeups: 100 looks a second
 * cost a few milliseconds of CPU, the spin about 95.
 */
TEST(rc_srq_handshake, async_looks_let_an_idle_process_sleep)
{
    entity idle;
    struct timespec cpu0, cpu1, nap = {1, 0};

    ASSERT_EQ(0, clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0));
    while (nanosleep(&nap, &nap) != 0) {
        ASSERT_EQ(EINTR, errno);
    }
    ASSERT_EQ(0, clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1));
    double ms = (cpu1.tv_sec - cpu0.tv_sec) * 1e3 +
                (cpu1.tv_nsec - cpu0.tv_nsec) / 1e6;
    EXPECT_LT(ms, 40.0) << "the process used " << ms << " ms of CPU in 1 s "
                           "with its only thread asleep";
}
