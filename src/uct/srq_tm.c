/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: tag-matching offload, the receiving side: the device's list of
 * tagged buffers (uct_iface_tag_recv_zcopy/_cancel), its completions, the
 * tagged messages it did not match, and the FINs of our own rendezvous
 * sends (their table: srq_tm_rndv.c). The wire format and the sending
 * side: srq_tm.h, srq_ep_tag.c.
 *
 * Every list operation is signaled and carries our count of unexpected
 * messages (IBV_OPS_TM_SYNC): the device arms a tag only while that count
 * is its own, so a receive never overtakes a message with its tag that
 * waits, unexpected, in our CQ. After a poll that took unexpected
 * messages, a TAG_SYNC tells the device the new count (one per poll).
 *
 * wr_ids: an ordinary receive buffer's is its descriptor's address (bit
 * 63 clear); a tag's receive and its list operations have bit 63 set,
 * the slot's index and generation, and bit 62 for a list operation.
 */
#include "srq_tm.h"
#include "srq_tm_rndv.h"
#include "srq_rx.h"
#include "srq_md.h"
#include "srq_memh.h"

#include <ucs/debug/log_def.h>
#include <uct/base/uct_iov.inl>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#define UCT_SRQ_TM_WRID_TAG   UCS_BIT(63)
#define UCT_SRQ_TM_WRID_OP    UCS_BIT(62)
#define UCT_SRQ_TM_WRID(_idx, _gen) \
    (UCT_SRQ_TM_WRID_TAG | ((uint64_t)(_gen) << 32) | (_idx))
/* Completions read from the receive CQ at once */
#define UCT_SRQ_TM_POLL_BATCH 16

/* The slot index a context holds while posted, in its priv area */
static inline uint32_t *uct_srq_tm_ctx_idx(uct_tag_context_t *ctx)
{
    return (uint32_t*)ctx->priv;
}

/* ---- set up ------------------------------------------------------------- */

/* Why this interface cannot offload tag matching, or NULL */
static const char *uct_srq_tm_why_not(uct_srq_iface_t *iface,
                                      const uct_srq_iface_config_t *config,
                                      struct ibv_tm_caps *caps)
{
    struct ibv_device_attr_ex attr;

    if (!config->rx.srq) {
        return "UCX_RC_SRQ_SRQ=n (tag matching needs the shared receive "
               "queue)";
    }
    memset(&attr, 0, sizeof(attr));
    if (srq_verbs_query_device_ex(iface->dev, &attr) != 0) {
        return "the device answers no ibv_query_device_ex";
    }
    if (!(attr.tm_caps.flags & IBV_TM_CAP_RC) ||
        (attr.tm_caps.max_num_tags == 0) || (attr.tm_caps.max_ops < 3)) {
        return "the device offers no tag matching on RC (tm_caps)";
    }
    if (attr.tm_caps.max_rndv_hdr_size <
        UCT_SRQ_TM_HDR_LEN + UCT_SRQ_TM_RVH_LEN) {
        return "the device's rendezvous header has no room for an RVH";
    }
    if (iface->config.max_send_sge < 3) {
        return "the device has fewer than 3 SGEs per send";
    }
    if (iface->config.max_inline < 2 * UCT_SRQ_TM_HDR_LEN) {
        return "MAX_INLINE is below 32 bytes";
    }
    *caps = attr.tm_caps;
    return NULL;
}

static ucs_status_t uct_srq_tm_drop_eager(void *arg, void *data, size_t length,
                                          unsigned flags, uct_tag_t stag,
                                          uint64_t imm, void **context)
{
    ucs_warn("srq: unexpected tagged message (tag 0x%" PRIx64 ", %zu bytes) "
             "dropped: the interface has no eager callback", stag, length);
    return UCS_OK;
}

