/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: what a program that sleeps on the interface waits for
 * (srq_iface_event.c) - UCT's event fd and arming.
 */
#ifndef UCT_SRQ_IFACE_EVENT_H_
#define UCT_SRQ_IFACE_EVENT_H_

#include "srq_types.h"

/* The event set over the interface's completion channel (created before
 * it) and the handshake's wake_fd (after uct_srq_hs_init); cleanup takes
 * a partly made one */
ucs_status_t uct_srq_iface_event_init(uct_srq_iface_t *iface);
void uct_srq_iface_event_cleanup(uct_srq_iface_t *iface);

ucs_status_t uct_srq_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);
ucs_status_t uct_srq_iface_event_arm(uct_iface_h tl_iface, unsigned events);

#endif
