/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq libibverbs provider: the private interface between libibverbs
 * and its providers (drivers), as rdma-core 44 defines it, declared here
 * for the soft device to stand where a provider stands.
 *
 * This interface is not public. libibverbs versions it with the symbol
 * version IBVERBS_PRIVATE_<n> and changes <n> whenever one of the layouts
 * below changes; srq_ibv_abi_resolve() finds the three functions we need
 * under exactly the version we were written for, and the device is offered
 * only then. Every declaration below is written from the layouts
 * libibverbs uses at run time; none is copied.
 */
#ifndef SRQ_IBV_ABI_H_
#define SRQ_IBV_ABI_H_

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The names the device is registered and found under: ibv_get_device_name,
 * and the uverbs node (the one thing of the device this layer names) */
#define SRQ_IBV_DEV_NAME      "soft0"
#define SRQ_IBV_UVERBS_NAME   "uverbs-soft0"
#define SRQ_IBV_UVERBS_PATH   "/dev/infiniband/" SRQ_IBV_UVERBS_NAME

/* The version of the private symbols this file describes */
#define SRQ_IBV_PRIVATE_ABI  "IBVERBS_PRIVATE_34"

/* The GID types sysfs names (driver.h's enum ibv_gid_type_sysfs) */
enum srq_ibv_gid_type_sysfs {
    SRQ_IBV_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
    SRQ_IBV_GID_TYPE_SYSFS_ROCE_V2    = 1
};

/* libibverbs' doubly linked list node (ccan list) */
typedef struct srq_ibv_list_node {
    struct srq_ibv_list_node *next, *prev;
} srq_ibv_list_node_t;

struct verbs_sysfs_dev;   /* never dereferenced: our devices have none */
struct verbs_match_ent;

/* What a provider registers: how to match and open its devices */
struct verbs_device_ops {
    const char                      *name;
    uint32_t                         match_min_abi_version;
    uint32_t                         match_max_abi_version;
    const struct verbs_match_ent    *match_table;
    const struct verbs_device_ops  **static_providers;
    bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
    struct verbs_context *(*alloc_context)(struct ibv_device *device,
                                           int cmd_fd, void *private_data);
    struct verbs_context *(*import_context)(struct ibv_device *device,
                                            int cmd_fd);
    struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
    void (*uninit_device)(struct verbs_device *device);
};

/* The object an ibv_device * points at: a device with its provider.
 * sysfs NULL tells libibverbs there is no kernel device to open. */
struct verbs_device {
    struct ibv_device               device;
    const struct verbs_device_ops  *ops;
    atomic_int                      refcount;
    srq_ibv_list_node_t             entry;
    struct verbs_sysfs_dev         *sysfs;
    uint64_t                        core_support;
};

/* An MR as libibverbs lays it out: ibv_dereg_mr reads the two fields past
 * struct ibv_mr */
struct verbs_mr {
    struct ibv_mr   ibv_mr;
    uint32_t        mr_type;    /* enum ibv_mr_type: 0 = IBV_MR_TYPE_MR */
    int             access;
};

/*
 * The provider operations, one pointer each, in libibverbs' order
 * (alphabetical). Those the soft device implements have their types; the
 * others are placeholders that stay NULL, so that libibverbs keeps its own
 * "not supported" entries for them.
 */
typedef void (*srq_ibv_op_t)(void);

