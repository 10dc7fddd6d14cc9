/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: an endpoint's atomics: the two InfiniBand executes (64-bit
 * fetch-and-add and compare-and-swap), and the others as a
 * compare-and-swap loop.
 */
#include "srq_ep.h"

#include <ucs/debug/log_def.h>
#include <inttypes.h>
#include <string.h>

/*
 * InfiniBand has two atomics, 64-bit fetch-and-add and compare-and-swap,
 * executed by the target's device on host-order memory (IBV_ATOMIC_HCA;
 * soft0: by its responder). The other UCT atomics - AND, OR, XOR and SWAP,
 * and every 32-bit one - are a compare-and-swap loop on the aligned 64-bit
 * word that holds the operand: guess the word, swap in the operation's
 * result on the guess; if the swap finds another value there, that value
 * is the next guess. Every swap is atomic with respect to every other
 * atomic of the device, so the operation takes effect, once, at the swap
 * that succeeds. (The operand's place in the word assumes the target has
 * this host's byte order.)
 */

/* The operand's bits in the word */
static UCS_F_ALWAYS_INLINE uint64_t uct_srq_amo_mask(const uct_srq_amo_t *amo)
{
    return (amo->size == sizeof(uint64_t)) ? UINT64_MAX :
           (UINT64_C(0xffffffff) << amo->shift);
}

static UCS_F_ALWAYS_INLINE uint64_t
uct_srq_amo_operand(const uct_srq_amo_t *amo, uint64_t word)
{
    return (word & uct_srq_amo_mask(amo)) >> amo->shift;
}

/* @word with the operation done on its operand */
static uint64_t uct_srq_amo_apply(const uct_srq_amo_t *amo, uint64_t word)
{
    uint64_t x = uct_srq_amo_operand(amo, word);
    uint64_t r;

    switch (amo->opcode) {
    case UCT_ATOMIC_OP_ADD:   r = x + amo->value; break;
    case UCT_ATOMIC_OP_AND:   r = x & amo->value; break;
    case UCT_ATOMIC_OP_OR:    r = x | amo->value; break;
    case UCT_ATOMIC_OP_XOR:   r = x ^ amo->value; break;
    case UCT_ATOMIC_OP_SWAP:  r = amo->value; break;
    default: /* CSWAP */      r = (x == amo->compare) ? amo->value : x; break;
    }
    return (word & ~uct_srq_amo_mask(amo)) |
           ((r << amo->shift) & uct_srq_amo_mask(amo));
}

/* Where a 32-bit operand at @remote_addr lies in its 64-bit word */
static UCS_F_ALWAYS_INLINE uint8_t uct_srq_amo_shift32(uint64_t remote_addr)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (remote_addr & 4) ? 32 : 0;
#else
    return (remote_addr & 4) ? 0 : 32;
#endif
}

static UCS_F_ALWAYS_INLINE void
uct_srq_amo_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
               uct_srq_tx_desc_t *desc, enum ibv_wr_opcode opcode,
               uint64_t remote_addr, uint32_t rkey, uint64_t compare_add,
               uint64_t swap)
{
    /* the old value lands in the descriptor: uct_srq_amo_t.old */
    uct_srq_tx_desc_sge(sge, desc, sizeof(uint64_t));
    wr->opcode                = opcode;
    wr->sg_list               = sge;
    wr->num_sge               = 1;
    wr->send_flags            = IBV_SEND_SIGNALED; /* a result waits */
    wr->wr.atomic.remote_addr = remote_addr;
    wr->wr.atomic.compare_add = compare_add;
    wr->wr.atomic.swap        = swap;
    wr->wr.atomic.rkey        = rkey;
}

