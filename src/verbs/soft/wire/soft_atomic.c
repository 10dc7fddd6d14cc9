/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder's atomic unit.
 *
 * CMP_SWAP and FETCH_ADD execute in the target process, on its own memory,
 * with the CPU's atomic instructions: atomic with respect to every other
 * atomic through the device (whichever QP or process it comes from) and to
 * the target's own CPU atomics. Checked first, as rxe does: the QP grants
 * remote atomics (else invalid request), the rkey covers 8 bytes with
 * IBV_ACCESS_REMOTE_ATOMIC in the QP's PD (else remote access error), the
 * address is 8-byte aligned (else invalid request). ATOMIC_WRITE (IB spec
 * 1.5) is checked the same way against IBV_ACCESS_REMOTE_WRITE, as rxe
 * does, and stores its 8 bytes with one atomic store: no reader through
 * the device or on the target's CPU sees half of them.
 *
 * An atomic must not execute twice (IB spec): its result is kept, and a
 * duplicate request (the requester retransmitted) gets it again without
 * executing. The requester keeps at most max_rd_atomic (<= 16) atomics in
 * flight, so the last 16 results cover every duplicate it can send.
 * READs executed by the responder (soft_resp.c) share the cache, for
 * their order: a READ's data waits in it only while a full queue holds
 * its response back.
 */
#include "soft_atomic.h"
#include "../objects/soft_dev.h"
#include "../objects/soft_mr.h"
#include "../objects/soft_mw.h"
#include "../objects/soft_pd.h"
#include "../objects/soft_qp.h"

#include <stdlib.h>
#include <string.h>


uint8_t srq_soft_atomic_execute(srq_soft_qp_t *qp, uint8_t opcode,
                                const srq_soft_pkt_atomic_t *req,
                                uint64_t *orig)
{
    int access = (opcode == SRQ_SOFT_OP_ATOMIC_WRITE) ?
                 IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_ATOMIC;
    uint64_t *target, expected, va;

    if (!(qp->attr.qp_access_flags & access)) {
        return SRQ_SOFT_NAK_INV_REQ;
    }
    if (srq_soft_mw_check_rkey(&qp->dev->fab.seg, qp->attr.qp_access_flags,
                                 qp->req_pd_id, qp->ibv.qp_num,
                                 req->rkey, req->addr, sizeof(uint64_t),
                                 access, &va) != 0) {
        return SRQ_SOFT_NAK_REM_ACCESS;
    }
    /* aligned as the requester addressed it and as it lands */
    if ((req->addr | va) & (sizeof(uint64_t) - 1)) {
        return SRQ_SOFT_NAK_INV_REQ;
    }
    target = (uint64_t*)(uintptr_t)va;
    if (opcode == SRQ_SOFT_OP_ATOMIC_WRITE) {
        __atomic_store_n(target, req->swap, __ATOMIC_SEQ_CST);
        *orig = 0;
        return 0;
    }
    if (opcode == SRQ_SOFT_OP_FETCH_ADD) {
        *orig = __atomic_fetch_add(target, req->compare_add, __ATOMIC_SEQ_CST);
        return 0;
    }
    expected = req->compare_add;
    /* on failure expected becomes the current value: the original either
     * way */
    __atomic_compare_exchange_n(target, &expected, req->swap, false,
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    *orig = expected;
    return 0;
}

bool srq_soft_atomic_has_room(srq_soft_qp_t *qp)
{
    if (qp->atomic == NULL) {
        /* most QPs never serve an atomic: the cache comes with the first */
        qp->atomic = calloc(1, sizeof(*qp->atomic));
        if (qp->atomic == NULL) {
            return false;
        }
    }
    return qp->atomic->next - qp->atomic->sent < SRQ_SOFT_MAX_RD_ATOMIC;
}

/* The next slot, taken over from the result it kept (sent already) */
static srq_soft_atomic_res_t *srq_soft_atomic_next(srq_soft_qp_t *qp,
                                                   uint32_t psn)
{
    srq_soft_atomic_res_t *res;

    res = &qp->atomic->res[qp->atomic->next % SRQ_SOFT_MAX_RD_ATOMIC];
    res->read  = false;
    res->data  = NULL;
    res->len   = 0;
    res->orig  = 0;
    res->psn   = psn;
    res->valid = true;
    ++qp->atomic->next;
    return res;
}

void srq_soft_atomic_save(srq_soft_qp_t *qp, uint32_t psn, uint64_t orig)
{
    srq_soft_atomic_next(qp, psn)->orig = orig;
}

bool srq_soft_atomic_save_read(srq_soft_qp_t *qp, uint32_t psn,
                               const void *data, uint32_t len)
{
    uint8_t *copy = NULL;
    srq_soft_atomic_res_t *res;

    if (data != NULL) {
        /* one byte at least: a zero-length READ is kept too */
        copy = malloc(len ? len : 1);
        if (copy == NULL) {
            return false;
        }
        memcpy(copy, data, len);
    }
    res       = srq_soft_atomic_next(qp, psn);
    res->read = true;
    res->data = copy;
    res->len  = len;
    return true;
}

const srq_soft_atomic_res_t *srq_soft_atomic_unsent(const srq_soft_qp_t *qp)
{
    if ((qp->atomic == NULL) || (qp->atomic->sent == qp->atomic->next)) {
        return NULL;
    }
    return &qp->atomic->res[qp->atomic->sent % SRQ_SOFT_MAX_RD_ATOMIC];
}

void srq_soft_atomic_mark_sent(srq_soft_qp_t *qp)
{
    srq_soft_atomic_res_t *res;

    res = &qp->atomic->res[qp->atomic->sent % SRQ_SOFT_MAX_RD_ATOMIC];
    if (res->read) {
        free(res->data); /* a duplicate READ executes again */
        res->data  = NULL;
        res->valid = false;
    }
    ++qp->atomic->sent;
}

const srq_soft_atomic_res_t *srq_soft_atomic_find(const srq_soft_qp_t *qp,
                                                  uint32_t psn)
{
    /* only sent results: an unsent one goes out in its turn anyway. The
     * slots before @sent that unsent ones have not taken over: */
    const srq_soft_atomic_cache_t *c = qp->atomic;
    const srq_soft_atomic_res_t *res;
    uint32_t i, n;

    if (c == NULL) {
        return NULL;
    }
    n = SRQ_SOFT_MAX_RD_ATOMIC - (c->next - c->sent);
    for (i = 1; i <= n; ++i) {
        res = &c->res[(c->sent - i) % SRQ_SOFT_MAX_RD_ATOMIC];
        if (res->valid && (res->psn == psn)) {
            return res;
        }
    }
    return NULL;
}
