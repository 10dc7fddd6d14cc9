/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: its public API beyond the verbs: opening an
 * instance for another owner (libibverbs, through src/verbs/ibv),
 * soft-specific queries (counters, where an instance's tables are).
 * Everything here fails with EINVAL on a device that is not a soft device.
 * The test hooks are in soft_test_hooks.h.
 */
#ifndef SRQ_SOFT_PUBLIC_H_
#define SRQ_SOFT_PUBLIC_H_

#include "../dev/srq_verbs_types.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The node GUID of soft0 (host order; an EUI-64, locally administered):
 * one HCA per host, so every instance of every process reports it, and
 * libibverbs' device list gives it too (ibv_get_device_guid) */
#define SRQ_SOFT_NODE_GUID  0x0200000000000001ull

/* The resource_type soft0 passes to a parent domain's allocator
 * (ibv_alloc_parent_domain(3)): which object's queue the memory is for.
 * rdma-core defines no generic values, each provider its own, with its
 * driver id in the upper 32 bits: soft0 has none (RDMA_DRIVER_UNKNOWN, 0) */
#define SRQ_SOFT_RES_TYPE_QP   ((uint64_t)1)  /* send / receive WQE arrays */
#define SRQ_SOFT_RES_TYPE_SRQ  ((uint64_t)2)  /* the WQE ring */
#define SRQ_SOFT_RES_TYPE_CQ   ((uint64_t)3)  /* the CQE ring */

typedef struct srq_soft_stats {
    uint64_t  progress_calls;
    uint64_t  qps_inspected;    /* QPs looked at by the progress engine */
    uint64_t  rx_packets;       /* valid packets taken from the inbound queue */
    uint64_t  rx_dropped;       /* invalid packets dropped */
    uint64_t  rx_out_of_seq;    /* valid but unexpected PSN */
    uint64_t  tx_packets;
    uint64_t  tx_ring_full;     /* a peer's queue had no room (retried) */
    uint64_t  rnr_naks_sent;
    uint64_t  rnr_retries;
    uint64_t  peers_dead;
    uint64_t  inflight_waits;   /* revocations (ibv_dereg_mr, QP destroy
                                   or reset) that waited for a peer's
                                   one-sided access in flight to end */
    uint64_t  producer_recovered; /* producer lock taken from a dead owner */
    uint64_t  tx_fenced;        /* send WRs posted with IBV_SEND_FENCE (each
                                   waits until every earlier READ and
                                   atomic has its response) */
    uint64_t  liveness_checks;  /* a peer's liveness asked of the kernel
                                   (kill(), /proc/<pid>/stat) */
    uint64_t  acks_sent;        /* ACK packets of their own (the responder's;
                                   NAKs and atomic results not counted) */
    uint64_t  acks_carried;     /* ACKs carried by a request of the same QP
                                   going the other way */
    uint64_t  rdma_by_responder; /* RDMA WRITE/READ WRs sent for the target's
                                   responder to execute, because earlier
                                   WRs were not acknowledged yet (else the
                                   requester does them, one-sided) */
    uint64_t  tx_lock_busy;     /* a peer's queue's producer lock held by a
                                   live process for SRQ_SOFT_RING_LOCK_NS
                                   (retried; a WR fails after its
                                   transport timeout and retries) */
    uint64_t  peer_nudges;      /* a peer's pipe poked unasked: our packets
                                   waited while its device stood still for
                                   a tick (soft_progress.c) */
    uint64_t  thread_looks;     /* the progress thread woke only to see
                                   whether its owner still polls */
    uint64_t  slow_peer_waits;  /* a transport timeout that did not retry:
                                   the peer's device had not taken or
                                   answered our packet yet (soft_progress.c) */
    uint64_t  thread_rounds;    /* the progress thread moved the device
                                   (a poke, its timer, an owner that
                                   neither polls nor sleeps on the pipe) */
    uint64_t  tx_doorbells;     /* posts that found the device taken by
                                   another thread and left their WQEs to
                                   it on the QP's doorbell (soft_doorbell.h) */
} srq_soft_stats_t;

/*
 * How an instance is opened (srq_soft_open_ex). Zeroed: as srq_verbs_open
 * does, the instance is the project's own.
 */
typedef struct srq_soft_open_params {
    /*
     * Allocate the instance: @size zeroed bytes, with a struct
     * verbs_context at @ctx_offset that its owner has set up (device,
     * mutex, its own ops table). NULL: calloc, and the soft device makes
     * the context. Returns NULL with errno set on failure.
     */
    void *(*alloc)(void *arg, size_t size, size_t ctx_offset);
    /* Free what @alloc returned, after the device let go of it */
    void  (*release)(void *arg, void *mem, size_t ctx_offset);
    void   *arg;
    /*
     * Behave as a kernel uverbs device does toward libibverbs where it
     * reads the device's fds itself: the context's async_fd delivers one
     * struct ib_uverbs_async_event_desc per event (the owner closes it).
     * (A completion channel is the same in both modes: the preloaded
     * library stands in front of ibv_get_cq_event.) ACKs are not held for
     * a reply to carry them (soft_resp_ack.h).
     */
    int     uverbs_fds;
} srq_soft_open_params_t;

/* Open @name ("soft0") as @params say; 0 or an errno value */
int srq_soft_open_ex(const char *name, const srq_soft_open_params_t *params,
                     srq_verbs_dev_t **dev_p);

int srq_soft_query_stats(srq_verbs_dev_t *dev, srq_soft_stats_t *stats);

/*
 * Device memory (soft_dm.c): ibv_alloc_dm, ibv_free_dm (0, EBUSY while a
 * region is registered on it, EINVAL) and ibv_reg_dm_mr (zero-based: SGEs
 * and remote accesses address it by offset). Copies are the struct
 * ibv_dm's own memcpy_to_dm/_from_dm. Here, not in srq_verbs.h: only the
 * soft device's libibverbs face (src/verbs/ibv) and its tests use it; the
 * transport uses no device memory, and an rdma-core device's is
 * libibverbs' own ibv_alloc_dm. Returns NULL/an errno value, errno set.
 */
struct ibv_dm *srq_soft_alloc_dm(srq_verbs_dev_t *dev,
                                 struct ibv_alloc_dm_attr *attr);
int  srq_soft_free_dm(srq_verbs_dev_t *dev, struct ibv_dm *dm);
struct ibv_mr *srq_soft_reg_dm_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                  struct ibv_dm *dm, uint64_t offset,
                                  size_t length, unsigned int access);

