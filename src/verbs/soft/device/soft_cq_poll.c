/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: a CQ as a program polls it: ibv_poll_cq, which
 * runs the device's progress (soft_progress.c) when the CQ cannot satisfy
 * it, and extended completion queues (ibv_create_cq_ex), polled the same
 * way. The CQ itself (its ring, completions pushed and popped) is
 * objects/soft_cq.c, below the engine that fills it; its polls are here,
 * above it.
 *
 * An extended CQ is an ordinary soft CQ whose head is a struct ibv_cq_ex:
 * the same fields as struct ibv_cq, then the poll functions a program
 * calls through it (ibv_start_poll, ibv_next_poll, ibv_end_poll, the
 * ibv_wc_read_* accessors). Each start/next poll takes one completion as
 * ibv_poll_cq does (progress included) into the CQ's ex_wc, which the
 * accessors read until the next one; end_poll has nothing left to do: a
 * completion gave its resources back when it was taken.
 *
 * Only the fields of struct ibv_wc exist here (IBV_WC_STANDARD_FLAGS), and
 * tag-matching info (IBV_WC_EX_WITH_TM_INFO: a TM SRQ's, soft_tm.c): a
 * time stamp, VLAN or flow tag is refused at creation (EOPNOTSUPP), as a
 * provider refuses what its hardware lacks. An accessor is there only for
 * a field asked for, as a provider's.
 */
#include "soft_cq_poll.h"
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "../wire/soft_doorbell.h"
#include "../wire/soft_progress.h"
#include "soft_limit.h"

#include <errno.h>
#include <string.h>

/* What a soft completion carries */
#define SRQ_SOFT_CQ_EX_WC_FLAGS  (IBV_WC_STANDARD_FLAGS | \
                                  IBV_WC_EX_WITH_TM_INFO)

#define SRQ_SOFT_CQ_EX_FLAGS_KNOWN (IBV_CREATE_CQ_ATTR_SINGLE_THREADED | \
                                    IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

/*
 * A poll with nothing to find, answered without the lock: the CQ is empty
 * and the device progressed since this CQ's last poll (a caller polling two
 * CQs in turn, as UCX's progress does: the first poll ran it). An HCA's
 * empty poll reads a line; this one reads five words. Each is read racily,
 * stale at worst: a completion written meanwhile is the next poll's, as it
 * would be had it come a moment later. Anything else takes the lock.
 */
static bool srq_soft_poll_empty(srq_soft_cq_t *cq, srq_soft_dev_t *dev)
{
    uint64_t calls = srq_soft_stat_read_shared(&dev->stats.progress_calls);

    if ((srq_soft_cq_load(&cq->pi) != srq_soft_cq_load(&cq->ci)) ||
        atomic_load_explicit((_Atomic bool*)&cq->error, memory_order_relaxed) ||
        (srq_soft_stat_read_shared(&cq->progress_seen) == calls)) {
        return false;
    }
    srq_soft_cq_seen(cq, calls);
    return true;
}

static __thread unsigned srq_soft_poll_busy; /* this thread's polls in a
                                                row that found it taken */

/*
 * The device's work, on the caller's CPU, if no other thread is doing it:
 * true if it ran (and then @calls_p is the progress count after it). A
 * poll never waits for the device lock: its holder is running progress
 * (which completes into this CQ too) or a post or control verb, and the
 * poller comes back, as it would to an HCA that had nothing yet.
 */
static bool srq_soft_poll_progress(srq_soft_dev_t *dev, uint64_t *calls_p)
{
    if (!srq_soft_trylock(&dev->lock)) {
        /* as a waiter for the lock would (soft_lock.h): a pause, and
         * after SRQ_SOFT_LOCK_SPINS of them the CPU given up once - the
         * holder may be a thread that lost its CPU, and a program that
         * polls again at once would keep it from getting one back */
        srq_soft_lock_backoff(&srq_soft_poll_busy);
        return false;
    }
    srq_soft_poll_busy = 0;
    srq_soft_progress(dev);
    *calls_p = dev->stats.progress_calls;
    srq_soft_doorbell_unlock(dev);
    return true;
}