static ucs_status_t uct_srq_tm_drop_rndv(void *arg, unsigned flags,
                                         uint64_t stag, const void *header,
                                         unsigned header_length,
                                         uint64_t remote_addr, size_t length,
                                         const void *rkey_buf)
{
    ucs_warn("srq: unexpected rendezvous (tag 0x%" PRIx64 ") dropped: the "
             "interface has no rendezvous callback", stag);
    return UCS_OK;
}

ucs_status_t uct_srq_tm_init(uct_srq_tm_t *tm, uct_srq_iface_t *iface,
                             const uct_srq_iface_config_t *config,
                             const uct_iface_params_t *params)
{
    struct ibv_tm_caps caps;
    unsigned max_tags;
    const char *why;

    memset(tm, 0, sizeof(*tm));
    if (config->tm_enable == UCS_NO) {
        return UCS_OK;
    }
    why = uct_srq_tm_why_not(iface, config, &caps);
    if (why != NULL) {
        if (config->tm_enable == UCS_YES) {
            ucs_error("srq: UCX_RC_SRQ_TM_ENABLE=yes, but on %s %s",
                      srq_verbs_dev_name(iface->dev), why);
            return UCS_ERR_UNSUPPORTED;
        }
        ucs_debug("srq: no tag-matching offload on %s: %s",
                  srq_verbs_dev_name(iface->dev), why);
        return UCS_OK;
    }
    /* every tag in the list can be removed even if no completion was
     * polled since it was added: its add and its delete fit in max_ops,
     * with one left for a sync */
    max_tags = ucs_min(caps.max_num_tags, (caps.max_ops - 1) / 2);
    if (config->tm_list_size > max_tags) {
        ucs_error("srq: RC_SRQ_TM_LIST_SIZE=%u is out of range [0..%u] "
                  "(0: all; the device has %u tags and %u list operations) "
                  "on %s", config->tm_list_size, max_tags,
                  caps.max_num_tags, caps.max_ops,
                  srq_verbs_dev_name(iface->dev));
        return UCS_ERR_INVALID_PARAM;
    }

    tm->num_slots    = (config->tm_list_size == 0) ? max_tags :
                                                     config->tm_list_size;
    tm->max_ops      = caps.max_ops;
    tm->max_rndv_hdr = caps.max_rndv_hdr_size;
    tm->slots        = ucs_calloc(tm->num_slots, sizeof(*tm->slots),
                                  "srq tm slots");
    tm->rndv         = ucs_calloc(UCT_SRQ_TM_MAX_RNDV, sizeof(*tm->rndv),
                                  "srq tm rndv");
    if ((tm->slots == NULL) || (tm->rndv == NULL)) {
        uct_srq_tm_cleanup(tm);
        return UCS_ERR_NO_MEMORY;
    }
    kh_init_inplace(uct_srq_tm_bufs, &tm->bufs);
    tm->eager_unexp.cb  = UCT_IFACE_PARAM_VALUE(params, eager_cb,
                                                HW_TM_EAGER_CB,
                                                uct_srq_tm_drop_eager);
    tm->eager_unexp.arg = UCT_IFACE_PARAM_VALUE(params, eager_arg,
                                                HW_TM_EAGER_ARG, NULL);
    tm->rndv_unexp.cb   = UCT_IFACE_PARAM_VALUE(params, rndv_cb,
                                                HW_TM_RNDV_CB,
                                                uct_srq_tm_drop_rndv);
    tm->rndv_unexp.arg  = UCT_IFACE_PARAM_VALUE(params, rndv_arg,
                                                HW_TM_RNDV_ARG, NULL);
    tm->enabled         = 1;
    return UCS_OK;
}

void uct_srq_tm_cleanup(uct_srq_tm_t *tm)
{
    if (tm->enabled) {
        kh_destroy_inplace(uct_srq_tm_bufs, &tm->bufs);
    }
    ucs_free(tm->slots);
    ucs_free(tm->rndv);
    tm->slots   = NULL;
    tm->rndv    = NULL;
    tm->enabled = 0;
}

