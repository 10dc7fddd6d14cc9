/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the device instance (one per srq_verbs_open of
 * "soft0"), its limits, its lock and its statistics.
 *
 * The soft device is a userspace HCA for machines without RDMA hardware or
 * kernel RDMA support. Processes of one host talk through shared memory
 * (packets) and cross-memory attach (one-sided RDMA). Its objects are real
 * struct ibv_context/ibv_qp/ibv_srq/ibv_cq, and it fills context->ops so
 * that the standard inline data-path verbs reach it. doc/architecture.md
 * lists its files and the path a packet takes through them.
 */
#ifndef SRQ_SOFT_DEV_H_
#define SRQ_SOFT_DEV_H_

#include "../../dev/srq_verbs_dev.h"
#include "../fabric/soft_fab.h"
#include "../fabric/soft_list.h"
#include "../fabric/soft_lock.h"
#include "../srq_soft_api.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define SRQ_SOFT_DEV_NAME      "soft0"
#define SRQ_SOFT_NUM_PORTS     1

/* Device limits, as ibv_query_device reports them */
/* per context; the QP numbers of all the user's contexts on the host come
 * from one space of 65536 (soft_qpn.c): a context reaches its limit while
 * the others hold fewer than the rest, as an HCA's QPs are one pool */
#define SRQ_SOFT_MAX_QP        16384
#define SRQ_SOFT_MAX_PD        65536
#define SRQ_SOFT_MAX_AH        65536
#define SRQ_SOFT_MAX_QP_WR     16384
#define SRQ_SOFT_MAX_SGE       16
#define SRQ_SOFT_MAX_CQ        65536
#define SRQ_SOFT_MAX_CQE       (1 << 20)
#define SRQ_SOFT_MAX_MR        (SRQ_SOFT_MR_TABLE_SIZE - 1)
/* the soft device pins nothing: any range of the 47-bit user address space
 * can be registered (oshmem registers whole segments, terabytes under
 * AddressSanitizer's memory layout) */
#define SRQ_SOFT_MAX_MR_SIZE   (1ull << 47)
#define SRQ_SOFT_MAX_SRQ       4096
#define SRQ_SOFT_MAX_SRQ_WR    32767  /* wqe_cnt (pow2, +1 sentinel) <= 2^15 */
#define SRQ_SOFT_MAX_INLINE    1024
#define SRQ_SOFT_MTU           IBV_MTU_4096
/* GID table entries of the port: the port's GID, then empty ones, as an
 * IB HCA reports them (programs written for RoCE query index 1 or 3) */
#define SRQ_SOFT_GID_TBL_LEN   8
#define SRQ_SOFT_MAX_MSG       (1u << 31)

/* The first four bytes of every soft GID: a link-local prefix, followed by
 * the port id (domain | pid | tag | 0, soft_port.h), so that the subnet
 * prefix (the first 8 bytes) is the same for all ports of one sharing
 * domain */
#define SRQ_SOFT_ADDR_MAGIC    "\xfe\x80\x00\x00"

/* Progress tuning */
#define SRQ_SOFT_RX_BATCH      64        /* packets per progress call */
#define SRQ_SOFT_SQ_INITIAL    1         /* send WQEs a QP starts with */
#define SRQ_SOFT_PEER_CHECK_NS 100000000ull  /* liveness check period */
#define SRQ_SOFT_TICK_NS       1000000ull    /* timer resolution */
#define SRQ_SOFT_ACK_FLUSH_NS  100000000ull /* how long a QP's destroy tries
                                               to send the ACK it owes */

/* The objects counted (srq_soft_dev_t's lim_count) */
typedef enum {
    SRQ_SOFT_LIM_PD,
    SRQ_SOFT_LIM_CQ,
    SRQ_SOFT_LIM_SRQ,
    SRQ_SOFT_LIM_QP,
    SRQ_SOFT_LIM_AH,
    SRQ_SOFT_LIM_LAST
} srq_soft_lim_t;

typedef struct srq_soft_dev      srq_soft_dev_t;
typedef struct srq_soft_qp       srq_soft_qp_t;
typedef struct srq_soft_srq      srq_soft_srq_t;
typedef struct srq_soft_async_ev srq_soft_async_ev_t;
typedef struct srq_soft_channel  srq_soft_channel_t;

