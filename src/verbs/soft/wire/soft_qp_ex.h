/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: extended QPs (ibv_create_qp_ex) and the ibv_wr_*
 * post API, built on ibv_post_send's own post path (soft_post.c).
 */
#ifndef SRQ_SOFT_QP_EX_H_
#define SRQ_SOFT_QP_EX_H_

#include "../../dev/srq_verbs_types.h"
#include "../objects/soft_qp.h"

typedef struct srq_soft_qp srq_soft_qp_t;

/* The send operations soft0 does on a QP of @qp_type (IBV_QP_EX_WITH_*) */
uint64_t srq_soft_qp_ex_send_ops(enum ibv_qp_type qp_type);

/*
 * ibv_create_qp_ex: IBV_QP_INIT_ATTR_PD (required), _SEND_OPS_FLAGS (the
 * QP gets the ibv_wr_* API: ibv_qp_to_qp_ex() finds it), _CREATE_FLAGS
 * with no flag; any other attribute, create flag or send operation soft0
 * does not do: EOPNOTSUPP, as providers answer. @create: the device's
 * ibv_create_qp (behind its count of QPs).
 */
struct ibv_qp *srq_soft_create_qp_ex(srq_verbs_dev_t *dev,
                                     struct ibv_qp_init_attr_ex *attr,
                                     srq_soft_qp_create_fn_t create);

#endif
