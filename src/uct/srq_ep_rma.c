/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: endpoints' RDMA writes (put: short inline, bcopy from a send
 * descriptor, zcopy from the user's iov) and reads (get: bcopy into a
 * descriptor, unpacked at its completion; zcopy), on the endpoint's
 * connection as srq_ep.c posts its active messages.
 */
#include "srq_ep.h"

#include <ucs/debug/log_def.h>
#include <ucs/datastruct/mpool.inl>
#include <uct/base/uct_iov.inl>
#include <string.h>

static void uct_srq_get_bcopy_done(uct_srq_iface_t *iface, uct_srq_op_t *op,
                                   ucs_status_t status)
{
    uct_srq_tx_desc_t *desc = ucs_container_of(op, uct_srq_tx_desc_t, op);

    if (status == UCS_OK) {
        desc->unpack_cb(desc->unpack_arg, uct_srq_tx_desc_data(desc),
                        desc->length);
    }
    uct_srq_tx_desc_done(iface, op, status);
}

static UCS_F_ALWAYS_INLINE void
uct_srq_rdma_wr(struct ibv_send_wr *wr, enum ibv_wr_opcode opcode,
                struct ibv_sge *sge, int num_sge, uint64_t remote_addr,
                uct_rkey_t rkey)
{
    wr->opcode              = opcode;
    wr->sg_list             = sge;
    wr->num_sge             = num_sge;
    wr->send_flags          = 0;
    wr->wr.rdma.remote_addr = remote_addr;
    wr->wr.rdma.rkey        = (uint32_t)rkey;
}

ucs_status_t uct_srq_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                  unsigned length, uint64_t remote_addr,
                                  uct_rkey_t rkey)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->config.max_inline, "put_short");
    status = uct_srq_ep_tx_check(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    sge.addr   = (uintptr_t)buffer;
    sge.length = length;
    sge.lkey   = 0;
    uct_srq_rdma_wr(&wr, IBV_WR_RDMA_WRITE, &sge, length ? 1 : 0, remote_addr,
                    rkey);
    wr.send_flags = IBV_SEND_INLINE;
    return uct_srq_ep_post(iface, ep, &wr);
}

ssize_t uct_srq_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                             void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    uct_srq_tx_desc_t *desc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;
    size_t length;

    status = uct_srq_ep_tx_desc(iface, ep, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    length = pack_cb(uct_srq_tx_desc_data(desc), arg);
    uct_srq_tx_desc_sge(&sge, desc, length);
    uct_srq_rdma_wr(&wr, IBV_WR_RDMA_WRITE, &sge, length ? 1 : 0, remote_addr,
                    rkey);
    status = uct_srq_ep_post_desc(iface, ep, &wr, desc, uct_srq_tx_desc_done,
                                  NULL);
    return (status == UCS_OK) ? (ssize_t)length : status;
}

/* RDMA write or read of a user's registered iov */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_rdma_zcopy(uct_srq_ep_t *ep, enum ibv_wr_opcode opcode,
                      const uct_iov_t *iov, size_t iovcnt,
                      uint64_t remote_addr, uct_rkey_t rkey,
                      uct_completion_t *comp)
{
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    struct ibv_sge sge[iface->config.max_send_sge];
    uct_srq_op_t *op = NULL;
    struct ibv_send_wr wr;
    ucs_status_t status;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_send_sge, "rdma_zcopy");
    status = uct_srq_ep_tx_check(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (comp != NULL) {
        op = ucs_mpool_get_inline(&iface->op_mp);
        if (ucs_unlikely(op == NULL)) {
            return UCS_ERR_NO_RESOURCE;
        }
    }

    uct_srq_rdma_wr(&wr, opcode, sge, uct_srq_iov_to_sge(sge, iov, iovcnt),
                    remote_addr, rkey);
    status = uct_srq_ep_post_op(iface, ep, &wr, op, uct_srq_op_done, comp);
    if (ucs_unlikely(status != UCS_OK)) {
        if (op != NULL) {
            ucs_mpool_put_inline(op);
        }
        return status;
    }
    return UCS_INPROGRESS;
}

ucs_status_t uct_srq_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_srq_ep_rdma_zcopy(ucs_derived_of(tl_ep, uct_srq_ep_t),
                                 IBV_WR_RDMA_WRITE, iov, iovcnt, remote_addr,
                                 rkey, comp);
}

ucs_status_t uct_srq_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_srq_ep_rdma_zcopy(ucs_derived_of(tl_ep, uct_srq_ep_t),
                                 IBV_WR_RDMA_READ, iov, iovcnt, remote_addr,
                                 rkey, comp);
}

ucs_status_t uct_srq_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                  void *arg, size_t length,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    uct_srq_tx_desc_t *desc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->config.seg_size, "get_bcopy");
    status = uct_srq_ep_tx_desc(iface, ep, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    desc->unpack_cb  = unpack_cb;
    desc->unpack_arg = arg;
    desc->length     = length;
    uct_srq_tx_desc_sge(&sge, desc, length);
    uct_srq_rdma_wr(&wr, IBV_WR_RDMA_READ, &sge, length ? 1 : 0, remote_addr,
                    rkey);
    wr.send_flags = IBV_SEND_SIGNALED; /* the data is unpacked then */
    status = uct_srq_ep_post_desc(iface, ep, &wr, desc, uct_srq_get_bcopy_done,
                                  comp);
    return (status == UCS_OK) ? UCS_INPROGRESS : status;
}
