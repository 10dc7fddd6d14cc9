/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_srq operations through the public UCT API, between interfaces on
 * soft0:1 in one process: every operation at sizes 0, 1, 8 and its maximum
 * with the data verified, pending/flush/fence semantics, kept descriptors,
 * simultaneous connects, many connections on one SRQ, handshake loss, and
 * the counters query refusing interfaces that are not rc_srq.
 */
#include "srq_uct_fixture.h"

#include <verbs/soft/srq_soft_api.h>
#include <verbs/dev/srq_verbs_dev.h>

extern "C" {
#include <ucs/debug/log_def.h>
}

#include <dlfcn.h>
#include <poll.h>
#include <algorithm>
#include <atomic>
#include <numeric>

using namespace srq_test;

namespace {

/* Received active messages, in arrival order */
struct am_log {
    std::vector<std::string> msgs;
    bool                     keep = false;    /* keep descriptors */
    std::vector<void*>       kept;
    unsigned                 rx_headroom = 0;

    static ucs_status_t cb(void *arg, void *data, size_t length,
                           unsigned flags)
    {
        am_log *self = static_cast<am_log*>(arg);

        self->msgs.emplace_back(static_cast<char*>(data), length);
        if (self->keep && (flags & UCT_CB_PARAM_FLAG_DESC)) {
            /* the user's headroom in front of the data is theirs */
            memset(static_cast<char*>(data) - self->rx_headroom, 0x5a,
                   self->rx_headroom);
            self->kept.push_back(data);
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }
};

std::string pattern(size_t length, unsigned seed)
{
    std::string s(length, '\0');
    for (size_t i = 0; i < length; ++i) {
        s[i] = static_cast<char>('a' + (seed + i * 7) % 26);
    }
    return s;
}

struct pack_arg {
    const std::string *data;
};

size_t pack_cb(void *dest, void *arg)
{
    const std::string *s = static_cast<pack_arg*>(arg)->data;
    memcpy(dest, s->data(), s->size());
    return s->size();
}

struct unpack_arg {
    std::string data;
};

void unpack_cb(void *arg, const void *data, size_t length)
{
    static_cast<unpack_arg*>(arg)->data.assign(static_cast<const char*>(data),
                                               length);
}

std::vector<size_t> sizes_up_to(size_t max)
{
    std::vector<size_t> v = {0, 1, 8};
    if (max > 8) {
        v.push_back(max / 2);
        v.push_back(max);
    }
    v.erase(std::remove_if(v.begin(), v.end(),
                           [max](size_t s) { return s > max; }), v.end());
    return v;
}

typedef uct_pending_req_t pending_send_t;

} // namespace


class rc_srq : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (srq_component() == NULL) {
            GTEST_FAIL() << "component srq not registered (run under srq-run)";
        }
        m_sender.reset(new entity());
        m_receiver.reset(new entity());
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_receiver->iface(), 1,
                                                   am_log::cb, &m_log, 0));
        m_ep = m_sender->connect(*m_receiver);
    }

    void TearDown() override
    {
        if (m_receiver) {
            for (void *desc : m_log.kept) {
                uct_iface_release_desc(desc);
            }
        }
        m_sender.reset();
        m_receiver.reset();
    }

    bool wait(const std::function<bool()> &cond, double seconds = 10.0)
    {
        return progress_until({m_sender.get(), m_receiver.get()}, cond,
                              seconds);
    }

    /* retry an operation that may report UCS_ERR_NO_RESOURCE */
    ucs_status_t retry(const std::function<ucs_status_t()> &op)
    {
        return retry_op({m_sender.get(), m_receiver.get()}, op);
    }

    void flush_ep()
    {
        test_comp comp;
        ucs_status_t status = retry([&] {
            return uct_ep_flush(m_ep, 0, &comp.comp);
        });
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait([&] { return comp.done > 0; }));
            EXPECT_EQ(UCS_OK, comp.status);
        } else {
            ASSERT_EQ(UCS_OK, status);
        }
    }

    std::unique_ptr<entity> m_sender, m_receiver;
    uct_ep_h                m_ep;
    am_log                  m_log;
};

TEST_F(rc_srq, capabilities)
{
    const uct_iface_attr_t &attr = m_sender->attr();

    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    EXPECT_FALSE(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE)
        << "soft0 executes IB atomics (atomic_cap): they are advertised";
    EXPECT_GT(attr.cap.am.max_short, 8u);
    EXPECT_GT(attr.cap.am.max_bcopy, attr.cap.am.max_short);
    EXPECT_GT(attr.iface_addr_len, 0u);
    EXPECT_TRUE(uct_iface_is_reachable(m_sender->iface(),
                                       (uct_device_addr_t*)m_receiver->dev_addr().data(),
                                       (uct_iface_addr_t*)m_receiver->iface_addr().data()));
}

/*
 * Every capability flag the interface advertises is exercised here; an
 * advertised flag without a check fails the test, and so does a check that
 * finds the operation not working.
 */
