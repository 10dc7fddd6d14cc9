/*
 * ucx-srq verbs layer: direct access to a shared receive queue's WQE ring,
 * in the mlx5 linked-list SRQ layout.
 *
 * The ring is wqe_cnt WQEs of stride bytes (both powers of two). A WQE is
 *
 *     struct { uint8_t rsvd0[2]; __be16 next_wqe_index;        (16 bytes,
 *              uint8_t signature; uint8_t rsvd1[11]; }           as
 *     max_sge x { __be32 byte_count; __be32 lkey; __be64 addr; } mlx5)
 *
 * Free WQEs form a list linked by next_wqe_index from *head to *tail; the
 * tail WQE is a sentinel that is never handed to the device (so head == tail
 * means full). Posting writes WQEs at *head and follows their links, then
 * publishes the new posted-WQE counter, once per batch, in the doorbell
 * record (*dbrec, big-endian, low 16 bits). The device consumes WQEs in
 * posting order by following the same links. A data segment list shorter
 * than max_sge ends with byte_count 0 and lkey SRQ_VERBS_RING_INVALID_LKEY.
 *
 * wrid[index] holds the wr_id a WQE completes with; ibv_post_srq_recv() and
 * srq_verbs_ring_post() both fill it, so the two may be mixed on one SRQ on
 * devices that report SRQ_VERBS_RING_F_SHARED.
 */
#ifndef SRQ_VERBS_RING_H_
#define SRQ_VERBS_RING_H_

#include "srq_verbs.h"

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SRQ_VERBS_RING_INVALID_LKEY  0x100u
#define SRQ_VERBS_RING_NEXT_SEG_SIZE 16u
#define SRQ_VERBS_RING_DATA_SEG_SIZE 16u

enum {
    /* head/tail/counter/wrid are the device's own: ibv_post_srq_recv and
     * the ring may be mixed, and ibv_poll_cq returns WQEs to the free list */
    SRQ_VERBS_RING_F_SHARED = 1u << 0
};

/* Software state of the free list (shared with the device on soft) */
typedef struct srq_verbs_srq_ring_state {
    uint16_t             head;     /* next free WQE, written by posting */
    uint16_t             tail;     /* last free WQE (sentinel) */
    uint16_t             counter;  /* WQEs posted so far, mod 2^16 */
    uint16_t             reserved;
    uint64_t            *wrid;     /* wqe_cnt entries */
    pthread_spinlock_t  *lock;     /* NULL: the caller serialises */
} srq_verbs_srq_ring_state_t;

typedef struct srq_verbs_srq_ring {
    void                        *buf;
    uint32_t                     stride;
    uint32_t                     wqe_cnt;
    uint32_t                     max_sge;
    uint32_t                     flags;    /* SRQ_VERBS_RING_F_* */
    volatile uint32_t           *dbrec;    /* __be32 */
    srq_verbs_srq_ring_state_t  *state;
    void                        *priv;     /* owned by the ring (mlx5) */
} srq_verbs_srq_ring_t;

/* Describe @srq's ring. 0, EOPNOTSUPP when the device has no such ring.
 * Release with srq_verbs_srq_ring_release(). */
int srq_verbs_srq_ring(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                       srq_verbs_srq_ring_t *ring);
void srq_verbs_srq_ring_release(srq_verbs_srq_ring_t *ring);

/*
 * Write the WR list into the ring as a chain of WQEs and ring the doorbell
 * record once. Same contract as ibv_post_srq_recv(): stops at the first WR
 * that cannot be posted (ENOMEM: ring full, EINVAL: too many SGEs), sets
 * *bad_wr to it, and the WRs before it stay posted.
 */
int srq_verbs_ring_post(srq_verbs_srq_ring_t *ring, struct ibv_recv_wr *wr,
                        struct ibv_recv_wr **bad_wr);

/* Return WQE @index to the free list. Only for rings without
 * SRQ_VERBS_RING_F_SHARED (there, polling the CQ does it). */
void srq_verbs_ring_free(srq_verbs_srq_ring_t *ring, uint16_t index);

#ifdef __cplusplus
}
#endif

#endif
