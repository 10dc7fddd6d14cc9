/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the in-band handshake of an interface's connections (srq_hs.c):
 * its UD QP and buffers, REQ -> REP -> RTU with retransmission, DISC when
 * the interface closes, and the handshake's progress.
 */
#ifndef UCT_SRQ_HS_H_
#define UCT_SRQ_HS_H_

#include "srq_types.h"

extern ucs_config_field_t uct_srq_hs_config_table[];

/* Check the handshake configuration, before anything is created */
ucs_status_t uct_srq_hs_check_config(const uct_srq_hs_config_t *config);

ucs_status_t uct_srq_hs_init(uct_srq_hs_t *hs, uct_srq_iface_t *iface,
                             const uct_srq_hs_config_t *config,
                             const uct_srq_conn_hooks_t *hooks);
void uct_srq_hs_cleanup(uct_srq_hs_t *hs, uct_srq_iface_t *iface);

/* The connection to a peer interface: an existing one, or a new one whose
 * handshake starts now */
ucs_status_t uct_srq_hs_get_conn(uct_srq_iface_t *iface,
                                 const uct_srq_conn_key_t *key,
                                 uct_srq_conn_t **conn_p);

/* Progress calls between looks at the clock when nothing else needs the
 * handshake's progress; an owner whose calls are further apart looks each
 * ASYNC_INTERVAL, when the async thread sees it progressed */
#define UCT_SRQ_HS_POLLS_PER_LOOK 1024

/* Take handshake datagrams, retransmit and time out handshakes, report
 * and free failed connections, probe idle connections no endpoint uses:
 * while handshakes run, failed connections remain or the async thread left
 * work, every UCT_SRQ_HS_POLLS_PER_LOOK calls and each ASYNC_INTERVAL */
void uct_srq_hs_progress(uct_srq_iface_t *iface);

/* Does the handshake need the owner's progress now? (read without the
 * lock: a stale answer costs one call, or one call later) */
static inline int uct_srq_hs_wants_progress(uct_srq_hs_t *hs)
{
    /* the async thread may set polls too (uct_srq_hs_look_next): a load
     * and a store, not a locked increment - a lost update of either costs
     * one look, or a look one interval later */
    unsigned polls = __atomic_load_n(&hs->polls, __ATOMIC_RELAXED) + 1;

    __atomic_store_n(&hs->polls, polls, __ATOMIC_RELAXED);
    return !ucs_list_is_empty(&hs->connecting) ||
           !ucs_list_is_empty(&hs->dead) ||
           __atomic_load_n(&hs->async_left, __ATOMIC_RELAXED) ||
           (polls >= UCT_SRQ_HS_POLLS_PER_LOOK);
}

/* When the handshake next needs the owner's progress: 0 now, else a
 * time of ucs_get_time(), UCS_TIME_INFINITY for never (srq_hs.c) */
ucs_time_t uct_srq_hs_due(uct_srq_hs_t *hs);

/* The next progress call looks at the handshake (a sleeper's wakeup was
 * for it, or an interval passed since the async thread's last look) */
static inline void uct_srq_hs_look_next(uct_srq_hs_t *hs)
{
    __atomic_store_n(&hs->polls, UCT_SRQ_HS_POLLS_PER_LOOK, __ATOMIC_RELAXED);
}

#endif
