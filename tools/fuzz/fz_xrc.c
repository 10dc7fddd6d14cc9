/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: XRC, through libibverbs only (the project API has no
 * XRC domain; the verbs backend leaves the calls NULL, as for device
 * memory). One op makes and removes everything it uses: the refusals of
 * ibv_open_xrcd and ibv_create_srq_ex, a private domain, an XRC SRQ with
 * a CQ of the op's own, ibv_close_xrcd refused while the SRQ lives, and
 * sometimes a SEND from an initiator to a target QP of this context that
 * must land in the SRQ it names.
 */
#include "fz.h"

#include <stdlib.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#define FZ_XRC_MASK  (IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)
#define FZ_XRC_SRQ   (IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | \
                      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)
#define FZ_XRC_POLLS 1000000

static struct ibv_xrcd *fz_xrc_open(fz_t *fz, uint32_t mask, int oflags)
{
    struct ibv_xrcd_init_attr attr = { mask, -1, oflags };

    errno = 0;
    return FZ_BE(fz, open_xrcd, &attr);
}

static struct ibv_srq *fz_xrc_srq(fz_t *fz, struct ibv_xrcd *x,
                                  struct ibv_cq *cq, uint32_t mask)
{
    struct ibv_srq_init_attr_ex attr;

    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr  = 4;
    attr.attr.max_sge = 1;
    attr.comp_mask    = mask;
    attr.srq_type     = IBV_SRQT_XRC;
    attr.pd           = fz->pd;
    attr.xrcd         = x;
    attr.cq           = cq;
    errno = 0;
    return FZ_BE(fz, create_srq_ex, &attr);
}

/* RESET -> RTS, connected to @dest_qpn of this context (RC's attributes:
 * each XRC half takes them) */
