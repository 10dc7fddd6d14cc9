/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: tag matching, through libibverbs only (the project API
 * has no ibv_create_srq_ex; the verbs backend leaves it NULL, as for
 * XRC). One op makes and removes everything it uses: the refusals of
 * ibv_create_srq_ex for a TM SRQ, a TM SRQ with a CQ of the op's own and
 * small random list sizes, then two random chains of list operations,
 * valid and not (too many SGEs, a full list, a handle no tag can have,
 * more completions than max_ops, an unknown opcode or flag, a TAG_DEL of
 * a tag not in the list), each checked against a model of the list: the
 * errno and *bad_wr, the handles, and the completions with their wr_ids,
 * opcodes, statuses and IBV_WC_TM_SYNC_REQ. No message is sent: matching
 * is test_tm.cc's.
 */
#include "fz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FZ_TM_SRQ    (IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | \
                      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM)
#define FZ_TM_TAGS   4   /* the most tags an op's SRQ has */
#define FZ_TM_CHAIN  8   /* the most operations in a chain */
#define FZ_TM_POLLS  1000000

/* What the op knows of its SRQ's list */
typedef struct fz_tm_model {
    uint32_t max_tags, max_ops;
    bool     posted[FZ_TM_TAGS + 1]; /* by handle */
    uint32_t ntags;
    uint32_t cqes;                   /* completions made, not polled */
    uint32_t sw_cnt;                 /* the count last reported (no
                                        message arrives: the device's 0) */
} fz_tm_model_t;

/* A completion the model expects */
typedef struct fz_tm_wc {
    uint64_t wr_id;
    int      opcode;
    int      status;
    bool     sync_req;
} fz_tm_wc_t;

static struct ibv_srq *fz_tm_srq(fz_t *fz, struct ibv_cq *cq, uint32_t mask,
                                 uint32_t tags, uint32_t ops)
{
    struct ibv_srq_init_attr_ex attr;

    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr         = 4;
    attr.attr.max_sge        = 1;
    attr.comp_mask           = mask;
    attr.srq_type            = IBV_SRQT_TM;
    attr.pd                  = fz->pd;
    attr.cq                  = cq;
    attr.tm_cap.max_num_tags = tags;
    attr.tm_cap.max_ops      = ops;
    errno = 0;
    return FZ_BE(fz, create_srq_ex, &attr);
}

/* A handle for a TAG_DEL whose outcome the model knows: none a tag can
 * have, one in the list (known before the chain), or - while no TAG_ADD
 * of the chain may have taken it (@added) - one not in the list */
static uint32_t fz_tm_del_handle(fz_t *fz, const fz_tm_model_t *m, bool added)
{
    uint32_t h, start = fz_range(&fz->rnd, 1, m->max_tags), i;
    bool want = fz_chance(&fz->rnd, 60);

    if (fz_chance(&fz->rnd, 25)) {
        return fz_chance(&fz->rnd, 50) ? 0 : m->max_tags + 1;
    }
    for (i = 0; i < m->max_tags; ++i) {
        h = 1 + (start - 1 + i) % m->max_tags;
        if (m->posted[h] == want) {
            if (!want && added) {
                break; /* a TAG_ADD before it may hold it now */
            }
            return h;
        }
    }
    return m->max_tags + 1;
}

/* A random operation, valid or not, into @wr (its SGE @sge, in @mr), as
 * the list stands in @m */
static void fz_tm_make(fz_t *fz, const fz_tm_model_t *m, bool added,
                       struct ibv_ops_wr *wr, struct ibv_sge *sge,
                       struct ibv_mr *mr)
{
    unsigned kind = fz_range(&fz->rnd, 0, 99);

    memset(wr, 0, sizeof(*wr));
    wr->wr_id = ++fz->next_wr_id;
    wr->flags = fz_chance(&fz->rnd, 70) ? IBV_OPS_SIGNALED : 0;
    if (fz_chance(&fz->rnd, 15)) {
        wr->flags |= IBV_OPS_TM_SYNC; /* 1 in 4 of them out of step */
        wr->tm.unexpected_cnt = fz_chance(&fz->rnd, 25) ? 1 : 0;
    }
    if (kind < 45) {
        wr->opcode            = IBV_WR_TAG_ADD;
        wr->tm.add.recv_wr_id = wr->wr_id;
        wr->tm.add.tag        = fz_rand(&fz->rnd);
        wr->tm.add.mask       = fz_rand(&fz->rnd);
        wr->tm.add.sg_list    = sge;
        wr->tm.add.num_sge    = fz_chance(&fz->rnd, 10) ? 2 :
                                fz_chance(&fz->rnd, 10) ? 0 : 1;
        sge[0].addr   = (uintptr_t)mr->addr;
        sge[0].length = 64;
        sge[0].lkey   = mr->lkey;
        sge[1]        = sge[0];
    } else if (kind < 75) {
        wr->opcode    = IBV_WR_TAG_DEL;
        wr->tm.handle = fz_tm_del_handle(fz, m, added);
    } else if (kind < 92) {
        wr->opcode = IBV_WR_TAG_SYNC;
    } else if (kind < 96) {
        wr->opcode = (enum ibv_ops_wr_opcode)(IBV_WR_TAG_SYNC + 1 +
                                              fz_range(&fz->rnd, 0, 5));
    } else {
        wr->opcode = IBV_WR_TAG_SYNC;
        wr->flags |= 1 << fz_range(&fz->rnd, 2, 12);
    }
}

