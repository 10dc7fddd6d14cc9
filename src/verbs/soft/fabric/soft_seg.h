/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the layout of a device instance's shared memory
 * (the packets that travel through it: soft_pkt.h), and a mapping of it;
 * soft_shm.c makes ours and maps a peer's.
 *
 * Every opened instance owns two anonymous memory files (memfd_create):
 * they have no name in any file system, so nothing is left behind however
 * the process ends (exit, SIGTERM, SIGKILL): the kernel frees them with the
 * last process that has one open or mapped. A peer opens them through
 * /proc/<owner pid>/fd/<n>, which needs the same permission as the cross-
 * memory attach the device uses anyway (same user, ptrace access); the
 * tables are found by their name, "srq-soft-<instance in hex>", the queue
 * by the descriptor number the tables give. Both are mode 0600.
 *
 * The tables (peers map them read-only; the file is sealed against any
 * other writable mapping, F_SEAL_FUTURE_WRITE):
 *
 *   +---------------------------+ 0
 *   | srq_soft_tab_hdr_t        |  identity (owner pid + start time, uid,
 *   |                           |  instance), state, where the queue and
 *   |                           |  the wake pipe are, our access in flight
 *   +---------------------------+ SRQ_SOFT_TAB_MR_OFF
 *   | MR table                  |  so that peers validate rkeys (bounds,
 *   |                           |  access, PD) without the owner's CPU
 *   +---------------------------+ SRQ_SOFT_TAB_QP_OFF
 *   | QP table                  |  the QPs' PD, remote access flags,
 *   |                           |  state and connection, for one-sided
 *   +---------------------------+ SRQ_SOFT_TAB_MW_OFF requests
 *   | MW table                  |  bound memory windows, for the same
 *   +---------------------------+ SRQ_SOFT_TAB_SIZE   checks as MRs
 *
 * The queue (peers map it read-write: they produce into it):
 *
 *   +---------------------------+ 0
 *   | srq_soft_shm_hdr_t        |  the producers' lock, ring indices, the
 *   |                           |  "wake me" word
 *   +---------------------------+ SRQ_SOFT_SHM_RING_OFF
 *   | inbound packet ring       |  SRQ_SOFT_RING_SIZE bytes, 64-byte cells
 *   +---------------------------+ SRQ_SOFT_SHM_SIZE
 *
 * The ring has many producers (peer processes, serialised by a lock that
 * survives its holder's death, see soft_ring.c) and one consumer (the
 * owner). A producer writes a whole frame and only then publishes it, so a
 * producer that dies mid-write leaves nothing visible; the next producer
 * takes the lock over and overwrites the unpublished bytes. The consumer
 * trusts nothing in a frame: it validates framing and content and drops
 * (and counts) anything that does not check out.
 */
#ifndef SRQ_SOFT_SEG_H_
#define SRQ_SOFT_SEG_H_

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SRQ_SOFT_SHM_PREFIX     "srq-soft-"   /* the tables' memfd name */
#define SRQ_SOFT_SHM_Q_PREFIX   "srq-softq-"  /* the queue's */
#define SRQ_SOFT_SHM_MAGIC      0x54464f5351525332ull /* "2SRQSOFT" */
/* 3: RC requests may carry ACKs (SRQ_SOFT_PKT_F_ACK), payloads up to 16
 * KiB travel in the packet; 4: RDMA WRITE and READ packets (executed by
 * the responder) and READ responses; 5: larger READs answered without
 * their data (SRQ_SOFT_PKT_F_PULL); 6: the owner's count of progress
 * rounds (progress_gen), which tells a peer's transport timer a slow
 * device from a lost packet; 7: a producer claims a frame under the lock
 * and fills it outside (soft_ring.c); 8: the memory window table, SEND
 * with invalidate (SRQ_SOFT_PKT_F_INV); 9: addresses are ports, routed by
 * QP number (soft_port.h, soft_qpn.c); 10: an MR's IOVA, a window's
 * zero-based flag. An instance of another version is refused, not half
 * understood */
#define SRQ_SOFT_SHM_VERSION    10u
#define SRQ_SOFT_INST_LEN       12  /* bytes of an instance id */

#define SRQ_SOFT_CELL           64u
#define SRQ_SOFT_RING_SIZE      (2u << 20)      /* power of two */
#define SRQ_SOFT_MR_TABLE_SIZE  65536u          /* index: 16 bits of a key */
#define SRQ_SOFT_QP_TABLE_SIZE  65536u          /* index: 16 bits of a QPN */
#define SRQ_SOFT_MW_TABLE_SIZE  4096u           /* index: 12 bits of an
                                                   rkey (soft_mw.h) */

/* Largest payload that travels inside a packet; larger RC sends are pulled
 * by the responder from the sender's memory (process_vm_readv). Above
 * UCX's 8 KiB bcopy segment (with its headers): two copies of 8 KiB cost
 * less than the system call of a pull */
#define SRQ_SOFT_PKT_INLINE_MAX 16384u
#define SRQ_SOFT_UD_MTU         4096u

enum {
    SRQ_SOFT_SEG_ACTIVE = 1,
    SRQ_SOFT_SEG_CLOSED = 2
};

/* The queue's header: written by producers (lock, tail, wake_req) and by
 * the owner (head, wake_req) */
typedef struct srq_soft_shm_hdr {
    uint64_t        magic;           /* written last by the owner */
    uint8_t         instance[SRQ_SOFT_INST_LEN];

    /* producers: prod_lock is 0 (free) or its holder's identity, pid |
     * low 32 bits of its start time << 32, so that a dead holder can be
     * told from a live one (pid reuse included) and the lock taken over */
    uint64_t        prod_lock        __attribute__((aligned(64)));
    uint64_t        tail;
    uint32_t        wake_req;        /* owner may sleep: poke its pipe */

    /* consumer */
    uint64_t        head             __attribute__((aligned(64)));
    /* progress rounds the owner finished, each with the ACKs it owed
     * sent (soft_progress.c): read by peers' transport timers only */
    uint64_t        progress_gen;
} srq_soft_shm_hdr_t;

