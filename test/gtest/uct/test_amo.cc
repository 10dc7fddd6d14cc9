/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_srq's atomics: 64-bit add, fetch-add and compare-swap as IB atomics,
 * the rest (AND, OR, XOR, SWAP, and every 32-bit one) as compare-swap
 * loops. Every operation at both sizes (a 32-bit operand in either half of
 * its word) against a reference computed here, with the neighbouring bytes
 * untouched; contention from several endpoints, exact and each result
 * seen once; and a flush that waits for a loop still going round.
 */
#include "srq_uct_fixture.h"

#include <algorithm>
#include <set>

using namespace srq_test;

namespace {

const uct_atomic_op_t kOps[] = {UCT_ATOMIC_OP_ADD, UCT_ATOMIC_OP_AND,
                                UCT_ATOMIC_OP_OR, UCT_ATOMIC_OP_XOR,
                                UCT_ATOMIC_OP_SWAP};

template <typename T> T reference(uct_atomic_op_t op, T x, T v)
{
    switch (op) {
    case UCT_ATOMIC_OP_ADD:  return x + v;
    case UCT_ATOMIC_OP_AND:  return x & v;
    case UCT_ATOMIC_OP_OR:   return x | v;
    case UCT_ATOMIC_OP_XOR:  return x ^ v;
    default:                 return v; /* SWAP */
    }
}

class rc_srq_amo : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_sender.reset(new entity());
        m_receiver.reset(new entity());
        if (!(m_sender->attr().cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE)) {
            GTEST_SKIP() << "the device executes no atomics";
        }
        m_ep     = m_sender->connect(*m_receiver);
        m_target.reset(new mem_buffer(m_receiver->md(), 64, 0));
    }

    uint64_t *word(int i) { return (uint64_t*)m_target->ptr() + i; }
    uint64_t addr(const void *p) { return (uintptr_t)p; }

    /* Posts @op until it is accepted; then, when it has a completion,
     * waits for it */
    void run(const std::function<ucs_status_t(uct_completion_t*)> &op)
    {
        test_comp comp;
        ucs_status_t status;

        ASSERT_TRUE(progress_until({m_sender.get(), m_receiver.get()}, [&] {
            status = op(&comp.comp);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
            << ucs_status_string(status);
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_until({m_sender.get(), m_receiver.get()},
                                       [&] { return comp.done == 1; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }
        flush();
    }

    void flush()
    {
        test_comp comp;
        ucs_status_t status = uct_ep_flush(m_ep, 0, &comp.comp);
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_until({m_sender.get(), m_receiver.get()},
                                       [&] { return comp.done == 1; }));
        }
    }

    std::unique_ptr<entity>     m_sender, m_receiver;
    uct_ep_h                    m_ep = NULL;
    std::unique_ptr<mem_buffer> m_target;
};

} // namespace

TEST_F(rc_srq_amo, advertised)
{
    const uct_iface_attr_t &a = m_sender->attr();
    uint64_t ops  = UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) |
                    UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_XOR);
    uint64_t fops = ops | UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                    UCS_BIT(UCT_ATOMIC_OP_CSWAP);

    /* all that UCP needs to carry AMO32 and AMO64 on the device */
    EXPECT_EQ(ops, a.cap.atomic64.op_flags);
    EXPECT_EQ(fops, a.cap.atomic64.fop_flags);
    EXPECT_EQ(ops, a.cap.atomic32.op_flags);
    EXPECT_EQ(fops, a.cap.atomic32.fop_flags);
}

TEST_F(rc_srq_amo, every_op_64)
{
    const uint64_t start = 0xf0f0a5a512345678ull, v = 0x0ff00ff0cafe1234ull;

    for (uct_atomic_op_t op : kOps) {
        SCOPED_TRACE(op);
        /* fetch: the old value comes back, the new one is in memory */
        *word(1) = start;
        uint64_t result = 0;
        run([&](uct_completion_t *c) {
            return uct_ep_atomic64_fetch(m_ep, op, v, &result, addr(word(1)),
                                         m_target->rkey(), c);
        });
        EXPECT_EQ(start, result);
        EXPECT_EQ(reference<uint64_t>(op, start, v), *word(1));
        EXPECT_EQ(0u, *word(0));
        EXPECT_EQ(0u, *word(2));

        if (op == UCT_ATOMIC_OP_SWAP) {
            continue; /* not an atomic_post operation */
        }
        *word(1) = start;
        run([&](uct_completion_t *) {
            return uct_ep_atomic64_post(m_ep, op, v, addr(word(1)),
                                        m_target->rkey());
        });
        EXPECT_EQ(reference<uint64_t>(op, start, v), *word(1));
    }

    /* compare-and-swap, equal and not */
    uint64_t result = 0;
    *word(1) = start;
    run([&](uct_completion_t *c) {
        return uct_ep_atomic_cswap64(m_ep, start, v, addr(word(1)),
                                     m_target->rkey(), &result, c);
    });
    EXPECT_EQ(start, result);
    EXPECT_EQ(v, *word(1));
    run([&](uct_completion_t *c) {
        return uct_ep_atomic_cswap64(m_ep, start, 7, addr(word(1)),
                                     m_target->rkey(), &result, c);
    });
    EXPECT_EQ(v, result);
    EXPECT_EQ(v, *word(1));
}

