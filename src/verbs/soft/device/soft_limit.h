/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the object limits ibv_query_device reports, held.
 */
#ifndef SRQ_SOFT_LIMIT_H_
#define SRQ_SOFT_LIMIT_H_

#include "../../dev/srq_verbs_types.h"

/* The verbs that create and destroy the counted objects: the device's
 * own, behind a count (ENOMEM once the limit is reached, as the kernel
 * answers) */
struct ibv_pd  *srq_soft_limit_alloc_pd(srq_verbs_dev_t *dev);
struct ibv_pd  *srq_soft_limit_alloc_parent_domain(
        srq_verbs_dev_t *dev, struct ibv_parent_domain_init_attr *attr);
int             srq_soft_limit_dealloc_pd(srq_verbs_dev_t *dev,
                                          struct ibv_pd *pd);
struct ibv_cq  *srq_soft_limit_create_cq(srq_verbs_dev_t *dev, int cqe,
                                         void *cq_context,
                                         struct ibv_comp_channel *channel,
                                         int comp_vector);
struct ibv_cq  *srq_soft_limit_create_cq_pd(srq_verbs_dev_t *dev, int cqe,
                                            void *cq_context,
                                            struct ibv_comp_channel *channel,
                                            int comp_vector,
                                            struct ibv_pd *pd);
int             srq_soft_limit_destroy_cq(srq_verbs_dev_t *dev,
                                          struct ibv_cq *cq);
struct ibv_srq *srq_soft_limit_create_srq(srq_verbs_dev_t *dev,
                                          struct ibv_pd *pd,
                                          struct ibv_srq_init_attr *attr);
int             srq_soft_limit_destroy_srq(srq_verbs_dev_t *dev,
                                           struct ibv_srq *srq);
struct ibv_qp  *srq_soft_limit_create_qp(srq_verbs_dev_t *dev,
                                         struct ibv_pd *pd,
                                         struct ibv_qp_init_attr *attr);
struct ibv_qp  *srq_soft_limit_create_qp_ex(srq_verbs_dev_t *dev,
                                            struct ibv_qp_init_attr_ex *attr);
/* @destroy: the device's destroy (it acknowledges first, soft_device.c) */
int             srq_soft_limit_destroy_qp(srq_verbs_dev_t *dev,
                                          struct ibv_qp *qp,
                                          int (*destroy)(srq_verbs_dev_t*,
                                                         struct ibv_qp*));
struct ibv_ah  *srq_soft_limit_create_ah(srq_verbs_dev_t *dev,
                                         struct ibv_pd *pd,
                                         struct ibv_ah_attr *attr);
int             srq_soft_limit_destroy_ah(srq_verbs_dev_t *dev,
                                          struct ibv_ah *ah);

#endif
