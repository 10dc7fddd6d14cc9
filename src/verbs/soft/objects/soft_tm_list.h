/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: a TM SRQ's list of tagged buffers (soft_tm.c
 * changes it and matches against it, soft_tm_rndv.c ends a rendezvous):
 * the tags, what a message's headers say, the completions a TM SRQ makes
 * on its CQ (soft_tm_list.c).
 */
#ifndef SRQ_SOFT_TM_LIST_H_
#define SRQ_SOFT_TM_LIST_H_

#include "../../dev/srq_verbs_types.h"
#include "../fabric/soft_pkt.h"
#include "../wire/soft_tmh.h"
#include "soft_cq.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct srq_soft_qp   srq_soft_qp_t;

/* What ibv_query_device_ex reports in tm_caps, and enforces */
#define SRQ_SOFT_TM_MAX_TAGS      255 /* tagged buffers in one list */
#define SRQ_SOFT_TM_MAX_OPS       512 /* list operations whose completion
                                         is not polled yet: an add and a
                                         delete of every tag of a full
                                         list, and room for syncs */
#define SRQ_SOFT_TM_MAX_SGE       1   /* SGEs of a tagged buffer */
#define SRQ_SOFT_TM_MAX_RNDV_HDR  64  /* a rendezvous request, headers and
                                         meta-data: a longer one is not
                                         matched (unexpected) */
/* FINs a QP has in its send queue at once (more: the rendezvous request
 * that needs one waits, RNR) */
#define SRQ_SOFT_TM_MAX_FIN       16

enum {
    SRQ_SOFT_TM_TAG_FREE     = 0,
    SRQ_SOFT_TM_TAG_POSTED   = 1, /* in the list */
    SRQ_SOFT_TM_TAG_CONSUMED = 2  /* matched or failed: its slot is free
                                     once its last completion is polled */
};

/* A tagged buffer */
typedef struct srq_soft_tm_tag {
    uint64_t        tag;
    uint64_t        mask;
    uint64_t        wr_id;      /* recv_wr_id: its receive completions' */
    uint64_t        seq;        /* posting order: the earliest match wins */
    struct ibv_sge  sge;
    uint32_t        num_sge;
    uint32_t        cqes;       /* receive completions made for it */
    srq_soft_cqe_tm_t cqe;      /* ... polled (the CQ bumps cqe.polled), and
                                   the message's tag and app_ctx they
                                   report */
    uint8_t         state;      /* SRQ_SOFT_TM_TAG_* */
    bool            armed;      /* may match: added while the counts
                                   agreed, or synchronised since */
} srq_soft_tm_tag_t;

/* A TM SRQ's matching state (under dev->lock) */
typedef struct srq_soft_tm {
    struct ibv_cq      *cq;
    srq_soft_tm_tag_t  *tags;       /* max_tags; handle = index + 1 */
    uint32_t            max_tags;
    uint32_t            max_ops;
    uint64_t            seq;
    /* phase synchronisation: unexpected messages delivered, and the
     * number the program last said it handled (IBV_OPS_TM_SYNC) */
    uint32_t            hw_cnt;
    uint32_t            sw_cnt;
    /* list operation completions made, and polled (the CQ bumps it) */
    uint32_t            ops_made;
    uint32_t            ops_polled;
} srq_soft_tm_t;

/* What srq_soft_tm_recv asks of the responder */
typedef enum srq_soft_tm_result {
    SRQ_SOFT_TM_DONE, /* taken: acknowledge it */
    SRQ_SOFT_TM_RNR,  /* no receive WQE (or no room for a FIN): RNR NAK */
    SRQ_SOFT_TM_NAK,  /* the sender's memory could not be read: NAK */
    SRQ_SOFT_TM_ERR   /* completed in error: NAK, the QP to error */
} srq_soft_tm_result_t;

/* A message's headers, host order */
typedef struct srq_soft_tm_hdr {
    uint8_t   opcode;   /* enum ibv_tmh_op */
    uint32_t  app_ctx;
    uint64_t  tag;
    uint64_t  va;       /* RNDV: the RVH */
    uint32_t  rkey;
    uint32_t  len;
} srq_soft_tm_hdr_t;

/* The earliest posted armed tag of @tm that matches @tag, or NULL */
srq_soft_tm_tag_t *srq_soft_tm_match(srq_soft_tm_t *tm, uint64_t tag);
/* A slot for a new tag, or NULL: max_num_tags in the list */
srq_soft_tm_tag_t *srq_soft_tm_slot(srq_soft_tm_t *tm);

/* A completion on the SRQ's CQ (NULL: the CQ overran); @pkt: of the
 * message it is for, or NULL (a list operation). The caller fills the
 * rest and publishes it with srq_soft_tm_cqe_done (srq_soft_cq_push) */
srq_soft_cqe_t *srq_soft_tm_cqe(srq_soft_tm_t *tm, srq_soft_qp_t *qp,
                                const srq_soft_pkt_t *pkt,
                                enum ibv_wc_opcode opcode,
                                enum ibv_wc_status status,
                                uint64_t wr_id, unsigned flags);
void srq_soft_tm_cqe_done(srq_soft_tm_t *tm);
/* Tag @t takes the message of @h: consumed, its slot back once every
 * receive completion made for it is polled */
void srq_soft_tm_consume(srq_soft_tm_tag_t *t, const struct srq_soft_tm_hdr *h);
/* ... a receive completion of it (IBV_WC_TM_RECV; with IBV_WC_TM_MATCH
 * its tm_info is the message's tag and app_ctx) */
void srq_soft_tm_tag_cqe(srq_soft_tm_t *tm, srq_soft_qp_t *qp,
                         srq_soft_tm_tag_t *t, const srq_soft_pkt_t *pkt,
                         enum ibv_wc_status status, uint32_t byte_len,
                         unsigned flags);
#endif
