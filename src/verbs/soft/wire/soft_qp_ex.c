/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: extended QPs and the ibv_wr_* post API.
 *
 * ibv_wr_start opens a batch; each WR builder (ibv_wr_send, _rdma_write,
 * ...) adds a struct ibv_send_wr to it, the setters (ibv_wr_set_sge,
 * _set_inline_data, _set_ud_addr, ...) complete the last one, and
 * ibv_wr_complete posts the batch through ibv_post_send's own path
 * (soft_post.c): the same checks and the same execution. As the man page
 * says, the builders return nothing: an error on the way (an operation the
 * QP was not created for, a setter without a WR, too much inline data, a
 * full queue) makes ibv_wr_complete fail and nothing of the batch is
 * posted. Inline data is copied when it is set, so that the caller may
 * reuse its buffer at once. ibv_wr_abort drops the batch.
 *
 * A batch belongs to one thread from ibv_wr_start to ibv_wr_complete or
 * ibv_wr_abort: another thread's ibv_wr_start waits.
 */
#include "soft_qp_ex.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_qp.h"
#include "../objects/soft_xrcd.h"
#include "soft_post.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* libibverbs' mark of a provider's QP that has a struct ibv_qp_ex
 * (VERBS_QP_EX in its driver.h): ibv_qp_to_qp_ex() looks for it */
#define SRQ_SOFT_VERBS_QP_EX   (1u << 1)

#define SRQ_SOFT_QP_EX_UD_OPS  (IBV_QP_EX_WITH_SEND | \
                                IBV_QP_EX_WITH_SEND_WITH_IMM)
#define SRQ_SOFT_QP_EX_UC_OPS  (SRQ_SOFT_QP_EX_UD_OPS | \
                                IBV_QP_EX_WITH_RDMA_WRITE | \
                                IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
#define SRQ_SOFT_QP_EX_RC_OPS  (SRQ_SOFT_QP_EX_UD_OPS | \
                                IBV_QP_EX_WITH_RDMA_WRITE | \
                                IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
                                IBV_QP_EX_WITH_RDMA_READ | \
                                IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
                                IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
                                IBV_QP_EX_WITH_LOCAL_INV | \
                                IBV_QP_EX_WITH_BIND_MW | \
                                IBV_QP_EX_WITH_SEND_WITH_INV | \
                                IBV_QP_EX_WITH_ATOMIC_WRITE)

#define SRQ_SOFT_QP_EX_MASK    (IBV_QP_INIT_ATTR_PD | \
                                IBV_QP_INIT_ATTR_CREATE_FLAGS | \
                                IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

/* The WRs built since ibv_wr_start */
typedef struct srq_soft_wr_batch {
    pthread_mutex_t     lock;     /* held from wr_start to complete/abort */
    struct ibv_send_wr *wrs;
    struct ibv_sge     *sges;     /* nsge per WR */
    uint8_t            *inl;      /* max_inline_data bytes per WR */
    uint32_t            nsge;     /* max_send_sge, at least 1 */
    uint32_t            size;     /* WRs the arrays hold */
    uint32_t            count;    /* WRs built */
    uint64_t            ops;      /* IBV_QP_EX_WITH_* of the QP */
    int                 err;      /* the first error since wr_start */
    bool                open;
} srq_soft_wr_batch_t;

uint64_t srq_soft_qp_ex_send_ops(enum ibv_qp_type qp_type)
{
    switch (qp_type) {
    case IBV_QPT_RC:
    case IBV_QPT_XRC_SEND:
        return SRQ_SOFT_QP_EX_RC_OPS;
    case IBV_QPT_UC:
        return SRQ_SOFT_QP_EX_UC_OPS;
    case IBV_QPT_UD:
        return SRQ_SOFT_QP_EX_UD_OPS;
    default:
        return 0;
    }
}

static srq_soft_qp_t *srq_soft_qpx(struct ibv_qp_ex *qpx)
{
    return srq_soft_container_of(qpx, srq_soft_qp_t, ibv_ex);
}

static void srq_soft_wr_fail(srq_soft_wr_batch_t *b, int err)
{
    if (b->err == 0) {
        b->err = err;
    }
}