TEST_F(rc_srq, advertised_capabilities_are_exercised)
{
    const uct_iface_attr_t &attr = m_sender->attr();
    mem_buffer remote(m_receiver->md(), 64, 0);
    mem_buffer local(m_sender->md(), 64, 0);
    std::string p = pattern(32, 9);
    size_t expect_msgs = 0;

    auto sent = [&]() {
        ++expect_msgs;
        ASSERT_TRUE(wait([&] { return m_log.msgs.size() == expect_msgs; }));
        EXPECT_EQ(p, m_log.msgs.back().substr(m_log.msgs.back().size() - p.size()));
    };
    auto completed = [&](ucs_status_t status, test_comp &comp) {
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait([&] { return comp.done == 1; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }
    };
    auto put_landed = [&]() {
        flush_ep();
        EXPECT_EQ(p, std::string(remote.ptr(), p.size()));
        memset(remote.ptr(), 0, remote.size());
    };

    /* tag matching (UCX_RC_SRQ_TM_ENABLE): @send to a tag the receiver
     * posted, matched by the device into its buffer (test_tag.cc has the
     * rest) */
    struct tag_recv {
        uct_tag_context_t ctx = {};
        int               ok = 0, failed = 0;
    };
    auto tagged = [&](const std::function<ucs_status_t(uct_tag_t)> &send) {
        static uct_tag_t tag = 0x7a60;
        tag_recv r;
        r.ctx.tag_consumed_cb = [](uct_tag_context_t*) {};
        r.ctx.completed_cb    = [](uct_tag_context_t *c, uct_tag_t, uint64_t,
                                   size_t, void*, ucs_status_t s) {
            tag_recv *self = ucs_container_of(c, tag_recv, ctx);
            ++((s == UCS_OK) ? self->ok : self->failed);
        };
        uct_iov_t iov = {remote.ptr(), remote.size(), remote.memh(), 0, 1};
        ++tag;
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(m_receiver->iface(), tag,
                                                   ~0ull, &iov, 1, &r.ctx));
        wait([] { return false; }, 0.01);
        ASSERT_EQ(UCS_OK, retry([&] { return send(tag); }));
        ASSERT_TRUE(wait([&] { return (r.ok + r.failed) > 0; }));
        EXPECT_EQ(1, r.ok);
        EXPECT_EQ(p, std::string(remote.ptr(), p.size()));
        memset(remote.ptr(), 0, remote.size());
    };

    const std::map<uint64_t, std::function<void()>> checks = {
        {UCT_IFACE_FLAG_AM_SHORT, [&] {
            ASSERT_EQ(UCS_OK, retry([&] {
                return uct_ep_am_short(m_ep, 1, 0, p.data(), p.size());
            }));
            sent();
        }},
        {UCT_IFACE_FLAG_AM_BCOPY, [&] {
            pack_arg arg = {&p};
            ASSERT_EQ(UCS_OK, retry([&] {
                ssize_t len = uct_ep_am_bcopy(m_ep, 1, pack_cb, &arg, 0);
                return (len < 0) ? (ucs_status_t)len : UCS_OK;
            }));
            sent();
        }},
        {UCT_IFACE_FLAG_AM_ZCOPY, [&] {
            memcpy(local.ptr(), p.data(), p.size());
            uct_iov_t iov = {local.ptr(), p.size(), local.memh(), 0, 1};
            test_comp comp;
            completed(retry([&] {
                return uct_ep_am_zcopy(m_ep, 1, NULL, 0, &iov, 1, 0, &comp.comp);
            }), comp);
            sent();
        }},
        {UCT_IFACE_FLAG_PUT_SHORT, [&] {
            ASSERT_EQ(UCS_OK, retry([&] {
                return uct_ep_put_short(m_ep, p.data(), p.size(), remote.addr(),
                                        remote.rkey());
            }));
            put_landed();
        }},
        {UCT_IFACE_FLAG_PUT_BCOPY, [&] {
            pack_arg arg = {&p};
            ASSERT_EQ(UCS_OK, retry([&] {
                ssize_t len = uct_ep_put_bcopy(m_ep, pack_cb, &arg, remote.addr(),
                                               remote.rkey());
                return (len < 0) ? (ucs_status_t)len : UCS_OK;
            }));
            put_landed();
        }},
        {UCT_IFACE_FLAG_PUT_ZCOPY, [&] {
            memcpy(local.ptr(), p.data(), p.size());
            uct_iov_t iov = {local.ptr(), p.size(), local.memh(), 0, 1};
            test_comp comp;
            completed(retry([&] {
                return uct_ep_put_zcopy(m_ep, &iov, 1, remote.addr(),
                                        remote.rkey(), &comp.comp);
            }), comp);
            put_landed();
        }},
        {UCT_IFACE_FLAG_GET_BCOPY, [&] {
            memcpy(remote.ptr(), p.data(), p.size());
            unpack_arg arg;
            test_comp comp;
            completed(retry([&] {
                return uct_ep_get_bcopy(m_ep, unpack_cb, &arg, p.size(),
                                        remote.addr(), remote.rkey(), &comp.comp);
            }), comp);
            EXPECT_EQ(p, arg.data);
        }},
        {UCT_IFACE_FLAG_GET_ZCOPY, [&] {
            memcpy(remote.ptr(), p.data(), p.size());
            memset(local.ptr(), 0, local.size());
            uct_iov_t iov = {local.ptr(), p.size(), local.memh(), 0, 1};
            test_comp comp;
            completed(retry([&] {
                return uct_ep_get_zcopy(m_ep, &iov, 1, remote.addr(),
                                        remote.rkey(), &comp.comp);
            }), comp);
            EXPECT_EQ(p, std::string(local.ptr(), p.size()));
        }},
        {UCT_IFACE_FLAG_PENDING, [&] {
            pending_send_t req;
            req.func = [](uct_pending_req_t*) { return UCS_OK; };
            /* resources available: the caller is told to send now */
            ASSERT_TRUE(wait([&] {
                return uct_ep_pending_add(m_ep, &req, 0) == UCS_ERR_BUSY;
            }));
        }},
        {UCT_IFACE_FLAG_CB_SYNC, [&] {
            /* handlers run in the progress call of this thread */
            size_t before = m_log.msgs.size();
            ASSERT_EQ(UCS_OK, retry([&] {
                return uct_ep_am_short(m_ep, 1, 0, NULL, 0);
            }));
            ++expect_msgs;
            EXPECT_TRUE(wait([&] { return m_log.msgs.size() > before; }));
        }},
        {UCT_IFACE_FLAG_CONNECT_TO_IFACE, [&] {
            EXPECT_EQ(0u, attr.ep_addr_len);
            EXPECT_TRUE(uct_iface_is_reachable(
                    m_sender->iface(),
                    (uct_device_addr_t*)m_receiver->dev_addr().data(),
                    (uct_iface_addr_t*)m_receiver->iface_addr().data()));
        }},
        {UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE, [&] {
            /* a killed peer process is the rc_srq_peer test; here: an error
             * completion reaches the handler */
            struct { int n = 0; } errs;
            entity_params params;
            params.err_handler = [](void *arg, uct_ep_h, ucs_status_t) {
                ++static_cast<decltype(errs)*>(arg)->n;
                return UCS_OK;
            };
            params.err_arg = &errs;
            entity sender(params);
            uct_ep_h ep = sender.connect(*m_receiver);
            ASSERT_TRUE(progress_until({&sender, m_receiver.get()}, [&] {
                return uct_ep_put_short(ep, p.data(), p.size(), remote.addr(),
                                        0xbad0000u) == UCS_OK;
            }));
            EXPECT_TRUE(progress_until({&sender, m_receiver.get()},
                                       [&] { return errs.n > 0; }));
        }},
        {UCT_IFACE_FLAG_EP_CHECK, [&] {
            EXPECT_EQ(UCS_OK, uct_ep_check(m_ep, 0, NULL));
            flush_ep();
        }},
        {UCT_IFACE_FLAG_TAG_EAGER_SHORT, [&] {
            tagged([&](uct_tag_t t) {
                return uct_ep_tag_eager_short(m_ep, t, p.data(), p.size());
            });
        }},
        {UCT_IFACE_FLAG_TAG_EAGER_BCOPY, [&] {
            pack_arg arg = {&p};
            tagged([&](uct_tag_t t) {
                ssize_t len = uct_ep_tag_eager_bcopy(m_ep, t, 0, pack_cb,
                                                     &arg, 0);
                return (len < 0) ? (ucs_status_t)len : UCS_OK;
            });
        }},
        {UCT_IFACE_FLAG_TAG_EAGER_ZCOPY, [&] {
            memcpy(local.ptr(), p.data(), p.size());
            uct_iov_t iov = {local.ptr(), p.size(), local.memh(), 0, 1};
            test_comp comp;
            tagged([&](uct_tag_t t) {
                ucs_status_t s = uct_ep_tag_eager_zcopy(m_ep, t, 0, &iov, 1,
                                                        0, &comp.comp);
                return (s == UCS_INPROGRESS) ? UCS_OK : s;
            });
            /* the send completes once its WR does, maybe after the match */
            ASSERT_TRUE(wait([&] { return comp.done == 1; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }},
        {UCT_IFACE_FLAG_TAG_RNDV_ZCOPY, [&] {
            memcpy(local.ptr(), p.data(), p.size());
            uct_iov_t iov = {local.ptr(), p.size(), local.memh(), 0, 1};
            test_comp comp;
            tagged([&](uct_tag_t t) {
                void *op = uct_ep_tag_rndv_zcopy(m_ep, t, "h", 1, &iov, 1, 0,
                                                 &comp.comp);
                return UCS_PTR_IS_ERR(op) ? UCS_PTR_STATUS(op) : UCS_OK;
            });
            ASSERT_TRUE(wait([&] { return comp.done == 1; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }},
        {UCT_IFACE_FLAG_ATOMIC_DEVICE, [&] {
            /* every op at both sizes: test_amo.cc; here one of each kind */
            uint64_t *w = (uint64_t*)remote.ptr();
            uint64_t r64 = 0;
            test_comp c64;
            *w = 40;
            completed(retry([&] {
                return uct_ep_atomic64_fetch(m_ep, UCT_ATOMIC_OP_ADD, 2, &r64,
                                             remote.addr(), remote.rkey(),
                                             &c64.comp);
            }), c64);
            EXPECT_EQ(40u, r64);
            uint32_t r32 = 0;
            test_comp c32;
            completed(retry([&] {
                return uct_ep_atomic32_fetch(m_ep, UCT_ATOMIC_OP_SWAP, 7, &r32,
                                             remote.addr(), remote.rkey(),
                                             &c32.comp);
            }), c32);
            EXPECT_EQ(42u, r32);
            EXPECT_EQ(7u, *w);
            memset(remote.ptr(), 0, 8);
        }},
    };

    for (unsigned bit = 0; bit < 64; ++bit) {
        uint64_t flag = 1ull << bit;
        if (!(attr.cap.flags & flag)) {
            continue;
        }
        auto it = checks.find(flag);
        if (it == checks.end()) {
            ADD_FAILURE() << "capability bit " << bit << " is advertised, "
                          << "but nothing here exercises it";
            continue;
        }
        SCOPED_TRACE("capability bit " + std::to_string(bit));
        it->second();
    }

    /* events: an fd that wakes up is the event_fd_wakes_on_receive test */
    int fd;
    EXPECT_EQ(UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV |
              UCT_IFACE_FLAG_EVENT_FD, attr.cap.event_flags);
    EXPECT_EQ(UCS_OK, uct_iface_event_fd_get(m_sender->iface(), &fd));

    /* what is not advertised is refused, not faked */
    EXPECT_FALSE(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    EXPECT_FALSE(attr.cap.atomic64.op_flags & UCS_BIT(UCT_ATOMIC_OP_SWAP));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_atomic64_post(m_ep, UCT_ATOMIC_OP_SWAP, 1, remote.addr(),
                                   remote.rkey()));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_atomic32_post(m_ep, UCT_ATOMIC_OP_CSWAP, 1, remote.addr(),
                                   remote.rkey()));
    size_t len;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_get_address(m_ep, (uct_ep_addr_t*)&len));
}

TEST_F(rc_srq, am_short)
{
    size_t max = m_sender->attr().cap.am.max_short - sizeof(uint64_t);
    auto sizes = sizes_up_to(max);
    uint64_t header = 0x0123456789abcdefull;

    for (size_t i = 0; i < sizes.size(); ++i) {
        std::string p = pattern(sizes[i], i);
        ASSERT_EQ(UCS_OK, retry([&] {
            return uct_ep_am_short(m_ep, 1, header + i, p.data(), p.size());
        })) << "size " << sizes[i];
    }
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == sizes.size(); }));
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::string expect(reinterpret_cast<char*>(&(header)), 0);
        uint64_t h = header + i;
        expect.append(reinterpret_cast<char*>(&h), sizeof(h));
        expect += pattern(sizes[i], i);
        EXPECT_EQ(expect, m_log.msgs[i]) << "size " << sizes[i];
    }
    /* one byte too long is refused */
    std::string big(max + 1, 'x');
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_short(m_ep, 1, 0, big.data(), big.size()));
}

