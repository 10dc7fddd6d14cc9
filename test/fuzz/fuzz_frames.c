/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq fuzzer: the soft device's wire frames (src/verbs/soft/fabric/soft_pkt.h).
 *
 * Two soft instances of this process, A and B, with RC QPs connected to
 * each other (one on B's SRQ, one with its own receive queue), UD QPs,
 * registered memory and posted receives. Each input becomes a few frames
 * pushed into B's or A's inbound queue (srq_soft_inject), built from the
 * input's choices: QP numbers, PSNs and instance ids that the target
 * knows (so that frames reach the responder's and completer's deeper
 * checks) mixed with wrong ones, and adversarial opcodes, flags, lengths,
 * SGE counts, iovecs (addresses in and out of registered memory, lengths
 * that do and do not add up) and atomic requests. Then both instances
 * progress. Every 64 inputs a fresh pair of QPs must still carry a
 * message both ways: garbage costs nothing but itself.
 *
 * Built with AddressSanitizer and UBSan (test/Makefile.inc); run by
 * test/fuzz.sh (CI, a short deterministic run) and contrib/fuzz (long).
 */
#include "fuzz_input.h"

#include "verbs/srq_verbs.h"
#include "verbs/soft/fabric/soft_pkt.h"
#include "verbs/soft/device/soft_test_hooks.h"
#include "verbs/soft/srq_soft_api.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define FF_BUF_LEN     65536
#define FF_RECV_LEN    16384
#define FF_QKEY        0x11111111u
#define FF_MAX_FRAMES  4
#define FF_CHECK_EVERY 64
#define FF_REMAKE_EVERY 16
#define FF_TICK_CALLS 128 /* soft_dev.h: SRQ_SOFT_TICK_CALLS */

#define FF_CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "fuzz_frames: %s:%d: %s\n", __FILE__, __LINE__, \
                    #_cond); \
            abort(); \
        } \
    } while (0)

/* One instance and what it has */
typedef struct ff_dev {
    srq_verbs_dev_t       *dev;
    struct ibv_pd         *pd;
    struct ibv_cq         *cq;
    struct ibv_srq        *srq;
    uint8_t               *buf;    /* registered: sends, receives, atomics */
    struct ibv_mr         *mr;
    srq_verbs_port_addr_t  addr;
    struct ibv_qp         *rc_srq; /* RC on the SRQ */
    struct ibv_qp         *rc_rq;  /* RC with its own receive queue */
    struct ibv_qp         *ud;
} ff_dev_t;

static ff_dev_t ff_a, ff_b;
static unsigned long ff_inputs;
static unsigned long ff_pairs;   /* QP sets made (garbage failed the last) */

/* ---- setup --------------------------------------------------------- */

static struct ibv_qp *ff_qp(ff_dev_t *d, enum ibv_qp_type type,
                            struct ibv_srq *srq)
{
    struct ibv_qp_init_attr attr = {0};

    attr.send_cq             = d->cq;
    attr.recv_cq             = d->cq;
    attr.srq                 = srq;
    attr.qp_type             = type;
    attr.cap.max_send_wr     = 64;
    attr.cap.max_recv_wr     = srq ? 0 : 64;
    attr.cap.max_send_sge    = 4;
    attr.cap.max_recv_sge    = srq ? 0 : 4;
    attr.cap.max_inline_data = 64;
    return srq_verbs_create_qp(d->dev, d->pd, &attr);
}

static int ff_modify(ff_dev_t *d, struct ibv_qp *qp, struct ibv_qp_attr *a,
                     int mask)
{
    return srq_verbs_modify_qp(d->dev, qp, a, mask);
}