struct ibv_cq *uct_srq_tm_create_cq(uct_srq_tm_t *tm, uct_srq_iface_t *iface,
                                    int cqe)
{
    struct ibv_cq_init_attr_ex attr;

    memset(&attr, 0, sizeof(attr));
    attr.cqe         = cqe;
    attr.cq_context  = iface;
    attr.channel     = iface->channel;
    attr.wc_flags    = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
                       IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_TM_INFO;
    tm->cq = srq_verbs_create_cq_ex(iface->dev, &attr);
    return (tm->cq != NULL) ? ibv_cq_ex_to_cq(tm->cq) : NULL;
}

void uct_srq_tm_query(uct_srq_tm_t *tm, uct_srq_iface_t *iface,
                      uct_iface_attr_t *attr)
{
    attr->cap.flags |= UCT_IFACE_FLAG_TAG_EAGER_SHORT |
                       UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
                       UCT_IFACE_FLAG_TAG_EAGER_ZCOPY |
                       UCT_IFACE_FLAG_TAG_RNDV_ZCOPY;
    /* an unexpected message lands whole in an ordinary buffer */
    attr->cap.tag.eager.max_short = iface->config.max_inline -
                                    UCT_SRQ_TM_HDR_LEN;
    attr->cap.tag.eager.max_bcopy = iface->config.seg_size;
    attr->cap.tag.eager.max_zcopy = iface->config.seg_size;
    attr->cap.tag.eager.max_iov   = iface->config.max_send_sge - 1;
    attr->cap.tag.rndv.max_zcopy  = iface->port_attr.max_msg_sz;
    attr->cap.tag.rndv.max_hdr    = tm->max_rndv_hdr - UCT_SRQ_TM_HDR_LEN -
                                    UCT_SRQ_TM_RVH_LEN;
    attr->cap.tag.rndv.max_iov    = 1;
    attr->cap.tag.recv.min_recv   = 0;
    attr->cap.tag.recv.max_zcopy  = iface->port_attr.max_msg_sz;
    attr->cap.tag.recv.max_iov    = 1;
    attr->cap.tag.recv.max_outstanding = tm->num_slots;
}

/* ---- the list ----------------------------------------------------------- */

/* Post one list operation, signaled, with our count of unexpected
 * messages: 0 or an errno value */
static int uct_srq_tm_post_op(uct_srq_iface_t *iface, struct ibv_ops_wr *wr)
{
    uct_srq_tm_t *tm = &iface->tm;
    struct ibv_ops_wr *bad_wr;
    int ret;

    wr->next              = NULL;
    wr->flags             = IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC;
    wr->tm.unexpected_cnt = tm->unexp_cnt;
    ret = srq_verbs_post_srq_ops(iface->dev, iface->rx.srq, wr, &bad_wr);
    if (ret == 0) {
        ++tm->ops;
        tm->unexp_synced = tm->unexp_cnt;
    }
    return ret;
}

/* A free slot (num_tags < num_slots) */
static uint32_t uct_srq_tm_slot_get(uct_srq_tm_t *tm)
{
    uint32_t idx;

    for (idx = 0; tm->slots[idx].flags != 0; ++idx) {
        ucs_assert(idx + 1 < tm->num_slots);
    }
    return idx;
}

/* The slot leaves the list for good once nothing of it may complete */
static void uct_srq_tm_slot_put_if_idle(uct_srq_tm_t *tm,
                                        uct_srq_tm_slot_t *slot)
{
    if (!(slot->flags & (UCT_SRQ_TM_SLOT_POSTED | UCT_SRQ_TM_SLOT_DEL))) {
        slot->flags = 0;
        ++slot->gen;
        --tm->num_tags;
    }
}

/* The user's context is done with (completed, canceled by force): its
 * buffer may be posted again */