struct srq_soft_dev {
    srq_verbs_dev_t     super;
    /* what ibv_* calls see: a verbs_context (public in verbs.h), so that
     * libibverbs can own the instance as a provider's context (srq-run
     * --verbs, src/verbs/ibv); vctx.context is what objects point at */
    struct verbs_context vctx;
    struct ibv_device  *ibv_dev;      /* ctx->device when we made it, or NULL */
    srq_soft_open_params_t params;    /* how the instance was opened */
    /* the fabric between processes (soft_fab.h): identity, own tables,
     * queue and wake pipe, the peers; all but the identity under lock */
    srq_soft_fab_t      fab;
    /* the port, shared by every instance of the process (soft_port.h):
     * its id (the GID's last 12 bytes) and its LID, host-unique */
    uint8_t             port_id[SRQ_SOFT_INST_LEN];
    uint16_t            lid;
    bool                port_joined;

    /* everything below is under lock, unless said otherwise. A spinlock
     * that yields (soft_lock.h): it is taken on every poll, and never held
     * across a sleep */
    srq_soft_lock_t     lock;

    /* wakeups: we asked peers to poke our pipe (fab.seg.hdr->wake_req) */
    bool                wake_armed;   /* we set wake_req, may need drain */
    /* CQs armed for an event (ibv_req_notify_cq) that has not come yet: a
     * program may be asleep on their channels, so whoever sleeps in the
     * device keeps asking peers to wake it (soft_wait.c). Under lock;
     * the progress thread reads it without */
    unsigned            armed_cqs;
    /* The channel that holds the wake pipe, if any (soft_cq.c): the last
     * one armed on, whose sleeper a poke wakes itself; and how many of
     * armed_cqs are on it (the thread reads it without the lock) */
    srq_soft_channel_t *pipe_channel;
    unsigned            armed_direct;
    uint64_t            events_raised; /* CQ events written, ever */
    int                 timer_fd;     /* timers while the user sleeps */
    uint64_t            timer_due;    /* what timer_fd is set to (0: not
                                         known, UINT64_MAX: nothing) */

    /* MR keys: the last one handed out (soft_mr.c), regions registered */
    uint32_t            mr_last_key;
    uint32_t            mr_count;
    _Atomic uint32_t    lim_count[SRQ_SOFT_LIM_LAST]; /* soft_limit.c */
    uint32_t            pd_last;      /* the last PD id */
    /* memory windows (soft_mw.c): by table slot (NULL until the first),
     * the last slot handed out, how many are bound */
    void               *mw_slots;
    uint32_t            mw_last;
    uint32_t            mw_bound;
    uint64_t            handle_salt;  /* srq_soft_handle */
    size_t              dm_used;      /* device memory held (soft_dm.c) */
    /* regions addressed by offset in local SGEs (soft_mr.c): while there
     * are none, the data path translates no SGE */
    _Atomic uint32_t    mr_offsets;

    /* gives the receive WQEs of an SRQ back when their completions are
     * polled (soft_srq.c's, set at open): the CQ calls it, knowing nothing
     * of the SRQ above it */
    void              (*srq_free_wqes)(srq_soft_srq_t *srq,
                                       const uint16_t *idx, unsigned n);
    /* is a window bound to the region of @mr_key? (soft_mw.c's, set at
     * open): a region asks it before deregistration, knowing nothing of
     * the windows above it */
    bool              (*mr_has_windows)(srq_soft_dev_t *dev, uint32_t mr_key);

    /* XRC SRQs by number (soft_xrcd.c), NULL until the first */
    srq_soft_srq_t    **xrc_srqs;
    uint32_t            xrc_srq_last;

    /* QPs by index (qpn = gen << 16 | index, soft_qpn.c) */
    srq_soft_qp_t     **qps;
    uint32_t            qp_tab_size;

    srq_soft_list_t     cqs;
    srq_soft_list_t     busy_qps;     /* QPs with outstanding send work */
    srq_soft_list_t     ack_qps;
    srq_soft_list_t     sched_qps;
    /* QPs whose posts found the lock taken (a stack pushed without the
     * lock, taken whole under it: srq_soft_qp_ring, soft_qp.c); atomic */
    srq_soft_qp_t      *doorbells;
    uint64_t            next_tick_ns;
    unsigned            tick_calls;   /* progress calls since a clock read */

    /* async events (own lock: read by the user without dev->lock) */
    pthread_mutex_t      async_lock;
    srq_soft_async_ev_t *async_head, *async_tail;
    int                  async_efd;

    srq_soft_stats_t    stats;