/*
 * A probe (uct_ep_check) is a zero-length message with the keepalive id as
 * its immediate (srq_am.h): it takes a receive buffer at the peer, reaches
 * no handler and is no malformed message.
 */
TEST_F(rc_srq, probes_reach_the_peer_but_no_handler)
{
    const unsigned probes = 10;

    for (unsigned i = 0; i < probes; ++i) {
        ASSERT_EQ(UCS_OK, uct_ep_check(m_ep, 0, NULL));
        flush_ep();
    }
    ASSERT_EQ(UCS_OK, retry([&] { return uct_ep_am_short(m_ep, 1, 7, NULL, 0); }));
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == 1; }));

    uct_srq_iface_counters_t c = m_receiver->counters();
    EXPECT_EQ(1u, m_log.msgs.size());
    EXPECT_GE(c.rx_consumed, probes + 1);
    EXPECT_EQ(0u, c.rx_dropped);
}

namespace {

/* Counts the CQ polls of one verbs context (every CQ of the device) */
struct poll_counter {
    typedef int (*poll_cq_t)(struct ibv_cq*, int, struct ibv_wc*);

    static std::atomic<unsigned> polls;
    static poll_cq_t             real;

    static int poll(struct ibv_cq *cq, int num, struct ibv_wc *wc)
    {
        ++polls;
        return real(cq, num, wc);
    }

    struct ibv_context *ctx;

    explicit poll_counter(uct_md_h md)
    {
        typedef srq_verbs_dev_t *(*md_dev_func_t)(uct_md_h);
        auto md_dev = (md_dev_func_t)plugin_symbol("uct_srq_md_verbs_dev");

        ctx  = (md_dev != nullptr) ? md_dev(md)->context : nullptr;
        if (ctx != nullptr) {
            real             = ctx->ops.poll_cq;
            polls            = 0;
            ctx->ops.poll_cq = poll;
        }
    }

    ~poll_counter()
    {
        if (ctx != nullptr) {
            ctx->ops.poll_cq = real;
        }
    }
};

std::atomic<unsigned> poll_counter::polls;
poll_counter::poll_cq_t poll_counter::real;

} // namespace

/*
 * An interface with nothing in flight polls its receive CQ, not its send
 * CQ, in each progress call: no WR holds a send CQ slot, so no send
 * completion can come (uct_srq_iface_wants_tx_poll).
 */
TEST_F(rc_srq, idle_progress_polls_one_cq)
{
    const unsigned calls = 1000;

    ASSERT_EQ(UCS_OK, retry([&] { return uct_ep_am_short(m_ep, 1, 7, NULL, 0); }));
    flush_ep();
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == 1; }));

    poll_counter counter(m_sender->md());
    ASSERT_NE(nullptr, counter.ctx);
    for (unsigned i = 0; i < calls; ++i) {
        m_sender->progress();
    }
    unsigned polls = poll_counter::polls;
    /* the handshake's CQ is polled now and then too */
    EXPECT_GE(polls, calls);
    EXPECT_LT(polls, calls + calls / 4);
}

TEST_F(rc_srq, am_short_iov)
{
    std::string a = pattern(5, 1), b = pattern(17, 2);
    uct_iov_t iov[2] = {};

    iov[0].buffer = (void*)a.data(); iov[0].length = a.size(); iov[0].count = 1;
    iov[1].buffer = (void*)b.data(); iov[1].length = b.size(); iov[1].count = 1;
    ASSERT_EQ(UCS_OK, retry([&] { return uct_ep_am_short_iov(m_ep, 1, iov, 2); }));
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == 1; }));
    EXPECT_EQ(a + b, m_log.msgs[0]);
}

TEST_F(rc_srq, am_bcopy)
{
    auto sizes = sizes_up_to(m_sender->attr().cap.am.max_bcopy);

    for (size_t i = 0; i < sizes.size(); ++i) {
        std::string p = pattern(sizes[i], i);
        pack_arg arg  = {&p};
        ssize_t len;
        ucs_status_t status = retry([&] {
            len = uct_ep_am_bcopy(m_ep, 1, pack_cb, &arg, 0);
            return (len < 0) ? (ucs_status_t)len : UCS_OK;
        });
        ASSERT_EQ(UCS_OK, status) << "size " << sizes[i];
        EXPECT_EQ((ssize_t)sizes[i], len);
    }
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == sizes.size(); }));
    for (size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(pattern(sizes[i], i), m_log.msgs[i]) << "size " << sizes[i];
    }
}