/* The failure @wr meets in the model (its id), or -1: none */
static int fz_tm_failure(const fz_tm_model_t *m, const struct ibv_ops_wr *wr)
{
    if (wr->flags & ~(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC)) {
        return FZ_F(ibv_post_srq_ops, flags_invalid);
    }
    switch (wr->opcode) {
    case IBV_WR_TAG_ADD:
        if ((wr->tm.add.num_sge < 0) || (wr->tm.add.num_sge > 1)) {
            return FZ_F(ibv_post_srq_ops, num_sge_invalid);
        }
        if (m->ntags == m->max_tags) {
            return FZ_F(ibv_post_srq_ops, list_full);
        }
        break;
    case IBV_WR_TAG_DEL:
        if ((wr->tm.handle == 0) || (wr->tm.handle > m->max_tags)) {
            return FZ_F(ibv_post_srq_ops, handle_invalid);
        }
        break;
    case IBV_WR_TAG_SYNC:
        break;
    default:
        return FZ_F(ibv_post_srq_ops, opcode_invalid);
    }
    if (((wr->flags & IBV_OPS_SIGNALED) || (wr->opcode == IBV_WR_TAG_DEL)) &&
        (m->cqes >= m->max_ops)) {
        return FZ_F(ibv_post_srq_ops, ops_full);
    }
    return -1;
}

/* What a done operation changes in the model; the completion it makes.
 * @fz NULL: a run ahead of the post, a TAG_ADD's handle not known yet */
static bool fz_tm_apply(fz_t *fz, fz_tm_model_t *m, const struct ibv_ops_wr *wr,
                        fz_tm_wc_t *wc)
{
    static const int opcodes[] = { IBV_WC_TM_ADD, IBV_WC_TM_DEL,
                                   IBV_WC_TM_SYNC };
    uint32_t h = wr->tm.handle;

    if (wr->flags & IBV_OPS_TM_SYNC) {
        m->sw_cnt = wr->tm.unexpected_cnt;
    }
    wc->wr_id    = wr->wr_id;
    wc->opcode   = opcodes[wr->opcode];
    wc->status   = IBV_WC_SUCCESS;
    wc->sync_req = (m->sw_cnt != 0);
    if ((wr->opcode == IBV_WR_TAG_ADD) && (fz == NULL)) {
        ++m->ntags;
    } else if (wr->opcode == IBV_WR_TAG_ADD) {
        if ((h == 0) || (h > m->max_tags) || m->posted[h]) {
            fz_violation(fz, "ibv_post_srq_ops", "TAG_ADD gave handle %u "
                         "(list of %u, in use: %d)", h, m->max_tags,
                         (h > 0) && (h <= m->max_tags) && m->posted[h]);
            return false;
        }
        m->posted[h] = true;
        ++m->ntags;
    } else if (wr->opcode == IBV_WR_TAG_DEL) {
        if (m->posted[h]) {
            m->posted[h] = false;
            --m->ntags;
        } else {
            wc->status = IBV_WC_TM_ERR; /* no such tag in the list */
        }
    }
    if (!(wr->flags & IBV_OPS_SIGNALED) && (wc->status == IBV_WC_SUCCESS)) {
        return false;
    }
    ++m->cqes;
    return true;
}

/* The completions of the chain, in order, and no other */
static void fz_tm_poll(fz_t *fz, struct ibv_cq *cq, const fz_tm_wc_t *exp,
                       uint32_t n)
{
    struct ibv_wc wc[FZ_TM_CHAIN + 1];
    uint32_t got = 0, i;
    long polls;
    int r;

    for (polls = 0; (got < n) && (polls < FZ_TM_POLLS); ++polls) {
        r = fz_poll(fz, cq, (int)(n - got), wc + got);
        got += (r > 0) ? (uint32_t)r : 0;
    }
    if ((got < n) || (fz_poll(fz, cq, 1, wc + got) != 0)) {
        fz_violation(fz, "ibv_post_srq_ops", "%u completions, %u expected",
                     got + ((got < n) ? 0 : 1), n);
        return;
    }
    for (i = 0; i < n; ++i) {
        if (exp[i].status == IBV_WC_TM_ERR) {
            fz_wc_is(fz, FZ_F(ibv_post_srq_ops, tag_consumed), &wc[i]);
        }
        if ((wc[i].wr_id != exp[i].wr_id) || ((int)wc[i].opcode != exp[i].opcode) ||
            ((int)wc[i].status != exp[i].status) ||
            (!!(wc[i].wc_flags & IBV_WC_TM_SYNC_REQ) != exp[i].sync_req)) {
            fz_violation(fz, "ibv_post_srq_ops", "completion %u: wr_id 0x%llx "
                         "opcode %d status %d sync_req %d, expected 0x%llx %d "
                         "%d %d", i, (unsigned long long)wc[i].wr_id,
                         wc[i].opcode, wc[i].status,
                         !!(wc[i].wc_flags & IBV_WC_TM_SYNC_REQ),
                         (unsigned long long)exp[i].wr_id, exp[i].opcode,
                         exp[i].status, exp[i].sync_req);
        }
    }
}

