/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: endpoint operations: active messages, flush, fence, pending
 * requests and endpoint checks, all on the endpoint's connection (put and
 * get: srq_ep_rma.c; atomics: srq_ep_amo.c).
 *
 * An active message is a SEND with the am id as its immediate (srq_am.h).
 * A WR's wr_id names its connection and sequence number; one WR in
 * TX_CQ_MODERATION is signaled, and its completion retires every WR of the
 * connection up to it (uct_srq_conn_post). Until the connection is up,
 * WRs wait in it (uct_srq_conn_queue_wr), holding the same slots.
 */
#include "srq_ep.h"
#include "srq_am.h"
#include "srq_hs.h"

#include <ucs/debug/log_def.h>
#include <ucs/datastruct/mpool.inl>
#include <uct/base/uct_iov.inl>
#include <inttypes.h>
#include <string.h>

void uct_srq_op_done(uct_srq_iface_t *iface, uct_srq_op_t *op,
                     ucs_status_t status)
{
    uct_srq_op_finish(op, status, op);
}

void uct_srq_tx_desc_done(uct_srq_iface_t *iface, uct_srq_op_t *op,
                          ucs_status_t status)
{
    uct_srq_op_finish(op, status, ucs_container_of(op, uct_srq_tx_desc_t, op));
}

/* ---- active messages --------------------------------------------------- */

/* A send descriptor for an active message */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_am_desc(uct_srq_iface_t *iface, uct_srq_ep_t *ep, uint8_t id,
                   uct_srq_tx_desc_t **desc_p, uint8_t **buf_p)
{
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    status = uct_srq_ep_tx_desc(iface, ep, desc_p);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    *buf_p = uct_srq_tx_desc_data(*desc_p);
    return UCS_OK;
}

/* An inline active message of @length bytes at @buf (none: a probe) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_send_inline(uct_srq_iface_t *iface, uct_srq_ep_t *ep, uint8_t id,
                       const void *buf, size_t length)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    sge.addr   = (uintptr_t)buf;
    sge.length = length;
    sge.lkey   = 0;
    uct_srq_am_wr(&wr, id, &sge, (length > 0) ? 1 : 0, IBV_SEND_INLINE);
    return uct_srq_ep_post(iface, ep, &wr);
}

ucs_status_t uct_srq_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                     const uct_iov_t *iov, size_t iovcnt)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    size_t total           = uct_iov_total_length(iov, iovcnt);
    ucs_iov_iter_t iov_iter;
    uint8_t *buf;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(total, 0, iface->config.max_inline - iface->rx.hdr_len,
                     "am_short");
    status = uct_srq_ep_tx_check(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* with tag matching, a TMH of NO_TAG (all zero) first */
    buf = ucs_alloca(iface->rx.hdr_len + total);
    memset(buf, 0, iface->rx.hdr_len);
    ucs_iov_iter_init(&iov_iter);
    uct_iov_to_buffer(iov, iovcnt, &iov_iter, buf + iface->rx.hdr_len, total);
    return uct_srq_ep_send_inline(iface, ep, id, buf,
                                  iface->rx.hdr_len + total);
}

/* The header and the payload as two inline SGEs: the device copies them
 * into the WQE (soft0: into the frame) once, no staging copy. A device with
 * fewer than 2 SGEs, or an AM that needs a TMH first (tag matching), takes
 * the iov path. */