/* Room for one more WR: the arrays double, up to max_send_wr */
static int srq_soft_wr_grow(srq_soft_qp_t *qp, srq_soft_wr_batch_t *b)
{
    uint32_t size = b->size ? 2 * b->size : 4;
    size_t inl    = qp->cap.max_inline_data;
    void *p;

    if (b->count >= qp->cap.max_send_wr) {
        return ENOMEM; /* more than the queue can ever hold */
    }
    if (size > qp->cap.max_send_wr) {
        size = qp->cap.max_send_wr;
    }
    p = realloc(b->wrs, size * sizeof(*b->wrs));
    if (p == NULL) {
        return ENOMEM;
    }
    b->wrs = p;
    p = realloc(b->sges, (size_t)size * b->nsge * sizeof(*b->sges));
    if (p == NULL) {
        return ENOMEM;
    }
    b->sges = p;
    if (inl > 0) {
        p = realloc(b->inl, size * inl);
        if (p == NULL) {
            return ENOMEM;
        }
        b->inl = p;
    }
    b->size = size;
    return 0;
}

/* A new WR of @opcode, which the QP's send_ops_flags must have in @with;
 * NULL (and the batch fails) if it cannot be */
static struct ibv_send_wr *srq_soft_wr_new(struct ibv_qp_ex *qpx,
                                           enum ibv_wr_opcode opcode,
                                           uint64_t with)
{
    srq_soft_qp_t *qp      = srq_soft_qpx(qpx);
    srq_soft_wr_batch_t *b = qp->wr_batch;
    struct ibv_send_wr *wr;
    int ret;

    if (!b->open) {
        return NULL; /* outside wr_start/complete: nothing to add to */
    }
    if (!(b->ops & with)) {
        srq_soft_wr_fail(b, EINVAL);
        return NULL;
    }
    if (b->count == b->size) {
        ret = srq_soft_wr_grow(qp, b);
        if (ret != 0) {
            srq_soft_wr_fail(b, ret);
            return NULL;
        }
    }
    wr = &b->wrs[b->count++];
    memset(wr, 0, sizeof(*wr));
    wr->wr_id      = qpx->wr_id;
    wr->send_flags = qpx->wr_flags;
    wr->opcode     = opcode;
    return wr;
}

/* The WR a setter completes: the last one built */
static struct ibv_send_wr *srq_soft_wr_cur(struct ibv_qp_ex *qpx)
{
    srq_soft_wr_batch_t *b = srq_soft_qpx(qpx)->wr_batch;

    if (!b->open) {
        return NULL;
    }
    if (b->count == 0) {
        srq_soft_wr_fail(b, EINVAL);
        return NULL;
    }
    return &b->wrs[b->count - 1];
}

/* ---- WR builders ------------------------------------------------------ */

static void srq_soft_wr_send(struct ibv_qp_ex *qpx)
{
    (void)srq_soft_wr_new(qpx, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void srq_soft_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
    struct ibv_send_wr *wr = srq_soft_wr_new(qpx, IBV_WR_SEND_WITH_IMM,
                                             IBV_QP_EX_WITH_SEND_WITH_IMM);

    if (wr != NULL) {
        wr->imm_data = imm;
    }
}

static void srq_soft_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
    struct ibv_send_wr *wr = srq_soft_wr_new(qpx, IBV_WR_SEND_WITH_INV,
                                             IBV_QP_EX_WITH_SEND_WITH_INV);

    if (wr != NULL) {
        wr->invalidate_rkey = rkey;
    }
}

static void srq_soft_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
                             uint64_t with, uint32_t rkey, uint64_t raddr,
                             __be32 imm)
{
    struct ibv_send_wr *wr = srq_soft_wr_new(qpx, op, with);

    if (wr != NULL) {
        wr->wr.rdma.rkey        = rkey;
        wr->wr.rdma.remote_addr = raddr;
        wr->imm_data            = imm;
    }
}

static void srq_soft_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
                                   uint64_t raddr)
{
    srq_soft_wr_rdma(qpx, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE, rkey,
                     raddr, 0);
}

static void srq_soft_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
                                       uint64_t raddr, __be32 imm)
{
    srq_soft_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM,
                     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, rkey, raddr, imm);
}

static void srq_soft_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
                                  uint64_t raddr)
{
    srq_soft_wr_rdma(qpx, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ, rkey,
                     raddr, 0);
}

static void srq_soft_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
                               uint64_t with, uint32_t rkey, uint64_t raddr,
                               uint64_t compare_add, uint64_t swap)
{
    struct ibv_send_wr *wr = srq_soft_wr_new(qpx, op, with);

    if (wr != NULL) {
        wr->wr.atomic.rkey        = rkey;
        wr->wr.atomic.remote_addr = raddr;
        wr->wr.atomic.compare_add = compare_add;
        wr->wr.atomic.swap        = swap;
    }
}

