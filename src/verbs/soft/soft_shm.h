/*
 * ucx-srq soft device: the shared-memory segment of a device instance and
 * the packets that travel through it.
 *
 * Every opened soft device instance owns one POSIX shm segment (mode 0600,
 * created O_EXCL, name derived from the instance id):
 *
 *   +---------------------------+ 0
 *   | srq_soft_shm_hdr_t        |  identity (owner pid + start time), the
 *   |                           |  producers' robust mutex, ring indices,
 *   |                           |  the "wake me" word
 *   +---------------------------+ SRQ_SOFT_SHM_RING_OFF
 *   | inbound packet ring       |  SRQ_SOFT_RING_SIZE bytes, 64-byte cells
 *   +---------------------------+ SRQ_SOFT_SHM_MR_OFF
 *   | MR table                  |  SRQ_SOFT_MAX_MR entries, so that peers
 *   |                           |  validate rkeys without the owner's CPU
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
#ifndef SRQ_SOFT_SHM_H_
#define SRQ_SOFT_SHM_H_

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#define SRQ_SOFT_SHM_PREFIX     "srq-soft-"
#define SRQ_SOFT_SHM_MAGIC      0x54464f5351525331ull /* "1SRQSOFT" */
#define SRQ_SOFT_SHM_VERSION    1u

#define SRQ_SOFT_CELL           64u
#define SRQ_SOFT_RING_SIZE      (2u << 20)      /* power of two */
#define SRQ_SOFT_MR_TABLE_SIZE  65536u          /* index: 16 bits of a key */

/* Largest payload that travels inside a packet; larger RC sends are pulled
 * by the responder from the sender's memory (process_vm_readv) */
#define SRQ_SOFT_PKT_INLINE_MAX 8192u
#define SRQ_SOFT_UD_MTU         4096u

enum {
    SRQ_SOFT_SEG_ACTIVE = 1,
    SRQ_SOFT_SEG_CLOSED = 2
};

typedef struct srq_soft_shm_hdr {
    /* identity: written once before magic is published */
    uint64_t        magic;
    uint32_t        version;
    uint32_t        hdr_size;
    uint64_t        seg_size;
    uint64_t        ring_off;
    uint64_t        ring_size;
    uint64_t        mr_off;
    uint32_t        mr_cnt;
    uint32_t        owner_uid;
    int32_t         owner_pid;
    uint32_t        state;           /* SRQ_SOFT_SEG_*; atomic */
    uint64_t        owner_start;     /* /proc/<pid>/stat starttime */
    uint8_t         instance[12];
    char            fifo_path[116];  /* the owner's wake FIFO */

    /* producers: prod_lock is 0 (free) or its holder's identity, pid |
     * low 32 bits of its start time << 32, so that a dead holder can be
     * told from a live one (pid reuse included) and the lock taken over */
    uint64_t        prod_lock        __attribute__((aligned(64)));
    uint64_t        tail;
    uint32_t        wake_req;        /* owner may sleep: poke its FIFO */

    /* consumer */
    uint64_t        head             __attribute__((aligned(64)));
} srq_soft_shm_hdr_t;

/* An MR table entry. key == 0: free. The owner writes the fields, then
 * publishes key; a peer reads key, the fields, and key again. */
typedef struct srq_soft_mr_ent {
    uint32_t  key;
    uint32_t  access;
    uint64_t  addr;
    uint64_t  length;
    uint64_t  reserved;
} srq_soft_mr_ent_t;

#define SRQ_SOFT_SHM_RING_OFF   4096u
#define SRQ_SOFT_SHM_MR_OFF     (SRQ_SOFT_SHM_RING_OFF + SRQ_SOFT_RING_SIZE)
#define SRQ_SOFT_SHM_SIZE       (SRQ_SOFT_SHM_MR_OFF + \
                                 SRQ_SOFT_MR_TABLE_SIZE * \
                                 sizeof(srq_soft_mr_ent_t))

/* A mapping of a segment (ours or a peer's) */
typedef struct srq_soft_seg {
    srq_soft_shm_hdr_t  *hdr;
    uint8_t             *ring;
    srq_soft_mr_ent_t   *mrs;
    size_t               size;
} srq_soft_seg_t;


/* ---- packets ---------------------------------------------------------- */

#define SRQ_SOFT_PKT_MAGIC      0x5153u /* "SQ" */
#define SRQ_SOFT_PKT_HDR        56u

enum {
    SRQ_SOFT_OP_PAD       = 1,  /* fills the ring up to its end */
    SRQ_SOFT_OP_SEND      = 2,
    SRQ_SOFT_OP_WRITE_IMM = 3,  /* data already written; consumes a recv */
    SRQ_SOFT_OP_ACK       = 4,
    SRQ_SOFT_OP_NAK       = 5,
    SRQ_SOFT_OP_LAST
};

enum {
    SRQ_SOFT_PKT_F_IMM    = 1u << 0,
    SRQ_SOFT_PKT_F_PULL   = 1u << 1,  /* payload: remote iovecs to pull */
    SRQ_SOFT_PKT_F_UD     = 1u << 2,
    SRQ_SOFT_PKT_F_SE     = 1u << 3   /* solicited event */
};

enum {
    SRQ_SOFT_NAK_RNR      = 1,  /* no receive WQE: retry after a timer */
    SRQ_SOFT_NAK_INV_REQ  = 2,  /* message too long for the receive WQE */
    SRQ_SOFT_NAK_REM_OP   = 3   /* responder could not complete it */
};

/* 56 bytes: a small payload shares the header's cache line */
typedef struct srq_soft_pkt {
    uint64_t  pos;         /* srq_soft_pos_tag(ring position): written last,
                              publishes the frame */
    uint16_t  magic;
    uint8_t   opcode;
    uint8_t   flags;
    uint32_t  frame_len;   /* whole frame, a multiple of SRQ_SOFT_CELL */
    uint32_t  dst_qpn;
    uint32_t  src_qpn;
    uint32_t  psn;         /* ACK/NAK: the PSN acknowledged / refused */
    uint32_t  imm;         /* as given by the user (network order) */
    uint32_t  length;      /* message length */
    uint32_t  aux;         /* UD: qkey; NAK: syndrome | rnr timer << 8 */
    uint8_t   src_inst[12];
    uint16_t  nsge;        /* F_PULL: number of srq_soft_pkt_iov_t */
    uint16_t  reserved;
} srq_soft_pkt_t;

typedef struct srq_soft_pkt_iov {
    uint64_t  addr;
    uint64_t  len;
} srq_soft_pkt_iov_t;

#ifdef __cplusplus
static_assert(sizeof(srq_soft_pkt_t) == SRQ_SOFT_PKT_HDR, "header size");
#else
_Static_assert(sizeof(srq_soft_pkt_t) == SRQ_SOFT_PKT_HDR, "header size");
#endif

/* What a published frame holds in pos: never 0, so that zeroed memory is
 * not a frame */
static inline uint64_t srq_soft_pos_tag(uint64_t pos)
{
    return pos | (1ull << 63);
}

static inline uint32_t srq_soft_frame_len(size_t payload)
{
    return (uint32_t)((sizeof(srq_soft_pkt_t) + payload + SRQ_SOFT_CELL - 1) &
                      ~(size_t)(SRQ_SOFT_CELL - 1));
}

#endif
