/*
 * ucx-srq: endpoints. An endpoint is a user's handle on the connection to
 * a peer interface; all endpoints to the same peer share that connection.
 */
#ifndef UCT_SRQ_EP_H_
#define UCT_SRQ_EP_H_

#include "srq_iface.h"

typedef struct uct_srq_ep {
    uct_base_ep_t         super;
    uct_srq_conn_t       *conn;      /* NULL once the interface closed it */
    ucs_list_link_t       list;      /* in conn->eps */
    ucs_arbiter_group_t   arb_group; /* this endpoint's pending requests */
} uct_srq_ep_t;

/* A registered send descriptor: bcopy data, get_bcopy landing zone, and
 * the zcopy AM header */
typedef struct uct_srq_tx_desc {
    uct_srq_desc_t         super;
    uct_srq_op_t           op;
    uct_unpack_callback_t  unpack_cb;
    void                  *unpack_arg;
    uint32_t               length;
} uct_srq_tx_desc_t;

/* A flush with a completion: done when the connection's WRs up to it are,
 * and no emulated atomic of the connection is still looping (each retry is
 * a new WR, posted after the flush) */
typedef struct uct_srq_flush_op {
    uct_srq_op_t     super;
    uct_srq_conn_t  *conn;
} uct_srq_flush_op_t;

/*
 * An atomic in a send descriptor's data: the 8 bytes the device writes the
 * word's old value to, and what an emulated operation needs to try again
 * (srq_ep.c, "atomics")
 */
typedef struct uct_srq_amo {
    uint64_t           old;         /* the device writes here */
    uint64_t           guess;       /* what the word is taken to hold */
    uint64_t           value;       /* the operand (swap value of cswap) */
    uint64_t           compare;     /* cswap only */
    uint64_t           word_addr;   /* the aligned 64-bit word */
    uint32_t           rkey;
    uint8_t            opcode;      /* uct_atomic_op_t, or CSWAP */
    uint8_t            shift;       /* of a 32-bit operand in the word */
    uint8_t            size;        /* 4 or 8 */
    void              *result;      /* the caller's, or NULL */
    uct_srq_conn_t    *conn;
} uct_srq_amo_t;

UCS_CLASS_DECLARE(uct_srq_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_srq_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_srq_ep_t, uct_ep_t);

static inline void *uct_srq_tx_desc_data(uct_srq_tx_desc_t *desc)
{
    return desc + 1;
}

ucs_status_t uct_srq_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                 const void *payload, unsigned length);
ucs_status_t uct_srq_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                     const uct_iov_t *iov, size_t iovcnt);
ssize_t uct_srq_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                            uct_pack_callback_t pack_cb, void *arg,
                            unsigned flags);
ucs_status_t uct_srq_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                 const void *header, unsigned header_length,
                                 const uct_iov_t *iov, size_t iovcnt,
                                 unsigned flags, uct_completion_t *comp);
ucs_status_t uct_srq_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                  unsigned length, uint64_t remote_addr,
                                  uct_rkey_t rkey);
ssize_t uct_srq_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                             void *arg, uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_srq_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_srq_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                  void *arg, size_t length,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp);
ucs_status_t uct_srq_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_srq_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                      uint64_t value, uint64_t remote_addr,
                                      uct_rkey_t rkey);
ucs_status_t uct_srq_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                      uint32_t value, uint64_t remote_addr,
                                      uct_rkey_t rkey);
ucs_status_t uct_srq_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                       uint64_t value, uint64_t *result,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);
ucs_status_t uct_srq_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                       uint32_t value, uint32_t *result,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);
ucs_status_t uct_srq_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                       uint64_t swap, uint64_t remote_addr,
                                       uct_rkey_t rkey, uint64_t *result,
                                       uct_completion_t *comp);
ucs_status_t uct_srq_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                       uint32_t swap, uint64_t remote_addr,
                                       uct_rkey_t rkey, uint32_t *result,
                                       uct_completion_t *comp);
ucs_status_t uct_srq_ep_flush(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
ucs_status_t uct_srq_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_srq_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags);
void uct_srq_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg);
ucs_status_t uct_srq_ep_check(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
#ifdef HAVE_UCX_EP_IS_CONNECTED
int uct_srq_ep_is_connected(uct_ep_h tl_ep,
                            const uct_ep_is_connected_params_t *params);
#endif

ucs_arbiter_cb_result_t uct_srq_ep_process_pending(ucs_arbiter_t *arbiter,
                                                   ucs_arbiter_group_t *group,
                                                   ucs_arbiter_elem_t *elem,
                                                   void *arg);

#endif
