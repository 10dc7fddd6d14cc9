/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: ibv_advise_mr on the scene's receive region, when it is
 * an on-demand paging one (fz_scene.c registers it so half the time, where
 * the device has ODP): a prefetch of a random range succeeds, and each
 * refusal is the contract's.
 */
#include "fz.h"

/* (the receives posted in the range land as ever: a prefetch changes no
 * byte) */
void fz_advise(fz_t *fz)
{
    const size_t len = (size_t)FZ_NUM_SLOTS * FZ_SLOT_SIZE;
    uint32_t off     = fz_range(&fz->rnd, 0, len - 1);
    struct ibv_sge sge;

    if (!fz->mr_odp) {
        return;
    }
    sge.addr   = (uintptr_t)fz->buf + off;
    sge.length = fz_range(&fz->rnd, 1, len - off);
    sge.lkey   = fz->mr->lkey;
    switch (fz_range(&fz->rnd, 0, 4)) {
    case 0:
        fz_fails(fz, FZ_F(ibv_advise_mr, flags_invalid),
                 FZ_BE(fz, advise_mr, fz->pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
                       1u << fz_range(&fz->rnd, 1, 31), &sge, 1));
        break;
    case 1:
        /* a key no region has, or the send region's (pinned) */
        sge.lkey = fz_chance(&fz->rnd, 50) ? fz->dead_lkey : fz->smr->lkey;
        sge.addr = (sge.lkey == fz->dead_lkey) ? sge.addr :
                                                 (uintptr_t)fz->sbuf;
        sge.length = 64;
        fz_fails(fz, FZ_F(ibv_advise_mr, lkey_invalid),
                 FZ_BE(fz, advise_mr, fz->pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
                       IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
        break;
    case 2:
        sge.length = len - off + fz_range(&fz->rnd, 1, 4096);
        fz_fails(fz, FZ_F(ibv_advise_mr, out_of_bounds),
                 FZ_BE(fz, advise_mr, fz->pd,
                       IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                       IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
        break;
    default:
        fz_ok(fz, "ibv_advise_mr",
              FZ_BE(fz, advise_mr, fz->pd,
                    fz_chance(&fz->rnd, 50) ?
                    IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE :
                    IBV_ADVISE_MR_ADVICE_PREFETCH,
                    fz_chance(&fz->rnd, 50) ? IBV_ADVISE_MR_FLAG_FLUSH : 0,
                    &sge, 1));
        break;
    }
}