int srq_soft_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
    srq_soft_cq_t *cq   = srq_soft_cq(ibcq);
    srq_soft_dev_t *dev = cq->dev;
    uint64_t calls;
    int n;

    if (num < 0) {
        return -EINVAL;
    }
    /* a user that polls (soft_wait.c), read without the lock by the
     * progress thread: a lost increment still changes the count */
    srq_soft_stat_inc_shared(&dev->user_polls);
    if ((num > 0) && srq_soft_poll_empty(cq, dev)) {
        return 0;
    }
    /* the CQ's own lock: completions waiting are taken with no device
     * lock, whatever another thread does on the device */
    calls = srq_soft_stat_read_shared(&dev->stats.progress_calls);
    n     = srq_soft_cq_pop(cq, num, wc);
    if (((n < num) && (srq_soft_stat_read_shared(&cq->progress_seen) == calls)) ||
        (num == 0)) {
        /* the device's work runs on the caller's CPU, only when the CQ
         * cannot satisfy it (a poll of none is a call for progress), and
         * not if it ran since this CQ's last poll (for all CQs alike): a
         * caller polling two CQs in turn, as UCX's progress does, runs it
         * once per round, and one with completions waiting not at all.
         * An overrun CQ (n < 0) satisfies none: the device still moves,
         * the poll still fails. If another thread holds the device, this
         * poll has what the CQ had, and the next one tries again (the CQ
         * not marked seen) */
        if (!srq_soft_poll_progress(dev, &calls)) {
            return n;
        }
        if (n >= 0) {
            n += srq_soft_cq_pop(cq, num - n, wc + n);
        }
    }
    srq_soft_cq_seen(cq, calls);
    return n;
}

static inline srq_soft_cq_t *srq_soft_cq_of_ex(struct ibv_cq_ex *ex)
{
    return srq_soft_cq(ibv_cq_ex_to_cq(ex));
}

/* One completion into ex_wc: 0, ENOENT when there is none, or the error
 * ibv_poll_cq would report (an overrun CQ) */
static int srq_soft_cq_ex_take(struct ibv_cq_ex *ex)
{
    srq_soft_cq_t *cq = srq_soft_cq_of_ex(ex);
    int n;

    n = srq_soft_poll_cq(&cq->ibv, 1, &cq->ex_wc);
    if (n <= 0) {
        return (n == 0) ? ENOENT : -n;
    }
    ex->wr_id  = cq->ex_wc.wr_id;
    ex->status = cq->ex_wc.status;
    return 0;
}

static int srq_soft_cq_ex_start_poll(struct ibv_cq_ex *ex,
                                     struct ibv_poll_cq_attr *attr)
{
    if (attr->comp_mask != 0) {
        return EINVAL; /* no poll attribute is defined */
    }
    return srq_soft_cq_ex_take(ex);
}

static int srq_soft_cq_ex_next_poll(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_ex_take(ex);
}

static void srq_soft_cq_ex_end_poll(struct ibv_cq_ex *ex)
{
}

static enum ibv_wc_opcode srq_soft_cq_ex_opcode(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.opcode;
}

static uint32_t srq_soft_cq_ex_vendor_err(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.vendor_err;
}

static uint32_t srq_soft_cq_ex_byte_len(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.byte_len;
}

static __be32 srq_soft_cq_ex_imm_data(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.imm_data;
}

static uint32_t srq_soft_cq_ex_qp_num(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.qp_num;
}

static uint32_t srq_soft_cq_ex_src_qp(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.src_qp;
}

static unsigned int srq_soft_cq_ex_wc_flags(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.wc_flags;
}

static uint32_t srq_soft_cq_ex_slid(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.slid;
}

