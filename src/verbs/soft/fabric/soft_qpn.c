/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: QP numbers (soft_qpn.h).
 *
 * A QP number is (generation << 16 | index). The table
 * ("/dev/shm/srq-<uid>/qpn-<domain>", beside the LID registry) has an
 * entry per index: free (owner 0), or its holder's process
 * (srq_soft_proc_id) and instance and the generation of the number it
 * holds. An entry whose holder died is taken over, as a LID is. The
 * generation grows with every take, so that a packet for a destroyed QP
 * misses the QP that reuses the index. A holder writes generation and
 * instance, then sets ready (release); a reader that sees ready (acquire)
 * checks owner and generation again after copying.
 *
 * The index is unique on the host, so an instance's own tables are
 * indexed by it directly (and the limit is 65536 live QPs per user and
 * domain).
 */
#include "soft_qpn.h"
#include "soft_lid.h"
#include "soft_proc.h"
#include "soft_shm.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define SRQ_SOFT_QPN_MAX  65536u

typedef struct srq_soft_qpn_ent {
    uint64_t  owner;                        /* atomic: 0 or a process id */
    uint32_t  ready;                        /* atomic: gen, instance valid */
    uint32_t  gen;                          /* atomic: 1..255 */
    uint8_t   instance[SRQ_SOFT_INST_LEN];
    uint32_t  reserved;
} srq_soft_qpn_ent_t;

#define SRQ_SOFT_QPN_TABLE_SIZE  (SRQ_SOFT_QPN_MAX * sizeof(srq_soft_qpn_ent_t))

/* The process's mapping (made once, kept: every instance uses it) and
 * where its next search starts */
static pthread_mutex_t     srq_soft_qpn_lock = PTHREAD_MUTEX_INITIALIZER;
static srq_soft_qpn_ent_t *_Atomic srq_soft_qpn_tab;
static uint32_t            srq_soft_qpn_next;

/* The table, or NULL and why in *err_p (ENOSPC: /dev/shm is full, EMFILE:
 * no descriptor to open it, ...: the caller's error, not a guess) */
static srq_soft_qpn_ent_t *srq_soft_qpn_map(int *err_p)
{
    srq_soft_qpn_ent_t *tab = atomic_load(&srq_soft_qpn_tab);
    void *p;

    *err_p = 0;
    if (tab != NULL) {
        return tab;
    }
    pthread_mutex_lock(&srq_soft_qpn_lock);
    tab = atomic_load(&srq_soft_qpn_tab);
    if (tab == NULL) {
        *err_p = srq_soft_lid_map_file("qpn", SRQ_SOFT_QPN_TABLE_SIZE, &p);
    }
    if ((tab == NULL) && (*err_p == 0)) {
        tab = p;
        /* start where the pid points: processes spread out */
        srq_soft_qpn_next = ((uint32_t)getpid() * 2654435761u) %
                            SRQ_SOFT_QPN_MAX;
        atomic_store(&srq_soft_qpn_tab, tab);
    }
    pthread_mutex_unlock(&srq_soft_qpn_lock);
    return tab;
}

/* Take entry @e for @instance if it is free or its holder is dead: its
 * new generation, or 0 */
static uint32_t srq_soft_qpn_take(srq_soft_qpn_ent_t *e, uint64_t me,
                                  const uint8_t *instance)
{
    _Atomic uint64_t *owner = (_Atomic uint64_t*)&e->owner;
    uint64_t cur = atomic_load(owner);
    uint32_t gen;

    /* our own live entries need no look at /proc */
    if ((cur != 0) && ((cur == me) || !srq_soft_proc_id_dead(cur))) {
        return 0;
    }
    if (!atomic_compare_exchange_strong(owner, &cur, me)) {
        return 0;
    }
    atomic_store_explicit((_Atomic uint32_t*)&e->ready, 0,
                          memory_order_relaxed);
    gen = (atomic_load((_Atomic uint32_t*)&e->gen) % 255u) + 1u;
    atomic_store((_Atomic uint32_t*)&e->gen, gen);
    memcpy(e->instance, instance, SRQ_SOFT_INST_LEN);
    atomic_store_explicit((_Atomic uint32_t*)&e->ready, 1,
                          memory_order_release);
    return gen;
}

