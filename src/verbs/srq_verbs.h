/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: one verbs API over two kinds of device.
 *
 *  - rdma-core devices (real HCAs, rxe, ...), through libibverbs;
 *  - soft devices ("soft0"): the project's userspace HCA (src/verbs/soft).
 *
 * The data path is the standard verbs API on real struct ibv_qp/ibv_srq/
 * ibv_cq objects: ibv_post_send, ibv_post_recv, ibv_post_srq_recv,
 * ibv_poll_cq and ibv_req_notify_cq call through context->ops, which the
 * soft device fills. The control path (open, create/modify/destroy objects,
 * register memory, async events) goes through the srq_verbs_* calls below,
 * which dispatch on the device kind. Never call libibverbs' control verbs
 * (ibv_create_qp, ibv_dereg_mr, ...) on objects obtained here.
 *
 * Errors follow libibverbs: functions returning int return 0 or an errno
 * value; functions returning a pointer return NULL and set errno.
 *
 * This layer knows nothing about UCX.
 */
#ifndef SRQ_VERBS_H_
#define SRQ_VERBS_H_

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#include "dev/srq_verbs_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which soft devices srq_verbs_get_device_list() includes */
typedef enum srq_verbs_soft_mode {
    SRQ_VERBS_SOFT_AUTO,  /* only when no rdma-core device is present */
    SRQ_VERBS_SOFT_YES,   /* always */
    SRQ_VERBS_SOFT_NO     /* never */
} srq_verbs_soft_mode_t;

/* ---- devices --------------------------------------------------------- */

/* List devices; free with srq_verbs_free_device_list(). */
int srq_verbs_get_device_list(srq_verbs_soft_mode_t soft_mode,
                              srq_verbs_dev_info_t **list_p, int *num_p);
void srq_verbs_free_device_list(srq_verbs_dev_info_t *list);

int srq_verbs_open(const char *name, srq_verbs_dev_t **dev_p);
void srq_verbs_close(srq_verbs_dev_t *dev);

srq_verbs_dev_kind_t srq_verbs_dev_kind(const srq_verbs_dev_t *dev);
const char *srq_verbs_dev_name(const srq_verbs_dev_t *dev);
struct ibv_context *srq_verbs_context(srq_verbs_dev_t *dev);

int srq_verbs_query_device(srq_verbs_dev_t *dev, struct ibv_device_attr *attr);
/* ibv_query_device_ex: the attributes above and the extended ones (for
 * the soft device: on-demand paging capabilities, odp_caps) */
int srq_verbs_query_device_ex(srq_verbs_dev_t *dev,
                              struct ibv_device_attr_ex *attr);
int srq_verbs_query_port(srq_verbs_dev_t *dev, uint8_t port_num,
                         struct ibv_port_attr *attr);
int srq_verbs_port_addr(srq_verbs_dev_t *dev, uint8_t port_num,
                        srq_verbs_port_addr_t *addr);

/* Fill an address handle attribute that reaches @addr from @port_num: 0,
 * or EINVAL/EHOSTUNREACH/ENETUNREACH when @port_num cannot reach it (a
 * device of another kind, another host's soft device, another IB subnet,
 * an IB port from a RoCE one or the reverse) */
int srq_verbs_ah_attr(srq_verbs_dev_t *dev, uint8_t port_num,
                      const srq_verbs_port_addr_t *addr,
                      struct ibv_ah_attr *ah_attr);

/* ---- where a device sits ---------------------------------------------- */

#define SRQ_VERBS_MAX_CPUS  1024

typedef struct srq_verbs_cpumask {
    uint64_t  bits[SRQ_VERBS_MAX_CPUS / 64];  /* CPU i: bit i % 64 of [i / 64] */
} srq_verbs_cpumask_t;

/* A device's place in the machine, as far as it is known */
typedef struct srq_verbs_locality {
    char                 pci_bdf[32];  /* "dddd:bb:ss.f", "" if not PCI */
    int                  cpus_known;
    srq_verbs_cpumask_t  cpus;         /* the CPUs near it, if known */
} srq_verbs_locality_t;