static void ff_rc_connect(ff_dev_t *d, struct ibv_qp *qp,
                          const srq_verbs_port_addr_t *to, uint32_t dest)
{
    struct ibv_qp_attr a = {0};

    a.qp_state        = IBV_QPS_INIT;
    a.port_num        = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                        IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    FF_CHECK(ff_modify(d, qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
    memset(&a, 0, sizeof(a));
    a.qp_state           = IBV_QPS_RTR;
    a.path_mtu           = IBV_MTU_4096;
    a.dest_qp_num        = dest;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer      = 1;
    FF_CHECK(srq_verbs_ah_attr(d->dev, 1, to, &a.ah_attr) == 0);
    FF_CHECK(ff_modify(d, qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0);
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = 8;  /* ~1 ms: a garbage-stuck QP fails quickly */
    a.retry_cnt     = 2;
    a.rnr_retry     = 2;
    a.max_rd_atomic = 4;
    FF_CHECK(ff_modify(d, qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
                       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                       IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

static void ff_ud_up(ff_dev_t *d, struct ibv_qp *qp)
{
    struct ibv_qp_attr a = {0};

    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey     = FF_QKEY;
    FF_CHECK(ff_modify(d, qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                       IBV_QP_PORT | IBV_QP_QKEY) == 0);
    a.qp_state = IBV_QPS_RTR;
    FF_CHECK(ff_modify(d, qp, &a, IBV_QP_STATE) == 0);
    a.qp_state = IBV_QPS_RTS;
    FF_CHECK(ff_modify(d, qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
}

static void ff_post_recv(ff_dev_t *d, struct ibv_qp *qp, unsigned slot)
{
    struct ibv_sge sge;
    struct ibv_recv_wr wr = {0}, *bad;

    sge.addr   = (uintptr_t)d->buf + (slot % 4) * FF_RECV_LEN;
    sge.length = FF_RECV_LEN;
    sge.lkey   = d->mr->lkey;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (qp == NULL) {
        ibv_post_srq_recv(d->srq, &wr, &bad); /* full: fine */
    } else {
        ibv_post_recv(qp, &wr, &bad);
    }
}

static void ff_dev_open(ff_dev_t *d)
{
    struct ibv_srq_init_attr sattr = {0};

    FF_CHECK(srq_verbs_open("soft0", &d->dev) == 0);
    d->pd  = srq_verbs_alloc_pd(d->dev);
    d->cq  = srq_verbs_create_cq(d->dev, 4096, NULL, NULL, 0);
    sattr.attr.max_wr  = 256;
    sattr.attr.max_sge = 1;
    d->srq = srq_verbs_create_srq(d->dev, d->pd, &sattr);
    d->buf = aligned_alloc(4096, FF_BUF_LEN);
    FF_CHECK(d->pd && d->cq && d->srq && d->buf);
    memset(d->buf, 0, FF_BUF_LEN);
    d->mr = srq_verbs_reg_mr(d->dev, d->pd, d->buf, FF_BUF_LEN,
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ |
                             IBV_ACCESS_REMOTE_ATOMIC);
    FF_CHECK(d->mr != NULL);
    FF_CHECK(srq_verbs_port_addr(d->dev, 1, &d->addr) == 0);
}

/* (Re)make the QPs of both instances, connected to each other */
static void ff_qps_make(void)
{
    ff_dev_t *d[2] = { &ff_a, &ff_b };
    int i;

    ++ff_pairs;
    for (i = 0; i < 2; ++i) {
        if (d[i]->rc_srq != NULL) {
            srq_verbs_destroy_qp(d[i]->dev, d[i]->rc_srq);
            srq_verbs_destroy_qp(d[i]->dev, d[i]->rc_rq);
            srq_verbs_destroy_qp(d[i]->dev, d[i]->ud);
        }
        d[i]->rc_srq = ff_qp(d[i], IBV_QPT_RC, d[i]->srq);
        d[i]->rc_rq  = ff_qp(d[i], IBV_QPT_RC, NULL);
        d[i]->ud     = ff_qp(d[i], IBV_QPT_UD, NULL);
        FF_CHECK(d[i]->rc_srq && d[i]->rc_rq && d[i]->ud);
        ff_ud_up(d[i], d[i]->ud);
    }
    ff_rc_connect(&ff_a, ff_a.rc_srq, &ff_b.addr, ff_b.rc_srq->qp_num);
    ff_rc_connect(&ff_b, ff_b.rc_srq, &ff_a.addr, ff_a.rc_srq->qp_num);
    ff_rc_connect(&ff_a, ff_a.rc_rq, &ff_b.addr, ff_b.rc_rq->qp_num);
    ff_rc_connect(&ff_b, ff_b.rc_rq, &ff_a.addr, ff_a.rc_rq->qp_num);
    for (i = 0; i < 4; ++i) {
        ff_post_recv(&ff_a, ff_a.rc_rq, i);
        ff_post_recv(&ff_b, ff_b.rc_rq, i);
        ff_post_recv(&ff_a, ff_a.ud, i);
        ff_post_recv(&ff_b, ff_b.ud, i);
    }
}

static void ff_setup(void)
{
    static bool done;
    int i;

    if (done) {
        return;
    }
    done = true;
    ff_dev_open(&ff_a);
    ff_dev_open(&ff_b);
    for (i = 0; i < 64; ++i) {
        ff_post_recv(&ff_a, NULL, i);
        ff_post_recv(&ff_b, NULL, i);
    }
    ff_qps_make();
}

/* ---- progress ------------------------------------------------------ */

/* Poll both instances; take every completion, give receive buffers back */
static void ff_pump(unsigned rounds)
{
    ff_dev_t *d[2] = { &ff_a, &ff_b };
    struct ibv_wc wc[16];
    unsigned r;
    int i, n, k;

    for (r = 0; r < rounds; ++r) {
        for (i = 0; i < 2; ++i) {
            n = ibv_poll_cq(d[i]->cq, 16, wc);
            FF_CHECK(n >= 0);
            for (k = 0; k < n; ++k) {
                if (!(wc[k].opcode & IBV_WC_RECV)) {
                    continue;
                }
                ff_post_recv(d[i], (wc[k].qp_num == d[i]->rc_srq->qp_num) ?
                             NULL : (wc[k].qp_num == d[i]->rc_rq->qp_num) ?
                             d[i]->rc_rq : d[i]->ud, k);
            }
        }
    }
}

static enum ibv_qp_state ff_state(ff_dev_t *d, struct ibv_qp *qp)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;

    FF_CHECK(srq_verbs_query_qp(d->dev, qp, &a, IBV_QP_STATE, &ia) == 0);
    return a.qp_state;
}

/* A fresh RC pair carries a message each way: the device still works */
static void ff_check_traffic(void)
{
    struct ibv_qp *qa = ff_qp(&ff_a, IBV_QPT_RC, NULL);
    struct ibv_qp *qb = ff_qp(&ff_b, IBV_QPT_RC, NULL);
    struct ibv_send_wr wr = {0}, *bad;
    struct ibv_recv_wr rwr = {0}, *rbad;
    struct ibv_sge sge;
    struct ibv_wc wc;
    int got = 0, round, n;

    FF_CHECK(qa && qb);
    ff_rc_connect(&ff_a, qa, &ff_b.addr, qb->qp_num);
    ff_rc_connect(&ff_b, qb, &ff_a.addr, qa->qp_num);
    sge.length  = 64;
    sge.lkey    = ff_b.mr->lkey;
    sge.addr    = (uintptr_t)ff_b.buf + FF_BUF_LEN - 64;
    rwr.wr_id   = 0xfeed;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    FF_CHECK(ibv_post_recv(qb, &rwr, &rbad) == 0);
    sge.lkey       = ff_a.mr->lkey;
    sge.addr       = (uintptr_t)ff_a.buf + FF_BUF_LEN - 64;
    wr.wr_id       = 0xbeef;
    wr.sg_list     = &sge;
    wr.num_sge     = 1;
    wr.opcode      = IBV_WR_SEND;
    wr.send_flags  = IBV_SEND_SIGNALED;
    FF_CHECK(ibv_post_send(qa, &wr, &bad) == 0);
    for (round = 0; (round < 1000000) && (got < 2); ++round) {
        n = ibv_poll_cq(ff_b.cq, 1, &wc);
        if ((n == 1) && (wc.wr_id == 0xfeed)) {
            FF_CHECK(wc.status == IBV_WC_SUCCESS);
            ++got;
        }
        n = ibv_poll_cq(ff_a.cq, 1, &wc);
        if ((n == 1) && (wc.wr_id == 0xbeef)) {
            FF_CHECK(wc.status == IBV_WC_SUCCESS);
            ++got;
        }
    }
    FF_CHECK(got == 2);
    srq_verbs_destroy_qp(ff_a.dev, qa);
    srq_verbs_destroy_qp(ff_b.dev, qb);
}

/* ---- frames -------------------------------------------------------- */

/* The QP of a flow (0: RC on the SRQ, 1: RC with its own RQ, 2: UD), or
 * now and then another number */
static uint32_t ff_qpn(fuzz_in_t *in, ff_dev_t *d, unsigned flow)
{
    struct ibv_qp *qps[3] = { d->rc_srq, d->rc_rq, d->ud };

    switch (fuzz_pick(in, 16)) {
    case 0: return qps[fuzz_pick(in, 3)]->qp_num;
    case 1: return qps[flow]->qp_num ^ (1u << 16); /* another generation */
    case 2: return fuzz_u32(in);
    case 3: return 0;
    default: return qps[flow]->qp_num;
    }
}

static uint32_t ff_len(fuzz_in_t *in)
{
    static const uint32_t lens[] = {
        0, 1, 8, 40, 4095, 4096, 4097, SRQ_SOFT_PKT_INLINE_MAX,
        SRQ_SOFT_PKT_INLINE_MAX + 1, FF_RECV_LEN, FF_RECV_LEN + 1,
        1u << 31, (1u << 31) + 1, UINT32_MAX
    };

    return fuzz_pick(in, 4) ? FUZZ_ONE_OF(in, lens) : fuzz_u32(in);
}

/* An address for the responder to pull from or write to: in registered
 * memory, around it, or anywhere */
static uint64_t ff_addr(fuzz_in_t *in, const ff_dev_t *d)
{
    uint64_t base = (uintptr_t)d->buf;

    switch (fuzz_pick(in, 6)) {
    case 0: return 0;
    case 1: return base + FF_BUF_LEN - fuzz_pick(in, 16);
    case 2: return fuzz_u64(in);
    case 3: return base - 8;
    default: return base + (fuzz_u16(in) % FF_BUF_LEN);
    }
}

/* The payload after the header: iovecs to pull, an atomic request, or
 * bytes; returns its length */
static size_t ff_payload(fuzz_in_t *in, srq_soft_pkt_t *pkt, uint8_t *pl,
                         size_t room, const ff_dev_t *from,
                         const ff_dev_t *to)
{
    srq_soft_pkt_iov_t *iov = (srq_soft_pkt_iov_t*)pl;
    srq_soft_pkt_atomic_t *at = (srq_soft_pkt_atomic_t*)pl;
    uint64_t sum = 0;
    size_t n, i;

    if (pkt->flags & SRQ_SOFT_PKT_F_PULL) {
        n = (pkt->nsge <= 17) ? pkt->nsge : fuzz_pick(in, 18);
        for (i = 0; (i < n) && ((i + 1) * sizeof(*iov) <= room); ++i) {
            iov[i].addr = ff_addr(in, from);
            iov[i].len  = fuzz_pick(in, 3) ? fuzz_u16(in) % 8192 :
                                             fuzz_u64(in);
            sum        += iov[i].len;
        }
        if (fuzz_pick(in, 2)) {
            pkt->length = (uint32_t)sum; /* lengths that add up */
        }
        return i * sizeof(*iov);
    }
    if ((pkt->opcode == SRQ_SOFT_OP_CMP_SWAP) ||
        (pkt->opcode == SRQ_SOFT_OP_FETCH_ADD)) {
        at->addr        = ff_addr(in, to) & ~(uint64_t)(fuzz_pick(in, 4) ? 7 : 0);
        at->compare_add = fuzz_u64(in);
        at->swap        = fuzz_u64(in);
        at->rkey        = fuzz_pick(in, 3) ? to->mr->rkey : fuzz_u32(in);
        at->reserved    = 0;
        if (fuzz_pick(in, 2)) {
            pkt->length = sizeof(uint64_t);
        }
        return sizeof(*at);
    }
    n = fuzz_u16(in) % (room + 1);
    fuzz_fill(in, pl, n);
    if (fuzz_pick(in, 2)) {
        pkt->length = (uint32_t)n; /* the message is the payload */
    }
    return n;
}

/* One frame from @from to @to, built from the input */
static void ff_frame(fuzz_in_t *in, ff_dev_t *from, ff_dev_t *to)
{
    static const uint8_t ops[] = {
        SRQ_SOFT_OP_SEND, SRQ_SOFT_OP_SEND, SRQ_SOFT_OP_SEND,
        SRQ_SOFT_OP_WRITE_IMM, SRQ_SOFT_OP_WRITE_IMM, SRQ_SOFT_OP_ACK,
        SRQ_SOFT_OP_NAK, SRQ_SOFT_OP_CMP_SWAP, SRQ_SOFT_OP_FETCH_ADD,
        SRQ_SOFT_OP_ATOMIC_ACK, SRQ_SOFT_OP_ACCESS_ERR, SRQ_SOFT_OP_PAD, 0,
        SRQ_SOFT_OP_LAST
    };
    static const uint8_t flags[] = {
        0, SRQ_SOFT_PKT_F_IMM, SRQ_SOFT_PKT_F_PULL, SRQ_SOFT_PKT_F_UD,
        SRQ_SOFT_PKT_F_SE, SRQ_SOFT_PKT_F_PULL | SRQ_SOFT_PKT_F_UD,
        SRQ_SOFT_PKT_F_IMM | SRQ_SOFT_PKT_F_SE
    };
    union {
        srq_soft_pkt_t h;
        uint8_t        bytes[SRQ_SOFT_PKT_HDR + 1024];
    } f;
    srq_soft_pkt_t *pkt = &f.h;
    unsigned flow;
    bool scribble;
    size_t len;

    memset(&f, 0, sizeof(f));
    flow         = fuzz_pick(in, 3);
    pkt->opcode  = fuzz_pick(in, 8) ? FUZZ_ONE_OF(in, ops) : fuzz_u8(in);
    pkt->flags   = fuzz_pick(in, 8) ? FUZZ_ONE_OF(in, flags) : fuzz_u8(in);
    if (fuzz_pick(in, 2)) { /* the flow's own kind */
        pkt->flags = (pkt->flags & ~SRQ_SOFT_PKT_F_UD) |
                     ((flow == 2) ? SRQ_SOFT_PKT_F_UD : 0);
    }
    pkt->dst_qpn = ff_qpn(in, to, flow);
    pkt->src_qpn = ff_qpn(in, from, flow);
    /* the pairs start at PSN 0 (and are made anew every FF_REMAKE_EVERY
     * inputs): small PSNs are in or near the window */
    switch (fuzz_pick(in, 4)) {
    case 0:  pkt->psn = fuzz_u32(in);       break;
    case 1:  pkt->psn = fuzz_pick(in, 16);  break;
    default: pkt->psn = fuzz_pick(in, 4);
    }
    pkt->imm     = fuzz_u32(in);
    pkt->length  = ff_len(in);
    pkt->aux     = fuzz_pick(in, 2) ? FF_QKEY :
                   fuzz_pick(in, 2) ? (fuzz_pick(in, 5) | (fuzz_u8(in) << 8)) :
                                      fuzz_u32(in);
    pkt->nsge    = fuzz_pick(in, 4) ? fuzz_pick(in, 18) : fuzz_u16(in);
    pkt->src_lid = fuzz_u16(in);
    switch (fuzz_pick(in, 4)) {
    case 0:  srq_soft_test_instance(to->dev, pkt->src_inst);            break;
    case 1:  fuzz_fill(in, pkt->src_inst, SRQ_SOFT_INST_LEN);           break;
    default: srq_soft_test_instance(from->dev, pkt->src_inst);
    }
    len = ff_payload(in, pkt, f.bytes + sizeof(*pkt),
                     sizeof(f.bytes) - sizeof(*pkt), from, to);
    len += sizeof(*pkt);
    if (!fuzz_pick(in, 8)) {
        len = fuzz_u16(in) % sizeof(f.bytes); /* cut short or padded */
    }
    /* a frame through the producer protocol (the queue's framing is
     * kept), once in a long while raw bytes at the tail */
    scribble = !fuzz_pick(in, 64) && !fuzz_pick(in, 8);
    FF_CHECK(srq_soft_inject(from->dev, to->dev, f.bytes, len ? len : 1,
                             scribble ? SRQ_SOFT_INJECT_SCRIBBLE :
                                        SRQ_SOFT_INJECT_FRAME) == 0);
    /* the consumer finds broken framing only after a while without a
     * frame (soft_ring.c): let it */
    if (scribble) {
        ff_pump(2 * FF_TICK_CALLS);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    unsigned i, n;

    ff_setup();
    n = 1 + fuzz_pick(&in, FF_MAX_FRAMES);
    for (i = 0; i < n; ++i) {
        if (fuzz_pick(&in, 4)) {
            ff_frame(&in, &ff_a, &ff_b); /* to the responder, mostly */
        } else {
            ff_frame(&in, &ff_b, &ff_a);
        }
    }
    ff_pump(4);
    /* garbage may fail a connection: begin again with new QPs */
    if ((ff_state(&ff_a, ff_a.rc_srq) != IBV_QPS_RTS) ||
        (ff_state(&ff_b, ff_b.rc_srq) != IBV_QPS_RTS) ||
        (ff_state(&ff_a, ff_a.rc_rq) != IBV_QPS_RTS) ||
        (ff_state(&ff_b, ff_b.rc_rq) != IBV_QPS_RTS)) {
        ff_pump(16);
        ff_qps_make();
    }
    if ((++ff_inputs % FF_CHECK_EVERY) == 0) {
        ff_check_traffic();
    }
    if ((ff_inputs % FF_REMAKE_EVERY) == 0) {
        ff_pump(16);
        ff_qps_make(); /* PSNs near 0 again: frames reach the window */
    }
    return 0;
}

#ifndef SRQ_FUZZ_LIBFUZZER
/* Everything goes, so that LeakSanitizer sees what destroying leaves */
static void ff_teardown(void)
{
    ff_dev_t *d[2] = { &ff_a, &ff_b };
    int i;

    ff_pump(16);
    for (i = 0; i < 2; ++i) {
        FF_CHECK(srq_verbs_destroy_qp(d[i]->dev, d[i]->rc_srq) == 0);
        FF_CHECK(srq_verbs_destroy_qp(d[i]->dev, d[i]->rc_rq) == 0);
        FF_CHECK(srq_verbs_destroy_qp(d[i]->dev, d[i]->ud) == 0);
        FF_CHECK(srq_verbs_destroy_srq(d[i]->dev, d[i]->srq) == 0);
        FF_CHECK(srq_verbs_dereg_mr(d[i]->dev, d[i]->mr) == 0);
        FF_CHECK(srq_verbs_destroy_cq(d[i]->dev, d[i]->cq) == 0);
        FF_CHECK(srq_verbs_dealloc_pd(d[i]->dev, d[i]->pd) == 0);
        srq_verbs_close(d[i]->dev);
        free(d[i]->buf);
    }
}

int main(int argc, char **argv)
{
    srq_soft_stats_t a, b;
    int ret = fuzz_main(argc, argv, "fuzz_frames", 100000);

    /* where the frames went: taken, dropped (each check that refused one) */
    if ((ret == 0) && (ff_a.dev != NULL) &&
        (srq_soft_query_stats(ff_a.dev, &a) == 0) &&
        (srq_soft_query_stats(ff_b.dev, &b) == 0)) {
        printf("fuzz_frames: frames taken %lu, dropped %lu, out of sequence "
               "%lu; QP pairs made %lu\n",
               (unsigned long)(a.rx_packets + b.rx_packets),
               (unsigned long)(a.rx_dropped + b.rx_dropped),
               (unsigned long)(a.rx_out_of_seq + b.rx_out_of_seq),
               ff_pairs);
        ff_teardown();
    }
    return ret;
}
#endif