ucs_status_t uct_srq_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                 const void *payload, unsigned length)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    struct ibv_sge sge[2];
    struct ibv_send_wr wr;
    uct_iov_t iov[2];
    ucs_status_t status;

    if (ucs_unlikely((iface->config.max_send_sge < 2) ||
                     (iface->rx.hdr_len > 0))) {
        iov[0] = (uct_iov_t){&header, sizeof(header), UCT_MEM_HANDLE_NULL, 0, 1};
        iov[1] = (uct_iov_t){(void*)payload, length, UCT_MEM_HANDLE_NULL, 0, 1};
        return uct_srq_ep_am_short_iov(tl_ep, id, iov, length ? 2 : 1);
    }

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(sizeof(header) + length, 0, iface->config.max_inline,
                     "am_short");
    status = uct_srq_ep_tx_check(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    sge[0].addr   = (uintptr_t)&header;
    sge[0].length = sizeof(header);
    sge[0].lkey   = 0;
    sge[1].addr   = (uintptr_t)payload;
    sge[1].length = length;
    sge[1].lkey   = 0;
    uct_srq_am_wr(&wr, id, sge, length ? 2 : 1, IBV_SEND_INLINE);
    return uct_srq_ep_post(iface, ep, &wr);
}

ssize_t uct_srq_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                            uct_pack_callback_t pack_cb, void *arg,
                            unsigned flags)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    uct_srq_tx_desc_t *desc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;
    uint8_t *buf;
    size_t length, total;

    status = uct_srq_ep_am_desc(iface, ep, id, &desc, &buf);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* with tag matching, a TMH of NO_TAG (all zero) first */
    memset(buf, 0, iface->rx.hdr_len);
    length = pack_cb(buf + iface->rx.hdr_len, arg);
    ucs_assertv(length <= iface->config.seg_size, "length=%zu", length);

    total = iface->rx.hdr_len + length;
    uct_srq_tx_desc_sge(&sge, desc, total);
    uct_srq_am_wr(&wr, id, &sge, (total > 0) ? 1 : 0,
                  (total <= iface->config.max_inline) ? IBV_SEND_INLINE : 0);
    status = uct_srq_ep_post_desc(iface, ep, &wr, desc, uct_srq_tx_desc_done,
                                  NULL);
    return (status == UCS_OK) ? (ssize_t)length : status;
}

ucs_status_t uct_srq_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                 const void *header, unsigned header_length,
                                 const uct_iov_t *iov, size_t iovcnt,
                                 unsigned flags, uct_completion_t *comp)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    struct ibv_sge sge[iface->config.max_send_sge];
    uct_srq_tx_desc_t *desc;
    struct ibv_send_wr wr;
    ucs_status_t status;
    uint8_t *buf;
    int num_sge;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_send_sge - 1, "am_zcopy");
    UCT_CHECK_LENGTH(header_length, 0, UCT_SRQ_AM_MAX_HDR, "am_zcopy header");
    UCT_CHECK_LENGTH(header_length + uct_iov_total_length(iov, iovcnt), 0,
                     iface->config.seg_size, "am_zcopy");
    status = uct_srq_ep_am_desc(iface, ep, id, &desc, &buf);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* the header travels from the descriptor (which also tracks the
     * operation), the data from the user's registered buffers; no
     * zero-length SGE (some HCAs read a length of 0 as 2 GiB) */
    num_sge = 0;
    if ((iface->rx.hdr_len + header_length) > 0) {
        memset(buf, 0, iface->rx.hdr_len); /* tag matching: TMH NO_TAG */
        if (header_length > 0) {
            memcpy(buf + iface->rx.hdr_len, header, header_length);
        }
        uct_srq_tx_desc_sge(&sge[num_sge++], desc,
                            iface->rx.hdr_len + header_length);
    }
    num_sge += uct_srq_iov_to_sge(sge + num_sge, iov, iovcnt);
    uct_srq_am_wr(&wr, id, sge, num_sge, 0);
    status = uct_srq_ep_post_desc(iface, ep, &wr, desc, uct_srq_tx_desc_done,
                                  comp);
    return (status == UCS_OK) ? UCS_INPROGRESS : status;
}

/* ---- flush, fence, check ----------------------------------------------- */

