/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder's datagrams. A UD SEND for a QP in
 * RTR or RTS with the QP's Q_Key goes to its next receive WQE behind the
 * 40-byte GRH a receiver of an HCA finds there (the source's address as
 * its sgid); without a WQE, or with one too short, it is lost without a
 * word (IB class D, as rxe), and the WQE is kept for the next.
 */
#define _GNU_SOURCE /* process_vm_readv, in soft_rview.h */
#include "soft_resp_ud.h"
#include "../fabric/soft_seg.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_port.h"
#include "../objects/soft_qp.h"
#include "soft_rview.h"

#include <endian.h>
#include <string.h>

#define SRQ_SOFT_GRH_LEN 40

/* A GRH as a receiver would see it: the source's address as sgid */
static void srq_soft_resp_grh(const srq_soft_dev_t *dev,
                              const srq_soft_pkt_t *pkt, uint8_t *grh)
{
    uint16_t paylen = htobe16((uint16_t)pkt->length);

    memset(grh, 0, SRQ_SOFT_GRH_LEN);
    /* IPv6 version, then the sender's traffic class (8 bits) */
    grh[0] = 0x60 | ((pkt->tclass >> 4) & 0xf);
    grh[1] = (uint8_t)((pkt->tclass & 0xf) << 4);
    memcpy(grh + 4, &paylen, sizeof(paylen));
    grh[6] = 0x1b;                       /* next header: IB BTH */
    grh[7] = 64;                         /* hop limit */
    memcpy(grh + 8, SRQ_SOFT_ADDR_MAGIC, 4);
    srq_soft_port_of(pkt->src_inst, grh + 12);
    memcpy(grh + 24, SRQ_SOFT_ADDR_MAGIC, 4);
    memcpy(grh + 28, dev->port_id, SRQ_SOFT_INST_LEN);
}

void srq_soft_resp_ud(srq_soft_dev_t *dev, srq_soft_qp_t *qp,
                      const srq_soft_pkt_t *pkt, const uint8_t *payload)
{
    uint8_t grh[SRQ_SOFT_GRH_LEN];
    srq_soft_rview_t v;
    int status;

    if ((qp->ibv.qp_type != IBV_QPT_UD) ||
        ((qp->state != IBV_QPS_RTR) && (qp->state != IBV_QPS_RTS)) ||
        (pkt->opcode != SRQ_SOFT_OP_SEND) || (pkt->aux != qp->attr.qkey) ||
        (pkt->flags & SRQ_SOFT_PKT_F_PULL) ||
        (pkt->length > SRQ_SOFT_UD_MTU)) {
        ++dev->stats.rx_dropped;
        return;
    }
    ++dev->stats.rx_packets;
    if (!srq_soft_rview_peek(qp, &v)) {
        return; /* no receive WQE: a datagram is silently lost */
    }
    /* the first 40 bytes of the scatter list hold the GRH. A datagram the
     * WQE cannot hold is dropped and the WQE kept for the next (IB class
     * D, silent: as rxe), not consumed in error */
    if (SRQ_SOFT_GRH_LEN + pkt->length > srq_verbs_sge_len(v.sge, v.num_sge)) {
        ++dev->stats.rx_dropped;
        return;
    }
    status = srq_soft_rview_place(qp, pkt, payload, &v, SRQ_SOFT_GRH_LEN);
    if (status == IBV_WC_SUCCESS) {
        srq_soft_resp_grh(dev, pkt, grh);
        if (!srq_soft_rview_copy(dev->guard_copies, &v, 0, grh,
                                 SRQ_SOFT_GRH_LEN)) {
            status = IBV_WC_LOC_PROT_ERR;
        }
    }
    srq_soft_rview_consume(qp, &v);
    srq_soft_rview_complete(qp, pkt, &v, status, pkt->length + SRQ_SOFT_GRH_LEN);
}