/* A 32-bit operand is either half of its 64-bit word; the other half is
 * never touched */
TEST_F(rc_srq_amo, every_op_32_in_both_halves)
{
    const uint32_t start = 0xa5a5f00f, v = 0x1234fedc, other = 0x55aa33cc;

    for (int half = 0; half < 2; ++half) {
        uint32_t *p = (uint32_t*)word(1) + half;
        uint32_t *o = (uint32_t*)word(1) + (1 - half);
        for (uct_atomic_op_t op : kOps) {
            SCOPED_TRACE(std::to_string(half) + ": op " + std::to_string(op));
            *p = start;
            *o = other;
            uint32_t result = 0;
            run([&](uct_completion_t *c) {
                return uct_ep_atomic32_fetch(m_ep, op, v, &result, addr(p),
                                             m_target->rkey(), c);
            });
            EXPECT_EQ(start, result);
            EXPECT_EQ(reference<uint32_t>(op, start, v), *p);
            EXPECT_EQ(other, *o) << "the other half changed";

            if (op == UCT_ATOMIC_OP_SWAP) {
                continue;
            }
            *p = start;
            run([&](uct_completion_t *) {
                return uct_ep_atomic32_post(m_ep, op, v, addr(p),
                                            m_target->rkey());
            });
            EXPECT_EQ(reference<uint32_t>(op, start, v), *p);
            EXPECT_EQ(other, *o);
        }

        uint32_t result = 0;
        *p = start;
        *o = other;
        run([&](uct_completion_t *c) {
            return uct_ep_atomic_cswap32(m_ep, start, v, addr(p),
                                         m_target->rkey(), &result, c);
        });
        EXPECT_EQ(start, result);
        EXPECT_EQ(v, *p);
        run([&](uct_completion_t *c) {
            return uct_ep_atomic_cswap32(m_ep, start, 7, addr(p),
                                         m_target->rkey(), &result, c);
        });
        EXPECT_EQ(v, result);
        EXPECT_EQ(v, *p);
        EXPECT_EQ(other, *o);
    }
    /* 32-bit add that carries out of the low half leaves the high alone */
    *word(2) = 0x00000001ffffffffull;
    run([&](uct_completion_t *) {
        return uct_ep_atomic32_post(m_ep, UCT_ATOMIC_OP_ADD, 1,
                                    addr((uint32_t*)word(2)), m_target->rkey());
    });
    EXPECT_EQ(0x0000000100000000ull, *word(2));
}

TEST_F(rc_srq_amo, misaligned_refused)
{
    uint64_t result;
    test_comp comp;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_atomic64_fetch(m_ep, UCT_ATOMIC_OP_ADD, 1, &result,
                                    addr(word(1)) + 4, m_target->rkey(),
                                    &comp.comp));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_atomic32_post(m_ep, UCT_ATOMIC_OP_ADD, 1,
                                   addr(word(1)) + 2, m_target->rkey()));
}

/*
 * Four endpoints (four interfaces) fetch-add 1 to one 32-bit counter and
 * one 64-bit counter, interleaved: the counters end exact, every fetched
 * value is seen exactly once, and the 32-bit loops did collide (retries).
 */