    /* uverbs mode (params.uverbs_fds): the progress thread, and the write
     * end of the async fd's pipe (the read end is vctx.context.async_fd) */
    pthread_t           thread;
    bool                thread_started;
    uint64_t            user_polls __attribute__((aligned(64))); /* ibv_poll_cq calls */
    uint64_t            thread_polls_seen; /* user_polls, the thread's last
                                              look */
    bool                guard_copies; /* progress runs beside the
                                         program, not in its poll: copies
                                         go through the kernel (soft_mem.h;
                                         under the device lock) */
    bool                thread_woken; /* its last sleep ended by a poke or
                                         the timer (the thread's own) */
    unsigned            thread_look_ms; /* its next look at a polling user */
    _Atomic unsigned    thread_look_fixed_ms; /* tests: every look this
                                                 long (0: grow) */
    int                 thread_stop_fd;
    int                 async_wfd;
    int                 async_nbfd;   /* the read end, non-blocking: to take
                                         events back (soft_async.c) */
};

static inline srq_soft_dev_t *srq_soft_dev(srq_verbs_dev_t *dev)
{
    return (srq_soft_dev_t*)dev;
}

static inline void srq_soft_dev_lock(srq_soft_dev_t *dev)
{
    srq_soft_lock(&dev->lock);
}

static inline void srq_soft_dev_unlock(srq_soft_dev_t *dev)
{
    srq_soft_unlock(&dev->lock);
}

/* A post rang a QP's doorbell: its WQEs wait for whoever has the device
 * (a look, without the lock: soft_doorbell.h) */
static inline bool srq_soft_dev_doorbells(srq_soft_dev_t *dev)
{
    return __atomic_load_n(&dev->doorbells, __ATOMIC_RELAXED) != NULL;
}

/* The device whose fabric @fab is (a frame the fabric hands up) */
static inline srq_soft_dev_t *srq_soft_fab_dev(srq_soft_fab_t *fab)
{
    return srq_soft_container_of(fab, srq_soft_dev_t, fab);
}

static inline srq_soft_dev_t *srq_soft_ctx_dev(struct ibv_context *ctx)
{
    return srq_soft_container_of(ctx, srq_soft_dev_t, vctx.context);
}

static inline bool srq_soft_owns(srq_soft_dev_t *dev, struct ibv_context *ctx)
{
    return ctx == &dev->vctx.context;
}

/* The word in our segment that asks producers to poke our wake pipe */
static inline _Atomic uint32_t *srq_soft_wake_req(srq_soft_dev_t *dev)
{
    return (_Atomic uint32_t*)&dev->fab.seg.hdr->wake_req;
}

/*
 * The handle we give the ibv object @obj of @dev: derived from where it
 * lives and from the instance, so that a handle a program corrupted is
 * found wrong, as the kernel finds no object by it (the device keeps no
 * meaning in a handle: the PD's own number is its id, soft_pd.h)
 */
static inline uint32_t srq_soft_handle(const srq_soft_dev_t *dev,
                                       const void *obj)
{
    uint64_t v = (uintptr_t)obj ^ dev->handle_salt;

    v ^= v >> 31;
    v *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(v ^ (v >> 32));
}

/* Is @obj (an ibv object with a context and a handle, or NULL) one of
 * @dev's, its handle as we gave it? */
#define srq_soft_dev_has(_dev, _obj) \
    (((_obj) != NULL) && srq_soft_owns(_dev, (_obj)->context) && \
     ((_obj)->handle == srq_soft_handle(_dev, _obj)))

/* Is the completion channel @ch (no handle) one of @dev's? */
#define srq_soft_dev_has_channel(_dev, _ch) \
    (((_ch) != NULL) && srq_soft_owns(_dev, (_ch)->context))

/*
 * The preamble of a control verb on an object: EINVAL unless @obj is one of
 * @dev's, else @dev is locked (the caller unlocks) and 0 returned. A
 * destroy answers ENOENT instead, as the kernel's uverbs does when no
 * object has the handle (uobj_perform_destroy); its other verbs on such a
 * handle answer EINVAL, as we do.
 */
#define srq_soft_dev_lock_obj(_dev, _obj) \
    (srq_soft_dev_has(_dev, _obj) ? (srq_soft_dev_lock(_dev), 0) : EINVAL)

/*
 * A statistic also read without dev->lock (srq_verbs_query_rnr): writers
 * hold the lock, so a relaxed load + store is a race-free increment (no
 * locked read-modify-write), and a relaxed load never sees a torn value.
 */
static inline void srq_soft_stat_inc_shared(uint64_t *stat)
{
    _Atomic uint64_t *a = (_Atomic uint64_t*)stat;

    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static inline uint64_t srq_soft_stat_read_shared(const uint64_t *stat)
{
    return atomic_load_explicit((_Atomic uint64_t*)stat, memory_order_relaxed);
}

#endif
