/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: what the soft device reports about itself
 * (device list/open/queries in general: test_devices.cc).
 */
#include "verbs_fixture.h"

#include <string.h>

using namespace srq_test;

class dev_caps : public verbs_test {};

TEST_P(dev_caps, soft_caps_are_honest)
{
    SRQ_SKIP_UNLESS_SOFT();
    tdev_t &d = open_dev();
    ibv_device_attr dattr;

    ASSERT_EQ(0, srq_verbs_query_device(d.dev, &dattr));
    /* atomics are executed by the target's responder with CPU atomics
     * (test_soft_atomic.cc); SRQ resize is not implemented, and says so */
    EXPECT_EQ(IBV_ATOMIC_HCA, dattr.atomic_cap);
    EXPECT_EQ(16, dattr.max_qp_rd_atom);
    EXPECT_EQ(16, dattr.max_qp_init_rd_atom);
    EXPECT_GE(dattr.max_res_rd_atom, dattr.max_qp_rd_atom);
    EXPECT_FALSE(dattr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
    EXPECT_EQ(SRQ_VERBS_DEV_SOFT, srq_verbs_dev_kind(d.dev));
    EXPECT_STREQ("soft0",
                 ibv_get_device_name(srq_verbs_context(d.dev)->device));
}

TEST_P(dev_caps, ah_attr_routes_to_instance)
{
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_ah_attr ah;

    ASSERT_EQ(0, srq_verbs_ah_attr(a.dev, 1, &b.addr, &ah));
    EXPECT_EQ(1, ah.port_num);
    if (is_soft()) {
        EXPECT_TRUE(ah.is_global);
        EXPECT_EQ(0, memcmp(ah.grh.dgid.raw, b.addr.gid, 16));
    }
}

TEST_P(dev_caps, unreachable_instance)
{
    SRQ_SKIP_UNLESS_SOFT();
    tdev_t &a = open_dev();
    srq_verbs_port_addr_t gone = a.addr;
    ibv_ah_attr ah;

    gone.gid[15] ^= 0xff; /* no such live instance */
    ASSERT_EQ(0, srq_verbs_ah_attr(a.dev, 1, &gone, &ah));
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_create_ah(a.dev, a.pd, &ah));
    EXPECT_EQ(EHOSTUNREACH, errno);
}

/* An address from another host (or a container that shares neither our
 * /dev/shm nor our pid namespace) is unreachable, not a connect that hangs */
TEST_P(dev_caps, other_host_unreachable)
{
    SRQ_SKIP_UNLESS_SOFT();
    tdev_t &a = open_dev();
    srq_verbs_port_addr_t other = a.addr;
    ibv_ah_attr ah;

    ASSERT_EQ(0, srq_verbs_ah_attr(a.dev, 1, &other, &ah));
    other.gid[4] ^= 0x5a; /* the instance's sharing-domain bytes: 4..7 */
    EXPECT_EQ(EHOSTUNREACH, srq_verbs_ah_attr(a.dev, 1, &other, &ah));
}

SRQ_INSTANTIATE(dev_caps);