/*
 * Where @dev is: rdma-core devices from their sysfs directory (PCI address
 * and local_cpus); ENOTSUP for a device that has none (soft0, in memory,
 * is as near to every CPU as to any). 0 with what was found, or an errno.
 */
int srq_verbs_dev_locality(srq_verbs_dev_t *dev, srq_verbs_locality_t *loc);

/* The same from the sysfs directory @dev_dir of a device
 * (/sys/class/infiniband/<name>): 0, or the errno of resolving
 * <dev_dir>/device (srq_verbs_sysfs.c) */
int srq_verbs_sysfs_locality(const char *dev_dir, srq_verbs_locality_t *loc);

/* A sysfs CPU mask ("ff,00000001": 32-bit hex words, most significant
 * first) into @mask: 0, or EINVAL */
int srq_verbs_parse_cpumask(const char *text, srq_verbs_cpumask_t *mask);

/* ---- protection domains and memory regions ---------------------------- */

struct ibv_pd *srq_verbs_alloc_pd(srq_verbs_dev_t *dev);
int srq_verbs_dealloc_pd(srq_verbs_dev_t *dev, struct ibv_pd *pd);

/* ibv_alloc_td / ibv_dealloc_td / ibv_alloc_parent_domain; a parent
 * domain serves wherever a PD does and srq_verbs_dealloc_pd frees it */
struct ibv_td *srq_verbs_alloc_td(srq_verbs_dev_t *dev,
                                  struct ibv_td_init_attr *attr);
int srq_verbs_dealloc_td(srq_verbs_dev_t *dev, struct ibv_td *td);
struct ibv_pd *srq_verbs_alloc_parent_domain(
        srq_verbs_dev_t *dev, struct ibv_parent_domain_init_attr *attr);

struct ibv_mr *srq_verbs_reg_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                void *addr, size_t length, int access);
/* ibv_reg_mr_iova2: remote accesses address the region from @iova on
 * (local SGEs by @addr, as always) */
struct ibv_mr *srq_verbs_reg_mr_iova(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                     void *addr, size_t length, uint64_t iova,
                                     int access);
int srq_verbs_dereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr);
/* ibv_rereg_mr: what @flags (IBV_REREG_MR_CHANGE_*) name changes; 0 or an
 * errno value (the region unchanged). The keys may change (soft: they do
 * not, as on HCAs). */
int srq_verbs_rereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr, int flags,
                       struct ibv_pd *pd, void *addr, size_t length,
                       int access);
/* ibv_advise_mr: prefetch the ranges of @sg_list, each in an on-demand
 * paging region of @pd; 0 or an errno value (EINVAL, EOPNOTSUPP, EFAULT
 * as the man page says) */
int srq_verbs_advise_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                        enum ibv_advise_mr_advice advice, uint32_t flags,
                        struct ibv_sge *sg_list, uint32_t num_sge);

/* ---- completion queues ------------------------------------------------ */

struct ibv_comp_channel *srq_verbs_create_comp_channel(srq_verbs_dev_t *dev);
int srq_verbs_destroy_comp_channel(srq_verbs_dev_t *dev,
                                   struct ibv_comp_channel *channel);
struct ibv_cq *srq_verbs_create_cq(srq_verbs_dev_t *dev, int cqe,
                                   void *cq_context,
                                   struct ibv_comp_channel *channel,
                                   int comp_vector);
int srq_verbs_destroy_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq);
/* ibv_create_cq_ex: polled with ibv_start_poll/ibv_next_poll/ibv_end_poll
 * and read with ibv_wc_read_*; destroyed with srq_verbs_destroy_cq
 * (ibv_cq_ex_to_cq). NULL with errno EOPNOTSUPP for what the device does
 * not offer (soft: wc_flags beyond IBV_WC_STANDARD_FLAGS, parent domains) */
struct ibv_cq_ex *srq_verbs_create_cq_ex(srq_verbs_dev_t *dev,
                                         struct ibv_cq_init_attr_ex *attr);