static void srq_soft_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
                                       uint64_t raddr, uint64_t compare,
                                       uint64_t swap)
{
    srq_soft_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP,
                       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, rkey, raddr,
                       compare, swap);
}

static void srq_soft_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
                                         uint64_t raddr, uint64_t add)
{
    srq_soft_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD,
                       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, rkey, raddr, add,
                       0);
}

/* The 8 bytes are copied now (the caller may reuse them at once), as they
 * are, into swap: the responder stores them unchanged */
static void srq_soft_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
                                     uint64_t raddr, const void *data)
{
    uint64_t value;

    memcpy(&value, data, sizeof(value));
    srq_soft_wr_atomic(qpx, IBV_WR_ATOMIC_WRITE, IBV_QP_EX_WITH_ATOMIC_WRITE,
                       rkey, raddr, 0, value);
}

static void srq_soft_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
                                uint32_t rkey,
                                const struct ibv_mw_bind_info *info)
{
    struct ibv_send_wr *wr = srq_soft_wr_new(qpx, IBV_WR_BIND_MW,
                                             IBV_QP_EX_WITH_BIND_MW);

    if (wr != NULL) {
        wr->bind_mw.mw        = mw;
        wr->bind_mw.rkey      = rkey;
        wr->bind_mw.bind_info = *info;
    }
}

static void srq_soft_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
    struct ibv_send_wr *wr = srq_soft_wr_new(qpx, IBV_WR_LOCAL_INV,
                                             IBV_QP_EX_WITH_LOCAL_INV);

    if (wr != NULL) {
        wr->invalidate_rkey = rkey;
    }
}

/* What soft0 never offers (creation refuses their send_ops_flags): a
 * batch that asks for them fails */
static void srq_soft_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr,
                                 uint16_t hdr_sz, uint16_t mss)
{
    (void)srq_soft_wr_new(qpx, IBV_WR_TSO, IBV_QP_EX_WITH_TSO);
}

/* ---- setters ---------------------------------------------------------- */

/* The WR being built, where the QP is of @type (an address of another
 * kind fails the batch) */
static struct ibv_send_wr *srq_soft_wr_cur_of(struct ibv_qp_ex *qpx,
                                              enum ibv_qp_type type)
{
    struct ibv_send_wr *wr = srq_soft_wr_cur(qpx);

    if ((wr != NULL) && (qpx->qp_base.qp_type != type)) {
        srq_soft_wr_fail(srq_soft_qpx(qpx)->wr_batch, EINVAL);
        return NULL;
    }
    return wr;
}

static void srq_soft_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
                                    uint32_t remote_qpn, uint32_t remote_qkey)
{
    struct ibv_send_wr *wr = srq_soft_wr_cur_of(qpx, IBV_QPT_UD);

    if (wr == NULL) {
        return;
    }
    wr->wr.ud.ah          = ah;
    wr->wr.ud.remote_qpn  = remote_qpn;
    wr->wr.ud.remote_qkey = remote_qkey;
}

static void srq_soft_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
    struct ibv_send_wr *wr = srq_soft_wr_cur_of(qpx, IBV_QPT_XRC_SEND);

    if (wr != NULL) {
        wr->qp_type.xrc.remote_srqn = srqn;
    }
}

static void srq_soft_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
                                     const struct ibv_sge *sg_list)
{
    srq_soft_wr_batch_t *b = srq_soft_qpx(qpx)->wr_batch;
    struct ibv_send_wr *wr = srq_soft_wr_cur(qpx);

    if (wr == NULL) {
        return;
    }
    if (num_sge > srq_soft_qpx(qpx)->cap.max_send_sge) {
        srq_soft_wr_fail(b, EINVAL);
        return;
    }
    memcpy(&b->sges[(size_t)(wr - b->wrs) * b->nsge], sg_list,
           num_sge * sizeof(*sg_list));
    wr->num_sge     = (int)num_sge;
    wr->send_flags &= ~IBV_SEND_INLINE;
}

static void srq_soft_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
                                uint64_t addr, uint32_t length)
{
    struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

    srq_soft_wr_set_sge_list(qpx, 1, &sge);
}

/* The data is copied now (the caller may reuse its buffers at once), and
 * posted as inline data: one SGE over the copy, made at wr_complete */