int srq_soft_qpn_alloc(const uint8_t *instance, uint64_t owner,
                       uint32_t *qpn_p)
{
    uint32_t i, idx, gen;
    srq_soft_qpn_ent_t *tab;
    int ret;

    tab = srq_soft_qpn_map(&ret);
    if (tab == NULL) {
        return ret;
    }
    ret = ENOMEM; /* every number taken */
    pthread_mutex_lock(&srq_soft_qpn_lock);
    for (i = 0; i < SRQ_SOFT_QPN_MAX; ++i) {
        idx = (srq_soft_qpn_next + i) % SRQ_SOFT_QPN_MAX;
        gen = srq_soft_qpn_take(&tab[idx], owner, instance);
        if (gen != 0) {
            srq_soft_qpn_next = (idx + 1) % SRQ_SOFT_QPN_MAX;
            *qpn_p            = (gen << 16) | idx;
            ret               = 0;
            break;
        }
    }
    pthread_mutex_unlock(&srq_soft_qpn_lock);
    return ret;
}

void srq_soft_qpn_free(uint32_t qpn, uint64_t owner)
{
    srq_soft_qpn_ent_t *tab = atomic_load(&srq_soft_qpn_tab);
    srq_soft_qpn_ent_t *e;

    /* only a number this very process holds: a forked child's inherited
     * QPs are its parent's (a process id holds the pid in its low half) */
    if ((tab == NULL) || ((pid_t)(owner & 0xffffffffu) != getpid())) {
        return;
    }
    e = &tab[srq_soft_qpn_index(qpn)];
    if ((atomic_load((_Atomic uint64_t*)&e->owner) == owner) &&
        (atomic_load((_Atomic uint32_t*)&e->gen) == (qpn >> 16))) {
        atomic_store((_Atomic uint32_t*)&e->ready, 0);
        atomic_store((_Atomic uint64_t*)&e->owner, 0);
    }
}

int srq_soft_qpn_owner(uint32_t qpn, uint8_t *instance)
{
    srq_soft_qpn_ent_t *e, *tab;
    uint64_t owner;
    int err;

    tab = srq_soft_qpn_map(&err);
    if ((tab == NULL) || ((qpn >> 24) != 0)) {
        return ENOENT;
    }
    e     = &tab[srq_soft_qpn_index(qpn)];
    owner = atomic_load((_Atomic uint64_t*)&e->owner);
    if ((owner == 0) ||
        !atomic_load_explicit((_Atomic uint32_t*)&e->ready,
                              memory_order_acquire) ||
        (atomic_load((_Atomic uint32_t*)&e->gen) != (qpn >> 16))) {
        return ENOENT;
    }
    memcpy(instance, e->instance, SRQ_SOFT_INST_LEN);
    /* freed or taken over while we copied: the id may be torn */
    return ((atomic_load((_Atomic uint64_t*)&e->owner) == owner) &&
            (atomic_load((_Atomic uint32_t*)&e->gen) == (qpn >> 16))) ?
           0 : ENOENT;
}

int srq_soft_qpn_any_owner(const uint8_t *prefix, size_t len,
                           uint8_t *instance)
{
    uint32_t idx, gen;
    srq_soft_qpn_ent_t *tab;
    int err;

    tab = srq_soft_qpn_map(&err);
    for (idx = 0; (tab != NULL) && (idx < SRQ_SOFT_QPN_MAX); ++idx) {
        gen = atomic_load((_Atomic uint32_t*)&tab[idx].gen);
        if ((gen != 0) &&
            (srq_soft_qpn_owner((gen << 16) | idx, instance) == 0) &&
            (memcmp(instance, prefix, len) == 0)) {
            return 0;
        }
    }
    return ENOENT;
}