static void uct_srq_flush_done(uct_srq_iface_t *iface, uct_srq_op_t *op,
                               ucs_status_t status)
{
    uct_srq_conn_t *conn = ucs_derived_of(op, uct_srq_flush_op_t)->conn;

    if ((status == UCS_OK) && (conn->amo_looping > 0)) {
        /* an atomic went round again after the flush: wait for its WR */
        uct_srq_conn_add_op(conn, op->owner, op, uct_srq_flush_done,
                            op->comp);
        return;
    }
    uct_srq_op_finish(op, status, op);
}

ucs_status_t uct_srq_ep_flush(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    uct_srq_conn_t *conn   = ep->conn;
    uct_srq_flush_op_t *flush;
    ucs_status_t status;

    if ((conn == NULL) || !uct_srq_conn_accepts_tx(conn)) {
        /* nothing of this endpoint can complete any more */
        return (flags & UCT_FLUSH_FLAG_CANCEL) ? UCS_OK :
                                                 UCS_ERR_CONNECTION_RESET;
    }
    if ((conn->tx_avail <= 0) || (iface->tx_cq_avail <= 0)) {
        /* as an RC endpoint: without send resources the caller adds the
         * flush to the pending queue, behind the requests waiting there */
        return UCS_ERR_NO_RESOURCE;
    }
    if (conn->sn_done == conn->sn_posted) {
        return UCS_OK;
    }
    status = uct_srq_conn_signal_tail(iface, conn);
    if (status != UCS_OK) {
        return status;
    }

    /* UCT_FLUSH_FLAG_CANCEL waits as well: the connection is shared with
     * other endpoints, so its WRs are not thrown away */
    if (comp != NULL) {
        flush = ucs_mpool_get_inline(&iface->op_mp);
        if (flush == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        flush->conn = conn;
        uct_srq_ep_add_op(ep, &flush->super, uct_srq_flush_done, comp);
    }
    return UCS_INPROGRESS;
}

ucs_status_t uct_srq_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_srq_ep_t *ep = ucs_derived_of(tl_ep, uct_srq_ep_t);

    /* the next WR starts only after every earlier RDMA read completed */
    if (ep->conn != NULL) {
        ep->conn->send_flags |= IBV_SEND_FENCE;
    }
    return UCS_OK;
}

/* A check with a completion that waits for a send slot, among the
 * endpoint's pending requests */
typedef struct uct_srq_check_req {
    uct_pending_req_t   super;
    uct_srq_ep_t       *ep;
    uct_completion_t   *comp;
} uct_srq_check_req_t;

/* Post a signaled probe that @comp waits for: the peer's device acks it
 * (UCS_OK), or the connection fails and it completes in error */
static ucs_status_t uct_srq_ep_check_post(uct_srq_iface_t *iface,
                                          uct_srq_ep_t *ep,
                                          uct_completion_t *comp)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge = {};
    uct_srq_op_t *op;
    ucs_status_t status;

    status = uct_srq_ep_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }
    op = ucs_mpool_get_inline(&iface->op_mp);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    uct_srq_am_wr(&wr, UCT_SRQ_AM_ID_KEEPALIVE, &sge, 0, IBV_SEND_INLINE);
    status = uct_srq_ep_post_op(iface, ep, &wr, op, uct_srq_op_done, comp);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(op);
    }
    return status;
}

static ucs_status_t uct_srq_ep_check_progress(uct_pending_req_t *self)
{
    uct_srq_check_req_t *req = ucs_derived_of(self, uct_srq_check_req_t);
    ucs_status_t status;

    status = uct_srq_ep_check_post(uct_srq_ep_iface(req->ep), req->ep,
                                   req->comp);
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    }
    if (status != UCS_OK) {
        uct_invoke_completion(req->comp, status);
    }
    ucs_free(req);
    return UCS_OK;
}

/* A pending check that never went: its completion says why */
static void uct_srq_ep_check_purge(uct_srq_ep_t *ep, uct_pending_req_t *self)
{
    uct_srq_check_req_t *req = ucs_derived_of(self, uct_srq_check_req_t);
    int failed = (ep->conn == NULL) || !uct_srq_conn_accepts_tx(ep->conn);

    uct_invoke_completion(req->comp, failed ? UCS_ERR_CONNECTION_RESET :
                                              UCS_ERR_CANCELED);
    ucs_free(req);
}

