/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the counters of an rc_srq interface. The public query,
 * uct_srq_iface_query_counters, is declared in ucx_srq.h.
 */
#ifndef UCT_SRQ_COUNTERS_H_
#define UCT_SRQ_COUNTERS_H_

typedef struct uct_srq_iface uct_srq_iface_t;

/* Append one line of @iface's counters to the file @file_template names
 * (%p: the process id); a warning when it cannot be written */
void uct_srq_counters_dump(uct_srq_iface_t *iface, const char *file_template);

#endif
