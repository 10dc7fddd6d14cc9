/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag-matching offload (UCX_RC_SRQ_TM_ENABLE) as UCP meets it, beyond
 * UCX's own test_tag (run over rc_srq by test/ucx_gtest.sh): what the
 * interface says of itself, the 64-bit immediate both ways, the device
 * matching and reading a rendezvous itself (its counters say so), cancels
 * racing arrivals, a rendezvous read that fails, a receiver that goes
 * with a rendezvous unanswered, interfaces that differ in it, and its
 * configuration's errors.
 */
#include "srq_uct_fixture.h"

#include <set>

using namespace srq_test;

namespace {

const config_t tm_on = {{"TM_ENABLE", "y"}};

/* What arrived that no posted tag matched */
struct unexp_log {
    struct msg {
        uct_tag_t   tag;
        uint64_t    imm;
        std::string data;
        bool        rndv;
        uint64_t    remote_addr;
        size_t      length;
        std::string header;
    };
    std::vector<msg>   msgs;
    bool               keep = false;
    std::vector<void*> kept;

    static ucs_status_t eager(void *arg, void *data, size_t length,
                              unsigned flags, uct_tag_t stag, uint64_t imm,
                              void **context)
    {
        unexp_log *self = static_cast<unexp_log*>(arg);

        self->msgs.push_back({stag, imm,
                              std::string(static_cast<char*>(data), length),
                              false, 0, 0, ""});
        if (self->keep && (flags & UCT_CB_PARAM_FLAG_DESC)) {
            self->kept.push_back(data);
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }

    static ucs_status_t rndv(void *arg, unsigned flags, uint64_t stag,
                             const void *header, unsigned header_length,
                             uint64_t remote_addr, size_t length,
                             const void *rkey_buf)
    {
        unexp_log *self = static_cast<unexp_log*>(arg);

        self->msgs.push_back({stag, 0, "", true, remote_addr, length,
                              std::string(static_cast<const char*>(header),
                                          header_length)});
        return UCS_OK;
    }
};

/* A posted tagged receive and what became of it */
struct tag_recv {
    uct_tag_context_t ctx;
    bool              consumed = false;
    int               completions = 0;
    ucs_status_t      status = UCS_ERR_NO_PROGRESS;
    uct_tag_t         stag = 0;
    uint64_t          imm = 0;
    size_t            length = 0;

    tag_recv()
    {
        memset(&ctx, 0, sizeof(ctx));
        ctx.tag_consumed_cb = [](uct_tag_context_t *c) {
            self(c)->consumed = true;
        };
        ctx.completed_cb = [](uct_tag_context_t *c, uct_tag_t stag,
                              uint64_t imm, size_t length, void *inline_data,
                              ucs_status_t status) {
            tag_recv *r = self(c);
            ++r->completions;
            r->stag   = stag;
            r->imm    = imm;
            r->length = length;
            r->status = status;
        };
        ctx.rndv_cb = [](uct_tag_context_t *c, uct_tag_t stag,
                         const void *header, unsigned header_length,
                         ucs_status_t status, unsigned flags) {
            ++self(c)->completions;
            self(c)->status = status;
        };
    }
    static tag_recv *self(uct_tag_context_t *c)
    {
        return ucs_container_of(c, tag_recv, ctx);
    }
};

struct pack_string {
    const std::string *s;
    static size_t cb(void *dest, void *arg)
    {
        const std::string *s = static_cast<pack_string*>(arg)->s;
        memcpy(dest, s->data(), s->size());
        return s->size();
    }
};

std::string fill(size_t length, char seed)
{
    std::string s(length, '\0');
    for (size_t i = 0; i < length; ++i) {
        s[i] = static_cast<char>(seed + i % 23);
    }
    return s;
}

class rc_srq_tag : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (srq_component() == NULL) {
            GTEST_FAIL() << "component srq not registered (run under srq-run)";
        }
        m_sender.reset(new entity(params(&m_sender_unexp)));
        m_receiver.reset(new entity(params(&m_unexp)));
        m_ep = m_sender->connect(*m_receiver);
    }

    void TearDown() override
    {
        for (void *desc : m_unexp.kept) {
            uct_iface_release_desc(desc);
        }
        m_sender.reset();
        m_receiver.reset();
    }

    entity_params params(unexp_log *log, const config_t &extra = {})
    {
        entity_params p;
        p.config = tm_on;
        for (auto &kv : extra) {
            p.config[kv.first] = kv.second;
        }
        p.eager_cb  = unexp_log::eager;
        p.eager_arg = log;
        p.rndv_cb   = unexp_log::rndv;
        p.rndv_arg  = log;
        return p;
    }

