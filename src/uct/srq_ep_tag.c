/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: tag-matching offload, the sending side: eager tagged messages
 * (short, bcopy, zcopy), rendezvous sends the receiver's device reads
 * itself, and software rendezvous requests. Each is one SEND that starts
 * with a TMH (srq_tm.h has the wire format); only a rendezvous waits for
 * more than its WR: the FIN the receiver's device sends once it has read
 * the data (srq_tm.c). Without tag matching on the interface, each says
 * UCS_ERR_UNSUPPORTED.
 */
#include "srq_ep.h"
#include "srq_memh.h"
#include "srq_tm.h"
#include "srq_tm_rndv.h"

#include <arpa/inet.h>
#include <string.h>

/* Is tag matching on? The interface of @ep, for what follows */
static UCS_F_ALWAYS_INLINE uct_srq_iface_t *
uct_srq_ep_tag_iface(uct_srq_ep_t *ep, ucs_status_t *status_p)
{
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);

    *status_p = iface->tm.enabled ? UCS_OK : UCS_ERR_UNSUPPORTED;
    return iface;
}

/* @wr: a SEND of @sge, the low half of @imm its immediate (none for 0;
 * the high half is in the TMH) */
static UCS_F_ALWAYS_INLINE void
uct_srq_ep_tag_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, int num_sge,
                  uint64_t imm, int send_flags)
{
    wr->opcode     = (imm != 0) ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
    wr->imm_data   = htonl((uint32_t)imm);
    wr->sg_list    = sge;
    wr->num_sge    = num_sge;
    wr->send_flags = send_flags;
}

/* A SEND of a TMH and @length bytes at @data, inline; a software
 * rendezvous request (@sw_rndv) is marked by an immediate of 0 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_tag_inline(uct_srq_ep_t *ep, uct_tag_t tag, const void *data,
                      size_t length, int sw_rndv, const char *name)
{
    ucs_status_t status;
    uct_srq_iface_t *iface = uct_srq_ep_tag_iface(ep, &status);
    struct ibv_send_wr wr;
    struct ibv_sge sge[2];
    struct ibv_tmh tmh;

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    UCT_CHECK_LENGTH(UCT_SRQ_TM_HDR_LEN + length, 0, iface->config.max_inline,
                     name);
    status = uct_srq_ep_tx_check(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    uct_srq_tm_fill_tmh(&tmh, IBV_TMH_EAGER, 0, tag);
    sge[0].addr   = (uintptr_t)&tmh;
    sge[0].length = sizeof(tmh);
    sge[0].lkey   = 0;
    sge[1].addr   = (uintptr_t)data;
    sge[1].length = length;
    sge[1].lkey   = 0;
    uct_srq_ep_tag_wr(&wr, sge, (length > 0) ? 2 : 1, 0, IBV_SEND_INLINE);
    if (sw_rndv) {
        wr.opcode = IBV_WR_SEND_WITH_IMM; /* with 0 */
    }
    return uct_srq_ep_post(iface, ep, &wr);
}

ucs_status_t uct_srq_ep_tag_eager_short(uct_ep_h tl_ep, uct_tag_t tag,
                                        const void *data, size_t length)
{
    return uct_srq_ep_tag_inline(ucs_derived_of(tl_ep, uct_srq_ep_t), tag,
                                 data, length, 0, "tag_eager_short");
}

ucs_status_t uct_srq_ep_tag_rndv_request(uct_ep_h tl_ep, uct_tag_t tag,
                                         const void *header,
                                         unsigned header_length,
                                         unsigned flags)
{
    return uct_srq_ep_tag_inline(ucs_derived_of(tl_ep, uct_srq_ep_t), tag,
                                 header, header_length, 1,
                                 "tag_rndv_request");
}

/* A send descriptor whose data starts with a TMH of @opcode */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_tag_desc(uct_srq_iface_t *iface, uct_srq_ep_t *ep, uint8_t opcode,
                    uint32_t app_ctx, uct_tag_t tag, uct_srq_tx_desc_t **desc_p)
{
    ucs_status_t status = uct_srq_ep_tx_desc(iface, ep, desc_p);

    if (ucs_likely(status == UCS_OK)) {
        uct_srq_tm_fill_tmh(uct_srq_tx_desc_data(*desc_p), opcode, app_ctx,
                            tag);
    }
    return status;
}