/* With a completion (UCX 1.22+): the peer's status is not known until a
 * probe came back, so UCS_INPROGRESS, and @comp is called from the
 * interface's progress, as an RC endpoint's flush completion is. A failed
 * connection is known at once: its error. */
static ucs_status_t uct_srq_ep_check_comp(uct_srq_iface_t *iface,
                                          uct_srq_ep_t *ep,
                                          uct_completion_t *comp)
{
    uct_srq_check_req_t *req;
    ucs_status_t status;

    status = uct_srq_ep_check_post(iface, ep, comp);
    if (status == UCS_OK) {
        return UCS_INPROGRESS;
    } else if (status != UCS_ERR_NO_RESOURCE) {
        return status;
    }

    /* every send slot is taken: the probe goes when one is free */
    req = ucs_malloc(sizeof(*req), "srq ep check");
    if (req == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    req->super.func = uct_srq_ep_check_progress;
    req->ep         = ep;
    req->comp       = comp;
    status          = uct_srq_ep_pending_add(&ep->super.super, &req->super, 0);
    if (status != UCS_OK) {
        ucs_free(req); /* a slot came free meanwhile: not expected */
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_INPROGRESS;
}

ucs_status_t uct_srq_ep_check(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);

    UCT_CHECK_PARAM(flags == 0, "unsupported flags: %x", flags);
#ifndef HAVE_UCX_EP_CHECK_COMP
    /* before UCX 1.22 a check takes no completion, as UCX's own refuse */
    UCT_CHECK_PARAM(comp == NULL, "unsupported completion on ep_check");
#endif
    if (comp != NULL) {
        return uct_srq_ep_check_comp(iface, ep, comp);
    }

    /* A probe message reaches the peer's device: if the peer is gone, its
     * send completes in error and the error handler runs. With no send slot
     * free, traffic in flight does the same job. */
    if (uct_srq_ep_tx_check(iface, ep) == UCS_OK) {
        return uct_srq_ep_send_inline(iface, ep, UCT_SRQ_AM_ID_KEEPALIVE,
                                      NULL, 0);
    }
    return UCS_OK;
}

#ifdef HAVE_UCX_EP_IS_CONNECTED
/* Whether this endpoint is connected to the interface at these addresses */
int uct_srq_ep_is_connected(uct_ep_h tl_ep,
                            const uct_ep_is_connected_params_t *params)
{
    uct_srq_ep_t *ep = ucs_derived_of(tl_ep, uct_srq_ep_t);
    const uct_srq_iface_addr_t *iface_addr;

    if ((ep->conn == NULL) ||
        !(params->field_mask & UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR) ||
        !(params->field_mask & UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR)) {
        return 0;
    }

    iface_addr = (const uct_srq_iface_addr_t*)params->iface_addr;
    return !memcmp(&ep->conn->key.dev, params->device_addr,
                   sizeof(ep->conn->key.dev)) &&
           (ep->conn->key.ud_qpn == le32toh(iface_addr->ud_qpn));
}
#endif

/* ---- pending requests ---------------------------------------------------- */

ucs_status_t uct_srq_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);

    if ((uct_srq_ep_tx_check(iface, ep) == UCS_OK) &&
        ucs_arbiter_group_is_empty(&ep->arb_group)) {
        return UCS_ERR_BUSY; /* it can go now */
    }

    uct_pending_req_arb_group_push(&ep->arb_group, req);
    if ((ep->conn != NULL) && (ep->conn->tx_avail > 0) &&
        uct_srq_conn_accepts_tx(ep->conn)) {
        /* waiting for an interface resource: the next completions dispatch
         * it; for the connection's own slots, its completions (or its
         * establishment) schedule it */
        ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
    } else if (ep->conn != NULL) {
        ep->conn->pending_desched = 1;
    }
    return UCS_OK;
}

