/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: whether an rc_srq interface reaches a peer's, and (UCX 1.15+,
 * the v2 call) why not, in the caller's info string.
 */
#ifndef UCT_SRQ_IFACE_REACH_H_
#define UCT_SRQ_IFACE_REACH_H_

#include "srq_types.h"

int uct_srq_iface_is_reachable(const uct_iface_h tl_iface,
                               const uct_device_addr_t *dev_addr,
                               const uct_iface_addr_t *iface_addr);

#ifdef HAVE_UCX_IFACE_IS_REACHABLE_V2
int uct_srq_iface_is_reachable_v2(const uct_iface_h tl_iface,
                                  const uct_iface_is_reachable_params_t *params);
#endif

#endif
