/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the handshake's completions (srq_hs_rx.c): datagrams checked
 * against their source and answered, the handshake's sends counted back.
 */
#ifndef UCT_SRQ_HS_RX_H_
#define UCT_SRQ_HS_RX_H_

#include "srq_types.h"

/* Handshake completions per poll */
#define UCT_SRQ_HS_POLL_BATCH  16

/* Take up to a batch of handshake completions (datagrams in, sends
 * done): how many there were. Called with the handshake's lock held */
unsigned uct_srq_hs_poll(uct_srq_iface_t *iface);

#endif