    bool wait(const std::function<bool()> &cond, double seconds = 10.0)
    {
        return progress_until({m_sender.get(), m_receiver.get()}, cond,
                              seconds);
    }

    ucs_status_t retry(const std::function<ucs_status_t()> &op)
    {
        return retry_op({m_sender.get(), m_receiver.get()}, op);
    }

    /* A sender whose error handler counts into @errs, and its endpoint to
     * the receiver */
    std::unique_ptr<entity> sender_counting_errors(int *errs, uct_ep_h *ep)
    {
        entity_params p = params(&m_sender_unexp);
        p.err_handler = [](void *arg, uct_ep_h, ucs_status_t) {
            ++*static_cast<int*>(arg);
            return UCS_OK;
        };
        p.err_arg = errs;
        std::unique_ptr<entity> sender(new entity(p));
        *ep = sender->connect(*m_receiver);
        return sender;
    }

    /* uct_ep_tag_rndv_zcopy of @iov from @sender on @ep, once it has
     * resources: the operation */
    void *rndv(entity &sender, uct_ep_h ep, uct_tag_t tag, uct_iov_t *iov,
               test_comp &comp)
    {
        void *op = NULL;
        retry_op({&sender, m_receiver.get()}, [&] {
            op = uct_ep_tag_rndv_zcopy(ep, tag, "h", 1, iov, 1, 0, &comp.comp);
            return UCS_PTR_IS_ERR(op) ? UCS_PTR_STATUS(op) : UCS_OK;
        });
        return op;
    }

    ucs_status_t post(mem_buffer &buf, uct_tag_t tag, tag_recv &r,
                      uct_tag_t mask = ~0ull)
    {
        uct_iov_t iov = {buf.ptr(), buf.size(), buf.memh(), 0, 1};
        return uct_iface_tag_recv_zcopy(m_receiver->iface(), tag, mask, &iov,
                                        1, &r.ctx);
    }

    ssize_t send_bcopy(uct_tag_t tag, uint64_t imm, const std::string &data)
    {
        pack_string arg = {&data};
        ssize_t len;
        retry([&] {
            len = uct_ep_tag_eager_bcopy(m_ep, tag, imm, pack_string::cb,
                                         &arg, 0);
            return (len < 0) ? (ucs_status_t)len : UCS_OK;
        });
        return len;
    }

    std::unique_ptr<entity> m_sender, m_receiver;
    unexp_log               m_unexp, m_sender_unexp;
    uct_ep_h                m_ep = NULL;
};

/* The capabilities UCP selects a tag-offload lane by, with limits that
 * leave room for the TMH every message carries */
TEST_F(rc_srq_tag, advertised_with_room_for_the_tmh)
{
    const uct_iface_attr_t &a = m_receiver->attr();
    uint64_t tag_flags = UCT_IFACE_FLAG_TAG_EAGER_SHORT |
                         UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
                         UCT_IFACE_FLAG_TAG_EAGER_ZCOPY |
                         UCT_IFACE_FLAG_TAG_RNDV_ZCOPY;

    EXPECT_EQ(tag_flags, a.cap.flags & tag_flags);
    EXPECT_GT(a.cap.tag.recv.max_outstanding, 0u);
    EXPECT_EQ(1u, a.cap.tag.recv.max_iov);
    EXPECT_EQ(1u, a.cap.tag.rndv.max_iov);
    EXPECT_GT(a.cap.tag.rndv.max_hdr, 0u);
    EXPECT_GT(a.cap.tag.rndv.max_zcopy, a.cap.tag.eager.max_zcopy);

    entity plain;
    /* the TMH takes 16 bytes of what fits inline */
    EXPECT_EQ(plain.attr().cap.am.max_short - 16, a.cap.am.max_short);
    EXPECT_EQ(a.cap.am.max_short, a.cap.tag.eager.max_short);
    EXPECT_EQ(0u, plain.attr().cap.flags & tag_flags);
}

/* A receive the device matched: the data in the user's buffer, the
 * sender's tag (a masked receive), and the 64-bit immediate from its two
 * halves (the TMH's app_ctx, the SEND's immediate); counted as matched */
