/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The md's registration cache (UCX_SRQ_RCACHE): a buffer registered again
 * is the same device registration; memory unmapped and mapped anew at the
 * same address is registered anew, never served a stale registration; and
 * the default follows the device (rdma-core: on; the built-in soft0: off).
 * A registration is told by the remote key it packs: two registrations of
 * the device never share one.
 */
#include "srq_uct_fixture.h"

#include <sys/mman.h>

using namespace srq_test;

namespace {

/* An srq md opened with UCX_SRQ_RCACHE=@mode (NULL: the default) */
class md_handle {
public:
    explicit md_handle(const char *mode)
    {
        env_guard rcache("UCX_SRQ_RCACHE", mode);
        EXPECT_EQ(UCS_OK, uct_md_config_read(srq_component(), NULL, NULL,
                                             &m_config));
        EXPECT_EQ(UCS_OK, uct_md_open(srq_component(), "soft0", m_config,
                                      &m_md));
    }
    ~md_handle()
    {
        if (m_md != NULL) {
            uct_md_close(m_md);
        }
        if (m_config != NULL) {
            uct_config_release(m_config);
        }
    }

    uct_mem_h reg(void *address, size_t length)
    {
        uct_mem_h memh = UCT_MEM_HANDLE_NULL;
        EXPECT_EQ(UCS_OK, uct_md_mem_reg(m_md, address, length,
                                         UCT_MD_MEM_ACCESS_ALL, &memh));
        return memh;
    }

    void dereg(uct_mem_h memh)
    {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    }

    /* the device's remote key of @memh: one per registration */
    uint32_t key(uct_mem_h memh)
    {
        uint32_t packed = 0;
        EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, &packed));
        return packed;
    }

    uct_md_h md() const { return m_md; }

private:
    uct_md_config_t *m_config = NULL;
    uct_md_h         m_md     = NULL;
};

void *map(size_t length, void *at = NULL)
{
    void *p = mmap(at, length, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0),
                   -1, 0);
    EXPECT_NE(MAP_FAILED, p);
    return p;
}

} // namespace

TEST(rc_srq_rcache, same_buffer_registered_once)
{
    md_handle m("y");
    const size_t len = 64 * 1024;
    char *buf = (char*)map(len);

    uct_mem_h a = m.reg(buf, len);
    uct_mem_h b = m.reg(buf, len);
    uct_mem_h c = m.reg(buf + 100, 1000);   /* inside: served by it too */
    EXPECT_EQ(m.key(a), m.key(b));
    EXPECT_EQ(m.key(a), m.key(c));
    m.dereg(c);
    m.dereg(b);
    m.dereg(a);
    /* released, still cached while the memory is mapped */
    uct_mem_h d = m.reg(buf, len);
    EXPECT_EQ(m.key(a), m.key(d));
    m.dereg(d);
    munmap(buf, len);
}

TEST(rc_srq_rcache, off_registers_each_time)
{
    md_handle m("n");
    std::vector<char> buf(4096);

    uct_mem_h a = m.reg(buf.data(), buf.size());
    uct_mem_h b = m.reg(buf.data(), buf.size());
    EXPECT_NE(m.key(a), m.key(b));
    m.dereg(a);
    m.dereg(b);
}

/* munmap invalidates (UCM's memory events): new pages at the old address
 * get a registration of their own, and one-sided traffic lands in them */
TEST(rc_srq_rcache, unmapped_memory_is_registered_anew)
{
    env_guard rcache("UCX_SRQ_RCACHE", "y");
    entity sender, receiver;
    const size_t len = 64 * 1024;
    md_handle m("y");
    char *buf = (char*)map(len);

    uct_mem_h old = m.reg(buf, len);
    uint32_t old_key = m.key(old);
    m.dereg(old);
    ASSERT_EQ(0, munmap(buf, len));
    ASSERT_EQ(buf, map(len, buf)) << "could not map the address again";

    /* the receiver's md, cached too: its region of the old pages is gone */
    uct_mem_h fresh = m.reg(buf, len);
    EXPECT_NE(old_key, m.key(fresh)) << "a stale registration was served";
    m.dereg(fresh);

    mem_buffer src(sender.md(), 256, 'x');
    uct_mem_h rmemh = UCT_MEM_HANDLE_NULL;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(receiver.md(), buf, len,
                                     UCT_MD_MEM_ACCESS_ALL, &rmemh));
    ASSERT_EQ(UCS_OK, uct_md_mem_dereg(receiver.md(), rmemh));
    ASSERT_EQ(0, munmap(buf, len));
    ASSERT_EQ(buf, map(len, buf));
    memset(buf, 0, len);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(receiver.md(), buf, len,
                                     UCT_MD_MEM_ACCESS_ALL, &rmemh));
    uct_md_attr_t md_attr;
    ASSERT_EQ(UCS_OK, uct_md_query(receiver.md(), &md_attr));
    std::vector<char> packed(md_attr.rkey_packed_size);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(receiver.md(), rmemh, packed.data()));
    uct_rkey_bundle_t rkey;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(srq_component(), packed.data(), &rkey));

    uct_ep_h ep = sender.connect(receiver);
    uct_iov_t iov = {src.ptr(), src.size(), src.memh(), 0, 1};
    test_comp comp;
    ucs_status_t status;
    ASSERT_TRUE(progress_until({&sender, &receiver}, [&] {
        status = uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)buf + 512,
                                  rkey.rkey, &comp.comp);
        return status != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
    if (status == UCS_INPROGRESS) {
        ASSERT_TRUE(progress_until({&sender, &receiver},
                                   [&] { return comp.done == 1; }));
        EXPECT_EQ(UCS_OK, comp.status);
    }
    EXPECT_EQ(std::string(256, 'x'), std::string(buf + 512, 256));
    uct_rkey_release(srq_component(), &rkey);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(receiver.md(), rmemh));
    munmap(buf, len);
}

/* auto: on for a device reached through rdma-core, off for soft0's own */
TEST(rc_srq_rcache, default_follows_the_device)
{
    md_handle m(NULL);
    std::vector<char> buf(4096);

    uct_mem_h a = m.reg(buf.data(), buf.size());
    uct_mem_h b = m.reg(buf.data(), buf.size());
    if (builtin_soft(m.md())) {
        EXPECT_NE(m.key(a), m.key(b)) << "the built-in soft0 was cached";
    } else {
        EXPECT_EQ(m.key(a), m.key(b)) << "an rdma-core device was not cached";
    }
    m.dereg(a);
    m.dereg(b);
}
