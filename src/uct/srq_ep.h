/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: endpoints. An endpoint is a user's handle on the connection to
 * a peer interface; all endpoints to the same peer share that connection.
 */
#ifndef UCT_SRQ_EP_H_
#define UCT_SRQ_EP_H_

#include "srq_conn.h"
#include "srq_mem.h"

#include <ucs/datastruct/mpool.inl>
#include <uct/base/uct_iov.inl>

/* Largest AM header of am_zcopy (it travels in a send descriptor) */
#define UCT_SRQ_AM_MAX_HDR      128

typedef struct uct_srq_ep {
    uct_base_ep_t         super;
    uct_srq_conn_t       *conn;      /* NULL once the interface closed it */
    ucs_list_link_t       list;      /* in conn->eps */
    ucs_arbiter_group_t   arb_group; /* this endpoint's pending requests */
} uct_srq_ep_t;

/* A registered send descriptor: bcopy data, get_bcopy landing zone, and
 * the zcopy AM header */
typedef struct uct_srq_tx_desc {
    uct_srq_desc_t         super;
    uct_srq_op_t           op;
    uct_unpack_callback_t  unpack_cb;
    void                  *unpack_arg;
    uint32_t               length;
} uct_srq_tx_desc_t;

/* A flush with a completion: done when the connection's WRs up to it are,
 * and no emulated atomic of the connection is still looping (each retry is
 * a new WR, posted after the flush) */
typedef struct uct_srq_flush_op {
    uct_srq_op_t     super;
    uct_srq_conn_t  *conn;
} uct_srq_flush_op_t;

/*
 * An atomic in a send descriptor's data: the 8 bytes the device writes the
 * word's old value to, and what an emulated operation needs to try again
 * (srq_ep.c, "atomics")
 */
typedef struct uct_srq_amo {
    uint64_t           old;         /* the device writes here */
    uint64_t           guess;       /* what the word is taken to hold */
    uint64_t           value;       /* the operand (swap value of cswap) */
    uint64_t           compare;     /* cswap only */
    uint64_t           word_addr;   /* the aligned 64-bit word */
    uint32_t           rkey;
    uint8_t            opcode;      /* uct_atomic_op_t, or CSWAP */
    uint8_t            shift;       /* of a 32-bit operand in the word */
    uint8_t            size;        /* 4 or 8 */
    void              *result;      /* the caller's, or NULL */
    uct_srq_conn_t    *conn;
} uct_srq_amo_t;

UCS_CLASS_DECLARE(uct_srq_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_srq_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_srq_ep_t, uct_ep_t);

static inline void *uct_srq_tx_desc_data(uct_srq_tx_desc_t *desc)
{
    return desc + 1;
}

ucs_status_t uct_srq_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                 const void *payload, unsigned length);
ucs_status_t uct_srq_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                     const uct_iov_t *iov, size_t iovcnt);
ssize_t uct_srq_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                            uct_pack_callback_t pack_cb, void *arg,
                            unsigned flags);
ucs_status_t uct_srq_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                 const void *header, unsigned header_length,
                                 const uct_iov_t *iov, size_t iovcnt,
                                 unsigned flags, uct_completion_t *comp);
ucs_status_t uct_srq_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                  unsigned length, uint64_t remote_addr,
                                  uct_rkey_t rkey);
ssize_t uct_srq_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                             void *arg, uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_srq_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_srq_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                  void *arg, size_t length,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp);
ucs_status_t uct_srq_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_srq_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                      uint64_t value, uint64_t remote_addr,
                                      uct_rkey_t rkey);
ucs_status_t uct_srq_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                      uint32_t value, uint64_t remote_addr,
                                      uct_rkey_t rkey);
ucs_status_t uct_srq_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                       uint64_t value, uint64_t *result,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);
ucs_status_t uct_srq_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                       uint32_t value, uint32_t *result,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);
ucs_status_t uct_srq_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                       uint64_t swap, uint64_t remote_addr,
                                       uct_rkey_t rkey, uint64_t *result,
                                       uct_completion_t *comp);
