/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: the operations on objects rather than on WRs: creating
 * what cannot be created (each refused with the errno its contract
 * names), changing what exists (ibv_resize_cq, ibv_rereg_mr, on objects
 * of their own) and destroying what is in use (refused; fz_ops.c then
 * sends through what was refused).
 */
#include "fz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- creating what cannot be created ------------------------------------- */

void fz_create_invalid(fz_t *fz)
{
    const struct ibv_device_attr *da = &fz->dev.attr;
    struct ibv_srq_init_attr sattr;
    struct ibv_qp_init_attr qattr;
    struct ibv_srq *srq = NULL;
    struct ibv_qp *qp = NULL;
    struct ibv_cq *cq = NULL;
    struct ibv_mr *mr = NULL;
    unsigned which = fz_range(&fz->rnd, 0, 6);
    int fid;

    memset(&sattr, 0, sizeof(sattr));
    memset(&qattr, 0, sizeof(qattr));
    errno = 0;
    switch (which) {
    case 0:
    case 1:
    case 2:
        sattr.attr.max_wr  = (which == 0) ? 0 : (which == 1) ? da->max_srq_wr + 1 : 4;
        sattr.attr.max_sge = (which == 2) ? da->max_srq_sge + 1 : 1;
        fid = (which == 0) ? FZ_F(ibv_create_srq, max_wr_zero) :
              (which == 1) ? FZ_F(ibv_create_srq, max_wr_over_device) :
                             FZ_F(ibv_create_srq, max_sge_over_device);
        srq = FZ_BE(fz, create_srq, fz->pd, &sattr);
        fz_create_fails(fz, fid, srq, errno);
        break;
    case 3:
        cq = FZ_BE(fz, create_cq, fz_chance(&fz->rnd, 50) ? 0 : da->max_cqe + 1);
        fz_create_fails(fz, FZ_F(ibv_create_cq, cqe_out_of_range), cq, errno);
        break;
    case 4:
        qattr.send_cq          = fz->scq;
        qattr.recv_cq          = fz->scq;
        qattr.qp_type          = IBV_QPT_RC;
        qattr.cap.max_send_wr  = 4;
        qattr.cap.max_recv_wr  = 4;
        qattr.cap.max_recv_sge = 1;
        qattr.cap.max_send_sge = da->max_sge + 1;
        qp = FZ_BE(fz, create_qp, fz->pd, &qattr);
        fz_create_fails(fz, FZ_F(ibv_create_qp, caps_over_device), qp, errno);
        break;
    case 5:
        mr = FZ_BE(fz, reg_mr, fz->pd, fz->sbuf, 4096,
                   fz_chance(&fz->rnd, 50) ? IBV_ACCESS_REMOTE_WRITE :
                                             IBV_ACCESS_REMOTE_ATOMIC);
        fz_create_fails(fz, FZ_F(ibv_reg_mr, remote_write_without_local), mr, errno);
        break;
    default:
        mr = FZ_BE(fz, reg_mr, fz->pd, fz->sbuf,
                   (size_t)da->max_mr_size + 1, IBV_ACCESS_LOCAL_WRITE);
        fz_create_fails(fz, FZ_F(ibv_reg_mr, length_over_device), mr, errno);
        break;
    }
    /* what was created against the contract goes again */
    if (srq != NULL) {
        FZ_BE(fz, destroy_srq, srq);
    }
    if (cq != NULL) {
        FZ_BE(fz, destroy_cq, cq);
    }
    if (qp != NULL) {
        FZ_BE(fz, destroy_qp, qp);
    }
    if (mr != NULL) {
        FZ_BE(fz, dereg_mr, mr);
    }
}