static uint8_t srq_soft_cq_ex_sl(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.sl;
}

static uint8_t srq_soft_cq_ex_dlid_path_bits(struct ibv_cq_ex *ex)
{
    return srq_soft_cq_of_ex(ex)->ex_wc.dlid_path_bits;
}

/* The message's tag and app_ctx, with IBV_WC_TM_MATCH; zero otherwise */
static void srq_soft_cq_ex_tm_info(struct ibv_cq_ex *ex,
                                   struct ibv_wc_tm_info *tm_info)
{
    srq_soft_cq_t *cq = srq_soft_cq_of_ex(ex);

    if (cq->ex_wc.wc_flags & IBV_WC_TM_MATCH) {
        *tm_info = cq->ex_tm;
    } else {
        memset(tm_info, 0, sizeof(*tm_info));
    }
}

/* 0, or why @attr asks for what the device cannot give */
static int srq_soft_cq_ex_check(const struct ibv_cq_init_attr_ex *attr)
{
    if (attr->comp_mask & ~(IBV_CQ_INIT_ATTR_MASK_FLAGS |
                            IBV_CQ_INIT_ATTR_MASK_PD)) {
        return EINVAL;
    }
    if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
        (attr->flags & ~(uint32_t)SRQ_SOFT_CQ_EX_FLAGS_KNOWN)) {
        return EINVAL;
    }
    /* overrun-ignoring CQs and fields a soft completion does not have:
     * not implemented (a wc_flag verbs does not define either: libibverbs
     * answers it so before a provider sees it); a parent domain
     * (IBV_CQ_INIT_ATTR_MASK_PD) is checked where the CQ is made */
    if (((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
         (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)) ||
        (attr->wc_flags & ~(uint64_t)SRQ_SOFT_CQ_EX_WC_FLAGS)) {
        return EOPNOTSUPP;
    }
    return 0;
}

struct ibv_cq_ex *srq_soft_create_cq_ex(srq_verbs_dev_t *vdev,
                                        struct ibv_cq_init_attr_ex *attr)
{
    struct ibv_cq_ex *ex;
    struct ibv_cq *ibcq;
    int ret;

    ret = srq_soft_cq_ex_check(attr);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    /* counted against max_cq as any CQ; cqe range-checked there */
    ibcq = srq_soft_limit_create_cq_pd(vdev, (int)attr->cqe, attr->cq_context,
                                       attr->channel, (int)attr->comp_vector,
                                       (attr->comp_mask &
                                        IBV_CQ_INIT_ATTR_MASK_PD) ?
                                       attr->parent_domain : NULL);
    if (ibcq == NULL) {
        return NULL;
    }
    ex = &srq_soft_cq(ibcq)->ibv_ex;
    ex->comp_mask           = 0;
    ex->start_poll          = srq_soft_cq_ex_start_poll;
    ex->next_poll           = srq_soft_cq_ex_next_poll;
    ex->end_poll            = srq_soft_cq_ex_end_poll;
    ex->read_opcode         = srq_soft_cq_ex_opcode;
    ex->read_vendor_err     = srq_soft_cq_ex_vendor_err;
    ex->read_byte_len       = srq_soft_cq_ex_byte_len;
    ex->read_imm_data       = srq_soft_cq_ex_imm_data;
    ex->read_qp_num         = srq_soft_cq_ex_qp_num;
    ex->read_src_qp         = srq_soft_cq_ex_src_qp;
    ex->read_wc_flags       = srq_soft_cq_ex_wc_flags;
    ex->read_slid           = srq_soft_cq_ex_slid;
    ex->read_sl             = srq_soft_cq_ex_sl;
    ex->read_dlid_path_bits = srq_soft_cq_ex_dlid_path_bits;
    ex->read_tm_info        = (attr->wc_flags & IBV_WC_EX_WITH_TM_INFO) ?
                              srq_soft_cq_ex_tm_info : NULL;
    return ex;
}