ucs_status_t uct_srq_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                       uint32_t swap, uint64_t remote_addr,
                                       uct_rkey_t rkey, uint32_t *result,
                                       uct_completion_t *comp);
ucs_status_t uct_srq_ep_tag_eager_short(uct_ep_h tl_ep, uct_tag_t tag,
                                        const void *data, size_t length);
ssize_t uct_srq_ep_tag_eager_bcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                   uct_pack_callback_t pack_cb, void *arg,
                                   unsigned flags);
ucs_status_t uct_srq_ep_tag_eager_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                        uint64_t imm, const uct_iov_t *iov,
                                        size_t iovcnt, unsigned flags,
                                        uct_completion_t *comp);
ucs_status_ptr_t uct_srq_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                           const void *header,
                                           unsigned header_length,
                                           const uct_iov_t *iov, size_t iovcnt,
                                           unsigned flags,
                                           uct_completion_t *comp);
ucs_status_t uct_srq_ep_tag_rndv_cancel(uct_ep_h tl_ep, void *op);
ucs_status_t uct_srq_ep_tag_rndv_request(uct_ep_h tl_ep, uct_tag_t tag,
                                         const void *header,
                                         unsigned header_length,
                                         unsigned flags);
ucs_status_t uct_srq_ep_flush(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
ucs_status_t uct_srq_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_srq_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags);
void uct_srq_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg);
ucs_status_t uct_srq_ep_check(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
#ifdef HAVE_UCX_EP_IS_CONNECTED
int uct_srq_ep_is_connected(uct_ep_h tl_ep,
                            const uct_ep_is_connected_params_t *params);
#endif

ucs_arbiter_cb_result_t uct_srq_ep_process_pending(ucs_arbiter_t *arbiter,
                                                   ucs_arbiter_group_t *group,
                                                   ucs_arbiter_elem_t *elem,
                                                   void *arg);

/* ---- the send path every operation of an endpoint takes (srq_ep.c,
 * srq_ep_amo.c) ---- */

static UCS_F_ALWAYS_INLINE uct_srq_iface_t *uct_srq_ep_iface(uct_srq_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_srq_iface_t);
}

