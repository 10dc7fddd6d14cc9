/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_srq's performance model (what UCP selects lanes and protocols by)
 * comes from the port: the model of a few well-known ports, worked out by
 * hand from the IBTA rates, and an interface whose attributes are the
 * model of the port it runs on.
 */
#include "srq_uct_fixture.h"

#include <uct/srq_perf.h>
#include <verbs/srq_verbs.h>

using namespace srq_test;

namespace {

typedef void (*perf_func_t)(const struct ibv_port_attr*, size_t,
                            uct_srq_perf_t*);

perf_func_t perf_func()
{
    return (perf_func_t)plugin_symbol("uct_srq_perf_from_port");
}

uct_srq_perf_t model(uint8_t speed, uint8_t width, enum ibv_mtu mtu,
                     uint8_t link_layer, size_t seg = 8256)
{
    struct ibv_port_attr port = {};
    uct_srq_perf_t perf       = {};

    port.active_speed = speed;
    port.active_width = width;
    port.active_mtu   = mtu;
    port.link_layer   = link_layer;
    perf_func()(&port, seg, &perf);
    return perf;
}

} // namespace

TEST(rc_srq_perf, model_of_known_ports)
{
    ASSERT_NE(nullptr, perf_func()) << "the test plugin exports the model";

    /* 4x EDR InfiniBand, 4 KiB MTU: 4 x 25.78125 Gb/s x 64/66 = 100 Gb/s
     * = 12.5 GB/s of data bits, less 26 B of headers per 4096 B packet */
    uct_srq_perf_t edr = model(32, 2, IBV_MTU_4096, IBV_LINK_LAYER_INFINIBAND);
    EXPECT_NEAR(12.4212e9, edr.bandwidth, 0.001e9);
    EXPECT_DOUBLE_EQ(0.6e-6, edr.latency);
    EXPECT_EQ(4, edr.lanes);

    /* 1x SDR, 2 KiB MTU: 2.5 Gb/s x 8/10 = 250 MB/s x 2048/2074 */
    uct_srq_perf_t sdr = model(1, 1, IBV_MTU_2048, IBV_LINK_LAYER_INFINIBAND);
    EXPECT_NEAR(246.866e6, sdr.bandwidth, 0.01e6);
    EXPECT_DOUBLE_EQ(5e-6, sdr.latency);

    /* 4x HDR RoCE (200 GbE), 1 KiB MTU: 4 x 53.125 Gb/s x 64/66 =
     * 25.7576 GB/s x 1024/(1024 + 82 B of Ethernet/IP/UDP/IB headers and
     * framing); Ethernet adds latency */
    uct_srq_perf_t roce = model(64, 2, IBV_MTU_1024, IBV_LINK_LAYER_ETHERNET);
    EXPECT_NEAR(23.8479e9, roce.bandwidth, 0.001e9);
    EXPECT_DOUBLE_EQ(0.8e-6, roce.latency);

    /* a receive segment smaller than the MTU bounds the packet */
    uct_srq_perf_t small = model(32, 2, IBV_MTU_4096,
                                 IBV_LINK_LAYER_INFINIBAND, 512);
    EXPECT_NEAR(12.5e9 * 512 / (512 + 26), small.bandwidth, 0.001e9);

    /* codes the model does not know are never better than 1x SDR */
    uct_srq_perf_t unknown = model(3, 3, IBV_MTU_2048,
                                   IBV_LINK_LAYER_INFINIBAND);
    EXPECT_EQ(0, unknown.lanes);
    EXPECT_EQ(0.0, unknown.signal);
    EXPECT_DOUBLE_EQ(sdr.bandwidth, unknown.bandwidth);
    EXPECT_DOUBLE_EQ(sdr.latency, unknown.latency);
}

/* The interface's attributes are the model of its own port (soft0's says
 * 4x EDR), on the built-in path and on the rdma-core one alike */
TEST(rc_srq_perf, iface_attributes_follow_the_port)
{
    typedef srq_verbs_dev_t *(*md_dev_func_t)(uct_md_h);
    typedef int (*query_port_func_t)(srq_verbs_dev_t*, uint8_t,
                                     struct ibv_port_attr*);
    auto md_dev     = (md_dev_func_t)plugin_symbol("uct_srq_md_verbs_dev");
    auto query_port = (query_port_func_t)plugin_symbol("srq_verbs_query_port");
    ASSERT_TRUE((md_dev != nullptr) && (query_port != nullptr) &&
                (perf_func() != nullptr));

    entity e;
    struct ibv_port_attr port;
    uct_srq_perf_t perf;
    ASSERT_EQ(0, query_port(md_dev(e.md()), 1, &port));
    perf_func()(&port, e.attr().cap.am.max_bcopy, &perf); /* seg_size */

    EXPECT_EQ(perf.bandwidth, e.attr().bandwidth.shared);
    EXPECT_EQ(0.0, e.attr().bandwidth.dedicated);
    EXPECT_EQ(perf.latency, e.attr().latency.c);
    EXPECT_EQ(0.0, e.attr().latency.m);
    EXPECT_EQ(UCT_SRQ_PERF_OVERHEAD, e.attr().overhead);
    /* soft0: 4x EDR */
    EXPECT_EQ(32, port.active_speed);
    EXPECT_EQ(2, port.active_width);
    EXPECT_NEAR(12.42e9, e.attr().bandwidth.shared, 0.01e9);
}