TEST_F(rc_srq_tag, expected_eager_matched_by_the_device)
{
    mem_buffer buf(m_receiver->md(), 4096);
    std::string data = fill(3000, 'a');
    tag_recv r;

    ASSERT_EQ(UCS_OK, post(buf, 0x1200, r, ~0xffull));
    wait([] { return false; }, 0.01); /* the add's completion */
    ASSERT_EQ((ssize_t)data.size(),
              send_bcopy(0x12ab, 0x8765432100000001ull, data));
    ASSERT_TRUE(wait([&] { return r.completions > 0; }));

    EXPECT_TRUE(r.consumed);
    EXPECT_EQ(1, r.completions);
    EXPECT_EQ(UCS_OK, r.status);
    EXPECT_EQ(0x12abu, r.stag);
    EXPECT_EQ(0x8765432100000001ull, r.imm);
    EXPECT_EQ(data.size(), r.length);
    EXPECT_EQ(data, std::string(buf.ptr(), data.size()));
    EXPECT_TRUE(m_unexp.msgs.empty());

    uct_srq_iface_counters_t c = m_receiver->counters();
    EXPECT_EQ(1u, c.tm_enabled);
    EXPECT_EQ(1u, c.tm_matched);
    EXPECT_EQ(0u, c.tm_unexpected);
}

/* No tag posted: the whole message to the eager callback, its descriptor
 * kept and released later; the immediate's halves both arrive; a short
 * one too */
TEST_F(rc_srq_tag, unexpected_eager_to_the_callback)
{
    std::string data = fill(5000, 'k');
    m_unexp.keep = true;

    ASSERT_EQ((ssize_t)data.size(), send_bcopy(77, 0xffffffff00000000ull, data));
    ASSERT_EQ(UCS_OK, retry([&] {
        return uct_ep_tag_eager_short(m_ep, 78, "short", 5);
    }));
    ASSERT_TRUE(wait([&] { return m_unexp.msgs.size() == 2; }));

    EXPECT_EQ(77u, m_unexp.msgs[0].tag);
    EXPECT_EQ(0xffffffff00000000ull, m_unexp.msgs[0].imm);
    EXPECT_EQ(data, m_unexp.msgs[0].data);
    EXPECT_EQ(78u, m_unexp.msgs[1].tag);
    EXPECT_EQ(0u, m_unexp.msgs[1].imm);
    EXPECT_EQ("short", m_unexp.msgs[1].data);
    EXPECT_EQ(2u, m_unexp.kept.size());
    EXPECT_EQ(2u, m_receiver->counters().tm_unexpected);
    EXPECT_EQ(0u, m_receiver->counters().tm_matched);
}

/* A rendezvous to a posted tag: the receiver's device reads the sender's
 * buffer itself; the sender's completion waits for the FIN */
TEST_F(rc_srq_tag, rendezvous_read_by_the_device)
{
    const size_t size = 256 * 1024;
    mem_buffer src(m_sender->md(), size), dst(m_receiver->md(), size);
    std::string data = fill(size, 'r');
    const char hdr[] = "rts-header";
    test_comp comp;
    tag_recv r;
    void *op;

    memcpy(src.ptr(), data.data(), size);
    ASSERT_EQ(UCS_OK, post(dst, 5, r));
    wait([] { return false; }, 0.01);
    uct_iov_t iov = {src.ptr(), size, src.memh(), 0, 1};
    retry([&] {
        op = uct_ep_tag_rndv_zcopy(m_ep, 5, hdr, sizeof(hdr), &iov, 1, 0,
                                   &comp.comp);
        return UCS_PTR_IS_ERR(op) ? UCS_PTR_STATUS(op) : UCS_OK;
    });
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    ASSERT_TRUE(wait([&] { return (r.completions > 0) && comp.done; }));

    EXPECT_EQ(UCS_OK, r.status);
    EXPECT_EQ(size, r.length);
    EXPECT_EQ(data, std::string(dst.ptr(), size));
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_EQ(1, comp.done);
    EXPECT_EQ(1u, m_receiver->counters().tm_rndv_read);
    EXPECT_EQ(1u, m_sender->counters().tm_fin);

    /* without a tag: the request to the rendezvous callback, as UCP's
     * RTS; the sender's cancel leaves no completion behind */
    test_comp comp2;
    retry([&] {
        op = uct_ep_tag_rndv_zcopy(m_ep, 6, hdr, sizeof(hdr), &iov, 1, 0,
                                   &comp2.comp);
        return UCS_PTR_IS_ERR(op) ? UCS_PTR_STATUS(op) : UCS_OK;
    });
    ASSERT_TRUE(wait([&] { return !m_unexp.msgs.empty(); }));
    EXPECT_TRUE(m_unexp.msgs[0].rndv);
    EXPECT_EQ(6u, m_unexp.msgs[0].tag);
    EXPECT_EQ(src.addr(), m_unexp.msgs[0].remote_addr);
    EXPECT_EQ(size, m_unexp.msgs[0].length);
    EXPECT_EQ(std::string(hdr, sizeof(hdr)), m_unexp.msgs[0].header);
    EXPECT_EQ(UCS_OK, uct_ep_tag_rndv_cancel(m_ep, op));
    wait([] { return false; }, 0.05);
    EXPECT_EQ(0, comp2.done);
}