TEST_F(rc_srq, am_zcopy_multi_iov)
{
    const uct_iface_attr_t &attr = m_sender->attr();
    size_t max   = attr.cap.am.max_zcopy;
    auto sizes   = sizes_up_to(max);
    std::string hdr = pattern(attr.cap.am.max_hdr, 3);
    mem_buffer buf(m_sender->md(), max, 0);

    ASSERT_GE(attr.cap.am.max_iov, 2u);
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::string p = pattern(sizes[i], i);
        memcpy(buf.ptr(), p.data(), p.size());
        /* the payload in two pieces of one registered buffer */
        uct_iov_t iov[2] = {};
        size_t half   = sizes[i] / 2;
        iov[0].buffer = buf.ptr();        iov[0].length = half;
        iov[0].memh   = buf.memh();       iov[0].count  = 1;
        iov[1].buffer = buf.ptr() + half; iov[1].length = sizes[i] - half;
        iov[1].memh   = buf.memh();       iov[1].count  = 1;
        test_comp comp;
        ucs_status_t status = retry([&] {
            return uct_ep_am_zcopy(m_ep, 1, hdr.data(), hdr.size(), iov, 2, 0,
                                   &comp.comp);
        });
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
            << ucs_status_string(status);
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait([&] { return comp.done == 1; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }
    }
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == sizes.size(); }));
    for (size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(hdr + pattern(sizes[i], i), m_log.msgs[i]) << "size " << sizes[i];
    }
}

TEST_F(rc_srq, put_short_bcopy_zcopy)
{
    const uct_iface_attr_t &attr = m_sender->attr();
    size_t max = attr.cap.put.max_bcopy;
    mem_buffer target(m_receiver->md(), max, 0);
    mem_buffer source(m_sender->md(), max, 0);
    uct_rkey_t rkey = target.rkey();

    for (size_t size : sizes_up_to(attr.cap.put.max_short)) {
        std::string p = pattern(size, 11);
        memset(target.ptr(), 0, target.size());
        ASSERT_EQ(UCS_OK, retry([&] {
            return uct_ep_put_short(m_ep, p.data(), p.size(), target.addr(), rkey);
        }));
        flush_ep();
        EXPECT_EQ(p, std::string(target.ptr(), size)) << "put_short " << size;
    }

    for (size_t size : sizes_up_to(attr.cap.put.max_bcopy)) {
        std::string p = pattern(size, 12);
        pack_arg arg  = {&p};
        memset(target.ptr(), 0, target.size());
        ssize_t len;
        ASSERT_EQ(UCS_OK, retry([&] {
            len = uct_ep_put_bcopy(m_ep, pack_cb, &arg, target.addr(), rkey);
            return (len < 0) ? (ucs_status_t)len : UCS_OK;
        }));
        EXPECT_EQ((ssize_t)size, len);
        flush_ep();
        EXPECT_EQ(p, std::string(target.ptr(), size)) << "put_bcopy " << size;
    }

    for (size_t size : sizes_up_to(max)) {
        std::string p = pattern(size, 13);
        memcpy(source.ptr(), p.data(), size);
        memset(target.ptr(), 0, target.size());
        uct_iov_t iov = {source.ptr(), size, source.memh(), 0, 1};
        test_comp comp;
        ucs_status_t status = retry([&] {
            return uct_ep_put_zcopy(m_ep, &iov, 1, target.addr(), rkey,
                                    &comp.comp);
        });
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait([&] { return comp.done == 1; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }
        EXPECT_EQ(p, std::string(target.ptr(), size)) << "put_zcopy " << size;
    }
}

TEST_F(rc_srq, put_zcopy_large)
{
    size_t size = 4 << 20;
    mem_buffer target(m_receiver->md(), size, 0);
    mem_buffer source(m_sender->md(), size, 0);
    std::string p = pattern(size, 5);

    memcpy(source.ptr(), p.data(), size);
    uct_iov_t iov = {source.ptr(), size, source.memh(), 0, 1};
    test_comp comp;
    ucs_status_t status = retry([&] {
        return uct_ep_put_zcopy(m_ep, &iov, 1, target.addr(), target.rkey(),
                                &comp.comp);
    });
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
    if (status == UCS_INPROGRESS) {
        ASSERT_TRUE(wait([&] { return comp.done == 1; }));
    }
    EXPECT_TRUE(std::equal(p.begin(), p.end(), target.ptr()));
}

TEST_F(rc_srq, get_bcopy_zcopy)
{
    const uct_iface_attr_t &attr = m_sender->attr();
    size_t max = attr.cap.get.max_bcopy;
    mem_buffer remote(m_receiver->md(), max, 0);
    mem_buffer local(m_sender->md(), max, 0);
    uct_rkey_t rkey = remote.rkey();

    for (size_t size : sizes_up_to(max)) {
        std::string p = pattern(size, 21);
        memcpy(remote.ptr(), p.data(), size);
        unpack_arg arg;
        test_comp comp;
        ucs_status_t status = retry([&] {
            return uct_ep_get_bcopy(m_ep, unpack_cb, &arg, size, remote.addr(),
                                    rkey, &comp.comp);
        });
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait([&] { return comp.done == 1; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }
        EXPECT_EQ(p, arg.data) << "get_bcopy " << size;
    }

    for (size_t size : sizes_up_to(max)) {
        std::string p = pattern(size, 22);
        memcpy(remote.ptr(), p.data(), size);
        memset(local.ptr(), 0, local.size());
        uct_iov_t iov = {local.ptr(), size, local.memh(), 0, 1};
        test_comp comp;
        ucs_status_t status = retry([&] {
            return uct_ep_get_zcopy(m_ep, &iov, 1, remote.addr(), rkey,
                                    &comp.comp);
        });
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait([&] { return comp.done == 1; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }
        EXPECT_EQ(p, std::string(local.ptr(), size)) << "get_zcopy " << size;
    }
}

struct err_log {
    int          count  = 0;
    ucs_status_t status = UCS_OK;

    static ucs_status_t cb(void *arg, uct_ep_h ep, ucs_status_t status)
    {
        err_log *self = static_cast<err_log*>(arg);
        ++self->count;
        self->status = status;
        return UCS_OK;
    }
};

TEST_F(rc_srq, bad_rkey_reports_error)
{
    err_log errors;
    entity_params params;
    params.err_handler = err_log::cb;
    params.err_arg     = &errors;
    entity sender(params);
    uct_ep_h ep = sender.connect(*m_receiver);
    mem_buffer remote(m_receiver->md(), 64, 'r');
    std::string before(remote.ptr(), 64);
    std::string p = pattern(16, 1);

    /* an rkey that was never issued: the write is refused by the target's
     * device, the error reaches the error handler, memory is untouched */
    ASSERT_TRUE(progress_until({&sender, m_receiver.get()}, [&] {
        return uct_ep_put_short(ep, p.data(), p.size(), remote.addr(),
                                0xdead0000u) == UCS_OK;
    }));
    EXPECT_TRUE(progress_until({&sender, m_receiver.get()},
                               [&] { return errors.count > 0; }, 10.0));
    EXPECT_NE(UCS_OK, errors.status);
    EXPECT_EQ(before, std::string(remote.ptr(), 64));
    uct_ep_pending_purge(ep, NULL, NULL);
}

TEST_F(rc_srq, flush_and_iface_flush)
{
    std::string p = pattern(100, 1);
    pack_arg arg  = {&p};

    /* nothing outstanding: complete at once */
    ASSERT_TRUE(wait([&] {
        return uct_ep_am_short(m_ep, 1, 0, NULL, 0) == UCS_OK;
    }));
    flush_ep();
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_sender->iface(), 0, NULL));

    for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
            ssize_t len = uct_ep_am_bcopy(m_ep, 1, pack_cb, &arg, 0);
            return (len < 0) ? (ucs_status_t)len : UCS_OK;
        }));
    }
    test_comp comp;
    ucs_status_t status = uct_ep_flush(m_ep, 0, &comp.comp);
    if (status == UCS_INPROGRESS) {
        EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(m_sender->iface(), 0, NULL));
        ASSERT_TRUE(wait([&] { return comp.done == 1; }));
    }
    EXPECT_EQ(UCS_OK, uct_iface_flush(m_sender->iface(), 0, NULL));
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == 11; }));
}

