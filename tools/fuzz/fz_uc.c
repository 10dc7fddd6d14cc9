/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: UC QPs. One made and gone within the op, connected to
 * itself with no traffic: its transitions take UC's attribute masks (RC's
 * RNR, retry and rd_atomic attributes are refused), and RDMA READ and
 * atomics are refused when posted, each refusal the contract's.
 */
#include "fz.h"

#include <errno.h>
#include <string.h>

/* The transition with an RC-only attribute added is refused; without it,
 * it is made */
static bool fz_uc_modify(fz_t *fz, struct ibv_qp *qp, struct ibv_qp_attr *a,
                         int mask, int rc_only)
{
    int ret = FZ_BE(fz, modify_qp, qp, a, mask | rc_only);

    fz_fails(fz, FZ_F(ibv_modify_qp, not_allowed), ret);
    return fz_ok(fz, "ibv_modify_qp", FZ_BE(fz, modify_qp, qp, a, mask));
}

void fz_uc(fz_t *fz)
{
    struct ibv_sge sge = { (uintptr_t)fz->sbuf, 8, fz->smr->lkey };
    struct ibv_send_wr wr, *bad = NULL;
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr a;
    struct ibv_qp *qp;
    bool up;

    memset(&init, 0, sizeof(init));
    init.send_cq = init.recv_cq = fz->scq;
    init.qp_type = IBV_QPT_UC;
    init.cap.max_send_wr = init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    qp = FZ_BE(fz, create_qp, fz->pd, &init);
    if (!fz_ok(fz, "ibv_create_qp", (qp != NULL) ? 0 : errno ? errno : -1)) {
        return;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state        = IBV_QPS_INIT;
    a.port_num        = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    up = fz_uc_modify(fz, qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, IBV_QP_QKEY);
    memset(&a, 0, sizeof(a));
    a.qp_state    = IBV_QPS_RTR;
    a.path_mtu    = IBV_MTU_1024;
    a.dest_qp_num = qp->qp_num;
    a.min_rnr_timer = 1;
    fz->dev.be->self_ah_attr(&fz->dev, &a.ah_attr);
    up = up && fz_uc_modify(fz, qp, &a, IBV_QP_STATE | IBV_QP_AV |
                            IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
                            IBV_QP_MIN_RNR_TIMER);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout  = 14;
    up = up && fz_uc_modify(fz, qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN,
                            IBV_QP_TIMEOUT);
    if (up) {
        memset(&wr, 0, sizeof(wr));
        wr.wr_id      = ++fz->next_wr_id;
        wr.sg_list    = &sge;
        wr.num_sge    = 1;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.opcode     = fz_chance(&fz->rnd, 50) ? IBV_WR_RDMA_READ :
                                                  IBV_WR_ATOMIC_FETCH_AND_ADD;
        wr.wr.atomic.remote_addr = fz_mr_raddr(fz) & ~7ull;
        wr.wr.atomic.rkey        = fz->mr->rkey;
        ++fz->calls;
        if (fz_fails(fz, FZ_F(ibv_post_send, opcode_unsupported),
                     ibv_post_send(qp, &wr, &bad))) {
            fz_post(fz, FZ_P(ibv_post_send, bad_wr_on_failure), bad == &wr,
                    "uc: *bad_wr is %p, not the WR", (void*)bad);
        }
    }
    fz_ok(fz, "ibv_destroy_qp", FZ_BE(fz, destroy_qp, qp));
}