/*
 * XRC (soft_xrcd.c), for the soft device's libibverbs face only, as device
 * memory: the transport uses no XRC, and the project's own verbs API has
 * no XRC domain to name. ibv_open_xrcd/ibv_close_xrcd (0, EBUSY while an
 * XRC SRQ or target QP made through it lives, EINVAL), ibv_create_srq_ex
 * (basic or XRC), ibv_get_srq_num. NULL/an errno value, errno set.
 */
struct ibv_xrcd *srq_soft_open_xrcd(srq_verbs_dev_t *dev,
                                    struct ibv_xrcd_init_attr *attr);
int  srq_soft_close_xrcd(srq_verbs_dev_t *dev, struct ibv_xrcd *xrcd);
struct ibv_srq *srq_soft_create_srq_ex(srq_verbs_dev_t *dev,
                                       struct ibv_srq_init_attr_ex *attr);
int  srq_soft_get_srq_num(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                          uint32_t *srq_num);

/*
 * Tag matching (soft_tm.c): ibv_create_srq_ex above makes a TM SRQ
 * (IBV_SRQT_TM); ibv_post_srq_ops: 0, or EINVAL/ENOMEM with *bad_wr the
 * first operation not done (errno set). rc_srq's tag offload
 * (src/uct/srq_tm.c) uses both through the verbs layer.
 */
int  srq_soft_post_srq_ops(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                           struct ibv_ops_wr *wr, struct ibv_ops_wr **bad_wr);

/* Where a peer opens the instance's tables (memory regions, QPs), which
 * it may only read: "/proc/<pid>/fd/<n>" (soft_shm.h) */
int srq_soft_segment_name(srq_verbs_dev_t *dev, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
