/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: a fuzzer that holds a verbs device to the verb
 * contracts (contracts/ibv_VERB.json).
 *
 * It builds a scene of objects (PD, MRs, CQs, an SRQ, RC and UD QPs),
 * then makes random calls and WR chains, valid and invalid, and checks
 * every outcome - return value, *bad_wr, which WRs were posted, the
 * completions and their statuses, the data received - against a model of
 * what the contracts allow. The errnos and statuses expected come from the
 * contracts (fz_contract_gen.h, generated from them at build time).
 *
 *   fz_backend_*.c  opening a device and its control path: the project's
 *                   API (src/verbs) or libibverbs
 *   fz_check.c      violations, coverage of the contracts' failures and
 *                   post-conditions, the call counters
 *   fz_scene.c      the objects of an iteration: create, connect, recover,
 *                   tear down (destroying objects in use on the way)
 *   fz_recv.c       receive WRs: posting to the SRQ and RQs, and checking
 *                   their completions
 *   fz_send.c       send WRs and their completions; messages in flight
 *   fz_ops.c        the random operations, valid and invalid
 *   fz_objects.c    ... on objects: creating, changing, destroying
 *   srq_verbs_fuzz.c  options, the iterations, the summary
 */
#ifndef FZ_H_
#define FZ_H_

#include "fz_contract_gen.h"

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FZ_MAX_SGE        4       /* scatter/gather elements a WR uses */
#define FZ_SLOT_SIZE      512     /* bytes of buffer per receive WR */
#define FZ_NUM_SLOTS      1024
#define FZ_MAX_MSG        256     /* largest SEND payload */
#define FZ_UD_GRH         40
#define FZ_CANARY         0xa5
#define FZ_WAIT_MS        5000    /* longest wait for expected completions */
#define FZ_SEQ_RING       4096

/* ---- deterministic random numbers (xorshift64*) ------------------------ */
typedef struct fz_rand {
    uint64_t s;
} fz_rand_t;

static inline uint64_t fz_rand(fz_rand_t *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dull;
}

/* uniform in [lo, hi] */
static inline unsigned fz_range(fz_rand_t *r, unsigned lo, unsigned hi)
{
    return lo + (unsigned)(fz_rand(r) % (uint64_t)(hi - lo + 1));
}

static inline bool fz_chance(fz_rand_t *r, unsigned percent)
{
    return fz_range(r, 1, 100) <= percent;
}

/* ---- backends ------------------------------------------------------------ */
typedef struct fz_dev fz_dev_t;

