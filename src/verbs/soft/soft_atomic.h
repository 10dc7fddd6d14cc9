/*
 * ucx-srq soft device: the responder's atomic unit - executes IB atomics
 * on this process's memory and keeps their results for replay.
 */
#ifndef SRQ_SOFT_ATOMIC_H_
#define SRQ_SOFT_ATOMIC_H_

#include "soft_pkt.h"

#include <stdbool.h>
#include <stdint.h>

/* Atomics in flight per QP (max_rd_atomic, max_dest_rd_atomic); also the
 * depth of the responder's replay cache */
#define SRQ_SOFT_MAX_RD_ATOMIC 16

typedef struct srq_soft_qp srq_soft_qp_t;

/* The result of one executed atomic, or of a READ, as the responder keeps
 * it. A READ's data is kept only until it is sent (a duplicate READ is
 * executed again, as IB allows): then the entry is no longer valid */
typedef struct srq_soft_atomic_res {
    uint64_t  orig;    /* the value before the operation */
    bool      read;    /* a READ's answer, not an atomic's */
    uint8_t  *data;    /* READ: a copy of the data read (malloc), or NULL:
                          answered without data (F_PULL) */
    uint32_t  len;     /* READ: its length */
    uint32_t  psn;
    bool      valid;
} srq_soft_atomic_res_t;

/* The responder's state: the last SRQ_SOFT_MAX_RD_ATOMIC results, of which
 * [sent, next) are still to be sent (READs and atomics share the order of
 * their PSNs). Zeroed: empty; srq_soft_atomic_free ends it */
typedef struct srq_soft_atomic_cache {
    srq_soft_atomic_res_t  res[SRQ_SOFT_MAX_RD_ATOMIC];
    uint32_t               next;
    uint32_t               sent;
} srq_soft_atomic_cache_t;

/* Execute the atomic @opcode (SRQ_SOFT_OP_CMP_SWAP/FETCH_ADD) of a request
 * on @qp: 0 and the original value in *orig, or the SRQ_SOFT_NAK_* that
 * refuses it (nothing was executed then) */
uint8_t srq_soft_atomic_execute(srq_soft_qp_t *qp, uint8_t opcode,
                                const srq_soft_pkt_atomic_t *req,
                                uint64_t *orig);
/* Can a result be kept without dropping one not yet sent? The results
 * are kept from the QP's first atomic on: false also when they cannot be
 * (no memory; the request is dropped and resent) */
bool srq_soft_atomic_has_room(srq_soft_qp_t *qp);
/* Keep the result of the atomic of @psn (to be sent) */
void srq_soft_atomic_save(srq_soft_qp_t *qp, uint32_t psn, uint64_t orig);
/* Keep a copy of the @len bytes the READ of @psn read at @data (to be
 * sent), or with @data NULL its answer without data (F_PULL); false with
 * nothing kept when there is no memory for it */
bool srq_soft_atomic_save_read(srq_soft_qp_t *qp, uint32_t psn,
                               const void *data, uint32_t len);
/* The oldest result not sent yet, or NULL */
const srq_soft_atomic_res_t *srq_soft_atomic_unsent(const srq_soft_qp_t *qp);
/* ... was sent (a READ's copy is freed) */
void srq_soft_atomic_mark_sent(srq_soft_qp_t *qp);
/* Free the QP's results and what they keep (reset, destroy) */
void srq_soft_atomic_free(srq_soft_qp_t *qp);
/* The sent result of the atomic of @psn, if still kept */
const srq_soft_atomic_res_t *srq_soft_atomic_find(const srq_soft_qp_t *qp,
                                                  uint32_t psn);

#endif