ucs_arbiter_cb_result_t uct_srq_ep_process_pending(ucs_arbiter_t *arbiter,
                                                   ucs_arbiter_group_t *group,
                                                   ucs_arbiter_elem_t *elem,
                                                   void *arg)
{
    uct_pending_req_t *req = ucs_container_of(elem, uct_pending_req_t, priv);
    uct_srq_ep_t *ep       = ucs_container_of(group, uct_srq_ep_t, arb_group);
    ucs_status_t status;

    status = req->func(req);
    if (status == UCS_OK) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    }

    /* out of resources: the connection's send slots (its completions, or
     * its establishment, reschedule the endpoint), or the interface's (send
     * CQ, send descriptors: the next completions dispatch again); a failed
     * connection: the error handler purges the requests */
    if ((ep->conn == NULL) || !uct_srq_conn_accepts_tx(ep->conn)) {
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }
    if (ep->conn->tx_avail <= 0) {
        ep->conn->pending_desched = 1;
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }
    return UCS_ARBITER_CB_RESULT_STOP;
}

static ucs_arbiter_cb_result_t uct_srq_ep_purge_cb(ucs_arbiter_t *arbiter,
                                                   ucs_arbiter_group_t *group,
                                                   ucs_arbiter_elem_t *elem,
                                                   void *arg)
{
    uct_pending_req_t *req    = ucs_container_of(elem, uct_pending_req_t, priv);
    uct_srq_ep_t *ep          = ucs_container_of(group, uct_srq_ep_t,
                                                 arb_group);
    uct_purge_cb_args_t *args = arg;

    if (req->func == uct_srq_ep_check_progress) {
        uct_srq_ep_check_purge(ep, req); /* the transport's own, not the
                                            caller's */
    } else if (args->cb != NULL) {
        args->cb(req, args->arg);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void uct_srq_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg)
{
    uct_srq_ep_t *ep         = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_purge_cb_args_t args = {cb, arg};

    ucs_arbiter_group_purge(&uct_srq_ep_iface(ep)->arbiter, &ep->arb_group,
                            uct_srq_ep_purge_cb, &args);
}

/* ---- lifetime ------------------------------------------------------------ */

UCS_CLASS_INIT_FUNC(uct_srq_ep_t, const uct_ep_params_t *params)
{
    uct_srq_iface_t *iface = ucs_derived_of(params->iface, uct_srq_iface_t);
    const uct_srq_iface_addr_t *iface_addr;
    uct_srq_conn_key_t key;
    ucs_status_t status;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    iface_addr = (const uct_srq_iface_addr_t*)params->iface_addr;
    memcpy(&key.dev, params->dev_addr, sizeof(key.dev));
    key.ud_qpn = le32toh(iface_addr->ud_qpn);

    status = uct_srq_hs_get_conn(iface, &key, &self->conn);
    if (status != UCS_OK) {
        return status;
    }
    ucs_arbiter_group_init(&self->arb_group);
    ucs_list_add_tail(&self->conn->eps, &self->list);
    return UCS_OK;
}

UCS_CLASS_CLEANUP_FUNC(uct_srq_ep_t)
{
    uct_srq_iface_t *iface = uct_srq_ep_iface(self);

    ucs_arbiter_group_purge(&iface->arbiter, &self->arb_group,
                            uct_srq_ep_purge_cb,
                            &(uct_purge_cb_args_t){NULL, NULL});
    ucs_arbiter_group_cleanup(&self->arb_group);
    if (self->conn != NULL) {
        /* the connection is shared: its WRs stay, this endpoint's
         * operations complete now */
        uct_srq_conn_cancel(iface, self->conn, self);
        ucs_list_del(&self->list);
    }
}

UCS_CLASS_DEFINE(uct_srq_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_srq_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_srq_ep_t, uct_ep_t);