ssize_t uct_srq_ep_tag_eager_bcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                   uct_pack_callback_t pack_cb, void *arg,
                                   unsigned flags)
{
    uct_srq_ep_t *ep = ucs_derived_of(tl_ep, uct_srq_ep_t);
    ucs_status_t status;
    uct_srq_iface_t *iface = uct_srq_ep_tag_iface(ep, &status);
    uct_srq_tx_desc_t *desc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    size_t length;

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = uct_srq_ep_tag_desc(iface, ep, IBV_TMH_EAGER,
                                 (uint32_t)(imm >> 32), tag, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    length = pack_cb(UCS_PTR_BYTE_OFFSET(uct_srq_tx_desc_data(desc),
                                         UCT_SRQ_TM_HDR_LEN), arg);
    ucs_assertv(length <= iface->config.seg_size, "length=%zu", length);
    uct_srq_tx_desc_sge(&sge, desc, UCT_SRQ_TM_HDR_LEN + length);
    uct_srq_ep_tag_wr(&wr, &sge, 1, imm,
                      (sge.length <= iface->config.max_inline) ?
                      IBV_SEND_INLINE : 0);
    status = uct_srq_ep_post_desc(iface, ep, &wr, desc, uct_srq_tx_desc_done,
                                  NULL);
    return (status == UCS_OK) ? (ssize_t)length : status;
}

ucs_status_t uct_srq_ep_tag_eager_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                        uint64_t imm, const uct_iov_t *iov,
                                        size_t iovcnt, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_srq_ep_t *ep = ucs_derived_of(tl_ep, uct_srq_ep_t);
    ucs_status_t status;
    uct_srq_iface_t *iface = uct_srq_ep_tag_iface(ep, &status);
    struct ibv_sge sge[iface->config.max_send_sge];
    uct_srq_tx_desc_t *desc;
    struct ibv_send_wr wr;
    int num_sge;

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_send_sge - 1,
                       "tag_eager_zcopy");
    UCT_CHECK_LENGTH(uct_iov_total_length(iov, iovcnt), 0,
                     iface->config.seg_size, "tag_eager_zcopy");
    status = uct_srq_ep_tag_desc(iface, ep, IBV_TMH_EAGER,
                                 (uint32_t)(imm >> 32), tag, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* the TMH from the descriptor, the data from the user's buffers */
    uct_srq_tx_desc_sge(&sge[0], desc, UCT_SRQ_TM_HDR_LEN);
    num_sge = 1 + uct_srq_iov_to_sge(sge + 1, iov, iovcnt);
    uct_srq_ep_tag_wr(&wr, sge, num_sge, imm, 0);
    status = uct_srq_ep_post_desc(iface, ep, &wr, desc, uct_srq_tx_desc_done,
                                  comp);
    return (status == UCS_OK) ? UCS_INPROGRESS : status;
}

/* TMH + RVH + the user's header of a rendezvous into @desc: its length */
static size_t uct_srq_ep_tag_rndv_hdr(uct_srq_tx_desc_t *desc,
                                      const uct_iov_t *iov, const void *header,
                                      unsigned header_length)
{
    struct ibv_rvh *rvh = UCS_PTR_BYTE_OFFSET(uct_srq_tx_desc_data(desc),
                                              UCT_SRQ_TM_HDR_LEN);
    uct_srq_memh_t *memh = iov->memh;

    rvh->va   = htobe64((uintptr_t)iov->buffer);
    rvh->rkey = htobe32((memh == UCT_MEM_HANDLE_NULL) ? 0 : memh->rkey);
    rvh->len  = htobe32((uint32_t)uct_iov_get_length(iov));
    if (header_length > 0) {
        memcpy(rvh + 1, header, header_length);
    }
    return UCT_SRQ_TM_HDR_LEN + UCT_SRQ_TM_RVH_LEN + header_length;
}

ucs_status_ptr_t uct_srq_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                           const void *header,
                                           unsigned header_length,
                                           const uct_iov_t *iov, size_t iovcnt,
                                           unsigned flags,
                                           uct_completion_t *comp)
{
    uct_srq_ep_t *ep = ucs_derived_of(tl_ep, uct_srq_ep_t);
    ucs_status_t status;
    uct_srq_iface_t *iface = uct_srq_ep_tag_iface(ep, &status);
    uct_srq_tx_desc_t *desc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    uint32_t app_ctx;

    if (ucs_unlikely(status != UCS_OK)) {
        return UCS_STATUS_PTR(status);
    }
    UCT_CHECK_PARAM_PTR(iovcnt == 1, "tag_rndv_zcopy: iovcnt %zu, must be 1",
                        iovcnt);
    UCT_CHECK_PARAM_PTR(UCT_SRQ_TM_HDR_LEN + UCT_SRQ_TM_RVH_LEN +
                        header_length <= iface->tm.max_rndv_hdr,
                        "tag_rndv_zcopy: header of %u bytes, at most %zu",
                        header_length, iface->tm.max_rndv_hdr -
                        UCT_SRQ_TM_HDR_LEN - UCT_SRQ_TM_RVH_LEN);
    /* the FIN's slot first: the send descriptor's app_ctx names it */
    status = uct_srq_tm_rndv_add(&iface->tm, comp, ep->conn, &app_ctx);
    if (ucs_unlikely(status != UCS_OK)) {
        return UCS_STATUS_PTR(status);
    }
    status = uct_srq_ep_tag_desc(iface, ep, IBV_TMH_RNDV, app_ctx, tag, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_srq_tm_rndv_cancel(&iface->tm, app_ctx);
        return UCS_STATUS_PTR(status);
    }

    uct_srq_tx_desc_sge(&sge, desc,
                        uct_srq_ep_tag_rndv_hdr(desc, iov, header,
                                                header_length));
    uct_srq_ep_tag_wr(&wr, &sge, 1, 0,
                      (sge.length <= iface->config.max_inline) ?
                      IBV_SEND_INLINE : 0);
    /* the WR's completion frees the descriptor; the FIN completes @comp */
    status = uct_srq_ep_post_desc(iface, ep, &wr, desc, uct_srq_tx_desc_done,
                                  NULL);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_srq_tm_rndv_cancel(&iface->tm, app_ctx);
        return UCS_STATUS_PTR(status);
    }
    return (ucs_status_ptr_t)(uintptr_t)app_ctx;
}

ucs_status_t uct_srq_ep_tag_rndv_cancel(uct_ep_h tl_ep, void *op)
{
    uct_srq_ep_t *ep = ucs_derived_of(tl_ep, uct_srq_ep_t);
    ucs_status_t status;
    uct_srq_iface_t *iface = uct_srq_ep_tag_iface(ep, &status);

    if (status != UCS_OK) {
        return status;
    }
    return uct_srq_tm_rndv_cancel(&iface->tm, (uint32_t)(uintptr_t)op);
}
