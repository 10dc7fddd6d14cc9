/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: extended completion queues (ibv_create_cq_ex).
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
#include "../objects/soft_cq.h"
#include "../objects/soft_dev.h"
#include "soft_limit.h"
#include "../wire/soft_progress.h"

#include <errno.h>
#include <string.h>

/* What a soft completion carries */
#define SRQ_SOFT_CQ_EX_WC_FLAGS  (IBV_WC_STANDARD_FLAGS | \
                                  IBV_WC_EX_WITH_TM_INFO)

#define SRQ_SOFT_CQ_EX_FLAGS_KNOWN (IBV_CREATE_CQ_ATTR_SINGLE_THREADED | \
                                    IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

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
