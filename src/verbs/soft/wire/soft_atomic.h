/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the responder's atomic unit - executes IB atomics
 * on this process's memory and keeps their results for replay.
 */
#ifndef SRQ_SOFT_ATOMIC_H_
#define SRQ_SOFT_ATOMIC_H_

#include "../fabric/soft_pkt.h"
#include "../objects/soft_qp.h"

#include <stdbool.h>
#include <stdint.h>

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
/* The sent result of the atomic of @psn, if still kept */
const srq_soft_atomic_res_t *srq_soft_atomic_find(const srq_soft_qp_t *qp,
                                                  uint32_t psn);

#endif
