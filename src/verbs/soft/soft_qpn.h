/*
 * ucx-srq soft device: the QP numbers of the process. Every instance of a
 * process draws its QP numbers from one space, as every context of one HCA
 * does, so that a QP number names one QP in the process, whichever
 * instance owns it.
 */
#ifndef SRQ_SOFT_QPN_H_
#define SRQ_SOFT_QPN_H_

#include <stdint.h>

/* A new QP number owned by @instance, in *qpn_p: 0 or ENOMEM */
int  srq_soft_qpn_alloc(const uint8_t *instance, uint32_t *qpn_p);
void srq_soft_qpn_free(uint32_t qpn);
/* The instance that owns the live QP number @qpn: 0, or ENOENT */
int  srq_soft_qpn_owner(uint32_t qpn, uint8_t *instance);

/* The index of a QP number in its owner's table */
static inline uint32_t srq_soft_qpn_index(uint32_t qpn)
{
    return qpn & 0xffffu;
}

#endif
