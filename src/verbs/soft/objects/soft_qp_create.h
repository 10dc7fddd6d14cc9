/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: creating a queue pair (soft_qp_create.c).
 */
#ifndef SRQ_SOFT_QP_CREATE_H_
#define SRQ_SOFT_QP_CREATE_H_

#include "../srq_soft_api.h"

struct ibv_qp *srq_soft_create_qp(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                  struct ibv_qp_init_attr *attr);
/* ... an XRC target (IBV_QPT_XRC_RECV) too: in the domain @xrcd, whose
 * handle counts it in @xrcd_users while it lives (both NULL otherwise;
 * an XRC target without them is EINVAL) */
struct ibv_qp *srq_soft_create_qp_in(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                     struct ibv_qp_init_attr *attr,
                                     struct ibv_xrcd *xrcd, int *xrcd_users);

#endif