/*
 * The one-sided access an instance is making into a peer's memory (one at
 * a time: its requester runs under its device lock), soft_inflight.c. seq
 * is odd while the access may still write; target, key and qpn say what
 * it uses.
 */
typedef struct srq_soft_inflight {
    uint64_t  seq;
    uint8_t   target[SRQ_SOFT_INST_LEN];
    uint32_t  key;
    uint32_t  qpn;
    uint32_t  reserved;
} srq_soft_inflight_t;

/* The tables' header: written by the owner only */
typedef struct srq_soft_tab_hdr {
    /* identity: written once before magic is published */
    uint64_t        magic;
    uint32_t        version;
    uint32_t        hdr_size;
    uint64_t        tab_size;
    uint64_t        mr_off;
    uint64_t        qp_off;
    uint32_t        mr_cnt;
    uint32_t        qp_cnt;
    uint64_t        queue_size;
    uint32_t        owner_uid;
    int32_t         owner_pid;
    uint64_t        owner_start;     /* /proc/<pid>/stat starttime */
    uint8_t         instance[SRQ_SOFT_INST_LEN];
    uint32_t        state;           /* SRQ_SOFT_SEG_*; atomic */
    /* the owner's descriptors of the queue and of the write end of its
     * wake pipe, and the files they must be */
    int32_t         queue_fd;
    int32_t         wake_fd;
    uint64_t        queue_dev, queue_ino;
    uint64_t        wake_dev, wake_ino;

    srq_soft_inflight_t inflight     __attribute__((aligned(64)));
} srq_soft_tab_hdr_t;

/* An MR table entry. key == 0: free. The owner writes the fields, then
 * publishes key; a peer reads key, the fields, and key again (keys do not
 * repeat, soft_mr.c). pd: the handle of its protection domain. addr is
 * where the region is in its owner's memory (local SGEs address it so),
 * iova where remote accesses address it: addr, 0 for a zero-based region,
 * or what ibv_reg_mr_iova gave. */
typedef struct srq_soft_mr_ent {
    uint32_t  key;
    uint32_t  access;
    uint64_t  addr;
    uint64_t  length;
    uint32_t  pd;
    uint32_t  reserved;
    uint64_t  iova;
} srq_soft_mr_ent_t;

/* A QP table entry, by the QP number's index (soft_qp.c publishes it, a
 * seqlock: seq is odd while the owner writes). What a peer's one-sided
 * request must find: the QP it names, ready to receive, connected to the
 * requester's QP, granting the access, in the PD of the region. */
typedef struct srq_soft_qp_ent {
    uint32_t  seq;
    uint32_t  qpn;        /* 0: no QP */
    uint32_t  pd;
    uint32_t  access;     /* qp_access_flags */
    uint32_t  ready;      /* RC, RTR or RTS: accepts requests */
    uint32_t  dest_qpn;
    uint8_t   dest_inst[SRQ_SOFT_INST_LEN];
    uint8_t   reserved[8];
} srq_soft_qp_ent_t;

/* A memory window table entry, by the index in its rkey (soft_mw.c). A
 * seqlock (seq odd while the owner writes): a type 2 window may be bound
 * again under the rkey it had. rkey 0: not bound. qpn: a type 2 window
 * serves that QP only; 0 (type 1): any QP of its PD. */
typedef struct srq_soft_mw_ent {
    uint32_t  seq;
    uint32_t  rkey;
    uint64_t  addr;
    uint64_t  length;
    uint32_t  access;     /* IBV_ACCESS_REMOTE_* the bind granted */
    uint32_t  pd;
    uint32_t  qpn;
    uint32_t  mr_key;     /* the region it is bound to */
} srq_soft_mw_ent_t;

#define SRQ_SOFT_TAB_MR_OFF     4096u
#define SRQ_SOFT_TAB_QP_OFF     (SRQ_SOFT_TAB_MR_OFF + \
                                 SRQ_SOFT_MR_TABLE_SIZE * \
                                 sizeof(srq_soft_mr_ent_t))
#define SRQ_SOFT_TAB_MW_OFF     (SRQ_SOFT_TAB_QP_OFF + \
                                 SRQ_SOFT_QP_TABLE_SIZE * \
                                 sizeof(srq_soft_qp_ent_t))
#define SRQ_SOFT_TAB_SIZE       (SRQ_SOFT_TAB_MW_OFF + \
                                 SRQ_SOFT_MW_TABLE_SIZE * \
                                 sizeof(srq_soft_mw_ent_t))
#define SRQ_SOFT_SHM_RING_OFF   4096u
#define SRQ_SOFT_SHM_SIZE       (SRQ_SOFT_SHM_RING_OFF + SRQ_SOFT_RING_SIZE)

/* A mapping of an instance's memory (ours, or a peer's: then the tables
 * are mapped read-only) */
typedef struct srq_soft_seg {
    srq_soft_shm_hdr_t  *hdr;
    uint8_t             *ring;
    srq_soft_tab_hdr_t  *tab;
    srq_soft_mr_ent_t   *mrs;
    srq_soft_qp_ent_t   *qps;
    srq_soft_mw_ent_t   *mws;
    bool                 own;   /* ours: its regions are this process's
                                   memory (soft_mr.c probes ODP ones) */
} srq_soft_seg_t;

#endif
