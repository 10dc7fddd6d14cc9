/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: the interface each device kind implements.
 * srq_verbs_device.c dispatches every control-path call through it; a
 * kind (soft/, srq_verbs_rdma.c) fills it in. It sits below both, as the
 * kernel's <rdma/ib_verbs.h> sits below its drivers.
 */
#ifndef SRQ_VERBS_DEV_H_
#define SRQ_VERBS_DEV_H_

#include "srq_verbs_types.h"

typedef struct srq_verbs_dev_ops {
    void (*close)(srq_verbs_dev_t *dev);
    int  (*query_device)(srq_verbs_dev_t *dev, struct ibv_device_attr *attr);
    int  (*query_device_ex)(srq_verbs_dev_t *dev,
                            struct ibv_device_attr_ex *attr);
    int  (*query_port)(srq_verbs_dev_t *dev, uint8_t port_num,
                       struct ibv_port_attr *attr);
    int  (*port_addr)(srq_verbs_dev_t *dev, uint8_t port_num,
                      srq_verbs_port_addr_t *addr);
    int  (*ah_attr)(srq_verbs_dev_t *dev, uint8_t port_num,
                    const srq_verbs_port_addr_t *addr,
                    struct ibv_ah_attr *ah_attr);

    struct ibv_pd *(*alloc_pd)(srq_verbs_dev_t *dev);
    int  (*dealloc_pd)(srq_verbs_dev_t *dev, struct ibv_pd *pd);
    struct ibv_td *(*alloc_td)(srq_verbs_dev_t *dev,
                               struct ibv_td_init_attr *attr);
    int  (*dealloc_td)(srq_verbs_dev_t *dev, struct ibv_td *td);
    /* a parent domain is a PD: dealloc_pd frees it */
    struct ibv_pd *(*alloc_parent_domain)(
            srq_verbs_dev_t *dev, struct ibv_parent_domain_init_attr *attr);
    struct ibv_mr *(*reg_mr)(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                             void *addr, size_t length, int access);
    struct ibv_mr *(*reg_mr_iova)(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                  void *addr, size_t length, uint64_t iova,
                                  int access);
    int  (*dereg_mr)(srq_verbs_dev_t *dev, struct ibv_mr *mr);
    int  (*rereg_mr)(srq_verbs_dev_t *dev, struct ibv_mr *mr, int flags,
                     struct ibv_pd *pd, void *addr, size_t length,
                     int access);
    int  (*advise_mr)(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                      enum ibv_advise_mr_advice advice, uint32_t flags,
                      struct ibv_sge *sg_list, uint32_t num_sge);

    struct ibv_comp_channel *(*create_comp_channel)(srq_verbs_dev_t *dev);
    int  (*destroy_comp_channel)(srq_verbs_dev_t *dev,
                                 struct ibv_comp_channel *channel);
    struct ibv_cq *(*create_cq)(srq_verbs_dev_t *dev, int cqe, void *cq_context,
                                struct ibv_comp_channel *channel,
                                int comp_vector);
    int  (*destroy_cq)(srq_verbs_dev_t *dev, struct ibv_cq *cq);
    struct ibv_cq_ex *(*create_cq_ex)(srq_verbs_dev_t *dev,
                                      struct ibv_cq_init_attr_ex *attr);
    int  (*resize_cq)(srq_verbs_dev_t *dev, struct ibv_cq *cq, int cqe);
    int  (*get_cq_event)(srq_verbs_dev_t *dev, struct ibv_comp_channel *channel,
                         struct ibv_cq **cq_p, void **cq_context_p);
    void (*ack_cq_events)(srq_verbs_dev_t *dev, struct ibv_cq *cq,
                          unsigned nevents);

    struct ibv_srq *(*create_srq)(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                  struct ibv_srq_init_attr *attr);
    int  (*modify_srq)(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                       struct ibv_srq_attr *attr, int attr_mask);
    int  (*query_srq)(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                      struct ibv_srq_attr *attr);
    int  (*destroy_srq)(srq_verbs_dev_t *dev, struct ibv_srq *srq);
    struct ibv_srq *(*create_srq_ex)(srq_verbs_dev_t *dev,
                                     struct ibv_srq_init_attr_ex *attr);
    int  (*post_srq_ops)(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                         struct ibv_ops_wr *wr, struct ibv_ops_wr **bad_wr);

    struct ibv_qp *(*create_qp)(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                struct ibv_qp_init_attr *attr);
    struct ibv_qp *(*create_qp_ex)(srq_verbs_dev_t *dev,
                                   struct ibv_qp_init_attr_ex *attr);
    int  (*modify_qp)(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                      struct ibv_qp_attr *attr, int attr_mask);
    int  (*query_qp)(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                     struct ibv_qp_attr *attr, int attr_mask,
                     struct ibv_qp_init_attr *init_attr);
    int  (*destroy_qp)(srq_verbs_dev_t *dev, struct ibv_qp *qp);

    struct ibv_ah *(*create_ah)(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                struct ibv_ah_attr *attr);
    int  (*destroy_ah)(srq_verbs_dev_t *dev, struct ibv_ah *ah);

    int  (*async_fd)(srq_verbs_dev_t *dev);
    int  (*get_async_event)(srq_verbs_dev_t *dev, struct ibv_async_event *event);
    void (*ack_async_event)(srq_verbs_dev_t *dev, struct ibv_async_event *event);

    int  (*query_srq_rnr)(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                          uint64_t *count_p);
} srq_verbs_dev_ops_t;


/* Common head of every opened device; a kind embeds it first. */
struct srq_verbs_dev {
    const srq_verbs_dev_ops_t *ops;
    srq_verbs_dev_kind_t       kind;
    char                       name[SRQ_VERBS_DEV_NAME_MAX];
    struct ibv_context        *context;
};

/* rdma-core kind (srq_verbs_rdma.c) */
int srq_verbs_rdma_get_device_list(srq_verbs_dev_info_t **list_p, int *num_p);
int srq_verbs_rdma_open(const char *name, srq_verbs_dev_t **dev_p);

/* soft kind (soft/device/soft_device.c) */
int srq_soft_get_device_list(srq_verbs_dev_info_t **list_p, int *num_p);
int srq_soft_open(const char *name, srq_verbs_dev_t **dev_p);

#endif
