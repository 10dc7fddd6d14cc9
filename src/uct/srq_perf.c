/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the performance model of a port (see srq_perf.h).
 */
#include "srq_perf.h"

#include <ucs/sys/math.h>

/* One link generation: IBTA LinkSpeedActive code, lane signalling rate,
 * line encoding, and a typical one-way latency through an HCA and one
 * switch of that generation */
typedef struct {
    unsigned  code;
    double    signal;      /* bits/s per lane */
    double    encoding;    /* data bits per line bit */
    double    latency;     /* seconds */
} uct_srq_perf_speed_t;

static const uct_srq_perf_speed_t uct_srq_perf_speeds[] = {
    {  1,   2.5e9,      8.0 / 10.0, 5.0e-6 },  /* SDR */
    {  2,   5.0e9,      8.0 / 10.0, 2.5e-6 },  /* DDR */
    {  4,  10.0e9,      8.0 / 10.0, 1.3e-6 },  /* QDR */
    {  8,  10.3125e9,  64.0 / 66.0, 0.7e-6 },  /* FDR10 */
    { 16,  14.0625e9,  64.0 / 66.0, 0.7e-6 },  /* FDR */
    { 32,  25.78125e9, 64.0 / 66.0, 0.6e-6 },  /* EDR */
    { 64,  53.125e9,   64.0 / 66.0, 0.6e-6 },  /* HDR (PAM4) */
    {128, 106.25e9,    64.0 / 66.0, 0.6e-6 },  /* NDR (PAM4) */
};

/* IBTA LinkWidthActive code -> lanes */
static int uct_srq_perf_lanes(uint8_t code)
{
    switch (code) {
    case 1:  return 1;
    case 2:  return 4;
    case 4:  return 8;
    case 8:  return 12;
    case 16: return 2;
    default: return 0;
    }
}

/* Headers around each packet's payload on the wire, RC SEND/WRITE */
#define UCT_SRQ_PERF_IB_HDRS    (8 + 12 + 4 + 2)  /* LRH, BTH, ICRC, VCRC */
/* Ethernet + FCS, IPv4, UDP, BTH, ICRC, and preamble + inter-frame gap */
#define UCT_SRQ_PERF_ROCE_HDRS  (14 + 4 + 20 + 8 + 12 + 4 + 20)
/* RoCE: an Ethernet switch and the UDP/IP processing on each side */
#define UCT_SRQ_PERF_ROCE_EXTRA_LATENCY  200e-9

void uct_srq_perf_from_port(const struct ibv_port_attr *port, size_t seg_size,
                            uct_srq_perf_t *perf)
{
    const uct_srq_perf_speed_t *speed = &uct_srq_perf_speeds[0];
    int roce = (port->link_layer == IBV_LINK_LAYER_ETHERNET);
    size_t mtu, hdrs;
    unsigned i;

    perf->signal = 0;
    for (i = 0; i < ucs_static_array_size(uct_srq_perf_speeds); ++i) {
        if (uct_srq_perf_speeds[i].code == port->active_speed) {
            speed        = &uct_srq_perf_speeds[i];
            perf->signal = speed->signal;
        }
    }
    perf->lanes = uct_srq_perf_lanes(port->active_width);

    mtu  = ucs_min(128ul << ucs_max((int)port->active_mtu, 1), seg_size);
    hdrs = roce ? UCT_SRQ_PERF_ROCE_HDRS : UCT_SRQ_PERF_IB_HDRS;
    perf->bandwidth = ucs_max(perf->lanes, 1) * speed->signal *
                      speed->encoding / 8.0 * mtu / (mtu + hdrs);
    perf->latency   = speed->latency +
                      (roce ? UCT_SRQ_PERF_ROCE_EXTRA_LATENCY : 0);
}
