/*
 * The calls later UCX releases route through the internal ops a transport
 * must fill (uct_iface_is_reachable_v2 from UCX 1.15, uct_ep_is_connected
 * from 1.16, uct_iface_query_v2 in 1.20 and 1.22+): UCP calls them, and an
 * op left empty crashes it. And what 1.22 asks more: the reason a peer is not
 * reachable. Built where configure found them in the UCX
 * headers (HAVE_UCX_*; v2 declarations come from the UCX source tree, as
 * UCX does not install them); with UCX 1.13 there is nothing to test.
 */
#include "srq_uct_fixture.h"

#if defined(HAVE_UCX_IFACE_IS_REACHABLE_V2) || defined(HAVE_UCX_EP_IS_CONNECTED) || \
    defined(HAVE_UCX_IFACE_QUERY_V2)

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