/* May @ep post one WR now (or, while its connection is being set up,
 * queue one)? */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_tx_check(uct_srq_iface_t *iface, uct_srq_ep_t *ep)
{
    uct_srq_conn_t *conn = ep->conn;

    if (ucs_likely((conn != NULL) && (conn->tx_avail > 0) &&
                   (iface->tx_cq_avail > 0) &&
                   uct_srq_conn_accepts_tx(conn))) {
        return UCS_OK;
    }
    if ((conn == NULL) || !uct_srq_conn_accepts_tx(conn)) {
        return UCS_ERR_CONNECTION_RESET;
    }
    return UCS_ERR_NO_RESOURCE; /* out of send slots */
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_post(uct_srq_iface_t *iface, uct_srq_ep_t *ep,
                struct ibv_send_wr *wr)
{
    return uct_srq_conn_post(iface, ep->conn, wr, ep);
}

/* @op of @owner (an endpoint, NULL once it was destroyed) completes with
 * the WR just posted on @conn */
static UCS_F_ALWAYS_INLINE void
uct_srq_conn_add_op(uct_srq_conn_t *conn, void *owner, uct_srq_op_t *op,
                    uct_srq_op_cb_t cb, uct_completion_t *comp)
{
    op->sn    = conn->sn_posted - 1;
    op->cb    = cb;
    op->comp  = comp;
    op->owner = owner;
    ucs_queue_push(&conn->ops, &op->queue);
}

/* @op of @ep completes with the WR just posted */
static UCS_F_ALWAYS_INLINE void
uct_srq_ep_add_op(uct_srq_ep_t *ep, uct_srq_op_t *op, uct_srq_op_cb_t cb,
                  uct_completion_t *comp)
{
    uct_srq_conn_add_op(ep->conn, ep, op, cb, comp);
}

/* The user's completion, if any, then the pool object holding @op */
static UCS_F_ALWAYS_INLINE void
uct_srq_op_finish(uct_srq_op_t *op, ucs_status_t status, void *obj)
{
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    ucs_mpool_put_inline(obj);
}

/* Post @wr; on success, @op (if any) waits for it */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_post_op(uct_srq_iface_t *iface, uct_srq_ep_t *ep,
                   struct ibv_send_wr *wr, uct_srq_op_t *op,
                   uct_srq_op_cb_t cb, uct_completion_t *comp)
{
    ucs_status_t status;

    if (comp != NULL) {
        wr->send_flags |= IBV_SEND_SIGNALED; /* the caller waits for it */
    }
    status = uct_srq_ep_post(iface, ep, wr);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (op != NULL) {
        uct_srq_ep_add_op(ep, op, cb, comp);
    }
    return UCS_OK;
}

/* May @ep post one WR, and is there a send descriptor for its data? */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_tx_desc(uct_srq_iface_t *iface, uct_srq_ep_t *ep,
                   uct_srq_tx_desc_t **desc_p)
{
    ucs_status_t status = uct_srq_ep_tx_check(iface, ep);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    *desc_p = ucs_mpool_get_inline(&iface->tx_mp);
    if (ucs_unlikely(*desc_p == NULL)) {
        /* descriptors held by unsignaled WRs come back with a completion */
        uct_srq_hs_signal_tails(iface);
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

/* @sge covers the first @length bytes of @desc's data */
static UCS_F_ALWAYS_INLINE void
uct_srq_tx_desc_sge(struct ibv_sge *sge, uct_srq_tx_desc_t *desc,
                    size_t length)
{
    sge->addr   = (uintptr_t)uct_srq_tx_desc_data(desc);
    sge->length = length;
    sge->lkey   = desc->super.lkey;
}

/* Post @wr, whose data is in @desc; @desc is freed (and @comp invoked) by
 * @cb on completion, or at once if the post fails */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_post_desc(uct_srq_iface_t *iface, uct_srq_ep_t *ep,
                     struct ibv_send_wr *wr, uct_srq_tx_desc_t *desc,
                     uct_srq_op_cb_t cb, uct_completion_t *comp)
{
    ucs_status_t status = uct_srq_ep_post_op(iface, ep, wr, &desc->op, cb,
                                             comp);

    if (ucs_unlikely(status != UCS_OK)) {
        ucs_mpool_put_inline(desc);
    }
    return status;
}

static UCS_F_ALWAYS_INLINE uint32_t uct_srq_memh_lkey(uct_mem_h memh)
{
    return (memh == UCT_MEM_HANDLE_NULL) ? 0 : ((uct_srq_memh_t*)memh)->lkey;
}

/* iov -> sge, skipping empty entries; returns the number of sges */
static UCS_F_ALWAYS_INLINE int
uct_srq_iov_to_sge(struct ibv_sge *sge, const uct_iov_t *iov, size_t iovcnt)
{
    size_t i;
    int n = 0;

    for (i = 0; i < iovcnt; ++i) {
        if (uct_iov_get_length(&iov[i]) == 0) {
            continue;
        }
        sge[n].addr   = (uintptr_t)iov[i].buffer;
        sge[n].length = uct_iov_get_length(&iov[i]);
        sge[n].lkey   = uct_srq_memh_lkey(iov[i].memh);
        ++n;
    }
    return n;
}

/* A send descriptor's operation completed: the user's completion, then
 * the descriptor back to its pool */
void uct_srq_tx_desc_done(uct_srq_iface_t *iface, uct_srq_op_t *op,
                          ucs_status_t status);

/* A zero-copy operation completed: the user's completion, then the
 * operation back to its pool */
void uct_srq_op_done(uct_srq_iface_t *iface, uct_srq_op_t *op,
                     ucs_status_t status);

#endif