static bool fz_xrc_connect(fz_t *fz, struct ibv_qp *qp, uint32_t dest_qpn)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state        = IBV_QPS_INIT;
    a.port_num        = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    if (!fz_ok(fz, "ibv_modify_qp", FZ_BE(fz, modify_qp, qp, &a,
               IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
               IBV_QP_ACCESS_FLAGS))) {
        return false;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state           = IBV_QPS_RTR;
    a.path_mtu           = IBV_MTU_1024;
    a.dest_qp_num        = dest_qpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer      = 1;
    fz->dev.be->self_ah_attr(&fz->dev, &a.ah_attr);
    if (!fz_ok(fz, "ibv_modify_qp", FZ_BE(fz, modify_qp, qp, &a,
               IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
               IBV_QP_MIN_RNR_TIMER))) {
        return false;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = 14;
    a.retry_cnt     = 7;
    a.rnr_retry     = 7;
    a.max_rd_atomic = 1;
    return fz_ok(fz, "ibv_modify_qp", FZ_BE(fz, modify_qp, qp, &a,
                 IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
}

/* The send's and the receive's completions, both on @cq: the receive
 * with the SRQ's WR and the target's QP number */
static void fz_xrc_complete(fz_t *fz, struct ibv_cq *cq, uint32_t tgt_qpn)
{
    struct ibv_wc wc[2];
    int got = 0, i, n;
    long polls;

    for (polls = 0; (got < 2) && (polls < FZ_XRC_POLLS); ++polls) {
        n = fz_poll(fz, cq, 2 - got, wc + got);
        got += (n > 0) ? n : 0;
    }
    if (got < 2) {
        fz_violation(fz, "xrc", "%d of 2 completions", got);
        return;
    }
    for (i = 0; i < 2; ++i) {
        if ((wc[i].status != IBV_WC_SUCCESS) ||
            ((wc[i].opcode == IBV_WC_RECV) && (wc[i].qp_num != tgt_qpn))) {
            fz_violation(fz, "xrc", "completion %d: status %d qp_num %u "
                         "(target %u)", i, wc[i].status, wc[i].qp_num,
                         tgt_qpn);
        }
    }
}

/* One SEND initiator -> target -> @srq, from and into @mr's buffer (the
 * op's own: the scene's buffers belong to its WRs in flight) */
static void fz_xrc_send_mr(fz_t *fz, struct ibv_xrcd *x, struct ibv_srq *srq,
                           struct ibv_cq *cq, struct ibv_mr *mr)
{
    struct ibv_qp_init_attr_ex ta, ia;
    struct ibv_sge rsge = { (uintptr_t)mr->addr + 64, 64, mr->lkey };
    struct ibv_sge ssge = { (uintptr_t)mr->addr, 16, mr->lkey };
    struct ibv_recv_wr rwr = { 0 }, *rbad = NULL;
    struct ibv_send_wr swr, *sbad = NULL;
    struct ibv_qp *tgt, *ini = NULL;
    uint32_t srqn = 0;

    memset(&ta, 0, sizeof(ta));
    ta.qp_type   = IBV_QPT_XRC_RECV;
    ta.comp_mask = IBV_QP_INIT_ATTR_XRCD;
    ta.xrcd      = x;
    memset(&ia, 0, sizeof(ia));
    ia.qp_type          = IBV_QPT_XRC_SEND;
    ia.comp_mask        = IBV_QP_INIT_ATTR_PD;
    ia.pd               = fz->pd;
    ia.send_cq          = cq;
    ia.cap.max_send_wr  = 1;
    ia.cap.max_send_sge = 1;
    tgt = FZ_BE(fz, create_qp_ex, &ta);
    if (fz_ok(fz, "ibv_create_qp_ex", (tgt != NULL) ? 0 : errno ? errno : -1)) {
        ini = FZ_BE(fz, create_qp_ex, &ia);
    }
    if ((ini != NULL) && fz_xrc_connect(fz, tgt, ini->qp_num) &&
        fz_xrc_connect(fz, ini, tgt->qp_num) &&
        fz_ok(fz, "ibv_get_srq_num", FZ_BE(fz, get_srq_num, srq, &srqn))) {
        rwr.wr_id   = ++fz->next_wr_id;
        rwr.sg_list = &rsge;
        rwr.num_sge = 1;
        ++fz->calls;
        fz_ok(fz, "ibv_post_srq_recv", ibv_post_srq_recv(srq, &rwr, &rbad));
        memset(&swr, 0, sizeof(swr));
        swr.wr_id      = ++fz->next_wr_id;
        swr.opcode     = IBV_WR_SEND;
        swr.sg_list    = &ssge;
        swr.num_sge    = 1;
        swr.send_flags = IBV_SEND_SIGNALED;
        swr.qp_type.xrc.remote_srqn = srqn;
        ++fz->calls;
        if (fz_ok(fz, "ibv_post_send", ibv_post_send(ini, &swr, &sbad))) {
            fz_xrc_complete(fz, cq, tgt->qp_num);
        }
    }
    if (ini != NULL) {
        fz_ok(fz, "ibv_destroy_qp", FZ_BE(fz, destroy_qp, ini));
    }
    if (tgt != NULL) {
        fz_ok(fz, "ibv_destroy_qp", FZ_BE(fz, destroy_qp, tgt));
    }
}

static void fz_xrc_send(fz_t *fz, struct ibv_xrcd *x, struct ibv_srq *srq,
                        struct ibv_cq *cq)
{
    void *buf = aligned_alloc(64, 128);
    struct ibv_mr *mr = NULL;

    if (buf != NULL) {
        memset(buf, 0x5a, 128);
        mr = FZ_BE(fz, reg_mr, fz->pd, buf, 128, IBV_ACCESS_LOCAL_WRITE);
    }
    if (fz_ok(fz, "ibv_reg_mr", (mr != NULL) ? 0 : errno ? errno : -1)) {
        fz_xrc_send_mr(fz, x, srq, cq, mr);
        fz_ok(fz, "ibv_dereg_mr", FZ_BE(fz, dereg_mr, mr));
    }
    free(buf);
}

void fz_xrc(fz_t *fz)
{
    struct ibv_xrcd *x;
    struct ibv_srq *srq;
    struct ibv_cq *cq;

    if (fz->dev.be->open_xrcd == NULL) {
        return; /* the project API: no XRC domain */
    }
    x = fz_xrc_open(fz, FZ_XRC_MASK | IBV_XRCD_INIT_ATTR_RESERVED, O_CREAT);
    fz_create_fails(fz, FZ_F(ibv_open_xrcd, comp_mask_invalid), x, errno);
    x = fz_xrc_open(fz, FZ_XRC_MASK, 0);
    fz_create_fails(fz, FZ_F(ibv_open_xrcd, no_create_private), x, errno);
    x = fz_xrc_open(fz, FZ_XRC_MASK, O_CREAT);
    if (!fz_ok(fz, "ibv_open_xrcd", (x != NULL) ? 0 : errno ? errno : -1)) {
        return;
    }
    cq = FZ_BE(fz, create_cq, 8);
    if (fz_ok(fz, "ibv_create_cq", (cq != NULL) ? 0 : errno ? errno : -1)) {
        srq = fz_xrc_srq(fz, x, cq, FZ_XRC_SRQ & ~IBV_SRQ_INIT_ATTR_CQ);
        fz_create_fails(fz, FZ_F(ibv_create_srq_ex, xrc_incomplete), srq,
                        errno);
        srq = fz_xrc_srq(fz, x, cq, FZ_XRC_SRQ);
        if (fz_ok(fz, "ibv_create_srq_ex",
                  (srq != NULL) ? 0 : errno ? errno : -1)) {
            fz_fails(fz, FZ_F(ibv_close_xrcd, in_use),
                     FZ_BE(fz, close_xrcd, x));
            if (fz_chance(&fz->rnd, 50)) {
                fz_xrc_send(fz, x, srq, cq);
            }
            fz_ok(fz, "ibv_destroy_srq", FZ_BE(fz, destroy_srq, srq));
        }
        fz_ok(fz, "ibv_destroy_cq", FZ_BE(fz, destroy_cq, cq));
    }
    fz_ok(fz, "ibv_close_xrcd", FZ_BE(fz, close_xrcd, x));
}
