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
