/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: probing idle connections (srq_conn_probe.c).
 */
#ifndef UCT_SRQ_CONN_PROBE_H_
#define UCT_SRQ_CONN_PROBE_H_

#include "srq_types.h"

/* Probe the connections no endpoint of ours uses that were idle since the
 * last look (CONN_IDLE_CHECK): a probe to a dead peer fails, and so does
 * the connection */
void uct_srq_hs_check_idle(uct_srq_iface_t *iface);

#endif