static void srq_soft_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
                                             size_t num_buf,
                                             const struct ibv_data_buf *buf)
{
    srq_soft_qp_t *qp      = srq_soft_qpx(qpx);
    srq_soft_wr_batch_t *b = qp->wr_batch;
    struct ibv_send_wr *wr = srq_soft_wr_cur(qpx);
    size_t i, total = 0;
    uint8_t *dst;

    if (wr == NULL) {
        return;
    }
    for (i = 0; i < num_buf; ++i) {
        total += buf[i].length;
        if (total > qp->cap.max_inline_data) {
            srq_soft_wr_fail(b, EINVAL);
            return;
        }
    }
    if (total > 0) {
        dst = b->inl + (size_t)(wr - b->wrs) * qp->cap.max_inline_data;
        for (i = 0; i < num_buf; ++i) {
            memcpy(dst, buf[i].addr, buf[i].length);
            dst += buf[i].length;
        }
    }
    b->sges[(size_t)(wr - b->wrs) * b->nsge].length = (uint32_t)total;
    wr->num_sge     = (total > 0) ? 1 : 0;
    wr->send_flags |= IBV_SEND_INLINE;
}

static void srq_soft_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
                                        size_t length)
{
    struct ibv_data_buf buf = { .addr = addr, .length = length };

    srq_soft_wr_set_inline_data_list(qpx, 1, &buf);
}

/* ---- start, complete, abort ------------------------------------------- */

static void srq_soft_wr_start(struct ibv_qp_ex *qpx)
{
    srq_soft_wr_batch_t *b = srq_soft_qpx(qpx)->wr_batch;

    /* EDEADLK: this thread started a batch already; it starts anew */
    (void)pthread_mutex_lock(&b->lock);
    b->open  = true;
    b->count = 0;
    b->err   = 0;
}

static void srq_soft_wr_close(srq_soft_wr_batch_t *b)
{
    b->open  = false;
    b->count = 0;
    pthread_mutex_unlock(&b->lock);
}

/* Chain the WRs, each to its SGEs (or inline copy) where they are now */
static void srq_soft_wr_link(srq_soft_qp_t *qp, srq_soft_wr_batch_t *b)
{
    struct ibv_send_wr *wr;
    struct ibv_sge *sge;
    uint32_t i;

    for (i = 0; i < b->count; ++i) {
        wr          = &b->wrs[i];
        sge         = &b->sges[(size_t)i * b->nsge];
        wr->next    = (i + 1 < b->count) ? &b->wrs[i + 1] : NULL;
        wr->sg_list = sge;
        if ((wr->send_flags & IBV_SEND_INLINE) && (wr->num_sge > 0)) {
            sge->addr = (uintptr_t)(b->inl +
                                    (size_t)i * qp->cap.max_inline_data);
            sge->lkey = 0;
        }
    }
}

static int srq_soft_wr_complete(struct ibv_qp_ex *qpx)
{
    srq_soft_qp_t *qp      = srq_soft_qpx(qpx);
    srq_soft_wr_batch_t *b = qp->wr_batch;
    struct ibv_send_wr *bad;
    int ret;

    if (!b->open) {
        errno = EINVAL; /* no ibv_wr_start */
        return EINVAL;
    }
    ret = b->err;
    if ((ret == 0) && (b->count > 0)) {
        srq_soft_wr_link(qp, b);
        ret = srq_soft_post_send_all(qp, b->wrs, b->count, &bad);
    }
    srq_soft_wr_close(b);
    if (ret != 0) {
        errno = ret;
    }
    return ret;
}

static void srq_soft_wr_abort(struct ibv_qp_ex *qpx)
{
    srq_soft_wr_batch_t *b = srq_soft_qpx(qpx)->wr_batch;

    if (b->open) {
        srq_soft_wr_close(b);
    }
}

/* ---- creation --------------------------------------------------------- */

