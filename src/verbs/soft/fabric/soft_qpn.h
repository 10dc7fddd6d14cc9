/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: QP numbers, unique among the live QPs of the
 * user's processes in one sharing domain of the host, as the QP numbers
 * of one HCA port are among its contexts. A table in the user's
 * directory (soft_lid.h) says which instance owns each, so that a packet
 * addressed to a port (soft_port.h) reaches the instance whose QP it
 * names, in this process or another.
 */
#ifndef SRQ_SOFT_QPN_H_
#define SRQ_SOFT_QPN_H_

#include <stddef.h>
#include <stdint.h>

/* A new QP number owned by @instance of process @owner (srq_soft_proc_id),
 * in *qpn_p: 0, ENOMEM (every number in use) or the table's errno */
int  srq_soft_qpn_alloc(const uint8_t *instance, uint64_t owner,
                        uint32_t *qpn_p);
/* Give back @qpn, held by process @owner (nothing unless that is us) */
void srq_soft_qpn_free(uint32_t qpn, uint64_t owner);
/* The instance that owns the live QP number @qpn: 0, or ENOENT */
int  srq_soft_qpn_owner(uint32_t qpn, uint8_t *instance);
/* An instance whose id begins with the @len bytes of @prefix and that
 * owns a live QP (a scan of the table: the slow path), into @instance:
 * 0, or ENOENT */
int  srq_soft_qpn_any_owner(const uint8_t *prefix, size_t len,
                            uint8_t *instance);

/* The index of a QP number in its owner's table */
static inline uint32_t srq_soft_qpn_index(uint32_t qpn)
{
    return qpn & 0xffffu;
}

#endif