static uct_tag_context_t *uct_srq_tm_slot_detach(uct_srq_tm_t *tm,
                                                 uct_srq_tm_slot_t *slot)
{
    uct_tag_context_t *ctx = slot->ctx;
    khiter_t it;

    if (ctx != NULL) {
        it = kh_get(uct_srq_tm_bufs, &tm->bufs, (uintptr_t)slot->buffer);
        if (it != kh_end(&tm->bufs)) {
            kh_del(uct_srq_tm_bufs, &tm->bufs, it);
        }
        slot->ctx = NULL;
    }
    return ctx;
}

ucs_status_t uct_srq_tm_recv_zcopy(uct_iface_h tl_iface, uct_tag_t tag,
                                   uct_tag_t tag_mask, const uct_iov_t *iov,
                                   size_t iovcnt, uct_tag_context_t *ctx)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);
    uct_srq_tm_t *tm       = &iface->tm;
    struct ibv_ops_wr wr;
    struct ibv_sge sge;
    uct_srq_tm_slot_t *slot;
    uint32_t idx;
    khiter_t it;
    int ret;

    if (!tm->enabled) {
        return UCS_ERR_UNSUPPORTED;
    }
    UCT_CHECK_IOV_SIZE(iovcnt, 1ul, "uct_srq_tm_recv_zcopy");
    /* one operation stays free for a cancel */
    if ((tm->num_tags >= tm->num_slots) || (tm->ops + 1 >= tm->max_ops)) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    it = kh_put(uct_srq_tm_bufs, &tm->bufs,
                (uintptr_t)((iovcnt > 0) ? iov->buffer : NULL), &ret);
    if (ret == 0) {
        return UCS_ERR_ALREADY_EXISTS; /* until it completes or is canceled */
    } else if (ret < 0) {
        return UCS_ERR_NO_MEMORY;
    }

    idx  = uct_srq_tm_slot_get(tm);
    slot = &tm->slots[idx];
    memset(&wr, 0, sizeof(wr));
    memset(&sge, 0, sizeof(sge));
    if (iovcnt > 0) {
        sge.addr   = (uintptr_t)iov->buffer;
        sge.length = uct_iov_get_length(iov);
        sge.lkey   = (iov->memh == UCT_MEM_HANDLE_NULL) ? 0 :
                     ((uct_srq_memh_t*)iov->memh)->lkey;
    }
    wr.wr_id             = UCT_SRQ_TM_WRID(idx, slot->gen) |
                           UCT_SRQ_TM_WRID_OP;
    wr.opcode            = IBV_WR_TAG_ADD;
    wr.tm.add.recv_wr_id = UCT_SRQ_TM_WRID(idx, slot->gen);
    wr.tm.add.sg_list    = &sge;
    wr.tm.add.num_sge    = (sge.length > 0) ? 1 : 0;
    wr.tm.add.tag        = tag;
    wr.tm.add.mask       = tag_mask;
    ret = uct_srq_tm_post_op(iface, &wr);
    if (ret != 0) {
        kh_del(uct_srq_tm_bufs, &tm->bufs, it);
        ucs_debug("srq: adding tag 0x%" PRIx64 " failed: %s", tag,
                  strerror(ret));
        return (ret == ENOMEM) ? UCS_ERR_EXCEEDS_LIMIT : UCS_ERR_IO_ERROR;
    }

    slot->ctx    = ctx;
    slot->buffer = (iovcnt > 0) ? iov->buffer : NULL;
    slot->length = sge.length;
    slot->tag    = tag;
    slot->handle = wr.tm.handle;
    slot->flags  = UCT_SRQ_TM_SLOT_POSTED;
    *uct_srq_tm_ctx_idx(ctx) = idx;
    ++tm->num_tags;
    ++tm->stats.list_add;
    return UCS_OK;
}

