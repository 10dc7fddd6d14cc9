/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: tag-matching offload, our rendezvous sends waiting for their
 * FIN: a table of UCT_SRQ_TM_MAX_RNDV entries, each named in its TMH by an
 * app_ctx (a sequence times the table's size, plus the entry's index), so
 * that a FIN for an entry reused since is not taken for the new one.
 */
#include "srq_tm_rndv.h"

#include <ucs/debug/log_def.h>

ucs_status_t uct_srq_tm_rndv_add(uct_srq_tm_t *tm, uct_completion_t *comp,
                                 void *conn, uint32_t *app_ctx_p)
{
    unsigned idx;

    if (tm->rndv_used >= UCT_SRQ_TM_MAX_RNDV) {
        return UCS_ERR_NO_RESOURCE;
    }
    for (idx = tm->rndv_next; tm->rndv[idx].comp != NULL;
         idx = (idx + 1) % UCT_SRQ_TM_MAX_RNDV) {
    }
    tm->rndv_next = (idx + 1) % UCT_SRQ_TM_MAX_RNDV;
    /* 0 is no rendezvous: a sequence that wraps skips it */
    do {
        *app_ctx_p = (++tm->rndv_seq * UCT_SRQ_TM_MAX_RNDV) + idx;
    } while (*app_ctx_p == 0);
    tm->rndv[idx].comp    = comp;
    tm->rndv[idx].conn    = conn;
    tm->rndv[idx].app_ctx = *app_ctx_p;
    ++tm->rndv_used;
    return UCS_OK;
}

/* The rendezvous send @app_ctx, if it is still waiting for its FIN */
static uct_srq_tm_rndv_t *uct_srq_tm_rndv_of(uct_srq_tm_t *tm,
                                             uint32_t app_ctx)
{
    uct_srq_tm_rndv_t *rndv = &tm->rndv[app_ctx % UCT_SRQ_TM_MAX_RNDV];

    return ((app_ctx != 0) && (rndv->comp != NULL) &&
            (rndv->app_ctx == app_ctx)) ? rndv : NULL;
}

/* Take @rndv off the table: its completion is its taker's */
static uct_completion_t *uct_srq_tm_rndv_take(uct_srq_tm_t *tm,
                                              uct_srq_tm_rndv_t *rndv)
{
    uct_completion_t *comp = rndv->comp;

    rndv->comp = NULL;
    --tm->rndv_used;
    return comp;
}

ucs_status_t uct_srq_tm_rndv_cancel(uct_srq_tm_t *tm, uint32_t app_ctx)
{
    uct_srq_tm_rndv_t *rndv = uct_srq_tm_rndv_of(tm, app_ctx);

    if (rndv == NULL) {
        return UCS_ERR_NO_ELEM;
    }
    uct_srq_tm_rndv_take(tm, rndv);
    return UCS_OK;
}

void uct_srq_tm_fin(uct_srq_tm_t *tm, uint32_t app_ctx)
{
    uct_srq_tm_rndv_t *rndv = uct_srq_tm_rndv_of(tm, app_ctx);

    if (rndv == NULL) {
        /* canceled meanwhile, or not ours */
        ucs_debug("srq: FIN of no waiting rendezvous (app_ctx 0x%x)",
                  app_ctx);
        return;
    }
    ++tm->stats.fin;
    uct_invoke_completion(uct_srq_tm_rndv_take(tm, rndv), UCS_OK);
}

void uct_srq_tm_conn_failed(uct_srq_tm_t *tm, void *conn, ucs_status_t status)
{
    unsigned i;

    for (i = 0; tm->enabled && (tm->rndv_used > 0) &&
                (i < UCT_SRQ_TM_MAX_RNDV); ++i) {
        if ((tm->rndv[i].comp != NULL) && (tm->rndv[i].conn == conn)) {
            uct_invoke_completion(uct_srq_tm_rndv_take(tm, &tm->rndv[i]),
                                  status);
        }
    }
}
