/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the interface's performance model (what UCP's protocol and lane
 * selection read from uct_iface_query), derived from the port it runs on.
 */
#ifndef UCT_SRQ_PERF_H_
#define UCT_SRQ_PERF_H_

#include <infiniband/verbs.h>
#include <stddef.h>

/* CPU cost of posting one operation and reaping its completion: a property
 * of this transport's code, not of the port (UCX's rc_verbs uses 75 ns) */
#define UCT_SRQ_PERF_OVERHEAD  80e-9

typedef struct uct_srq_perf {
    double  latency;    /* seconds, one way, small message */
    double  bandwidth;  /* bytes/s of payload */
    double  signal;     /* bits/s of one lane (0: speed code unknown) */
    int     lanes;      /* 0: width code unknown */
} uct_srq_perf_t;

/*
 * The model of @port (IBTA PortInfo: active_speed, active_width,
 * active_mtu, link layer): one-way latency of the link generation, and the
 * payload bandwidth of its wire speed (lanes x signalling rate x encoding)
 * less each packet's headers at the active MTU (capped by @seg_size, the
 * largest message a receive buffer takes). Unknown codes are taken as the
 * slowest (1x SDR), so a model is never better than the port.
 */
void uct_srq_perf_from_port(const struct ibv_port_attr *port, size_t seg_size,
                            uct_srq_perf_t *perf);

#endif