/* The caller's result and completion; the descriptor goes back */
static void uct_srq_amo_finish(uct_srq_iface_t *iface, uct_srq_op_t *op,
                               ucs_status_t status)
{
    uct_srq_tx_desc_t *desc = ucs_container_of(op, uct_srq_tx_desc_t, op);
    uct_srq_amo_t *amo      = uct_srq_tx_desc_data(desc);
    uint64_t value          = uct_srq_amo_operand(amo, amo->old);

    if ((status == UCS_OK) && (amo->result != NULL)) {
        if (amo->size == sizeof(uint64_t)) {
            *(uint64_t*)amo->result = value;
        } else {
            *(uint32_t*)amo->result = (uint32_t)value;
        }
    }
    uct_srq_tx_desc_done(iface, op, status);
}

static void uct_srq_amo_loop_done(uct_srq_iface_t *iface, uct_srq_op_t *op,
                                  ucs_status_t status);

/* One turn of the loop: swap in the result on the guessed word */
static ucs_status_t uct_srq_amo_try(uct_srq_iface_t *iface,
                                    uct_srq_tx_desc_t *desc)
{
    uct_srq_amo_t *amo = uct_srq_tx_desc_data(desc);
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;

    uct_srq_amo_wr(&wr, &sge, desc, IBV_WR_ATOMIC_CMP_AND_SWP,
                   amo->word_addr, amo->rkey, amo->guess,
                   uct_srq_amo_apply(amo, amo->guess));
    status = uct_srq_conn_post(iface, amo->conn, &wr, desc->op.owner);
    if (ucs_likely(status == UCS_OK)) {
        uct_srq_conn_add_op(amo->conn, desc->op.owner, &desc->op,
                            uct_srq_amo_loop_done, desc->op.comp);
        ++iface->tx_stats.atomics;
    }
    return status;
}

