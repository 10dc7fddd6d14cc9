/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The calls later UCX releases route through the internal ops a transport
 * must fill (uct_iface_is_reachable_v2 from UCX 1.15, uct_ep_is_connected
 * from 1.16, uct_iface_query_v2 in 1.20 and 1.22+): UCP calls them, and an
 * op left empty crashes it. And what 1.22 asks of them more: the reason a
 * peer is not reachable, and uct_ep_check with a completion. Built where configure found them in the UCX
 * headers (HAVE_UCX_*; v2 declarations come from the UCX source tree, as
 * UCX does not install them); with UCX 1.13 there is nothing to test.
 */
#include "srq_uct_fixture.h"

#if defined(HAVE_UCX_IFACE_IS_REACHABLE_V2) || defined(HAVE_UCX_EP_IS_CONNECTED) || \
    defined(HAVE_UCX_IFACE_QUERY_V2) || defined(HAVE_UCX_EP_CHECK_COMP)

extern "C" {
#include <uct/api/v2/uct_v2.h>
}

using namespace srq_test;

#ifdef HAVE_UCX_IFACE_IS_REACHABLE_V2
TEST(rc_srq_v2, iface_is_reachable_v2)
{
    entity a, b;
    std::vector<char> dev = b.dev_addr(), iface = b.iface_addr();
    uct_iface_is_reachable_params_t params = {};

    params.field_mask  = UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR |
                         UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR;
    params.device_addr = (const uct_device_addr_t*)dev.data();
    params.iface_addr  = (const uct_iface_addr_t*)iface.data();
    EXPECT_TRUE(uct_iface_is_reachable_v2(a.iface(), &params));

    /* a device address no port has */
    std::vector<char> bogus(dev.size(), (char)0xa5);
    params.device_addr = (const uct_device_addr_t*)bogus.data();
    EXPECT_FALSE(uct_iface_is_reachable_v2(a.iface(), &params));

    /* without the addresses nothing is reachable */
    params.field_mask = 0;
    EXPECT_FALSE(uct_iface_is_reachable_v2(a.iface(), &params));
}
#endif

#ifdef HAVE_UCX_IFACE_IS_REACHABLE_V2
/* uct_iface_is_reachable_v2 asking for the reason of a "no" */
static bool reachable_why(uct_iface_h iface, const std::vector<char> &dev,
                          const std::vector<char> &iface_addr,
                          std::string &why, uint64_t extra_fields = 0,
                          size_t dev_len = 0)
{
    uct_iface_is_reachable_params_t params = {};
    char info[256];

    memset(info, 0, sizeof(info));
    params.field_mask         = UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR |
                                UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR |
                                UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING |
                                UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH |
                                extra_fields;
    params.device_addr        = (const uct_device_addr_t*)dev.data();
    params.iface_addr         = (const uct_iface_addr_t*)iface_addr.data();
    params.info_string        = info;
    params.info_string_length = sizeof(info);
#ifdef HAVE_UCX_REACHABLE_ADDR_LENGTH
    params.device_addr_length = dev_len;
#endif
    bool reachable = uct_iface_is_reachable_v2(iface, &params);
    why            = info;
    return reachable;
}

/* Not reachable: why, in words (UCX 1.22's test_uct_iface.is_reachable
 * wants them, UCP prints them when it finds no transport to a peer) */
TEST(rc_srq_v2, iface_is_reachable_v2_says_why)
{
    entity a, b;
    std::vector<char> dev = b.dev_addr(), iface = b.iface_addr();
    std::string why;

    EXPECT_TRUE(reachable_why(a.iface(), dev, iface, why));
    EXPECT_EQ("", why) << "a reachable peer has no reason";

    /* not a port address of this device's kind */
    std::vector<char> bogus(dev.size(), (char)0xa5);
    EXPECT_FALSE(reachable_why(a.iface(), bogus, iface, why));
    EXPECT_NE(std::string::npos, why.find("remote unknown device kind")) << why;

    /* soft0 of another host (another instance id): no route to it */
    std::vector<char> other = dev;
    other[4 + 4] ^= 0x5a; /* kind, port, lid, then the magic and the id */
    EXPECT_FALSE(reachable_why(a.iface(), other, iface, why));
    EXPECT_NE(std::string::npos, why.find("no route")) << why;

#ifdef HAVE_UCX_REACHABLE_ADDR_LENGTH
    /* an address shorter than a port's is not read past its length */
    EXPECT_FALSE(reachable_why(a.iface(), dev, iface, why,
                               UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH,
                               dev.size() - 1));
    EXPECT_NE(std::string::npos, why.find("device address of")) << why;
#endif
}
#endif

#ifdef HAVE_UCX_EP_CHECK_COMP
/* A completion of uct_ep_check: how often it ran, with which status */
struct check_comp {
    uct_completion_t uct;
    unsigned         count  = 0;
    ucs_status_t     status = UCS_OK;