static void srq_soft_qp_ex_set_ops(struct ibv_qp_ex *qpx)
{
    qpx->wr_atomic_cmp_swp       = srq_soft_wr_atomic_cmp_swp;
    qpx->wr_atomic_fetch_add     = srq_soft_wr_atomic_fetch_add;
    qpx->wr_bind_mw              = srq_soft_wr_bind_mw;
    qpx->wr_local_inv            = srq_soft_wr_local_inv;
    qpx->wr_rdma_read            = srq_soft_wr_rdma_read;
    qpx->wr_rdma_write           = srq_soft_wr_rdma_write;
    qpx->wr_rdma_write_imm       = srq_soft_wr_rdma_write_imm;
    qpx->wr_send                 = srq_soft_wr_send;
    qpx->wr_send_imm             = srq_soft_wr_send_imm;
    qpx->wr_send_inv             = srq_soft_wr_send_inv;
    qpx->wr_send_tso             = srq_soft_wr_send_tso;
    qpx->wr_set_ud_addr          = srq_soft_wr_set_ud_addr;
    qpx->wr_set_xrc_srqn         = srq_soft_wr_set_xrc_srqn;
    qpx->wr_set_inline_data      = srq_soft_wr_set_inline_data;
    qpx->wr_set_inline_data_list = srq_soft_wr_set_inline_data_list;
    qpx->wr_set_sge              = srq_soft_wr_set_sge;
    qpx->wr_set_sge_list         = srq_soft_wr_set_sge_list;
    qpx->wr_start                = srq_soft_wr_start;
    qpx->wr_complete             = srq_soft_wr_complete;
    qpx->wr_abort                = srq_soft_wr_abort;
    qpx->wr_atomic_write         = srq_soft_wr_atomic_write;
}

static int srq_soft_qp_ex_check(srq_verbs_dev_t *dev,
                                const struct ibv_qp_init_attr_ex *attr)
{
    if (attr->comp_mask & ~(SRQ_SOFT_QP_EX_MASK | IBV_QP_INIT_ATTR_XRCD)) {
        return EOPNOTSUPP; /* TSO, RSS, ... */
    }
    if (attr->qp_type == IBV_QPT_XRC_RECV) {
        /* a target: in its XRC domain, no PD, nothing to send */
        return (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) ||
                (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ||
                !srq_soft_xrcd_valid(srq_soft_dev(dev), attr->xrcd)) ?
               EINVAL : 0;
    }
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) ||
        (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD)) {
        return EINVAL; /* every other QP has a PD, none a domain */
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
        (attr->create_flags != 0)) {
        return EOPNOTSUPP;
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
        (attr->send_ops_flags & ~srq_soft_qp_ex_send_ops(attr->qp_type))) {
        return EOPNOTSUPP;
    }
    return 0;
}

/* qp->wr_batch_free */
static void srq_soft_qp_ex_free(srq_soft_qp_t *qp)
{
    srq_soft_wr_batch_t *b = qp->wr_batch;

    if (b == NULL) {
        return;
    }
    pthread_mutex_destroy(&b->lock);
    free(b->wrs);
    free(b->sges);
    free(b->inl);
    free(b);
    qp->wr_batch = NULL;
}

static srq_soft_wr_batch_t *srq_soft_wr_batch_new(uint64_t ops)
{
    srq_soft_wr_batch_t *b = calloc(1, sizeof(*b));
    pthread_mutexattr_t ma;

    if (b == NULL) {
        return NULL;
    }
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&b->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    b->ops = ops;
    return b;
}

struct ibv_qp *srq_soft_create_qp_ex(srq_verbs_dev_t *dev,
                                     struct ibv_qp_init_attr_ex *attr,
                                     srq_soft_qp_create_fn_t create)
{
    srq_soft_wr_batch_t *b = NULL;
    struct ibv_qp *ibqp;
    srq_soft_qp_t *qp;
    int ret;

    ret = srq_soft_qp_ex_check(dev, attr);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
        b = srq_soft_wr_batch_new(attr->send_ops_flags);
        if (b == NULL) {
            errno = ENOMEM;
            return NULL;
        }
    }
    /* the extended attributes begin with struct ibv_qp_init_attr */
    if (attr->qp_type == IBV_QPT_XRC_RECV) {
        ibqp = create(dev, NULL, (struct ibv_qp_init_attr*)attr, attr->xrcd,
                      &srq_soft_xrcd(attr->xrcd)->users);
    } else {
        ibqp = create(dev, attr->pd, (struct ibv_qp_init_attr*)attr, NULL,
                      NULL);
    }
    if ((ibqp == NULL) || (b == NULL)) {
        free(b);
        return ibqp;
    }
    qp           = srq_soft_qp(ibqp);
    b->nsge      = qp->cap.max_send_sge ? qp->cap.max_send_sge : 1;
    qp->wr_batch      = b;
    qp->wr_batch_free = srq_soft_qp_ex_free;
    srq_soft_qp_ex_set_ops(&qp->ibv_ex);
    qp->ex_comp_mask = SRQ_SOFT_VERBS_QP_EX;
    return ibqp;
}
