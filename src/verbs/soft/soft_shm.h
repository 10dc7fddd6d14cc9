/*
 * ucx-srq soft device: the shared-memory segment of a device instance
 * (the packets that travel through it: soft_pkt.h).
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

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SRQ_SOFT_SHM_PREFIX     "srq-soft-"
#define SRQ_SOFT_PATH_MAX       116  /* a wake FIFO's path, with its NUL */
#define SRQ_SOFT_SHM_MAGIC      0x54464f5351525331ull /* "1SRQSOFT" */
#define SRQ_SOFT_SHM_VERSION    1u
#define SRQ_SOFT_INST_LEN       12  /* bytes of an instance id */

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
    uint8_t         instance[SRQ_SOFT_INST_LEN];
    char            fifo_path[SRQ_SOFT_PATH_MAX]; /* the owner's wake FIFO */

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

typedef struct srq_soft_dev srq_soft_dev_t;

/* "/srq-soft-<instance in hex>" */
void srq_soft_shm_name(const uint8_t *instance, char *buf, size_t len);
/* Create and map the device's own segment (dev->seg, dev->shm_name) */
int  srq_soft_shm_create(srq_soft_dev_t *dev);
void srq_soft_shm_destroy(srq_soft_dev_t *dev);
/* Map the live segment of the instance @instance */
int  srq_soft_shm_map_peer(const uint8_t *instance, srq_soft_seg_t *seg);
void srq_soft_shm_unmap(srq_soft_seg_t *seg);
/* Remove the segments (and FIFOs) whose owners died without closing */
void srq_soft_shm_reclaim_stale(srq_soft_dev_t *dev);
/* @name without the leading '/'; 0 when it was stale and removed */
int  srq_soft_shm_reclaim_one(const char *name, srq_soft_dev_t *dev);
/* Unlink @path, then its directory if that is empty now */
void srq_soft_unlink_with_dir(const char *path);

#endif