typedef struct fz_backend {
    const char *name;
    int  (*open)(fz_dev_t *d, const char *name);
    void (*close)(fz_dev_t *d);
    struct ibv_pd *(*alloc_pd)(fz_dev_t *d);
    int  (*dealloc_pd)(fz_dev_t *d, struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(fz_dev_t *d, struct ibv_pd *pd, void *addr,
                             size_t len, int access);
    int  (*dereg_mr)(fz_dev_t *d, struct ibv_mr *mr);
    /* 0 or the errno */
    int  (*rereg_mr)(fz_dev_t *d, struct ibv_mr *mr, int flags,
                     struct ibv_pd *pd, void *addr, size_t len, int access);
    /* 0 or the errno */
    int  (*advise_mr)(fz_dev_t *d, struct ibv_pd *pd,
                      enum ibv_advise_mr_advice advice, uint32_t flags,
                      struct ibv_sge *sg_list, uint32_t num_sge);
    /* device memory: what a context may hold (0: none, and the three
     * below are NULL) */
    uint64_t (*max_dm)(fz_dev_t *d);
    struct ibv_dm *(*alloc_dm)(fz_dev_t *d, struct ibv_alloc_dm_attr *attr);
    /* 0 or the errno */
    int  (*free_dm)(fz_dev_t *d, struct ibv_dm *dm);
    struct ibv_mr *(*reg_dm_mr)(fz_dev_t *d, struct ibv_pd *pd,
                                struct ibv_dm *dm, uint64_t offset,
                                size_t len, unsigned int access);
    /* XRC: NULL on the project API, which has no XRC domain (the four);
     * 0 or the errno where an int */
    struct ibv_xrcd *(*open_xrcd)(fz_dev_t *d, struct ibv_xrcd_init_attr *attr);
    int  (*close_xrcd)(fz_dev_t *d, struct ibv_xrcd *xrcd);
    struct ibv_srq *(*create_srq_ex)(fz_dev_t *d,
                                     struct ibv_srq_init_attr_ex *attr);
    int  (*get_srq_num)(fz_dev_t *d, struct ibv_srq *srq, uint32_t *srq_num);
    /* thread and parent domains (a parent domain goes by dealloc_pd) */
    struct ibv_td *(*alloc_td)(fz_dev_t *d, struct ibv_td_init_attr *attr);
    /* 0 or the errno */
    int  (*dealloc_td)(fz_dev_t *d, struct ibv_td *td);
    struct ibv_pd *(*alloc_parent_domain)(fz_dev_t *d,
                                          struct ibv_parent_domain_init_attr *attr);
    struct ibv_cq *(*create_cq)(fz_dev_t *d, int cqe);
    int  (*destroy_cq)(fz_dev_t *d, struct ibv_cq *cq);
    int  (*resize_cq)(fz_dev_t *d, struct ibv_cq *cq, int cqe);
    struct ibv_srq *(*create_srq)(fz_dev_t *d, struct ibv_pd *pd,
                                  struct ibv_srq_init_attr *attr);
    int  (*modify_srq)(fz_dev_t *d, struct ibv_srq *srq,
                       struct ibv_srq_attr *attr, int mask);
    int  (*query_srq)(fz_dev_t *d, struct ibv_srq *srq,
                      struct ibv_srq_attr *attr);
    int  (*destroy_srq)(fz_dev_t *d, struct ibv_srq *srq);
    struct ibv_qp *(*create_qp)(fz_dev_t *d, struct ibv_pd *pd,
                                struct ibv_qp_init_attr *attr);
    struct ibv_qp *(*create_qp_ex)(fz_dev_t *d,
                                   struct ibv_qp_init_attr_ex *attr);
    int  (*modify_qp)(fz_dev_t *d, struct ibv_qp *qp, struct ibv_qp_attr *attr,
                      int mask);
    int  (*query_qp)(fz_dev_t *d, struct ibv_qp *qp, struct ibv_qp_attr *attr,
                     int mask, struct ibv_qp_init_attr *init);
    int  (*destroy_qp)(fz_dev_t *d, struct ibv_qp *qp);
    struct ibv_ah *(*create_ah)(fz_dev_t *d, struct ibv_pd *pd,
                                struct ibv_ah_attr *attr);
    int  (*destroy_ah)(fz_dev_t *d, struct ibv_ah *ah);
    /* an address vector that reaches port 1 of this context */
    int  (*self_ah_attr)(fz_dev_t *d, struct ibv_ah_attr *attr);
    /* the next async event, or EAGAIN at once when there is none */
    int  (*get_async_event)(fz_dev_t *d, struct ibv_async_event *event);
    void (*ack_async_event)(fz_dev_t *d, struct ibv_async_event *event);
} fz_backend_t;

struct fz_dev {
    const fz_backend_t     *be;
    struct ibv_context     *ctx;
    void                   *priv;
    struct ibv_device_attr  attr;
};

extern const fz_backend_t fz_backend_verbs;  /* the project's API */
extern const fz_backend_t fz_backend_ibv;    /* libibverbs */

/* ---- the model -------------------------------------------------------- */

/* What a receive WR holds, as far as a message landing in it goes */
typedef enum fz_rclass {
    FZ_RWR_GOOD,       /* registered, writable, room for any message */
    FZ_RWR_BAD_LKEY,   /* an lkey no MR has: IBV_WC_LOC_PROT_ERR */
    FZ_RWR_SHORT       /* shorter than the message: IBV_WC_LOC_LEN_ERR */
} fz_rclass_t;

typedef struct fz_rwr {
    uint64_t        wr_id;
    fz_rclass_t     cls;
    int             slot;           /* FZ_SLOT_SIZE bytes of the buffer */
    int             num_sge;
    struct ibv_sge  sge[FZ_MAX_SGE];
    uint32_t        len;            /* bytes of the scatter list */
} fz_rwr_t;

/* A receive queue: an SRQ or a QP's own. WRs posted and not yet polled,
 * in posting order */
typedef struct fz_rq {
    const char     *name;
    fz_rwr_t       *wr;
    unsigned        num;
    uint32_t        cap;            /* max_wr as created */
    uint32_t        max_sge;
    uint32_t        limit;          /* armed SRQ limit, 0 none */
    bool            limit_fired;
} fz_rq_t;

/* A message: a SEND on its way from one QP to another */
typedef struct fz_msg {
    uint32_t  seq;
    uint32_t  len;
    int       send_status;          /* -1 while the sender did not report */
    uint64_t  send_wr_id;
} fz_msg_t;

typedef struct fz_swr {
    uint64_t  wr_id;
    bool      signaled;
    bool      local_bad;            /* gather list with a bad lkey */
    bool      rkey_bad;             /* an RDMA write the rkey does not allow */
    int       dev_fid;              /* a WR the device fails: the contract
                                       failure its completion is (0: none) */
    bool      is_msg;               /* a SEND that is a message to the peer */
    uint32_t  seq;
} fz_swr_t;

typedef struct fz_qp fz_qp_t;
struct fz_qp {
    const char        *name;
    struct ibv_qp     *qp;
    struct ibv_qp_ex  *qpx;         /* created extended: SENDs may go
                                       through the ibv_wr_* API */
    enum ibv_qp_type   type;
    enum ibv_qp_state  state;       /* what the model expects */
    fz_rq_t           *rq;          /* own receive queue, or NULL */
    fz_rq_t           *srq;         /* the SRQ it receives from, or NULL */
    fz_qp_t           *peer;        /* RC: the connected QP; UD: the target */
    struct ibv_cq     *scq, *rcq;
    struct ibv_qp_cap  cap;         /* as created */
    fz_swr_t          *sq;          /* outstanding send WRs, in order */
    unsigned           sq_num;
    bool               sq_error;    /* a send completed in error: the rest flush */
    bool               may_err;     /* an error on its way may move it to ERR
                                       before its completion is polled */
    fz_msg_t          *in;          /* messages to us, in order */
    unsigned           in_num;
    uint32_t           psn;
    uint32_t           peer_src;    /* UD: the QP number messages come from */
};

typedef struct fz_opts {
    uint64_t     seed;
    unsigned     iterations;
    unsigned     ops;
    const char  *device;
    bool         ibv;
    int          verbose;
} fz_opts_t;

/* What the fuzzer's parent-domain allocator gave and got back (its
 * pd_context) */
typedef struct fz_domain_heap {
    unsigned long  allocs, frees, foreign;
    struct ibv_pd *pd;              /* the parent domain it serves */
} fz_domain_heap_t;

typedef struct fz {
    fz_opts_t           opts;
    fz_rand_t           rnd;
    fz_dev_t            dev;
    unsigned            iter;
    bool                broken;     /* this iteration stopped making sense */

    /* the scene */
    struct ibv_pd      *pd;
    /* where the SRQ, the QPs and the AH are made: pd, or a parent domain
     * on it (with a TD or none, the fuzzer's allocators or the device's);
     * the MRs stay in pd, so that a key of the PD serves its parent
     * domain's QPs */
    struct ibv_pd      *qpd, *parent;
    struct ibv_td      *td;
    bool                allocators;
    fz_domain_heap_t    heap;
    uint8_t            *buf;        /* FZ_NUM_SLOTS receive slots + send area */
    uint8_t            *sbuf;
    struct ibv_mr      *mr, *smr;
    /* mr zero-based (IBV_ACCESS_ZERO_BASED): remote accesses address it
     * by offset, receives by virtual address as ever (fz_mr_raddr) */
    bool                mr_zero_based;
    /* mr on-demand paging (IBV_ACCESS_ON_DEMAND), where the device has it:
     * every access to it faults its pages in; ibv_advise_mr prefetches */
    bool                mr_odp;
    uint32_t            dead_lkey;  /* of an MR deregistered: no MR's */
    bool                slot_busy[FZ_NUM_SLOTS];
    struct ibv_cq      *scq, *rcq_srq, *rcq_rq, *ucq;
    struct ibv_srq     *srq;
    fz_rq_t             srq_m, rq_a, rq_u, rq_d;
    fz_qp_t             a, b, ua, ub, d;  /* a <-> b RC (b on the SRQ);
                                             ub -> ua UD; d: RC in RESET */
    struct ibv_ah      *ah;
    uint64_t            next_wr_id;
    uint32_t            next_seq;
    uint32_t            min_msg_len; /* of SENDs made now */
    int                 recv_status[FZ_SEQ_RING]; /* of message seq % ring:
                                                     -1 not received yet */

    /* counters */
    unsigned long       calls, idle_polls, checks, violations, iter_violations;
    unsigned long       fail_hits[FZ_NUM_FAILURES];
    unsigned long       post_hits[FZ_NUM_POSTS];
} fz_t;

/* The bytes of the send area (fz->sbuf, fz->smr) */
#define FZ_SEND_AREA  (64 * 1024)

/* ---- fz_check.c --------------------------------------------------------- */
void fz_violation(fz_t *fz, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A call that must succeed (ret 0); false, with a violation, if not */
bool fz_ok(fz_t *fz, const char *verb, int ret);
/* The call must fail as failure @fid says (one of its errnos) */
bool fz_fails(fz_t *fz, int fid, int ret);
/* A create that must fail as @fid says: @obj NULL, errno one of its */
bool fz_create_fails(fz_t *fz, int fid, const void *obj, int err);
/* A completion that must have failure @fid's status */
bool fz_wc_is(fz_t *fz, int fid, const struct ibv_wc *wc);
/* Post-condition @pid holds (@ok), else a violation with the message */
bool fz_post(fz_t *fz, int pid, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void fz_print_coverage(const fz_t *fz);

/* counted calls: the data path */
int fz_post_send(fz_t *fz, fz_qp_t *q, struct ibv_send_wr *wr,
                 struct ibv_send_wr **bad);
int fz_post_recv(fz_t *fz, fz_qp_t *q, struct ibv_recv_wr *wr,
                 struct ibv_recv_wr **bad);
int fz_post_srq_recv(fz_t *fz, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int fz_poll(fz_t *fz, struct ibv_cq *cq, int n, struct ibv_wc *wc);
#define FZ_BE(_fz, _op, ...) ((_fz)->calls++, (_fz)->dev.be->_op(&(_fz)->dev, ##__VA_ARGS__))

/* ---- fz_scene.c ----------------------------------------------------------- */
int  fz_scene_create(fz_t *fz);
void fz_scene_destroy(fz_t *fz);
/* RC pair a <-> b again from RESET (after an error), queues drained */
void fz_scene_recover(fz_t *fz);
bool fz_qp_to_rts(fz_t *fz, fz_qp_t *q, fz_qp_t *peer);
/* One state transition with the attributes it requires */
bool fz_qp_to(fz_t *fz, fz_qp_t *q, enum ibv_qp_state to, fz_qp_t *peer);
bool fz_qp_modify_state(fz_t *fz, fz_qp_t *q, enum ibv_qp_state to);

/* ---- fz_recv.c ------------------------------------------------------------ */
/* Fill @w (a receive WR of class @cls, @nsge elements) in a free slot */
bool fz_rwr_make(fz_t *fz, fz_rwr_t *w, fz_rclass_t cls, int nsge);
void fz_rwr_to_wr(const fz_rwr_t *w, struct ibv_recv_wr *wr,
                  struct ibv_sge *sge);
/* Post @n WRs of class @cls to the SRQ (@q NULL) or @q's RQ; every
 * outcome checked; returns how many were posted */
unsigned fz_post_rwrs(fz_t *fz, fz_qp_t *q, unsigned n, fz_rclass_t cls);
/* Post the chain @ws[0..n) (@q NULL: to the SRQ); WR @bad_at (if >= 0)
 * gets num_sge @bad_num_sge. Every outcome checked; returns how many
 * were posted */
unsigned fz_post_rchain(fz_t *fz, fz_qp_t *q, fz_rwr_t *ws, unsigned n,
                        int bad_at, int bad_num_sge);
/* A completion of a receive queue */
void fz_recv_wc(fz_t *fz, fz_qp_t *q, const struct ibv_wc *wc);
void fz_rq_drop(fz_t *fz, fz_rq_t *rq);

/* ---- fz_send.c ------------------------------------------------------------ */
/* Post a chain of @n SENDs from @q to its peer (@local_bad: one with a
 * bad lkey); returns how many were posted */
unsigned fz_send_msgs(fz_t *fz, fz_qp_t *q, unsigned n, bool local_bad);
/* Post a chain of @n SENDs where WR @bad_at gets num_sge @bad_num_sge */
unsigned fz_send_chain(fz_t *fz, fz_qp_t *q, unsigned n, bool local_bad,
                       int bad_at, int bad_num_sge);
void fz_send_wc(fz_t *fz, fz_qp_t *q, const struct ibv_wc *wc);
/* An RDMA write from @q to memory its rkey does not grant remote write */
bool fz_send_rdma_denied(fz_t *fz, fz_qp_t *q);
fz_qp_t *fz_qp_by_num(fz_t *fz, uint32_t qp_num);

/* ---- fz_drain.c ----------------------------------------------------------- */
/* Take every pending async event; false if one breaks the contract */
void fz_async(fz_t *fz);
/* Poll every CQ until nothing the model expects is missing (or give up) */
void fz_drain(fz_t *fz);
/* Post enough good receive WRs for the messages in flight */
void fz_top_up(fz_t *fz);

/* ---- fz_dm.c -------------------------------------------------------------- */
/* Device memory: allocations, copies and a region on it, each refusal
 * the contract's, each success checked for what it promises */
void fz_dm(fz_t *fz);

/* ---- fz_tm.c -------------------------------------------------------------- */
/* Tag matching: refusals, a TM SRQ, chains of list operations checked
 * against a model of its list (through libibverbs) */
void fz_tm(fz_t *fz);

/* ---- fz_xrc.c ------------------------------------------------------------- */
/* XRC: refusals, a domain and an XRC SRQ, sometimes a SEND through an
 * initiator and a target into it (libibverbs backend only) */
void fz_xrc(fz_t *fz);

/* ---- fz_domain.c ---------------------------------------------------------- */
/* Thread and parent domains: refusals, and an SRQ in a parent domain with
 * or without the fuzzer's allocators */
void fz_domain(fz_t *fz);
/* The scene's domain (fz->qpd): sometimes a parent domain; false on a
 * failure, reported */
bool fz_domain_scene_create(fz_t *fz);
/* After the scene's objects are gone: the parent domain and TD, and the
 * allocator's blocks all back */
void fz_domain_scene_destroy(fz_t *fz);

/* ---- fz_uc.c -------------------------------------------------------------- */
/* A UC QP: UC's attribute masks, READ and atomics refused at post */
void fz_uc(fz_t *fz);

/* ---- fz_advise.c ---------------------------------------------------------- */
/* ibv_advise_mr on the receive region, when it is an ODP one */
void fz_advise(fz_t *fz);

/* ---- fz_buf.c ------------------------------------------------------------- */
int  fz_slot_get(fz_t *fz);
void fz_slot_put(fz_t *fz, int slot);
uint8_t *fz_slot_addr(fz_t *fz, int slot);
void fz_fill_payload(uint8_t *p, uint32_t len, uint32_t seq);

/* ---- fz_ops.c -------------------------------------------------------------- */
void fz_random_op(fz_t *fz);

/* ---- fz_objects.c ---------------------------------------------------------- */
/* Objects that cannot be created, each refused as its contract says */
void fz_create_invalid(fz_t *fz);
/* ibv_resize_cq and ibv_rereg_mr on a CQ and an MR of their own */
void fz_change(fz_t *fz);
/* Destroying the scene's objects in use is refused */
void fz_teardown_in_use(fz_t *fz);

/* Where remote accesses address the start of the receive region */
static inline uint64_t fz_mr_raddr(const fz_t *fz)
{
    return fz->mr_zero_based ? 0 : (uintptr_t)fz->buf;
}

#endif