ucs_status_t uct_srq_tm_recv_cancel(uct_iface_h tl_iface,
                                    uct_tag_context_t *ctx, int force)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);
    uct_srq_tm_t *tm       = &iface->tm;
    uint32_t idx           = *uct_srq_tm_ctx_idx(ctx);
    uct_srq_tm_slot_t *slot;
    struct ibv_ops_wr wr;
    int ret;

    if (!tm->enabled) {
        return UCS_ERR_UNSUPPORTED;
    }
    if ((idx >= tm->num_slots) || (tm->slots[idx].ctx != ctx)) {
        return UCS_ERR_NO_ELEM; /* not posted, or completed already */
    }
    slot = &tm->slots[idx];
    if (!(slot->flags & UCT_SRQ_TM_SLOT_DEL)) {
        if (tm->ops >= tm->max_ops) {
            return UCS_ERR_NO_RESOURCE;
        }
        memset(&wr, 0, sizeof(wr));
        wr.wr_id     = UCT_SRQ_TM_WRID(idx, slot->gen) | UCT_SRQ_TM_WRID_OP;
        wr.opcode    = IBV_WR_TAG_DEL;
        wr.tm.handle = slot->handle;
        ret = uct_srq_tm_post_op(iface, &wr);
        if (ret != 0) {
            ucs_error("srq: removing a tag from the device's list failed: "
                      "%s", strerror(ret));
            return UCS_ERR_IO_ERROR;
        }
        slot->flags |= UCT_SRQ_TM_SLOT_DEL;
        ++tm->stats.list_del;
    }
    if (force) {
        /* no callback: whatever of it still completes is dropped */
        uct_srq_tm_slot_detach(tm, slot);
        slot->flags &= ~UCT_SRQ_TM_SLOT_CANCEL;
    } else {
        slot->flags |= UCT_SRQ_TM_SLOT_CANCEL;
    }
    return UCS_OK;
}

/* ---- completions -------------------------------------------------------- */

static uct_srq_tm_slot_t *uct_srq_tm_slot_of(uct_srq_tm_t *tm, uint64_t wr_id)
{
    uint32_t idx = (uint32_t)wr_id;
    uint16_t gen = (uint16_t)(wr_id >> 32);

    if ((idx >= tm->num_slots) || (tm->slots[idx].gen != gen) ||
        (tm->slots[idx].flags == 0)) {
        ucs_error("srq: tag-matching completion of no tag (wr_id 0x%" PRIx64
                  ")", wr_id);
        return NULL;
    }
    return &tm->slots[idx];
}