/*
 * Selective signaling: a stream of sends without completions is signaled
 * one WR in TX_CQ_MODERATION, so the send CQ carries a few completions,
 * each retiring many WRs; everything still arrives, in order, and the
 * flush still ends. With a moderation of 1 every WR is signaled.
 */
TEST_F(rc_srq, sends_signaled_one_in_moderation)
{
    const unsigned count = 1000;

    for (const char *moderation : {"64", "1"}) {
        std::unique_ptr<entity> sender(new entity(config_t{
                {"TX_CQ_MODERATION", moderation}}));
        std::unique_ptr<entity> receiver(new entity());
        am_log log;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver->iface(), 1,
                                                   am_log::cb, &log, 0));
        uct_ep_h ep = sender->connect(*receiver);
        std::vector<entity*> both = {sender.get(), receiver.get()};

        for (unsigned i = 0; i < count; ++i) {
            ASSERT_TRUE(progress_until(both, [&] {
                return uct_ep_am_short(ep, 1, i, NULL, 0) == UCS_OK;
            })) << "send " << i;
        }
        test_comp comp;
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        ASSERT_TRUE(progress_until(both, [&] {
            status = uct_ep_flush(ep, 0, &comp.comp);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_until(both, [&] { return comp.done > 0; }));
        }
        ASSERT_TRUE(progress_until(both, [&] {
            return log.msgs.size() == count;
        }));
        for (unsigned i = 0; i < count; ++i) {
            uint64_t h;
            ASSERT_EQ(sizeof(h), log.msgs[i].size());
            memcpy(&h, log.msgs[i].data(), sizeof(h));
            ASSERT_EQ(i, h) << "out of order";
        }

        uct_srq_iface_counters_t c = sender->counters();
        EXPECT_EQ(0u, c.tx_outstanding);
        if (!strcmp(moderation, "1")) {
            EXPECT_EQ(c.tx_wrs, c.tx_completions);
        } else {
            /* one in 64, and the ones taken while slots ran low */
            EXPECT_LT(c.tx_completions, c.tx_wrs / 8)
                    << c.tx_wrs << " WRs, " << c.tx_completions
                    << " completions";
            EXPECT_GE(c.tx_completions, count / 64);
        }
        sender.reset();
        receiver.reset();
    }
}

/*
 * A flush ends although the last WRs are unsignaled: it posts a signaled
 * no-op behind them (once, however often it is asked), and so does an
 * interface flush.
 */
TEST_F(rc_srq, flush_signals_an_unsignaled_tail)
{
    flush_ep(); /* the connection is up */
    uct_srq_iface_counters_t before = m_sender->counters();

    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 1, 1, NULL, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 1, 2, NULL, 0));
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == 2; }));
    /* delivered, but nothing told the sender: the WRs are unsignaled */
    for (int i = 0; i < 100; ++i) {
        m_sender->progress();
    }
    EXPECT_EQ(2u, m_sender->counters().tx_outstanding);

    test_comp comp;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(m_ep, 0, &comp.comp));
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(m_ep, 0, NULL));
    ASSERT_TRUE(wait([&] { return comp.done > 0; }));
    EXPECT_EQ(UCS_OK, comp.status);
    uct_srq_iface_counters_t c = m_sender->counters();
    EXPECT_EQ(before.tx_wrs + 3, c.tx_wrs) << "two sends and one no-op";
    EXPECT_EQ(before.tx_completions + 1, c.tx_completions);

    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 1, 3, NULL, 0));
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == 3; }));
    EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(m_sender->iface(), 0, NULL));
    ASSERT_TRUE(wait([&] {
        return uct_iface_flush(m_sender->iface(), 0, NULL) == UCS_OK;
    }));
}

/*
 * Send descriptors held by unsignaled WRs come back: with fewer of them
 * than TX_CQ_MODERATION, the sender that ran out gets them again by
 * progress alone (no other send signals for it).
 */
TEST_F(rc_srq, descriptors_of_unsignaled_sends_come_back)
{
    std::unique_ptr<entity> sender(new entity(config_t{
            {"TX_MAX_BUFS", "8"}, {"TX_BUFS_GROW", "8"}}));
    uct_ep_h ep = sender->connect(*m_receiver);
    std::vector<entity*> both = {sender.get(), m_receiver.get()};
    std::string p = pattern(100, 3);
    pack_arg arg  = {&p};
    ssize_t len;
    unsigned sent = 0;

    ASSERT_TRUE(progress_until(both, [&] {
        return uct_ep_am_short(ep, 1, 0, NULL, 0) == UCS_OK;
    }));
    while ((len = uct_ep_am_bcopy(ep, 1, pack_cb, &arg, 0)) >= 0) {
        ASSERT_LT(++sent, 100u) << "TX_MAX_BUFS is not kept";
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, (ucs_status_t)len);
    EXPECT_EQ(8u, sent);
    ASSERT_TRUE(progress_until(both, [&] {
        return uct_ep_am_bcopy(ep, 1, pack_cb, &arg, 0) >= 0;
    }, 5.0)) << "the descriptors never came back";
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == sent + 2; }));
    sender.reset();
}

/*
 * uct_ep_fence puts IBV_SEND_FENCE on the next WR of the connection, and
 * only on that one. (soft0 runs the RDMA operations of a QP in order, so
 * whether a get after a fence sees the put before it says nothing about
 * the fence; the device counts fenced WRs instead.) The get still reads
 * what the put wrote.
 */
TEST_F(rc_srq, fence_marks_the_next_wr)
{
    SRQ_TEST_REQUIRE_BUILTIN_SOFT(m_sender->md());
    typedef srq_verbs_dev_t *(*md_dev_func_t)(uct_md_h);
    typedef int (*stats_func_t)(srq_verbs_dev_t*, srq_soft_stats_t*);
    auto md_dev = (md_dev_func_t)plugin_symbol("uct_srq_md_verbs_dev");
    auto stats  = (stats_func_t)plugin_symbol("srq_soft_query_stats");
    ASSERT_TRUE((md_dev != NULL) && (stats != NULL))
        << "the test plugin does not export the verbs layer";
    srq_verbs_dev_t *dev = md_dev(m_sender->md());
    auto fenced = [&] {
        srq_soft_stats_t st;
        EXPECT_EQ(0, stats(dev, &st));
        return st.tx_fenced;
    };

    mem_buffer remote(m_receiver->md(), 8, 0);
    uint64_t value = 0x1122334455667788ull;
    unpack_arg arg;
    test_comp comp;

    ASSERT_EQ(UCS_OK, retry([&] {
        return uct_ep_put_short(m_ep, &value, sizeof(value), remote.addr(),
                                remote.rkey());
    }));
    /* the connection is up, the put on the device: the get below goes to
     * the device when posted, not when the handshake ends */
    flush_ep();
    uint64_t before = fenced();
    ASSERT_EQ(UCS_OK, uct_ep_fence(m_ep, 0));
    EXPECT_EQ(before, fenced()) << "a fence alone posts nothing";
    ucs_status_t status = retry([&] {
        return uct_ep_get_bcopy(m_ep, unpack_cb, &arg, sizeof(value),
                                remote.addr(), remote.rkey(), &comp.comp);
    });
    ASSERT_EQ(UCS_INPROGRESS, status);
    EXPECT_EQ(before + 1, fenced()) << "the WR after the fence is not fenced";
    ASSERT_TRUE(wait([&] { return comp.done == 1; }));
    ASSERT_EQ(sizeof(value), arg.data.size());
    EXPECT_EQ(0, memcmp(arg.data.data(), &value, sizeof(value)));

    /* the fence was for one WR */
    ASSERT_EQ(UCS_OK, retry([&] {
        return uct_ep_put_short(m_ep, &value, sizeof(value), remote.addr(),
                                remote.rkey());
    }));
    EXPECT_EQ(before + 1, fenced()) << "a WR after the fenced one is fenced";
}

