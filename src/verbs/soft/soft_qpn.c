/*
 * ucx-srq soft device: the QP numbers of the process.
 *
 * A QP number is (generation << 16 | index). The index is unique in the
 * process (all instances share one allocator, under one mutex: creating and
 * destroying QPs is the slow path), so an instance's own table is indexed
 * by it directly; the generation makes a packet for a destroyed QP miss the
 * QP that reuses the index. The allocator also records which instance owns
 * each index: a peer that addresses this process by the address of one of
 * its instances reaches the QP it names in any of them (soft_ah.c), as a
 * QP number on one HCA port names one QP whichever context created it.
 */
#include "soft_qpn.h"
#include "soft_shm.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SRQ_SOFT_QPN_MAX  65536u

typedef struct srq_soft_qpn_ent {
    uint8_t  gen;
    uint8_t  live;
    uint8_t  owner[SRQ_SOFT_INST_LEN];
} srq_soft_qpn_ent_t;

static pthread_mutex_t      srq_soft_qpn_lock = PTHREAD_MUTEX_INITIALIZER;
static srq_soft_qpn_ent_t  *srq_soft_qpn_tab;    /* SRQ_SOFT_QPN_MAX, lazily */
static uint32_t            *srq_soft_qpn_free_idx;
static uint32_t             srq_soft_qpn_free_cnt;
static uint32_t             srq_soft_qpn_next;

static int srq_soft_qpn_init(void)
{
    if (srq_soft_qpn_tab != NULL) {
        return 0;
    }
    srq_soft_qpn_tab      = calloc(SRQ_SOFT_QPN_MAX, sizeof(*srq_soft_qpn_tab));
    srq_soft_qpn_free_idx = calloc(SRQ_SOFT_QPN_MAX,
                                   sizeof(*srq_soft_qpn_free_idx));
    if ((srq_soft_qpn_tab == NULL) || (srq_soft_qpn_free_idx == NULL)) {
        free(srq_soft_qpn_tab);
        free(srq_soft_qpn_free_idx);
        srq_soft_qpn_tab      = NULL;
        srq_soft_qpn_free_idx = NULL;
        return ENOMEM;
    }
    return 0;
}

int srq_soft_qpn_alloc(const uint8_t *instance, uint32_t *qpn_p)
{
    srq_soft_qpn_ent_t *e;
    uint32_t idx;
    int ret;

    pthread_mutex_lock(&srq_soft_qpn_lock);
    ret = srq_soft_qpn_init();
    if (ret != 0) {
        goto out;
    }
    if (srq_soft_qpn_free_cnt > 0) {
        idx = srq_soft_qpn_free_idx[--srq_soft_qpn_free_cnt];
    } else if (srq_soft_qpn_next < SRQ_SOFT_QPN_MAX) {
        idx = srq_soft_qpn_next++;
    } else {
        ret = ENOMEM;
        goto out;
    }
    e = &srq_soft_qpn_tab[idx];
    if (++e->gen == 0) {
        e->gen = 1; /* qpn 0 is never a QP's */
    }
    e->live = 1;
    memcpy(e->owner, instance, SRQ_SOFT_INST_LEN);
    *qpn_p = ((uint32_t)e->gen << 16) | idx;
out:
    pthread_mutex_unlock(&srq_soft_qpn_lock);
    return ret;
}

void srq_soft_qpn_free(uint32_t qpn)
{
    uint32_t idx = srq_soft_qpn_index(qpn);

    pthread_mutex_lock(&srq_soft_qpn_lock);
    if ((srq_soft_qpn_tab != NULL) && srq_soft_qpn_tab[idx].live) {
        srq_soft_qpn_tab[idx].live = 0;
        srq_soft_qpn_free_idx[srq_soft_qpn_free_cnt++] = idx;
    }
    pthread_mutex_unlock(&srq_soft_qpn_lock);
}

int srq_soft_qpn_owner(uint32_t qpn, uint8_t *instance)
{
    uint32_t idx = srq_soft_qpn_index(qpn);
    srq_soft_qpn_ent_t *e;
    int ret = ENOENT;

    pthread_mutex_lock(&srq_soft_qpn_lock);
    if ((srq_soft_qpn_tab != NULL) && (qpn >> 24) == 0) {
        e = &srq_soft_qpn_tab[idx];
        if (e->live && (e->gen == (qpn >> 16))) {
            memcpy(instance, e->owner, SRQ_SOFT_INST_LEN);
            ret = 0;
        }
    }
    pthread_mutex_unlock(&srq_soft_qpn_lock);
    return ret;
}
