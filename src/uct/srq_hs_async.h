/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: UCX's async thread's looks at interfaces (srq_hs_async.c).
 */
#ifndef UCT_SRQ_HS_ASYNC_H_
#define UCT_SRQ_HS_ASYNC_H_

#include "srq_types.h"

/* The async thread's looks (ASYNC_INTERVAL), from when the interface is
 * complete until it starts to go. Refused (UCS_ERR_NO_RESOURCE or
 * UCS_ERR_NO_MEMORY, said) only for a limit of ours: the interface would
 * not answer its peers while its owner is busy, and they would time out */
ucs_status_t uct_srq_hs_async_start(uct_srq_iface_t *iface);
void uct_srq_hs_async_stop(uct_srq_iface_t *iface);

#endif