/* A cancel that races the message: each message ends exactly once, in the
 * tag (completed with its data, or canceled) or, canceled first, as an
 * unexpected one; the list is whole afterwards */
TEST_F(rc_srq_tag, cancel_racing_arrivals)
{
    const int rounds = 200;
    std::vector<std::unique_ptr<mem_buffer>> bufs;
    std::vector<tag_recv> recvs(rounds);
    std::set<uct_tag_t> delivered;
    int canceled = 0, matched = 0;

    for (int i = 0; i < rounds; ++i) {
        bufs.emplace_back(new mem_buffer(m_receiver->md(), 64));
        ASSERT_EQ(UCS_OK, retry([&] {
            ucs_status_t s = post(*bufs[i], 1000 + i, recvs[i]);
            return (s == UCS_ERR_EXCEEDS_LIMIT) ? UCS_ERR_NO_RESOURCE : s;
        }));
        send_bcopy(1000 + i, 0, fill(48, 'c'));
        /* from no progress at all to enough for the message to land */
        for (int p = 0; p < (i % 5) * 25; ++p) {
            m_sender->progress();
            m_receiver->progress();
        }
        /* too late is "no such receive": it completed already */
        ucs_status_t s = uct_iface_tag_recv_cancel(m_receiver->iface(),
                                                   &recvs[i].ctx, 0);
        EXPECT_TRUE((s == UCS_OK) ||
                    ((s == UCS_ERR_NO_ELEM) && (recvs[i].completions == 1)))
            << "round " << i << ": " << ucs_status_string(s);
    }
    ASSERT_TRUE(wait([&] {
        size_t done = 0;
        for (auto &r : recvs) {
            done += (r.completions > 0);
        }
        return done == (size_t)rounds;
    }));
    for (int i = 0; i < rounds; ++i) {
        EXPECT_EQ(1, recvs[i].completions) << "round " << i;
        if (recvs[i].status == UCS_OK) {
            ++matched;
            delivered.insert(1000 + i);
        } else {
            EXPECT_EQ(UCS_ERR_CANCELED, recvs[i].status) << "round " << i;
            ++canceled;
        }
    }
    ASSERT_TRUE(wait([&] {
        return m_unexp.msgs.size() == (size_t)canceled;
    })) << m_unexp.msgs.size() << " unexpected, " << canceled << " canceled";
    for (auto &m : m_unexp.msgs) {
        EXPECT_TRUE(delivered.insert(m.tag).second)
            << "tag " << m.tag << " delivered twice";
    }
    EXPECT_EQ((size_t)rounds, delivered.size());
    /* the race went both ways */
    EXPECT_GT(matched, 0);
    EXPECT_GT(canceled, 0);
    EXPECT_EQ((uint64_t)matched, m_receiver->counters().tm_matched);

    /* nothing of the list is left in use: it takes as many as it says */
    std::vector<tag_recv> again(m_receiver->attr().cap.tag.recv.max_outstanding);
    std::vector<std::unique_ptr<mem_buffer>> more;
    for (size_t i = 0; i < again.size(); ++i) {
        more.emplace_back(new mem_buffer(m_receiver->md(), 8));
        ASSERT_EQ(UCS_OK, post(*more[i], 5000 + i, again[i])) << i;
    }
    tag_recv extra;
    mem_buffer xbuf(m_receiver->md(), 8);
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, post(xbuf, 1, extra));
    for (auto &r : again) {
        EXPECT_EQ(UCS_OK,
                  uct_iface_tag_recv_cancel(m_receiver->iface(), &r.ctx, 1));
    }
}

/* A rendezvous whose buffer the receiver's device cannot read (no key):
 * the tag completes in error, the sender's completion too (its connection
 * failed, as after any failed RDMA READ), its error handler is told;
 * nothing hangs */