/* A pending request that sends one am_short when given its turn */
struct pending_send {
    uct_pending_req_t req;
    uct_ep_h          ep;
    uint64_t          seq;
    int               done = 0;

    static ucs_status_t cb(uct_pending_req_t *r)
    {
        pending_send *self = reinterpret_cast<pending_send*>(r);
        ucs_status_t status = uct_ep_am_short(self->ep, 1, self->seq, NULL, 0);
        if (status == UCS_OK) {
            self->done = 1;
        }
        return status;
    }
};

TEST_F(rc_srq, pending_queue_in_order)
{
    /* a small send queue, so that it runs out */
    std::unique_ptr<entity> sender(new entity(config_t{{"TX_QUEUE_LEN", "16"}}));
    uct_ep_h ep = sender->connect(*m_receiver);
    std::vector<std::unique_ptr<pending_send>> pending;
    uint64_t seq = 0;
    unsigned sent_direct = 0;

    /* before the connection is up, sends are refused, not failed, and
     * pending requests wait */
    for (int i = 0; i < 200; ++i) {
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        if (pending.empty()) {
            status = uct_ep_am_short(ep, 1, seq, NULL, 0);
        }
        if (status == UCS_OK) {
            ++sent_direct;
        } else {
            ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
            pending.emplace_back(new pending_send());
            pending.back()->req.func = pending_send::cb;
            pending.back()->ep       = ep;
            pending.back()->seq      = seq;
            ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep, &pending.back()->req, 0));
        }
        ++seq;
    }
    EXPECT_FALSE(pending.empty());
    ASSERT_TRUE(progress_until({sender.get(), m_receiver.get()}, [&] {
        return m_log.msgs.size() == seq;
    }));
    for (auto &p : pending) {
        EXPECT_EQ(1, p->done);
    }
    for (uint64_t i = 0; i < seq; ++i) {
        uint64_t got;
        ASSERT_EQ(sizeof(got), m_log.msgs[i].size());
        memcpy(&got, m_log.msgs[i].data(), sizeof(got));
        EXPECT_EQ(i, got) << "message " << i << " out of order";
    }
    uct_ep_pending_purge(ep, NULL, NULL);
    sender.reset();
}

TEST_F(rc_srq, pending_add_busy_when_resources)
{
    pending_send p;

    ASSERT_TRUE(wait([&] { return uct_ep_am_short(m_ep, 1, 0, NULL, 0) == UCS_OK; }));
    p.req.func = pending_send::cb;
    p.ep       = m_ep;
    EXPECT_EQ(UCS_ERR_BUSY, uct_ep_pending_add(m_ep, &p.req, 0));
}

TEST_F(rc_srq, kept_descriptors_and_headroom)
{
    const unsigned headroom = 32;
    entity_params params;
    params.rx_headroom = headroom;
    std::unique_ptr<entity> receiver(new entity(params));
    am_log log;
    log.keep        = true;
    log.rx_headroom = headroom;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver->iface(), 2,
                                               am_log::cb, &log, 0));
    uct_ep_h ep = m_sender->connect(*receiver);
    const int count = 600; /* more than the receive queue holds */

    for (int i = 0; i < count; ++i) {
        std::string p = pattern(64, i);
        pack_arg arg  = {&p};
        ASSERT_EQ(UCS_OK, (progress_until({m_sender.get(), receiver.get()}, [&] {
            return uct_ep_am_bcopy(ep, 2, pack_cb, &arg, 0) >= 0;
        }), UCS_OK));
    }
    ASSERT_TRUE(progress_until({m_sender.get(), receiver.get()},
                               [&] { return log.msgs.size() == (size_t)count; }));
    for (int i = 0; i < count; ++i) {
        EXPECT_EQ(pattern(64, i), log.msgs[i]);
        /* a kept descriptor still holds its data */
        EXPECT_EQ(0, memcmp(log.kept[i], pattern(64, i).data(), 64));
    }
    /* a kept descriptor is released by the start of its headroom */
    for (void *data : log.kept) {
        uct_iface_release_desc(static_cast<char*>(data) - headroom);
    }
    log.kept.clear();
    m_sender->progress();
}

/* A queue of 32 refilled in batches of 8 many times over: the traffic
 * arrives whole and in order */
TEST_F(rc_srq, rx_refill_small_queue)
{
    std::unique_ptr<entity> receiver(new entity(config_t{
            {"RX_QUEUE_MIN", "32"}, {"RX_QUEUE_MAX", "32"}, {"RX_BATCH", "8"}}));
    am_log log;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver->iface(), 1,
                                               am_log::cb, &log, 0));
    uct_ep_h ep = m_sender->connect(*receiver);
    const int count = 500; /* the queue is refilled many times */
    for (int i = 0; i < count; ++i) {
        std::string p = pattern(100, i);
        pack_arg arg  = {&p};
        ASSERT_TRUE(progress_until({m_sender.get(), receiver.get()}, [&] {
            return uct_ep_am_bcopy(ep, 1, pack_cb, &arg, 0) >= 0;
        }));
    }
    ASSERT_TRUE(progress_until({m_sender.get(), receiver.get()},
                               [&] { return log.msgs.size() == (size_t)count; }));
    for (int i = 0; i < count; ++i) {
        EXPECT_EQ(pattern(100, i), log.msgs[i]) << "message " << i;
    }
    EXPECT_GE(receiver->counters().rx_refills, (uint64_t)count / 8);
}

TEST_F(rc_srq, simultaneous_connect)
{
    am_log back;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_sender->iface(), 1,
                                               am_log::cb, &back, 0));
    /* both sides create their endpoint before either progresses */
    uct_ep_h back_ep = m_receiver->connect(*m_sender);

    for (uint64_t i = 0; i < 50; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] { return uct_ep_am_short(m_ep, 1, i, NULL, 0); }));
        ASSERT_EQ(UCS_OK, retry([&] { return uct_ep_am_short(back_ep, 1, i, NULL, 0); }));
    }
    ASSERT_TRUE(wait([&] {
        return (m_log.msgs.size() == 50) && (back.msgs.size() == 50);
    }));
    for (uint64_t i = 0; i < 50; ++i) {
        uint64_t a, b;
        memcpy(&a, m_log.msgs[i].data(), 8);
        memcpy(&b, back.msgs[i].data(), 8);
        EXPECT_EQ(i, a);
        EXPECT_EQ(i, b);
    }
    /* both connects ended in one connection on each side */
    EXPECT_EQ(1u, m_sender->counters().conns);
    EXPECT_EQ(1u, m_receiver->counters().conns);
}

TEST_F(rc_srq, endpoints_share_one_connection_in_order)
{
    uct_ep_h ep2 = m_sender->connect(*m_receiver);

    for (uint64_t i = 0; i < 100; ++i) {
        uct_ep_h ep = (i % 2) ? ep2 : m_ep;
        ASSERT_EQ(UCS_OK, retry([&] { return uct_ep_am_short(ep, 1, i, NULL, 0); }));
    }
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == 100; }));
    for (uint64_t i = 0; i < 100; ++i) {
        uint64_t got;
        memcpy(&got, m_log.msgs[i].data(), 8);
        /* one connection: one order, whichever endpoint sent */
        EXPECT_EQ(i, got);
    }
    EXPECT_EQ(1u, m_sender->counters().conns);
}