    check_comp()
    {
        uct.func   = cb;
        uct.count  = 1;
        uct.status = UCS_OK;
    }
    static void cb(uct_completion_t *self)
    {
        check_comp *c = ucs_container_of(self, check_comp, uct);
        c->status     = self->status;
        ++c->count;
    }
};

/* UCX 1.22: with a completion the status is not known at once: in
 * progress, and the completion says it when the probe came back */
static void expect_check_completes(entity &a, entity &b, uct_ep_h ep)
{
    check_comp comp;

    ASSERT_EQ(UCS_INPROGRESS, uct_ep_check(ep, 0, &comp.uct));
    EXPECT_EQ(0u, comp.count) << "called before the probe came back";
    EXPECT_TRUE(progress_until({&a, &b}, [&] { return comp.count > 0; }))
        << "the completion was never called";
    for (int i = 0; i < 100; ++i) {
        a.progress();
        b.progress();
    }
    EXPECT_EQ(1u, comp.count) << "called more than once";
    EXPECT_EQ(UCS_OK, comp.status) << ucs_status_string(comp.status);
}

TEST(rc_srq_v2, ep_check_comp_during_wireup)
{
    entity a, b;
    uct_ep_h ep = a.connect(b);

    expect_check_completes(a, b, ep);
}

TEST(rc_srq_v2, ep_check_comp_when_idle)
{
    entity a, b;
    uct_ep_h ep = a.connect(b);

    ASSERT_TRUE(progress_until({&a, &b}, [&] {
        return uct_ep_flush(ep, 0, NULL) == UCS_OK;
    }));
    expect_check_completes(a, b, ep);
    EXPECT_EQ(UCS_OK, uct_ep_check(ep, 0, NULL)) << "without a completion";
}

static ucs_status_t drop_am(void *arg, void *data, size_t length,
                            unsigned flags)
{
    return UCS_OK;
}

/* Every send slot taken: the probe waits for one, and goes */
TEST(rc_srq_v2, ep_check_comp_without_send_slots)
{
    entity a(config_t{{"TX_QUEUE_LEN", "16"}}), b;
    uct_ep_h ep = a.connect(b);
    unsigned sent = 0;

    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(b.iface(), 1, drop_am, NULL, 0));
    while (uct_ep_am_short(ep, 1, 0, NULL, 0) == UCS_OK) {
        ASSERT_LT(++sent, 1000u) << "the send queue never filled";
    }
    ASSERT_GT(sent, 0u);
    expect_check_completes(a, b, ep);
}

/* An endpoint destroyed with its check waiting for a slot: the check's
 * completion runs, canceled, before the endpoint is gone */
TEST(rc_srq_v2, ep_check_comp_canceled_by_destroy)
{
    entity a(config_t{{"TX_QUEUE_LEN", "16"}}), b;
    uct_ep_h ep;
    uct_ep_params_t params = {};
    std::vector<char> dev = b.dev_addr(), iface = b.iface_addr();
    check_comp comp;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = a.iface();
    params.dev_addr   = (const uct_device_addr_t*)dev.data();
    params.iface_addr = (const uct_iface_addr_t*)iface.data();
    ASSERT_EQ(UCS_OK, uct_ep_create(&params, &ep));
    while (uct_ep_am_short(ep, 1, 0, NULL, 0) == UCS_OK) {
    }
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_check(ep, 0, &comp.uct));
    uct_ep_destroy(ep);
    EXPECT_EQ(1u, comp.count);
    EXPECT_EQ(UCS_ERR_CANCELED, comp.status) << ucs_status_string(comp.status);
}
#endif

#ifdef HAVE_UCX_EP_IS_CONNECTED
TEST(rc_srq_v2, ep_is_connected)
{
    entity a, b, c;
    uct_ep_h ep = a.connect(b);
    std::vector<char> dev_b = b.dev_addr(), iface_b = b.iface_addr(),
                      dev_c = c.dev_addr(), iface_c = c.iface_addr();
    uct_ep_is_connected_params_t params = {};

    params.field_mask  = UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR |
                         UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR;
    params.device_addr = (const uct_device_addr_t*)dev_b.data();
    params.iface_addr  = (const uct_iface_addr_t*)iface_b.data();
    EXPECT_TRUE(uct_ep_is_connected(ep, &params)) << "to its own peer";

    /* (an interface address means something only with its device's) */
    params.device_addr = (const uct_device_addr_t*)dev_c.data();
    params.iface_addr  = (const uct_iface_addr_t*)iface_c.data();
    EXPECT_FALSE(uct_ep_is_connected(ep, &params)) << "to another interface";

    params.field_mask = UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR;
    EXPECT_FALSE(uct_ep_is_connected(ep, &params)) << "without an iface address";
}
#endif

#ifdef HAVE_UCX_IFACE_QUERY_V2
TEST(rc_srq_v2, iface_query_v2)
{
    entity a;
    uct_iface_attr_v2_t attr = {};

    /* UCP's protocols call it; with the op left empty this crashes */
    attr.field_mask = 0;
    EXPECT_EQ(UCS_OK, uct_iface_query_v2(a.iface(), &attr));
}
#endif

#endif