static ucs_status_t uct_srq_tm_wc_status(enum ibv_wc_status status)
{
    switch (status) {
    case IBV_WC_SUCCESS:
        return UCS_OK;
    case IBV_WC_LOC_LEN_ERR:
        return UCS_ERR_MESSAGE_TRUNCATED;
    case IBV_WC_WR_FLUSH_ERR:
        return UCS_ERR_CANCELED;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/* A list operation completed */
static void uct_srq_tm_op_done(uct_srq_tm_t *tm, const struct ibv_wc *wc)
{
    uct_srq_tm_slot_t *slot;
    uct_tag_context_t *ctx;
    uct_tag_t tag;
    size_t length;

    --tm->ops;
    if (wc->opcode == IBV_WC_TM_SYNC) {
        return;
    }
    slot = uct_srq_tm_slot_of(tm, wc->wr_id & ~UCT_SRQ_TM_WRID_OP);
    if (slot == NULL) {
        return;
    }
    if (wc->opcode == IBV_WC_TM_ADD) {
        if (wc->status == IBV_WC_SUCCESS) {
            return; /* in the list (armed once in sync: uct_srq_tm_sync) */
        }
        ucs_error("srq: the device refused a tag: %s",
                  ibv_wc_status_str(wc->status));
        slot->flags &= ~UCT_SRQ_TM_SLOT_POSTED;
        ctx          = uct_srq_tm_slot_detach(tm, slot);
        tag          = slot->tag;
        length       = slot->length;
        uct_srq_tm_slot_put_if_idle(tm, slot);
        if (ctx != NULL) {
            ctx->completed_cb(ctx, tag, 0, length, NULL, UCS_ERR_IO_ERROR);
        }
        return;
    }

    /* TAG_DEL: failed if a message consumed the tag first; its completion
     * then comes (or came) as the tag's */
    slot->flags &= ~UCT_SRQ_TM_SLOT_DEL;
    ctx = NULL;
    if (wc->status == IBV_WC_SUCCESS) {
        slot->flags &= ~UCT_SRQ_TM_SLOT_POSTED;
        if (slot->flags & UCT_SRQ_TM_SLOT_CANCEL) {
            ctx = uct_srq_tm_slot_detach(tm, slot);
        }
    }
    tag    = slot->tag;
    length = slot->length;
    uct_srq_tm_slot_put_if_idle(tm, slot);
    if (ctx != NULL) {
        ctx->completed_cb(ctx, tag, 0, length, NULL, UCS_ERR_CANCELED);
    }
}

/* The 64-bit immediate of a tagged message: the TMH's app_ctx above the
 * SEND's immediate (0 without one) */
static inline uint64_t uct_srq_tm_imm(const struct ibv_wc *wc,
                                      uint32_t app_ctx)
{
    return (wc->wc_flags & IBV_WC_WITH_IMM) ?
           (((uint64_t)app_ctx << 32) | ntohl(wc->imm_data)) : 0;
}

/* A completion of a tag the device matched: consumed (a rendezvous whose
 * data follows), then the data there or the error */
static void uct_srq_tm_tag_done(uct_srq_tm_t *tm, const struct ibv_wc *wc,
                                const struct ibv_wc_tm_info *info)
{
    uct_srq_tm_slot_t *slot = uct_srq_tm_slot_of(tm, wc->wr_id);
    ucs_status_t status     = uct_srq_tm_wc_status(wc->status);
    uct_tag_context_t *ctx;
    uct_tag_t stag;
    void *buffer;
    uint64_t imm;

    if (slot == NULL) {
        return;
    }
    if (wc->wc_flags & IBV_WC_TM_MATCH) {
        /* the sender's tag: a rendezvous's data completes without it */
        slot->stag    = info->tag;
        slot->app_ctx = (uint32_t)info->priv;
    }
    ctx = slot->ctx;
    if ((ctx != NULL) && !(slot->flags & UCT_SRQ_TM_SLOT_CONSUMED)) {
        slot->flags |= UCT_SRQ_TM_SLOT_CONSUMED;
        ctx->tag_consumed_cb(ctx);
    }
    if ((status == UCS_OK) && !(wc->wc_flags & IBV_WC_TM_DATA_VALID)) {
        tm->stats.rndv_read += 1; /* the device reads it now */
        return;
    }

    ++tm->stats.matched;
    slot->flags &= ~UCT_SRQ_TM_SLOT_POSTED;
    buffer = slot->buffer;
    stag   = slot->stag;
    imm    = uct_srq_tm_imm(wc, slot->app_ctx);
    ctx    = uct_srq_tm_slot_detach(tm, slot);
    uct_srq_tm_slot_put_if_idle(tm, slot);
    if (ctx == NULL) {
        return; /* canceled by force meanwhile */
    }
    if ((wc->wc_flags & IBV_WC_WITH_IMM) && (imm == 0)) {
        /* a software rendezvous request: its header is in the buffer */
        ++tm->stats.sw_rndv;
        ctx->rndv_cb(ctx, stag, buffer, wc->byte_len, status, 0);
    } else {
        ctx->completed_cb(ctx, stag, imm, wc->byte_len, NULL, status);
    }
}

/* A message in an ordinary receive buffer whose TMH (just before
 * @payload) is not NO_TAG: an unexpected tagged message, a rendezvous
 * request, or the FIN of ours. What the handler said of the buffer:
 * UCS_OK (back to the pool) or UCS_INPROGRESS (kept) */
static ucs_status_t uct_srq_tm_rx_tagged(uct_srq_iface_t *iface,
                                         void *payload, size_t length,
                                         const struct ibv_wc *wc)
{
    uct_srq_tm_t *tm          = &iface->tm;
    struct ibv_tmh tmh;
    struct ibv_rvh rvh;
    uint32_t app_ctx;
    uct_tag_t tag;
    uct_srq_packed_rkey_t rkey;
    void *context;
    uint64_t imm;

    /* copied out: a payload the user aligned with an offset leaves the
     * headers unaligned */
    memcpy(&tmh, UCS_PTR_BYTE_OFFSET(payload, -UCT_SRQ_TM_HDR_LEN),
           sizeof(tmh));
    app_ctx = be32toh(tmh.app_ctx);
    tag     = be64toh(tmh.tag);
    switch (tmh.opcode) {
    case IBV_TMH_FIN:
        uct_srq_tm_fin(tm, app_ctx);
        return UCS_OK;
    case IBV_TMH_EAGER:
        ++tm->unexp_cnt; /* the device counted it too */
        ++tm->stats.unexp;
        imm = uct_srq_tm_imm(wc, app_ctx);
        if ((wc->wc_flags & IBV_WC_WITH_IMM) && (imm == 0)) {
            ++tm->stats.sw_rndv;
            tm->rndv_unexp.cb(tm->rndv_unexp.arg, 0, tag, payload, length,
                              0, 0, NULL);
            return UCS_OK;
        }
        return tm->eager_unexp.cb(tm->eager_unexp.arg, payload, length,
                                  UCT_CB_PARAM_FLAG_DESC |
                                  UCT_CB_PARAM_FLAG_FIRST, tag, imm,
                                  &context);
    case IBV_TMH_RNDV:
        ++tm->unexp_cnt;
        ++tm->stats.unexp;
        if (length < UCT_SRQ_TM_RVH_LEN) {
            ucs_diag("srq: dropped a rendezvous request of %zu bytes, too "
                     "short for its RVH (qp 0x%x)", length, wc->qp_num);
            return UCS_OK;
        }
        memcpy(&rvh, payload, sizeof(rvh));
        rkey.rkey = htole32(be32toh(rvh.rkey)); /* as the md packs it */
        /* no DESC flag: the packed rkey is on this stack */
        tm->rndv_unexp.cb(tm->rndv_unexp.arg, 0, tag,
                          UCS_PTR_BYTE_OFFSET(payload, UCT_SRQ_TM_RVH_LEN),
                          length - UCT_SRQ_TM_RVH_LEN, be64toh(rvh.va),
                          be32toh(rvh.len), &rkey);
        return UCS_OK;
    default:
        ucs_diag("srq: dropped a message of TMH opcode %u (%zu bytes, qp "
                 "0x%x)", tmh.opcode, length, wc->qp_num);
        return UCS_OK;
    }
}

/* ---- polling ------------------------------------------------------------ */

/* The current entry of the CQ as a work completion, with its TM info */
static void uct_srq_tm_read_wc(struct ibv_cq_ex *cq, struct ibv_wc *wc,
                               struct ibv_wc_tm_info *info)
{
    memset(wc, 0, sizeof(*wc));
    wc->wr_id    = cq->wr_id;
    wc->status   = cq->status;
    wc->opcode   = ibv_wc_read_opcode(cq);
    wc->wc_flags = ibv_wc_read_wc_flags(cq);
    wc->byte_len = ibv_wc_read_byte_len(cq);
    wc->qp_num   = ibv_wc_read_qp_num(cq);
    if (wc->wc_flags & IBV_WC_WITH_IMM) {
        wc->imm_data = ibv_wc_read_imm_data(cq);
    }
    if (wc->wc_flags & IBV_WC_TM_MATCH) {
        ibv_wc_read_tm_info(cq, info); /* of a match only */
    } else {
        memset(info, 0, sizeof(*info));
    }
}

/* Tell the device the count of unexpected messages we have taken, so
 * that tags added meanwhile may match; again next time if no operation
 * is free */
static void uct_srq_tm_sync(uct_srq_iface_t *iface)
{
    uct_srq_tm_t *tm = &iface->tm;
    struct ibv_ops_wr wr;

    if ((tm->unexp_cnt == tm->unexp_synced) || (tm->num_tags == 0) ||
        (tm->ops >= tm->max_ops)) {
        return;
    }
    memset(&wr, 0, sizeof(wr));
    wr.wr_id  = UCT_SRQ_TM_WRID_TAG | UCT_SRQ_TM_WRID_OP;
    wr.opcode = IBV_WR_TAG_SYNC;
    if (uct_srq_tm_post_op(iface, &wr) == 0) {
        ++tm->stats.sync;
    }
}

/* A completion of an ordinary receive buffer: an active message (TMH
 * NO_TAG) as without tag matching, else a tagged message */
static void uct_srq_tm_ordinary(uct_srq_iface_t *iface, const struct ibv_wc *wc)
{
    uct_srq_rx_t *rx        = &iface->rx;
    uct_srq_rx_desc_t *desc = (void*)(uintptr_t)wc->wr_id;
    void *payload           = uct_srq_rx_desc_buffer(rx, desc);
    /* the TMH's first byte (it may be unaligned) */
    const uint8_t *opcode   = UCS_PTR_BYTE_OFFSET(payload,
                                                  -UCT_SRQ_TM_HDR_LEN);
    ucs_status_t status;

    UCS_STATIC_ASSERT(ucs_offsetof(struct ibv_tmh, opcode) == 0);
    if ((wc->status != IBV_WC_SUCCESS) ||
        (wc->byte_len < UCT_SRQ_TM_HDR_LEN) ||
        (*opcode == IBV_TMH_NO_TAG)) {
        uct_srq_rx_deliver(rx, iface, wc);
        return;
    }
    uct_srq_rx_take(rx, wc);
    rx->stats.bytes += wc->byte_len - UCT_SRQ_TM_HDR_LEN;
    status = uct_srq_tm_rx_tagged(iface, payload,
                                  wc->byte_len - UCT_SRQ_TM_HDR_LEN, wc);
    uct_srq_rx_done(rx, desc, payload, status);
}

static void uct_srq_tm_dispatch(uct_srq_iface_t *iface, const struct ibv_wc *wc,
                                const struct ibv_wc_tm_info *info)
{
    if (!(wc->wr_id & UCT_SRQ_TM_WRID_TAG)) {
        uct_srq_tm_ordinary(iface, wc);
    } else if (wc->wr_id & UCT_SRQ_TM_WRID_OP) {
        uct_srq_tm_op_done(&iface->tm, wc);
    } else {
        uct_srq_tm_tag_done(&iface->tm, wc, info);
    }
}

unsigned uct_srq_tm_poll_rx(uct_srq_iface_t *iface)
{
    struct ibv_wc wc[UCT_SRQ_TM_POLL_BATCH];
    struct ibv_wc_tm_info info[UCT_SRQ_TM_POLL_BATCH];
    struct ibv_poll_cq_attr attr = {};
    struct ibv_cq_ex *cq         = iface->tm.cq;
    int i, n = 0, ret;

    /* read first, dispatch after ibv_end_poll: a handler may post */
    ret = ibv_start_poll(cq, &attr);
    if (ret == 0) {
        do {
            uct_srq_tm_read_wc(cq, &wc[n], &info[n]);
            ++n;
        } while ((n < UCT_SRQ_TM_POLL_BATCH) && (ibv_next_poll(cq) == 0));
        ibv_end_poll(cq);
    } else if (ret != ENOENT) {
        ucs_error("srq: polling the receive CQ failed: %s", strerror(ret));
    }
    if (n == 0) {
        uct_srq_rx_refill_adapt(&iface->rx, iface);
        uct_srq_tm_sync(iface);
        return 0;
    }

    for (i = 0; i < n; ++i) {
        uct_srq_tm_dispatch(iface, &wc[i], &info[i]);
    }
    uct_srq_rx_polled(&iface->rx, iface, n, UCT_SRQ_TM_POLL_BATCH);
    uct_srq_tm_sync(iface);
    return n;
}
