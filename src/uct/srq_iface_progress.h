/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the interface's progress (srq_iface_progress.c).
 */
#ifndef UCT_SRQ_IFACE_PROGRESS_H_
#define UCT_SRQ_IFACE_PROGRESS_H_

#include "srq_types.h"

/* Completions taken from a CQ per poll call */
#define UCT_SRQ_POLL_BATCH      16
/* Progress calls that may skip the send CQ in a row (uct_srq_iface_progress) */
#define UCT_SRQ_TX_POLL_PERIOD  16

/* The interface's uct_iface_progress */
unsigned uct_srq_iface_progress(uct_iface_h tl_iface);

/* What the interface's connections tell it (given to uct_srq_hs_init) */
extern const uct_srq_conn_hooks_t uct_srq_iface_conn_hooks;

#endif