TEST_F(rc_srq, handshake_survives_datagram_loss)
{
    std::unique_ptr<entity> lossy(new entity(config_t{{"CONN_DROP", "50"},
                                                      {"CONN_RETRY", "1ms"}}));
    am_log log;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(lossy->iface(), 1, am_log::cb,
                                               &log, 0));
    std::unique_ptr<entity> peer(new entity(config_t{{"CONN_DROP", "50"},
                                                     {"CONN_RETRY", "1ms"}}));
    std::vector<uct_ep_h> eps;

    for (int i = 0; i < 8; ++i) {
        eps.push_back(peer->connect(*lossy));
    }
    for (uint64_t i = 0; i < 20; ++i) {
        ASSERT_TRUE(progress_until({lossy.get(), peer.get()}, [&] {
            return uct_ep_am_short(eps[i % eps.size()], 1, i, NULL, 0) == UCS_OK;
        })) << "connection never came up";
    }
    ASSERT_TRUE(progress_until({lossy.get(), peer.get()},
                               [&] { return log.msgs.size() == 20; }));
}

/*
 * Armed for receives with nothing on its way, the fd stays quiet; a
 * message wakes it. The handshake's last datagrams may land after the
 * first message did (the RTU, the send completion of our REP: the
 * handshake's CQ is always armed, new peers need the owner): a sleeper
 * takes such a wake, finds nothing and sleeps again, a few times at most.
 */
TEST_F(rc_srq, event_fd_wakes_on_receive)
{
    const int max_handshake_wakes = 4;
    struct pollfd pfd = {-1, POLLIN, 0};
    int wakes;

    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_receiver->iface(), &pfd.fd));
    /* connect first */
    ASSERT_EQ(UCS_OK, retry([&] { return uct_ep_am_short(m_ep, 1, 0, NULL, 0); }));
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == 1; }));

    for (wakes = 0; wakes <= max_handshake_wakes; ++wakes) {
        ucs_status_t status;
        while ((status = uct_iface_event_arm(m_receiver->iface(),
                                             UCT_EVENT_RECV)) == UCS_ERR_BUSY) {
            m_receiver->progress();
            m_sender->progress();
        }
        ASSERT_EQ(UCS_OK, status);
        if (poll(&pfd, 1, 0) == 0) {
            break;
        }
        ASSERT_EQ(1u, m_log.msgs.size()) << "a message nobody sent";
    }
    EXPECT_LE(wakes, max_handshake_wakes)
        << "woke up with nothing received, " << wakes << " times in a row";

    ASSERT_EQ(UCS_OK, retry([&] { return uct_ep_am_short(m_ep, 1, 1, NULL, 0); }));
    /* the sender's progress pushes the message; the receiver sleeps */
    for (int i = 0; i < 100; ++i) {
        m_sender->progress();
    }
    EXPECT_EQ(1, poll(&pfd, 1, 5000)) << "no wake-up on receive";
    ASSERT_TRUE(wait([&] { return m_log.msgs.size() == 2; }));
}

TEST(rc_srq_config, invalid_values_rejected)
{
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"RX_BATCH", "0"}, {"RX_BATCH", "1000"}, {"RX_QUEUE_MIN", "1"},
        {"RX_QUEUE_MIN", "8192"}, {"RX_QUEUE_MAX", "100000"},
        {"RX_LOW_WATERMARK", "0"}, {"RX_LOW_WATERMARK", "95"},
        {"RX_SHRINK_DELAY", "1ms"},
        {"RX_ADAPT_INTERVAL", "0"}, {"RX_MAX_BUFS", "16"},
        {"TX_QUEUE_LEN", "1"}, {"SEG_SIZE", "16"}, {"MAX_INLINE", "1"},
        {"RNR_TIMER", "99"}, {"TIMEOUT", "0"}, {"CONN_QUEUE_LEN", "2"},
        {"CONN_DROP", "101"}, {"RX_QUEUE_MAX", "100000000"},
        {"TX_MAX_BUFS", "0"}, {"TX_CQ_LEN", "100000000"},
        {"CONN_RETRY", "0"}, {"CONN_TIMEOUT", "0"},
        {"TX_BUFS_GROW", "-1"}, {"TX_BUFS_GROW", "4294967295"},
        {"TX_BUFS_GROW", "100000"}, {"TX_CQ_MODERATION", "0"},
        {"CONN_MAX_ACCEPTING", "0"}, {"CONN_IDLE_CHECK", "0"},
        {"ASYNC_INTERVAL", "0"}};

    /* values the parser itself refuses */
    uct_component_h srq = srq_component();
    uct_md_config_t *md_config;
    uct_iface_config_t *config;
    uct_md_h md;
    ASSERT_EQ(UCS_OK, uct_md_config_read(srq, NULL, NULL, &md_config));
    ASSERT_EQ(UCS_OK, uct_md_open(srq, "soft0", md_config, &md));
    ASSERT_EQ(UCS_OK, uct_md_iface_config_read(md, "rc_srq", NULL, NULL, &config));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, config_modify(config, "SRQ", "maybe"));
    uct_config_release(config);
    uct_md_close(md);
    uct_config_release(md_config);

    /* refused with an error naming the variable */
    static std::vector<std::string> errors;
    ucs_log_push_handler([](const char *file, unsigned line, const char *func,
                            ucs_log_level_t level,
                            const ucs_log_component_config_t *comp,
                            const char *fmt, va_list ap) {
        char buf[512];
        if (level <= UCS_LOG_LEVEL_ERROR) {
            vsnprintf(buf, sizeof(buf), fmt, ap);
            errors.push_back(buf);
        }
        return UCS_LOG_FUNC_RC_CONTINUE;
    });
    for (auto &kv : bad) {
        errors.clear();
        EXPECT_THROW(entity(config_t{{kv.first, kv.second}}), std::runtime_error)
            << kv.first << "=" << kv.second << " was accepted";
        /* the first error, before anything failed to be created, names
         * the variable and a range that does not hold the value */
        std::string expected = "UCX_RC_SRQ_" + kv.first + "=";
        ASSERT_FALSE(errors.empty()) << kv.first << ": no error";
        const std::string &e = errors.front();
        EXPECT_NE(std::string::npos, e.find(expected))
            << kv.first << ": the first error does not name it: " << e;
        EXPECT_NE(std::string::npos, e.find("out of range"))
            << kv.first << ": no range in: " << e;
        EXPECT_EQ(std::string::npos, e.find("(" + kv.second + ".."))
            << kv.first << ": the range begins with the refused value: " << e;
    }
    ucs_log_pop_handler();
}

/* UCX's unsigned parser wraps 2^32 to 0 (and 2^32 + 1 to 1): a value the
 * user never wrote, in range for some variables (RNR_TIMER 0 is the
 * longest timer) and refused as "=0" for others. Refused, with what the
 * user wrote. */
TEST(rc_srq_config, wrapped_values_refused_as_written)
{
    const std::vector<std::pair<std::string, std::string>> wrapped = {
        {"RNR_TIMER", "4294967296"}, {"TX_BUFS_GROW", "4294967296"},
        {"RX_BATCH", "4294967297"}, {"TX_QUEUE_LEN", "4294967296"},
        {"RX_QUEUE_MIN", "18446744073709551616"}};

    for (auto &kv : wrapped) {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        scoped_env env(kv.first, kv.second.c_str());
        EXPECT_THROW(entity(), std::runtime_error)
            << kv.first << "=" << kv.second << " was accepted";
        std::string expected = "UCX_RC_SRQ_" + kv.first + "=" + kv.second +
                               " is out of range";
        ASSERT_FALSE(log.s_lines.empty()) << kv.first << ": no error";
        EXPECT_NE(std::string::npos, log.s_lines.front().find(expected))
            << log.s_lines.front();
    }
    /* written as UCX reads it: no wrap, accepted */
    scoped_env env("RNR_TIMER", "00012");
    EXPECT_NO_THROW(entity());
}