static void uct_srq_amo_loop_done(uct_srq_iface_t *iface, uct_srq_op_t *op,
                                  ucs_status_t status)
{
    uct_srq_tx_desc_t *desc = ucs_container_of(op, uct_srq_tx_desc_t, op);
    uct_srq_amo_t *amo      = uct_srq_tx_desc_data(desc);

    if ((status == UCS_OK) && (amo->old != amo->guess)) {
        /* the word held something else: that is the next guess (this
         * completion returned a send slot, so the next try can go) */
        amo->guess = amo->old;
        ++iface->tx_stats.atomic_retries;
        if (uct_srq_amo_try(iface, desc) == UCS_OK) {
            return;
        }
        status = UCS_ERR_IO_ERROR;
    }
    --amo->conn->amo_looping;
    uct_srq_amo_finish(iface, op, status);
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srq_ep_amo(uct_ep_h tl_ep, uct_atomic_op_t opcode, unsigned size,
               uint64_t value, uint64_t compare, uint64_t remote_addr,
               uct_rkey_t rkey, void *result, uct_completion_t *comp)
{
    uct_srq_ep_t *ep       = ucs_derived_of(tl_ep, uct_srq_ep_t);
    uct_srq_iface_t *iface = uct_srq_ep_iface(ep);
    uct_srq_tx_desc_t *desc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    uct_srq_amo_t *amo;
    ucs_status_t status;

    if (ucs_unlikely(!iface->config.atomics)) {
        return UCS_ERR_UNSUPPORTED; /* the device has none (not advertised) */
    }
    if (ucs_unlikely(remote_addr % size)) {
        ucs_error("srq: atomic on a misaligned address 0x%" PRIx64
                  " (%u bytes)", remote_addr, size);
        return UCS_ERR_INVALID_PARAM;
    }
    status = uct_srq_ep_tx_desc(iface, ep, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    amo          = uct_srq_tx_desc_data(desc);
    amo->opcode  = opcode;
    amo->size    = size;
    amo->value   = value;
    amo->compare = compare;
    amo->rkey    = (uint32_t)rkey;
    amo->result  = result;
    amo->conn    = ep->conn;
    amo->shift   = 0;
    if ((size == sizeof(uint64_t)) &&
        ((opcode == UCT_ATOMIC_OP_ADD) || (opcode == UCT_ATOMIC_OP_CSWAP))) {
        /* what the device does itself */
        if (opcode == UCT_ATOMIC_OP_ADD) {
            uct_srq_amo_wr(&wr, &sge, desc, IBV_WR_ATOMIC_FETCH_AND_ADD,
                           remote_addr, amo->rkey, value, 0);
        } else {
            uct_srq_amo_wr(&wr, &sge, desc, IBV_WR_ATOMIC_CMP_AND_SWP,
                           remote_addr, amo->rkey, compare, value);
        }
        status = uct_srq_ep_post_desc(iface, ep, &wr, desc,
                                      uct_srq_amo_finish, comp);
        iface->tx_stats.atomics += (status == UCS_OK);
    } else {
        amo->word_addr = remote_addr & ~(uint64_t)(sizeof(uint64_t) - 1);
        amo->shift     = (size == sizeof(uint64_t)) ? 0 :
                         uct_srq_amo_shift32(remote_addr);
        amo->guess     = 0; /* a counter or flag often starts there */
        desc->op.comp  = comp;
        desc->op.owner = ep;
        status         = uct_srq_amo_try(iface, desc);
        if (ucs_unlikely(status != UCS_OK)) {
            ucs_mpool_put_inline(desc);
        } else {
            ++amo->conn->amo_looping;
        }
    }

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    return (result != NULL) ? UCS_INPROGRESS : UCS_OK;
}

ucs_status_t uct_srq_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                      uint64_t value, uint64_t remote_addr,
                                      uct_rkey_t rkey)
{
    if (opcode > UCT_ATOMIC_OP_XOR) {
        return UCS_ERR_UNSUPPORTED;
    }
    return uct_srq_ep_amo(tl_ep, (uct_atomic_op_t)opcode, sizeof(uint64_t),
                          value, 0, remote_addr, rkey, NULL, NULL);
}

ucs_status_t uct_srq_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                      uint32_t value, uint64_t remote_addr,
                                      uct_rkey_t rkey)
{
    if (opcode > UCT_ATOMIC_OP_XOR) {
        return UCS_ERR_UNSUPPORTED;
    }
    return uct_srq_ep_amo(tl_ep, (uct_atomic_op_t)opcode, sizeof(uint32_t),
                          value, 0, remote_addr, rkey, NULL, NULL);
}

ucs_status_t uct_srq_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                       uint64_t value, uint64_t *result,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp)
{
    if (opcode > UCT_ATOMIC_OP_SWAP) {
        return UCS_ERR_UNSUPPORTED;
    }
    return uct_srq_ep_amo(tl_ep, opcode, sizeof(uint64_t), value, 0,
                          remote_addr, rkey, result, comp);
}

ucs_status_t uct_srq_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                       uint32_t value, uint32_t *result,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp)
{
    if (opcode > UCT_ATOMIC_OP_SWAP) {
        return UCS_ERR_UNSUPPORTED;
    }
    return uct_srq_ep_amo(tl_ep, opcode, sizeof(uint32_t), value, 0,
                          remote_addr, rkey, result, comp);
}

ucs_status_t uct_srq_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                       uint64_t swap, uint64_t remote_addr,
                                       uct_rkey_t rkey, uint64_t *result,
                                       uct_completion_t *comp)
{
    return uct_srq_ep_amo(tl_ep, UCT_ATOMIC_OP_CSWAP, sizeof(uint64_t), swap,
                          compare, remote_addr, rkey, result, comp);
}

ucs_status_t uct_srq_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                       uint32_t swap, uint64_t remote_addr,
                                       uct_rkey_t rkey, uint32_t *result,
                                       uct_completion_t *comp)
{
    return uct_srq_ep_amo(tl_ep, UCT_ATOMIC_OP_CSWAP, sizeof(uint32_t), swap,
                          compare, remote_addr, rkey, result, comp);
}