struct verbs_context_ops {
    int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
                     uint32_t flags, struct ibv_sge *sg_list,
                     uint32_t num_sge);
    struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
                               struct ibv_alloc_dm_attr *attr);
    struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
    srq_ibv_op_t alloc_null_mr;
    struct ibv_pd *(*alloc_parent_domain)(
            struct ibv_context *context,
            struct ibv_parent_domain_init_attr *attr);
    struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
    struct ibv_td *(*alloc_td)(struct ibv_context *context,
                               struct ibv_td_init_attr *init_attr);
    void (*async_event)(struct ibv_context *context,
                        struct ibv_async_event *event);
    srq_ibv_op_t attach_counters_point_flow, attach_mcast;
    int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
                   struct ibv_mw_bind *mw_bind);
    int (*close_xrcd)(struct ibv_xrcd *xrcd);
    void (*cq_event)(struct ibv_cq *cq);
    struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
    srq_ibv_op_t create_counters;
    struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
                                struct ibv_comp_channel *channel,
                                int comp_vector);
    struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
                                      struct ibv_cq_init_attr_ex *init_attr);
    srq_ibv_op_t create_flow, create_flow_action_esp;
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
                                struct ibv_qp_init_attr *attr);
    struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
                                   struct ibv_qp_init_attr_ex *attr);
    srq_ibv_op_t create_rwq_ind_table;
    struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
                                  struct ibv_srq_init_attr *attr);
    struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
                                     struct ibv_srq_init_attr_ex *attr);
    srq_ibv_op_t create_wq;
    int (*dealloc_mw)(struct ibv_mw *mw);
    int (*dealloc_pd)(struct ibv_pd *pd);
    int (*dealloc_td)(struct ibv_td *td);
    int (*dereg_mr)(struct verbs_mr *vmr);
    int (*destroy_ah)(struct ibv_ah *ah);
    srq_ibv_op_t destroy_counters;
    int (*destroy_cq)(struct ibv_cq *cq);
    srq_ibv_op_t destroy_flow, destroy_flow_action;
    int (*destroy_qp)(struct ibv_qp *qp);
    srq_ibv_op_t destroy_rwq_ind_table;
    int (*destroy_srq)(struct ibv_srq *srq);
    srq_ibv_op_t destroy_wq, detach_mcast;
    void (*free_context)(struct ibv_context *context);
    int (*free_dm)(struct ibv_dm *dm);
    int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
    srq_ibv_op_t import_dm, import_mr, import_pd,
                 modify_cq, modify_flow_action_esp;
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                     int attr_mask);
    srq_ibv_op_t modify_qp_rate_limit;
    int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
                      int attr_mask);
    srq_ibv_op_t modify_wq, open_qp;
    struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
                                  struct ibv_xrcd_init_attr *attr);
    int (*poll_cq)(struct ibv_cq *cq, int num, struct ibv_wc *wc);
    int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad_wr);
    int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
                     struct ibv_send_wr **bad_wr);
    int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
                        struct ibv_ops_wr **bad_op);
    int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                         struct ibv_recv_wr **bad_wr);
    int (*query_device_ex)(struct ibv_context *context,
                           const struct ibv_query_device_ex_input *input,
                           struct ibv_device_attr_ex *attr, size_t attr_size);
    srq_ibv_op_t query_ece;
    int (*query_port)(struct ibv_context *context, uint8_t port_num,
                      struct ibv_port_attr *attr);
    int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                    int attr_mask, struct ibv_qp_init_attr *init_attr);
    srq_ibv_op_t query_qp_data_in_order, query_rt_values;
    int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
    srq_ibv_op_t read_counters;
    struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
                                uint64_t dm_offset, size_t length,
                                unsigned int access);
    srq_ibv_op_t reg_dmabuf_mr;
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
                             uint64_t hca_va, int access);
    int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
    int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
                    void *addr, size_t length, int access);
    int (*resize_cq)(struct ibv_cq *cq, int cqe);
    srq_ibv_op_t set_ece, unimport_dm, unimport_mr, unimport_pd;
};

/* The private functions we call, found at run time (srq_ibv_abi_resolve) */
typedef struct srq_ibv_abi {
    void *(*init_and_alloc_context)(struct ibv_device *device, int cmd_fd,
                                    size_t alloc_size,
                                    struct verbs_context *context_offset,
                                    uint32_t driver_id);
    void  (*set_ops)(struct verbs_context *vctx,
                     const struct verbs_context_ops *ops);
    void  (*uninit_context)(struct verbs_context *vctx);
} srq_ibv_abi_t;

#endif