/* A variable of the other receive mode is named as not used */
TEST(rc_srq_config, other_mode_variables_named_unused)
{
    {
        log_capture log(UCS_LOG_LEVEL_WARN);
        scoped_env env("RX_QP_LEN", "5");
        entity e; /* SRQ=y: RX_QP_LEN is not read, 5 is no error */
        ASSERT_EQ(1u, log.s_lines.size());
        EXPECT_NE(std::string::npos,
                  log.s_lines[0].find("UCX_RC_SRQ_RX_QP_LEN=5 is not used"))
            << log.s_lines[0];
    }
    log_capture log(UCS_LOG_LEVEL_WARN);
    scoped_env env("RX_QUEUE_MAX", "512");
    entity e(config_t{{"SRQ", "n"}});
    ASSERT_EQ(1u, log.s_lines.size());
    EXPECT_NE(std::string::npos,
              log.s_lines[0].find("UCX_RC_SRQ_RX_QUEUE_MAX=512 is not used"))
        << log.s_lines[0];
}

/* Many connections on one shared receive queue */
TEST(rc_srq_scale, many_interfaces_to_one)
{
    const int num = getenv("SRQ_TEST_MANY") ? atoi(getenv("SRQ_TEST_MANY")) : 1024;
    entity server;
    am_log log;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(server.iface(), 1, am_log::cb,
                                               &log, 0));
    /* the clients share one memory domain and worker: one progress call
     * serves them all, as one process with many interfaces would; they go
     * before the one that owns the md and worker */
    entity_params params;
    params.config = {{"RX_QUEUE_MIN", "16"}, {"RX_QUEUE_MAX", "16"},
                     {"RX_BATCH", "16"}, {"TX_CQ_LEN", "64"},
                     {"TX_QUEUE_LEN", "16"},
                     {"CONN_QUEUE_LEN", "8"}};
    entity first(params);
    params.share = &first;
    std::vector<std::unique_ptr<entity>> clients;
    std::vector<uct_ep_h> eps;

    for (int i = 0; i < num; ++i) {
        clients.emplace_back(new entity(params));
        eps.push_back(clients.back()->connect(server));
    }
    std::vector<entity*> all = {&server, &first};
    std::vector<bool> sent(num, false);
    ASSERT_TRUE(progress_until(all, [&] {
        bool done = true;
        for (int i = 0; i < num; ++i) {
            if (!sent[i]) {
                sent[i] = (uct_ep_am_short(eps[i], 1, i, NULL, 0) == UCS_OK);
                done   &= sent[i];
            }
        }
        return done;
    }, 120.0));
    ASSERT_TRUE(progress_until(all, [&] { return log.msgs.size() == (size_t)num; },
                               120.0));
    uct_srq_iface_counters_t c = server.counters();
    EXPECT_EQ((uint64_t)num, c.conns);
    /* receive memory does not grow with the peers */
    EXPECT_EQ(c.rx_queue_target, server.counters().rx_queue_target);
    std::cout << num << " connections on one SRQ: " << c.rx_bytes_held
              << " bytes of receive memory" << std::endl;
    std::vector<bool> seen(num, false);
    for (auto &m : log.msgs) {
        uint64_t id;
        memcpy(&id, m.data(), 8);
        ASSERT_LT(id, (uint64_t)num);
        EXPECT_FALSE(seen[id]) << "duplicate from " << id;
        seen[id] = true;
    }
}

/* uct_srq_iface_query_counters answers for rc_srq interfaces only: UCX's
 * own "self" interface, and no interface at all, are refused */
TEST_F(rc_srq, query_counters_refuses_other_interfaces)
{
    typedef ucs_status_t (*query_func_t)(uct_iface_h,
                                         uct_srq_iface_counters_t*);
    query_func_t query = (query_func_t)plugin_symbol(
                                             "uct_srq_iface_query_counters");
    uct_component_h *components, self = NULL;
    uct_component_attr_t comp_attr;
    uct_iface_params_t params   = {};
    uct_md_config_t *md_config  = NULL;
    uct_iface_config_t *config  = NULL;
    uct_md_h md                 = NULL;
    uct_iface_h iface           = NULL;
    uct_srq_iface_counters_t c;
    unsigned num;

    ASSERT_TRUE(query != NULL);
    EXPECT_EQ(UCS_OK, query(m_sender->iface(), &c));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, query(NULL, &c));

    ASSERT_EQ(UCS_OK, uct_query_components(&components, &num));
    for (unsigned i = 0; i < num; ++i) {
        comp_attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &comp_attr) == UCS_OK) &&
            !strcmp(comp_attr.name, "self")) {
            self = components[i];
        }
    }
    ASSERT_TRUE(self != NULL) << "UCX's self component is not there";

    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "self";
    params.mode.device.dev_name = "memory0";
    EXPECT_EQ(UCS_OK, uct_md_config_read(self, NULL, NULL, &md_config));
    EXPECT_EQ(UCS_OK, uct_md_open(self, "self", md_config, &md));
    if (md != NULL) {
        EXPECT_EQ(UCS_OK, uct_md_iface_config_read(md, "self", NULL, NULL,
                                                   &config));
    }
    if (config != NULL) {
        EXPECT_EQ(UCS_OK, uct_iface_open(md, m_sender->worker(), &params,
                                         config, &iface));
    }
    if (iface != NULL) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, query(iface, &c));
        uct_iface_close(iface);
    }
    if (config != NULL) {
        uct_config_release(config);
    }
    if (md != NULL) {
        uct_md_close(md);
    }
    if (md_config != NULL) {
        uct_config_release(md_config);
    }
    uct_release_component_list(components);
    EXPECT_TRUE(iface != NULL) << "could not open a self interface";
}

/*
 * An endpoint sends from the moment it exists, as UCX's users of
 * connect-to-interface transports do: before the handshake has had any
 * progress, sends are accepted (not UCS_ERR_NO_RESOURCE), and once the
 * connection is up they arrive in order, the zcopy's completion with them.
 */
TEST_F(rc_srq, sends_accepted_while_connecting)
{
    std::vector<std::string> sent; /* as the handler sees them */
    for (unsigned i = 0; i < 4; ++i) {
        std::string p = pattern(8, i);
        /* am_short's 8-byte header (0) comes first */
        sent.push_back(std::string(sizeof(uint64_t), '\0') + p);
        ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ep, 1, 0, p.data(), p.size()))
            << "am_short " << i << " before any progress";
    }
    sent.push_back(pattern(100, 7));
    pack_arg arg = {&sent.back()};
    ASSERT_EQ((ssize_t)sent.back().size(),
              uct_ep_am_bcopy(m_ep, 1, pack_cb, &arg, 0));

    mem_buffer local(m_sender->md(), 256, 0);
    sent.push_back(pattern(256, 9));
    memcpy(local.ptr(), sent.back().data(), 256);
    uct_iov_t iov = {local.ptr(), 256, local.memh(), 0, 1};
    test_comp comp;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(m_ep, 1, NULL, 0, &iov, 1, 0,
                                              &comp.comp));

    ASSERT_TRUE(wait([&] {
        return (m_log.msgs.size() == sent.size()) && (comp.done == 1);
    })) << m_log.msgs.size() << " of " << sent.size() << " arrived";
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_EQ(sent, m_log.msgs);
}