TEST_F(rc_srq_amo, contention_exact)
{
    const int kSenders = 4, kEach = 200;
    std::vector<std::unique_ptr<entity>> senders;
    std::vector<uct_ep_h> eps;
    std::vector<entity*> all = {m_receiver.get()};
    for (int i = 0; i < kSenders; ++i) {
        senders.emplace_back(new entity());
        eps.push_back(senders.back()->connect(*m_receiver));
        all.push_back(senders.back().get());
    }
    uint32_t *c32 = (uint32_t*)word(3) + 1;
    uint64_t *c64 = word(4);
    *word(3) = 0;
    *c64     = 0;

    struct slot { uint32_t r32; uint64_t r64; test_comp comp{2}; };
    std::vector<slot> slots(kSenders * kEach);
    std::vector<int> next(kSenders, 0);
    int done = 0;
    ASSERT_TRUE(progress_until(all, [&] {
        for (int s = 0; s < kSenders; ++s) {
            /* a few in flight per sender, so the loops overlap */
            while ((next[s] < kEach) &&
                   (next[s] - (int)std::count_if(
                        slots.begin() + s * kEach,
                        slots.begin() + s * kEach + next[s],
                        [](const slot &x) { return x.comp.done; }) < 4)) {
                slot &x = slots[s * kEach + next[s]];
                ucs_status_t st = uct_ep_atomic32_fetch(
                        eps[s], UCT_ATOMIC_OP_ADD, 1, &x.r32, addr(c32),
                        m_target->rkey(), &x.comp.comp);
                if (st == UCS_ERR_NO_RESOURCE) {
                    break;
                }
                EXPECT_EQ(UCS_INPROGRESS, st);
                st = uct_ep_atomic64_fetch(eps[s], UCT_ATOMIC_OP_ADD, 1,
                                           &x.r64, addr(c64),
                                           m_target->rkey(), &x.comp.comp);
                if (st == UCS_ERR_NO_RESOURCE) {
                    /* the 32-bit one is under way: count it done alone */
                    x.comp.comp.count = 1;
                    x.r64             = UINT64_MAX;
                } else {
                    EXPECT_EQ(UCS_INPROGRESS, st);
                }
                ++next[s];
            }
        }
        done = std::count_if(slots.begin(), slots.end(),
                             [](const slot &x) { return x.comp.done; });
        return done == kSenders * kEach;
    }, 60));

    std::set<uint32_t> seen32;
    std::set<uint64_t> seen64;
    size_t n64 = 0;
    for (const slot &x : slots) {
        EXPECT_EQ(UCS_OK, x.comp.status);
        EXPECT_TRUE(seen32.insert(x.r32).second) << "32-bit value " << x.r32
                                                 << " fetched twice";
        if (x.r64 != UINT64_MAX) {
            ++n64;
            EXPECT_TRUE(seen64.insert(x.r64).second);
        }
    }
    EXPECT_EQ((uint32_t)(kSenders * kEach), *c32);
    EXPECT_EQ(n64, *c64);
    EXPECT_EQ(0u, *(uint32_t*)word(3)) << "the counter's neighbour changed";

    uint64_t retries = 0, atomics = 0;
    for (auto &s : senders) {
        retries += s->counters().tx_atomic_retries;
        atomics += s->counters().tx_atomics;
    }
    EXPECT_GT(retries, 0u) << "the compare-swap loops never collided";
    EXPECT_GE(atomics, (uint64_t)(kSenders * kEach) + n64 + retries);
}

/* A flush with a completion also waits for an emulated atomic that went
 * round again after the flush was posted: when the flush completes, the
 * operation is in memory */
TEST_F(rc_srq_amo, flush_waits_for_a_looping_atomic)
{
    uint32_t *p = (uint32_t*)word(1);
    test_comp flushed;

    *word(1) = 0x1111111100000005ull; /* the first guess (0) is wrong */
    ucs_status_t status;
    ASSERT_TRUE(progress_until({m_sender.get(), m_receiver.get()}, [&] {
        status = uct_ep_atomic32_post(m_ep, UCT_ATOMIC_OP_XOR, 3, addr(p),
                                      m_target->rkey());
        return status != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ(UCS_OK, status);
    status = uct_ep_flush(m_ep, 0, &flushed.comp);
    ASSERT_EQ(UCS_INPROGRESS, status);
    /* the flush completes in the sender's progress: look at the target's
     * memory right then, before the target's device (its progress)
     * executes anything more */
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!flushed.done && (std::chrono::steady_clock::now() < deadline)) {
        m_sender->progress();
        if (!flushed.done) {
            m_receiver->progress();
        }
    }
    ASSERT_EQ(1, flushed.done);
    EXPECT_EQ(5u ^ 3u, *p) << "the flush completed before the atomic";
    EXPECT_EQ(0x11111111u, *(p + 1));
    EXPECT_GE(m_sender->counters().tx_atomic_retries, 1u);
}