/* ibv_resize_cq: 0 or an errno value; cq->cqe is the new size */
int srq_verbs_resize_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq, int cqe);
/* Wait for / take a completion event of a channel (ibv_get_cq_event). */
int srq_verbs_get_cq_event(srq_verbs_dev_t *dev,
                           struct ibv_comp_channel *channel,
                           struct ibv_cq **cq_p, void **cq_context_p);
void srq_verbs_ack_cq_events(srq_verbs_dev_t *dev, struct ibv_cq *cq,
                             unsigned nevents);

/* ---- shared receive queues -------------------------------------------- */

struct ibv_srq *srq_verbs_create_srq(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                     struct ibv_srq_init_attr *attr);
int srq_verbs_modify_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                         struct ibv_srq_attr *attr, int attr_mask);
int srq_verbs_query_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                        struct ibv_srq_attr *attr);
int srq_verbs_destroy_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq);
/* ibv_create_srq_ex: a basic or a tag-matching SRQ (IBV_SRQT_TM, the
 * device's tm_caps); NULL, errno set. Destroyed with srq_verbs_destroy_srq */
struct ibv_srq *srq_verbs_create_srq_ex(srq_verbs_dev_t *dev,
                                        struct ibv_srq_init_attr_ex *attr);
/* ibv_post_srq_ops on a TM SRQ: 0, or an errno value with *bad_wr the
 * first operation not done */
int srq_verbs_post_srq_ops(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                           struct ibv_ops_wr *wr, struct ibv_ops_wr **bad_wr);

/* ---- queue pairs and address handles ---------------------------------- */

struct ibv_qp *srq_verbs_create_qp(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                   struct ibv_qp_init_attr *attr);
/* ibv_create_qp_ex: with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS the QP has the
 * ibv_wr_* post API (ibv_qp_to_qp_ex); what the device cannot do is
 * EOPNOTSUPP */
struct ibv_qp *srq_verbs_create_qp_ex(srq_verbs_dev_t *dev,
                                      struct ibv_qp_init_attr_ex *attr);
int srq_verbs_modify_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                        struct ibv_qp_attr *attr, int attr_mask);
int srq_verbs_query_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                       struct ibv_qp_attr *attr, int attr_mask,
                       struct ibv_qp_init_attr *init_attr);
int srq_verbs_destroy_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp);

struct ibv_ah *srq_verbs_create_ah(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                   struct ibv_ah_attr *attr);
int srq_verbs_destroy_ah(srq_verbs_dev_t *dev, struct ibv_ah *ah);

/* ---- asynchronous events ---------------------------------------------- */

/* File descriptor that becomes readable when an async event is pending */
int srq_verbs_async_fd(srq_verbs_dev_t *dev);
/* Take one pending event: 0, or EAGAIN when none is pending (non-blocking) */
int srq_verbs_get_async_event(srq_verbs_dev_t *dev,
                              struct ibv_async_event *event);
void srq_verbs_ack_async_event(srq_verbs_dev_t *dev,
                               struct ibv_async_event *event);

/* ---- counters --------------------------------------------------------- */

/*
 * Receive-not-ready NAKs sent because @srq was empty: how many times the
 * device's responder found this SRQ without a buffer for a message, since
 * the SRQ was created. Tells the owner of the SRQ - and only it - that it
 * posts too few buffers, without the senders' help.
 *
 * 0, EINVAL (not an SRQ of @dev), or ENOTSUP where the device counts no
 * such thing per SRQ:
 *  - soft: a count in the SRQ; no syscall, no lock: cheap enough for a
 *    progress path;
 *  - rdma-core: ENOTSUP. Verbs have no per-SRQ count, and the port's
 *    hw_counters/out_of_buffer counts the RNR of every SRQ and QP of every
 *    process on the port: one rank's would read as every rank's.
 */
int srq_verbs_query_srq_rnr(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                            uint64_t *count_p);

#ifdef __cplusplus
}
#endif

#endif