/* One chain posted and checked; its completions polled */
static void fz_tm_chain(fz_t *fz, fz_tm_model_t *m, struct ibv_srq *srq,
                        struct ibv_cq *cq, struct ibv_mr *mr)
{
    struct ibv_ops_wr wr[FZ_TM_CHAIN], *bad = NULL;
    struct ibv_sge sge[FZ_TM_CHAIN][2];
    fz_tm_wc_t exp[FZ_TM_CHAIN], ignored;
    fz_tm_model_t sim = *m;
    uint32_t n = fz_range(&fz->rnd, 1, FZ_TM_CHAIN), i, k = n, nexp = 0;
    bool added = false;
    int fid = -1, ret;

    /* made one by one in a model run ahead: where the chain fails */
    for (i = 0; i < n; ++i) {
        fz_tm_make(fz, &sim, added, &wr[i], sge[i], mr);
        wr[i].next = (i + 1 < n) ? &wr[i + 1] : NULL;
        if (k < n) {
            continue; /* behind the failure: never done */
        }
        fid = fz_tm_failure(&sim, &wr[i]);
        if (fid >= 0) {
            k = i;
            continue;
        }
        fz_tm_apply(NULL, &sim, &wr[i], &ignored);
        added |= (wr[i].opcode == IBV_WR_TAG_ADD);
    }
    ++fz->calls;
    ret = ibv_post_srq_ops(srq, wr, &bad);
    if (fid >= 0) {
        fz_fails(fz, fid, ret);
        fz_post(fz, FZ_P(ibv_post_srq_ops, chain_prefix_done), bad == &wr[k],
                "*bad_wr is operation %d, the model's %u",
                (bad != NULL) ? (int)(bad - wr) : -1, k);
    } else {
        fz_ok(fz, "ibv_post_srq_ops", ret);
    }
    for (i = 0; i < k; ++i) {
        if (fz_tm_apply(fz, m, &wr[i], &exp[nexp])) {
            ++nexp;
        }
    }
    fz_tm_poll(fz, cq, exp, nexp);
    m->cqes = 0;
}

/* The op's own memory, SRQ and CQ; two chains; all gone again */
static void fz_tm_list(fz_t *fz, struct ibv_cq *cq, struct ibv_mr *mr)
{
    fz_tm_model_t m;
    struct ibv_srq *srq;

    memset(&m, 0, sizeof(m));
    m.max_tags = fz_range(&fz->rnd, 1, FZ_TM_TAGS);
    m.max_ops  = fz_range(&fz->rnd, 1, 4);
    srq = fz_tm_srq(fz, cq, FZ_TM_SRQ, m.max_tags, m.max_ops);
    if (!fz_ok(fz, "ibv_create_srq_ex", (srq != NULL) ? 0 : errno ? errno : -1)) {
        return;
    }
    fz_tm_chain(fz, &m, srq, cq, mr);
    fz_tm_chain(fz, &m, srq, cq, mr);
    fz_ok(fz, "ibv_destroy_srq", FZ_BE(fz, destroy_srq, srq));
}

void fz_tm(fz_t *fz)
{
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    struct ibv_mr *mr = NULL;
    void *buf;

    if (fz->dev.be->create_srq_ex == NULL) {
        return; /* the project API: no ibv_create_srq_ex */
    }
    cq = FZ_BE(fz, create_cq, 2 * FZ_TM_CHAIN);
    if (!fz_ok(fz, "ibv_create_cq", (cq != NULL) ? 0 : errno ? errno : -1)) {
        return;
    }
    srq = fz_tm_srq(fz, cq, FZ_TM_SRQ & ~IBV_SRQ_INIT_ATTR_TM, 1, 1);
    fz_create_fails(fz, FZ_F(ibv_create_srq_ex, tm_incomplete), srq, errno);
    srq = fz_tm_srq(fz, cq, FZ_TM_SRQ, 0, 1);
    fz_create_fails(fz, FZ_F(ibv_create_srq_ex, tm_cap_invalid), srq, errno);
    buf = aligned_alloc(64, 128);
    if (buf != NULL) {
        mr = FZ_BE(fz, reg_mr, fz->pd, buf, 128, IBV_ACCESS_LOCAL_WRITE);
    }
    if (fz_ok(fz, "ibv_reg_mr", (mr != NULL) ? 0 : errno ? errno : -1)) {
        fz_tm_list(fz, cq, mr);
        fz_ok(fz, "ibv_dereg_mr", FZ_BE(fz, dereg_mr, mr));
    }
    free(buf);
    fz_ok(fz, "ibv_destroy_cq", FZ_BE(fz, destroy_cq, cq));
}