TEST_F(rc_srq_tag, failed_rendezvous_read_fails_both_sides)
{
    int errs = 0;
    uct_ep_h ep;
    std::unique_ptr<entity> sender = sender_counting_errors(&errs, &ep);
    mem_buffer dst(m_receiver->md(), 4096);
    std::vector<char> src(4096, 'x');
    uct_iov_t iov = {src.data(), src.size(), UCT_MEM_HANDLE_NULL, 0, 1};
    test_comp comp;
    tag_recv r;

    ASSERT_EQ(UCS_OK, post(dst, 9, r));
    ASSERT_FALSE(UCS_PTR_IS_ERR(rndv(*sender, ep, 9, &iov, comp)));
    ASSERT_TRUE(progress_until({sender.get(), m_receiver.get()}, [&] {
        return (r.completions > 0) && comp.done && (errs > 0);
    }, 20.0)) << "tag " << r.completions << " send " << comp.done
              << " errors " << errs;
    EXPECT_NE(UCS_OK, r.status);
    EXPECT_NE(UCS_OK, comp.status);
    EXPECT_EQ(1, comp.done);
}

/* The receiver goes with a rendezvous unanswered (it took the request as
 * unexpected): the sender's completion ends with an error once its
 * connection fails, not never */
TEST_F(rc_srq_tag, rendezvous_sender_told_when_the_receiver_goes)
{
    int errs = 0;
    uct_ep_h ep;
    std::unique_ptr<entity> sender = sender_counting_errors(&errs, &ep);
    mem_buffer src(sender->md(), 1024);
    uct_iov_t iov = {src.ptr(), src.size(), src.memh(), 0, 1};
    test_comp comp;

    ASSERT_FALSE(UCS_PTR_IS_ERR(rndv(*sender, ep, 3, &iov, comp)));
    ASSERT_TRUE(progress_until({sender.get(), m_receiver.get()}, [&] {
        return !m_unexp.msgs.empty();
    }));
    m_ep = NULL;
    m_receiver.reset();
    ASSERT_TRUE(progress_until({sender.get()}, [&] { return comp.done > 0; },
                               20.0)) << "the rendezvous never completed";
    EXPECT_NE(UCS_OK, comp.status);
    EXPECT_EQ(1, comp.done);
    EXPECT_GT(errs, 0);
}

/* With tag matching every message starts with a TMH: an interface without
 * it could not read them, nor they its */
TEST_F(rc_srq_tag, plain_interfaces_do_not_reach_it)
{
    entity plain;
    std::vector<char> tm_dev = m_receiver->dev_addr(),
                      tm_iface = m_receiver->iface_addr(),
                      p_dev = plain.dev_addr(), p_iface = plain.iface_addr();

    EXPECT_FALSE(uct_iface_is_reachable(plain.iface(),
                                        (uct_device_addr_t*)tm_dev.data(),
                                        (uct_iface_addr_t*)tm_iface.data()));
    EXPECT_FALSE(uct_iface_is_reachable(m_sender->iface(),
                                        (uct_device_addr_t*)p_dev.data(),
                                        (uct_iface_addr_t*)p_iface.data()));
    EXPECT_TRUE(uct_iface_is_reachable(m_sender->iface(),
                                       (uct_device_addr_t*)tm_dev.data(),
                                       (uct_iface_addr_t*)tm_iface.data()));
}

/* yes where it cannot be: refused, the reason named; try: goes without;
 * a list larger than the device's: refused with the range */
TEST(rc_srq_tag_config, errors_named)
{
    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        EXPECT_THROW(entity({{"TM_ENABLE", "yes"}, {"SRQ", "n"}}),
                     std::runtime_error);
        EXPECT_TRUE(log.has("UCX_RC_SRQ_TM_ENABLE=yes"));
        EXPECT_TRUE(log.has("UCX_RC_SRQ_SRQ=n"));
    }
    {
        entity e({{"TM_ENABLE", "try"}, {"SRQ", "n"}});
        EXPECT_EQ(0u, e.attr().cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
        EXPECT_EQ(0u, e.counters().tm_enabled);
    }
    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        EXPECT_THROW(entity({{"TM_ENABLE", "y"}, {"TM_LIST_SIZE", "100000"}}),
                     std::runtime_error);
        EXPECT_TRUE(log.has("RC_SRQ_TM_LIST_SIZE=100000 is out of range [0.."));
    }
    {
        entity e({{"TM_ENABLE", "y"}, {"TM_LIST_SIZE", "7"}});
        EXPECT_EQ(7u, e.attr().cap.tag.recv.max_outstanding);
    }
}

} // namespace