/* Destroying what is in use is refused, and what was refused still works */
void fz_teardown_in_use(fz_t *fz)
{
    struct ibv_srq_attr sa;

    fz_fails(fz, FZ_F(ibv_dealloc_pd, in_use), FZ_BE(fz, dealloc_pd, fz->pd));
    fz_fails(fz, FZ_F(ibv_destroy_cq, in_use),
             FZ_BE(fz, destroy_cq, fz_chance(&fz->rnd, 50) ? fz->scq : fz->rcq_srq));
    fz_fails(fz, FZ_F(ibv_destroy_srq, in_use), FZ_BE(fz, destroy_srq, fz->srq));
    fz_ok(fz, "ibv_query_srq", FZ_BE(fz, query_srq, fz->srq, &sa));
}

/* ---- changing what exists: ibv_resize_cq, ibv_rereg_mr -------------------
 * on a CQ and an MR of their own, which no WR of the scene uses */

static void fz_change_cq(fz_t *fz, struct ibv_cq *cq)
{
    const struct ibv_device_attr *da = &fz->dev.attr;
    int cqe;

    if (fz_chance(&fz->rnd, 40)) {
        cqe = fz_chance(&fz->rnd, 50) ? 0 : da->max_cqe + 1;
        fz_fails(fz, FZ_F(ibv_resize_cq, cqe_out_of_range),
                 FZ_BE(fz, resize_cq, cq, cqe));
        return;
    }
    cqe = (int)fz_range(&fz->rnd, 1, 512);
    if (fz_ok(fz, "ibv_resize_cq", FZ_BE(fz, resize_cq, cq, cqe))) {
        fz_post(fz, FZ_P(ibv_resize_cq, size_at_least), cq->cqe >= cqe,
                "cq->cqe %d after a resize to %d", cq->cqe, cqe);
    }
}

static void fz_change_mr(fz_t *fz, struct ibv_mr *mr)
{
    uint32_t lkey = mr->lkey;
    int fid, ret;

    switch (fz_range(&fz->rnd, 0, 2)) {
    case 0:
        /* no flag: an unknown bit libibverbs refuses itself, before any
         * device sees it, so a trace of it would not replay through
         * libibverbs (test_mr_rereg.cc tests the device's refusal) */
        fid = FZ_F(ibv_rereg_mr, flags_invalid);
        ret = FZ_BE(fz, rereg_mr, mr, 0, NULL, NULL, 0, 0);
        break;
    case 1:
        fid = FZ_F(ibv_rereg_mr, remote_write_without_local);
        ret = FZ_BE(fz, rereg_mr, mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL,
                    0, IBV_ACCESS_REMOTE_WRITE);
        break;
    default:
        fz_ok(fz, "ibv_rereg_mr",
              FZ_BE(fz, rereg_mr, mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL,
                    0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
        return;
    }
    fz_fails(fz, fid, ret);
    fz_post(fz, FZ_P(ibv_rereg_mr, unchanged_on_failure),
            (mr->lkey == lkey) && (mr->addr == fz->sbuf) &&
            (mr->length == 4096) && (mr->pd == fz->pd),
            "a refused ibv_rereg_mr changed the MR");
}

void fz_change(fz_t *fz)
{
    struct ibv_cq *cq;
    struct ibv_mr *mr;

    errno = 0;
    if (fz_chance(&fz->rnd, 50)) {
        cq = FZ_BE(fz, create_cq, 4);
        if (fz_ok(fz, "ibv_create_cq", (cq != NULL) ? 0 : errno ? errno : -1)) {
            fz_change_cq(fz, cq);
            fz_ok(fz, "ibv_destroy_cq", FZ_BE(fz, destroy_cq, cq));
        }
        return;
    }
    mr = FZ_BE(fz, reg_mr, fz->pd, fz->sbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
    if (fz_ok(fz, "ibv_reg_mr", (mr != NULL) ? 0 : errno ? errno : -1)) {
        fz_change_mr(fz, mr);
        fz_ok(fz, "ibv_dereg_mr", FZ_BE(fz, dereg_mr, mr));
    }
}
