/*
 * ucx-srq: connections and their in-band handshake.
 *
 * Each interface has one RC QP per peer interface. A handshake datagram
 * carries the sender's interface key and the RC QP it has for the pair:
 *
 *   A: REQ(qp_a) ->            B: connects qp_b to qp_a, REP(qp_b)
 *   A: connects qp_a to qp_b, RTU ->   B: connected
 *
 * If both sides connect at once, each receives the other's REQ while it
 * waits: each side has exactly one QP for the pair, so both connect it to
 * the QP named in the peer's REQ, and the two REPs finish the job. Lost
 * datagrams are retransmitted with backoff (REQ while connecting, REP while
 * waiting for the RTU); duplicates are answered again and change nothing.
 *
 * An interface that closes tells its peers (DISC, best effort: a datagram
 * per live connection, as many as its UD send queue takes), so they free
 * their side at once; a connection no endpoint uses is probed now and then
 * (CONN_IDLE_CHECK), so one whose peer died without a word fails and goes
 * too. Either way its QP number comes back.
 */
#include "srq_conn.h"
#include "srq_async.h"
#include "srq_check.h"
#include "srq_qp.h"
#include "srq_iface.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/memtrack.h>
#include <ucs/async/async_fwd.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define UCT_SRQ_HS_MAGIC      0x43515253u  /* "SRQC" */
/* 2: the am id travels as the immediate (srq_am.h); a peer of another
 * version is not connected to */
#define UCT_SRQ_HS_VERSION    2
#define UCT_SRQ_HS_QKEY       0x1ee75a5cu
#define UCT_SRQ_HS_GRH_LEN    40
#define UCT_SRQ_HS_UD_TX_LEN  64
/* Handshake completions per poll, and polls per look of the async thread
 * (each also runs the built-in soft device: up to 64 packets) */
#define UCT_SRQ_HS_POLL_BATCH  16
/* wr_id of a handshake send (a receive's is its buffer's index) */
#define UCT_SRQ_HS_SEND_WRID   UINT64_MAX
#define UCT_SRQ_HS_ASYNC_POLLS 16
#define UCT_SRQ_HS_MAX_RETRY  ucs_time_from_sec(1.0)

typedef enum {
    UCT_SRQ_HS_REQ  = 1,
    UCT_SRQ_HS_REP  = 2,
    UCT_SRQ_HS_RTU  = 3,
    UCT_SRQ_HS_DISC = 4   /* the sender's interface closes: its QP is gone */
} uct_srq_hs_msg_type_t;

/* A handshake datagram; integers little endian */
typedef struct uct_srq_hs_msg {
    uint32_t            magic;
    uint8_t             version;
    uint8_t             type;
    uint16_t            reserved;
    uct_srq_conn_key_t  src;      /* the sender's interface */
    uint32_t            rc_qpn;   /* the sender's RC QP for this pair */
} UCS_S_PACKED uct_srq_hs_msg_t;

#define UCT_SRQ_HS_BUF_LEN \
    ucs_align_up(UCT_SRQ_HS_GRH_LEN + sizeof(uct_srq_hs_msg_t) + 64, 64)

ucs_config_field_t uct_srq_hs_config_table[] = {
    {"CONN_TIMEOUT", "30s",
     "Give up establishing a connection after this long; the endpoints of a\n"
     "connection that never came up get UCS_ERR_UNREACHABLE.",
     ucs_offsetof(uct_srq_hs_config_t, timeout), UCS_CONFIG_TYPE_TIME},

    {"CONN_IDLE_CHECK", "10s",
     "How often connections that no endpoint of this interface uses (those\n"
     "peers asked for) are probed, if nothing was sent on them since the last\n"
     "look; one whose peer is gone fails and is freed with its QP\n"
     "(1ms..1 day). Peers that close their interface say so; this finds those\n"
     "that died.",
     ucs_offsetof(uct_srq_hs_config_t, idle_check), UCS_CONFIG_TYPE_TIME},

    {"CONN_RETRY", "10ms",
     "First retransmission interval of a handshake datagram that got no\n"
     "answer; it doubles with each retry, up to 1s.",
     ucs_offsetof(uct_srq_hs_config_t, retry), UCS_CONFIG_TYPE_TIME},

    {"CONN_DROP", "0",
     "Debugging: drop this percentage (0..100) of the handshake datagrams\n"
     "the interface sends, to exercise retransmission. Keep 0 in production.",
     ucs_offsetof(uct_srq_hs_config_t, drop), UCS_CONFIG_TYPE_UINT},

    {"CONN_MAX_ACCEPTING", "1024",
     "Connections asked for by peers (a request received) that may be half\n"
     "open at once, waiting for the peer's last handshake message (1..65536).\n"
     "Further requests are dropped until some complete or time out\n"
     "(CONN_TIMEOUT), and their peers retry: this bounds what requests,\n"
     "which anyone on the fabric can send, cost in QPs and memory.",
     ucs_offsetof(uct_srq_hs_config_t, max_accepting), UCS_CONFIG_TYPE_UINT},

    {"CONN_QUEUE_LEN", "64",
     "Receive buffers of the handshake (UD) QP (8..4096).",
     ucs_offsetof(uct_srq_hs_config_t, queue_len), UCS_CONFIG_TYPE_UINT},

    {"ASYNC_INTERVAL", "10ms",
     "How often UCX's async thread looks at an interface whose owner has not\n"
     "progressed it since the last look (100us..60s). It then answers peers'\n"
     "handshakes for it, so that a process busy elsewhere does not time its\n"
     "peers out, and (on the built-in soft device) runs the device, which\n"
     "serves one-sided operations targeting it, as an HCA does without the\n"
     "host's CPU. An owner that progresses costs one counter comparison per\n"
     "look. One timer per process, at the first interface's interval. Not\n"
     "with SRQ=n: a QP's receive buffers come from the owner's pool.",
     ucs_offsetof(uct_srq_hs_config_t, async_interval), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

/* This thread is UCX's async thread, in uct_srq_hs_async_look */
static __thread int uct_srq_hs_in_async;

static const char *uct_srq_hs_msg_name(uint8_t type)
{
    switch (type) {
    case UCT_SRQ_HS_REQ: return "REQ";
    case UCT_SRQ_HS_REP: return "REP";
    case UCT_SRQ_HS_RTU: return "RTU";
    case UCT_SRQ_HS_DISC: return "DISC";
    default:             return "?";
    }
}

/* ---- the handshake QP ---------------------------------------------------- */

static int uct_srq_hs_post_recv(uct_srq_hs_t *hs, unsigned index)
{
    struct ibv_recv_wr wr, *bad_wr;
    struct ibv_sge sge;

    sge.addr   = (uintptr_t)hs->bufs + (size_t)index * UCT_SRQ_HS_BUF_LEN;
    sge.length = UCT_SRQ_HS_BUF_LEN;
    sge.lkey   = hs->mr->lkey;
    wr.wr_id   = index;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.next    = NULL;
    return ibv_post_recv(hs->ud_qp, &wr, &bad_wr);
}

static ucs_status_t uct_srq_hs_ud_qp_init(uct_srq_hs_t *hs,
                                          uct_srq_iface_t *iface)
{
    struct ibv_qp_init_attr init = {};
    struct ibv_qp_attr attr      = {};
    int ret;

    /* a CQ of its own: the async thread polls it, never the data CQs */
    hs->cq = srq_verbs_create_cq(iface->dev,
                                 hs->num_bufs + UCT_SRQ_HS_UD_TX_LEN, NULL,
                                 NULL, 0);
    if (hs->cq == NULL) {
        ucs_error("srq: failed to create the handshake CQ: %m");
        return UCS_ERR_IO_ERROR;
    }
    init.send_cq             = hs->cq;
    init.recv_cq             = hs->cq;
    init.qp_type             = IBV_QPT_UD;
    init.cap.max_send_wr     = UCT_SRQ_HS_UD_TX_LEN;
    init.cap.max_recv_wr     = hs->num_bufs;
    init.cap.max_send_sge    = 1;
    init.cap.max_recv_sge    = 1;
    init.cap.max_inline_data = sizeof(uct_srq_hs_msg_t);
    hs->ud_qp = srq_verbs_create_qp(iface->dev, iface->pd, &init);
    if (hs->ud_qp == NULL) {
        ucs_error("srq: failed to create the handshake UD QP: %m");
        srq_verbs_destroy_cq(iface->dev, hs->cq);
        return UCS_ERR_IO_ERROR;
    }

    attr.qp_state   = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num   = iface->port_num;
    attr.qkey       = UCT_SRQ_HS_QKEY;
    ret = srq_verbs_modify_qp(iface->dev, hs->ud_qp, &attr,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                              IBV_QP_QKEY);
    if (ret == 0) {
        attr.qp_state = IBV_QPS_RTR;
        ret = srq_verbs_modify_qp(iface->dev, hs->ud_qp, &attr, IBV_QP_STATE);
    }
    if (ret == 0) {
        attr.qp_state = IBV_QPS_RTS;
        attr.sq_psn   = 0;
        ret = srq_verbs_modify_qp(iface->dev, hs->ud_qp, &attr,
                                  IBV_QP_STATE | IBV_QP_SQ_PSN);
    }
    if (ret != 0) {
        ucs_error("srq: failed to bring up the handshake UD QP: %s",
                  strerror(ret));
        srq_verbs_destroy_qp(iface->dev, hs->ud_qp);
        srq_verbs_destroy_cq(iface->dev, hs->cq);
        hs->ud_qp = NULL;
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t uct_srq_hs_check_config(const uct_srq_hs_config_t *config)
{
    UCT_SRQ_CHECK_RANGE("CONN_QUEUE_LEN", config->queue_len, 8, 4096);
    UCT_SRQ_CHECK_RANGE("CONN_DROP", config->drop, 0, 100);
    UCT_SRQ_CHECK_RANGE("CONN_MAX_ACCEPTING", config->max_accepting, 1, 65536);
    UCT_SRQ_CHECK_TIME_RANGE("CONN_TIMEOUT", config->timeout, 1e-3, 86400);
    UCT_SRQ_CHECK_TIME_RANGE("CONN_IDLE_CHECK", config->idle_check, 1e-3,
                             86400);
    UCT_SRQ_CHECK_TIME_RANGE("ASYNC_INTERVAL", config->async_interval, 1e-4,
                             60);
    /* the first retransmission comes before giving up */
    UCT_SRQ_CHECK_TIME_RANGE("CONN_RETRY", config->retry, 1e-6,
                             config->timeout);
    return UCS_OK;
}

ucs_status_t uct_srq_hs_init(uct_srq_hs_t *hs, uct_srq_iface_t *iface,
                             const uct_srq_hs_config_t *config,
                             const uct_srq_conn_hooks_t *hooks)
{
    pthread_mutexattr_t mattr;
    size_t size;
    ucs_status_t status;
    unsigned i;
    int ret;

    /* the interface checked the config (uct_srq_hs_check_config) */
    memset(hs, 0, sizeof(*hs));
    hs->config.async_interval = ucs_time_from_sec(config->async_interval);
    kh_init_inplace(uct_srq_conns, &hs->conns);
    ucs_list_head_init(&hs->connecting);
    ucs_list_head_init(&hs->dead);
    hs->config.timeout = ucs_time_from_sec(config->timeout);
    hs->config.idle_check = ucs_time_from_sec(config->idle_check);
    hs->next_idle_check   = ucs_get_time() + hs->config.idle_check;
    hs->config.retry   = ucs_time_from_sec(config->retry);
    hs->config.drop    = config->drop;
    hs->config.max_accepting = config->max_accepting;
    hs->seed           = ucs_get_time();
    hs->num_bufs       = config->queue_len;
    hs->ud_tx_avail    = UCT_SRQ_HS_UD_TX_LEN;
    hs->hooks          = hooks;
    /* recursive: the owner's failing a connection may come from within
     * the handshake's own code */
    pthread_mutexattr_init(&mattr);
    pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&hs->lock, &mattr);
    pthread_mutexattr_destroy(&mattr);

    size     = (size_t)hs->num_bufs * UCT_SRQ_HS_BUF_LEN;
    hs->bufs = ucs_malloc(size, "srq handshake buffers");
    if (hs->bufs == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    hs->mr = srq_verbs_reg_mr(iface->dev, iface->pd, hs->bufs, size,
                              IBV_ACCESS_LOCAL_WRITE);
    if (hs->mr == NULL) {
        ucs_error("srq: failed to register handshake buffers: %m");
        status = UCS_ERR_IO_ERROR;
        goto err_free;
    }

    status = uct_srq_hs_ud_qp_init(hs, iface);
    if (status != UCS_OK) {
        goto err_dereg;
    }

    for (i = 0; i < hs->num_bufs; ++i) {
        ret = uct_srq_hs_post_recv(hs, i);
        if (ret != 0) {
            ucs_error("srq: failed to post handshake buffers: %s",
                      strerror(ret));
            status = UCS_ERR_IO_ERROR;
            goto err_qp;
        }
    }
    return UCS_OK;

err_qp:
    srq_verbs_destroy_qp(iface->dev, hs->ud_qp);
    srq_verbs_destroy_cq(iface->dev, hs->cq);
err_dereg:
    srq_verbs_dereg_mr(iface->dev, hs->mr);
err_free:
    ucs_free(hs->bufs);
    kh_destroy_inplace(uct_srq_conns, &hs->conns);
    pthread_mutex_destroy(&hs->lock);
    return status;
}

/* ---- connections ------------------------------------------------------ */

static void uct_srq_hs_send(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                            uint8_t type);
static void uct_srq_conn_lost(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                              ucs_status_t status, const char *reason);

/* @conn's handshake is over (done or failed): off the connecting list, and
 * no longer one of the half-open connections peers asked for */
static void uct_srq_conn_leave_connecting(uct_srq_hs_t *hs,
                                          uct_srq_conn_t *conn)
{
    ucs_list_del(&conn->list);
    if (conn->accepting) {
        conn->accepting = 0;
        --hs->num_accepting;
    }
}

/* Its QP, address handle and (per-QP mode) receive queue. A failed
 * connection lets them go once nothing is in flight on them, even while
 * endpoints still refer to it: QP numbers are what a long-running process
 * runs out of. */
static void uct_srq_conn_release_qp(uct_srq_iface_t *iface,
                                    uct_srq_conn_t *conn)
{
    if (conn->ah != NULL) {
        srq_verbs_destroy_ah(iface->dev, conn->ah);
        conn->ah = NULL;
    }
    if (conn->qp != NULL) {
        uct_srq_rx_rq_cleanup(&iface->rx, &conn->rq);
        srq_verbs_destroy_qp(iface->dev, conn->qp);
        conn->qp = NULL;
    }
}

/* WRs waiting for the connection go without being posted: their slots come
 * back, their operations complete with @status. Only once every WR posted
 * before them completed: operations complete in sequence order. */
static void uct_srq_conn_drop_queued(uct_srq_iface_t *iface,
                                     uct_srq_conn_t *conn, ucs_status_t status)
{
    uct_srq_conn_wr_t *cwr;

    ucs_queue_for_each_extract(cwr, &conn->queued, queue, 1) {
        uct_srq_iface_tx_uncount(iface, conn);
        ucs_free(cwr);
    }
    conn->num_queued = 0;
    uct_srq_conn_complete_ops(iface, conn, status);
}

static void uct_srq_conn_destroy(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    /* endpoints outliving the interface lose their connection */
    iface->hs.hooks->closed(iface, conn);
    /* operations still queued complete with an error, their memory is
     * about to go away */
    conn->sn_done = conn->sn_posted - conn->num_queued;
    uct_srq_conn_drop_queued(iface, conn, UCS_ERR_CANCELED);
    uct_srq_conn_release_qp(iface, conn);
    ucs_free(conn);
}

static int uct_srq_conn_is_self(uct_srq_iface_t *iface,
                                const uct_srq_conn_t *conn)
{
    return (conn->key.ud_qpn == iface->hs.ud_qp->qp_num) &&
           !memcmp(&conn->key.dev, &iface->port_addr, sizeof(conn->key.dev));
}

void uct_srq_hs_cleanup(uct_srq_hs_t *hs, uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn, *tmp;

    kh_foreach_value(&hs->conns, conn, {
        /* the peer frees its side now, not when it next sends */
        if (!uct_srq_conn_is_self(iface, conn)) {
            uct_srq_hs_send(iface, conn, UCT_SRQ_HS_DISC);
        }
        if (uct_srq_conn_is_connecting(conn)) {
            uct_srq_conn_leave_connecting(hs, conn);
        }
        uct_srq_conn_destroy(iface, conn);
    });
    ucs_list_for_each_safe(conn, tmp, &hs->dead, list) {
        uct_srq_conn_destroy(iface, conn);
    }
    kh_destroy_inplace(uct_srq_conns, &hs->conns);
    srq_verbs_destroy_qp(iface->dev, hs->ud_qp);
    srq_verbs_destroy_cq(iface->dev, hs->cq);
    srq_verbs_dereg_mr(iface->dev, hs->mr);
    ucs_free(hs->bufs);
    pthread_mutex_destroy(&hs->lock);
}

static ucs_status_t uct_srq_conn_create(uct_srq_iface_t *iface,
                                        const uct_srq_conn_key_t *key,
                                        uct_srq_conn_t **conn_p)
{
    uct_srq_hs_t *hs            = &iface->hs;
    struct ibv_ah_attr ah_attr;
    uct_srq_conn_t *conn;
    khiter_t it;
    int ret;

    ret = srq_verbs_ah_attr(iface->dev, iface->port_num, &key->dev, &ah_attr);
    if (ret != 0) {
        ucs_diag("srq: peer address is not reachable from %s: %s",
                 srq_verbs_dev_name(iface->dev), strerror(ret));
        return UCS_ERR_UNREACHABLE;
    }

    conn = ucs_calloc(1, sizeof(*conn), "srq conn");
    if (conn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    if ((uintptr_t)conn & ~UCT_SRQ_WRID_CONN_MASK) {
        /* its WRs' wr_id could not name it (uct_srq_conn_wr_id) */
        ucs_error("srq: connection %p is above 2^48", conn);
        ucs_free(conn);
        return UCS_ERR_UNSUPPORTED;
    }
    conn->key      = *key;
    conn->state    = UCT_SRQ_CONN_CONNECTING;
    conn->tx_avail = iface->config.tx_queue_len;
    ucs_queue_head_init(&conn->ops);
    ucs_queue_head_init(&conn->queued);
    ucs_list_head_init(&conn->eps);

    conn->ah = srq_verbs_create_ah(iface->dev, iface->pd, &ah_attr);
    if (conn->ah == NULL) {
        if ((errno == EHOSTUNREACH) || (errno == ENOENT)) {
            /* the peer is gone (e.g. a request that came after its sender
             * closed; through libibverbs its LID is then unknown): no
             * error of ours */
            ucs_diag("srq: peer ud qpn 0x%x is unreachable", key->ud_qpn);
            ucs_free(conn);
            return UCS_ERR_UNREACHABLE;
        }
        ucs_error("srq: failed to create an address handle: %m");
        goto err_free;
    }

    if (uct_srq_qp_create(iface, iface->config.tx_queue_len,
                          &conn->qp) != UCS_OK) {
        goto err_ah;
    }
    if ((iface->rx.srq == NULL) &&
        (uct_srq_rx_rq_init(&iface->rx, iface, &conn->rq, conn->qp) !=
         UCS_OK)) {
        goto err_qp;
    }

    it = kh_put(uct_srq_conns, &hs->conns, *key, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        goto err_qp;
    }
    kh_value(&hs->conns, it) = conn;

    conn->retry_interval = hs->config.retry;
    conn->next_retry     = ucs_get_time() + conn->retry_interval;
    conn->deadline       = ucs_get_time() + hs->config.timeout;
    ucs_list_add_tail(&hs->connecting, &conn->list);
    *conn_p = conn;
    return UCS_OK;

err_qp:
    uct_srq_rx_rq_cleanup(&iface->rx, &conn->rq);
    srq_verbs_destroy_qp(iface->dev, conn->qp);
err_ah:
    srq_verbs_destroy_ah(iface->dev, conn->ah);
err_free:
    ucs_free(conn);
    return UCS_ERR_IO_ERROR;
}

static void uct_srq_hs_send(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                            uint8_t type)
{
    uct_srq_hs_t *hs = &iface->hs;
    struct ibv_send_wr wr, *bad_wr;
    uct_srq_hs_msg_t msg;
    struct ibv_sge sge;
    int ret;

    if (hs->ud_tx_avail <= 0) {
        return; /* the retry timer sends it later */
    }
    if (ucs_unlikely(hs->config.drop > 0) &&
        ((unsigned)rand_r(&hs->seed) % 100 < hs->config.drop)) {
        ++hs->stats.lost;
        return; /* lost on the way, as far as the peer can tell */
    }

    msg.magic    = htole32(UCT_SRQ_HS_MAGIC);
    msg.version  = UCT_SRQ_HS_VERSION;
    msg.type     = type;
    msg.reserved = 0;
    msg.src.dev    = iface->port_addr;
    msg.src.ud_qpn = htole32(hs->ud_qp->qp_num);
    msg.rc_qpn   = htole32(conn->qp->qp_num);

    sge.addr              = (uintptr_t)&msg;
    sge.length            = sizeof(msg);
    sge.lkey              = 0;
    wr.wr_id              = UCT_SRQ_HS_SEND_WRID;
    wr.next               = NULL;
    wr.sg_list            = &sge;
    wr.num_sge            = 1;
    wr.opcode             = IBV_WR_SEND;
    wr.send_flags         = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    wr.wr.ud.ah           = conn->ah;
    wr.wr.ud.remote_qpn   = conn->key.ud_qpn;
    wr.wr.ud.remote_qkey  = UCT_SRQ_HS_QKEY;
    ret = ibv_post_send(hs->ud_qp, &wr, &bad_wr);
    if (ret != 0) {
        ucs_diag("srq: failed to send a handshake %s: %s",
                 uct_srq_hs_msg_name(type), strerror(ret));
        return;
    }
    --hs->ud_tx_avail;
    ++hs->stats.sent;
    ucs_trace("srq: sent %s to ud qpn 0x%x (rc qp 0x%x)",
              uct_srq_hs_msg_name(type), conn->key.ud_qpn, conn->qp->qp_num);
}

/* The connection is up: what its endpoints sent meanwhile goes, in order */
static void uct_srq_conn_post_queued(uct_srq_iface_t *iface,
                                     uct_srq_conn_t *conn)
{
    struct ibv_send_wr *bad_wr;
    uct_srq_conn_wr_t *cwr;
    int ret;

    while (!ucs_queue_is_empty(&conn->queued)) {
        cwr = ucs_queue_head_elem_non_empty(&conn->queued, uct_srq_conn_wr_t,
                                            queue);
        ret = ibv_post_send(conn->qp, &cwr->wr, &bad_wr);
        if (ret != 0) {
            /* it had a send slot: only a broken device gets here */
            ucs_error("srq: posting a send on QP 0x%x failed: %s",
                      conn->qp->qp_num, strerror(ret));
            uct_srq_conn_fail(iface, conn, UCS_ERR_IO_ERROR,
                              "a send could not be posted");
            return;
        }
        ucs_queue_pull_non_empty(&conn->queued);
        --conn->num_queued;
        ucs_free(cwr);
    }
}

static void uct_srq_conn_established(uct_srq_iface_t *iface,
                                     uct_srq_conn_t *conn)
{
    if (uct_srq_hs_in_async) {
        /* its queued sends and waiting endpoints are the owner's: it goes
         * on from the owner's progress (still on the connecting list) */
        conn->state = UCT_SRQ_CONN_READY;
        __atomic_store_n(&iface->hs.async_left, 1, __ATOMIC_RELAXED);
        return;
    }
    uct_srq_conn_leave_connecting(&iface->hs, conn);
    conn->state = UCT_SRQ_CONN_CONNECTED;
    ucs_debug("srq: connection QP 0x%x <-> 0x%x is up", conn->qp->qp_num,
              conn->remote_qpn);
    uct_srq_conn_post_queued(iface, conn);
    if (conn->state == UCT_SRQ_CONN_CONNECTED) {
        iface->hs.hooks->established(iface, conn);
    }
}

ucs_status_t uct_srq_hs_get_conn(uct_srq_iface_t *iface,
                                 const uct_srq_conn_key_t *key,
                                 uct_srq_conn_t **conn_p)
{
    ucs_status_t status = UCS_OK;
    uct_srq_conn_t *conn;
    khiter_t it;

    pthread_mutex_lock(&iface->hs.lock);
    it = kh_get(uct_srq_conns, &iface->hs.conns, *key);
    if (it != kh_end(&iface->hs.conns)) {
        *conn_p = kh_value(&iface->hs.conns, it);
    } else {
        status = uct_srq_conn_create(iface, key, &conn);
        if (status == UCS_OK) {
            uct_srq_hs_send(iface, conn, UCT_SRQ_HS_REQ);
            *conn_p = conn;
        }
    }
    pthread_mutex_unlock(&iface->hs.lock);
    return status;
}

/* ---- receiving handshake datagrams ------------------------------------- */

static int uct_srq_hs_msg_valid(uct_srq_iface_t *iface,
                                const uct_srq_hs_msg_t *msg, uint32_t len)
{
    return (len >= sizeof(*msg)) &&
           (le32toh(msg->magic) == UCT_SRQ_HS_MAGIC) &&
           (msg->version == UCT_SRQ_HS_VERSION) &&
           (msg->type >= UCT_SRQ_HS_REQ) && (msg->type <= UCT_SRQ_HS_DISC) &&
           (msg->src.dev.kind == iface->port_addr.kind) &&
           /* a port its device has: peers run the same kind of device */
           (msg->src.dev.port_num >= 1) &&
           (msg->src.dev.port_num <= iface->dev_attr.phys_port_cnt);
}

/*
 * The datagram names the interface that sent it (its port address and
 * handshake QP: the connection's key); the device says which QP and port
 * it came from (the source QP, and the GRH's source GID or the source
 * LID). They must be the same: otherwise any QP could open, or take
 * ahead of time, another interface's connection - QP numbers are easy to
 * guess, and a connection to a key that already has one is refused.
 */
static int uct_srq_hs_src_valid(const uct_srq_hs_msg_t *msg,
                                const struct ibv_wc *wc, const void *grh)
{
    if (le32toh(msg->src.ud_qpn) != wc->src_qp) {
        return 0;
    }
    if (wc->wc_flags & IBV_WC_GRH) {
        /* the source GID: bytes 8..23 of the GRH */
        return !memcmp(UCS_PTR_BYTE_OFFSET(grh, 8), msg->src.dev.gid,
                       sizeof(msg->src.dev.gid));
    }
    return wc->slid == ntohs(msg->src.dev.lid);
}

static void uct_srq_hs_drop(uct_srq_iface_t *iface, const char *why,
                            const uct_srq_hs_msg_t *msg)
{
    ++iface->hs.stats.dropped;
    ucs_diag("srq: dropped a handshake datagram (%s)", why);
}

/* Connect our QP for the pair to the QP @rc_qpn the peer named, and answer
 * with @reply; a QP that cannot be connected fails the connection */
static ucs_status_t uct_srq_hs_connect_reply(uct_srq_iface_t *iface,
                                             uct_srq_conn_t *conn,
                                             uint32_t rc_qpn, uint8_t reply)
{
    ucs_status_t status;

    status = uct_srq_qp_connect(iface, conn->qp, &conn->key.dev, rc_qpn);
    if (status != UCS_OK) {
        uct_srq_conn_fail(iface, conn, status,
                          (status == UCS_ERR_UNREACHABLE) ?
                          "the peer is gone" : "the QP could not be connected");
        return status;
    }
    conn->remote_qpn = rc_qpn;
    uct_srq_hs_send(iface, conn, reply);
    return UCS_OK;
}

static void uct_srq_hs_handle_req(uct_srq_iface_t *iface,
                                  uct_srq_conn_t *conn, uint32_t rc_qpn)
{
    switch (conn->state) {
    case UCT_SRQ_CONN_CONNECTING:
        /* a new peer, or a simultaneous connect: our one QP for the pair
         * goes to the QP the peer named; the REP is retried until the RTU */
        if (uct_srq_hs_connect_reply(iface, conn, rc_qpn, UCT_SRQ_HS_REP) ==
            UCS_OK) {
            conn->state          = UCT_SRQ_CONN_REP_SENT;
            conn->retry_interval = iface->hs.config.retry;
            conn->next_retry     = ucs_get_time() + conn->retry_interval;
        }
        break;
    case UCT_SRQ_CONN_REP_SENT:
    case UCT_SRQ_CONN_READY:
    case UCT_SRQ_CONN_CONNECTED:
        /* a retransmitted REQ: our REP was lost */
        uct_srq_hs_send(iface, conn, UCT_SRQ_HS_REP);
        break;
    default:
        break;
    }
}

static void uct_srq_hs_handle_rep(uct_srq_iface_t *iface,
                                  uct_srq_conn_t *conn, uint32_t rc_qpn)
{
    switch (conn->state) {
    case UCT_SRQ_CONN_CONNECTING:
        /* the peer connected its QP to ours: ours goes to its */
        if (uct_srq_hs_connect_reply(iface, conn, rc_qpn, UCT_SRQ_HS_RTU) ==
            UCS_OK) {
            uct_srq_conn_established(iface, conn);
        }
        break;
    case UCT_SRQ_CONN_REP_SENT:
        /* the peer's QP is ready for ours */
        uct_srq_hs_send(iface, conn, UCT_SRQ_HS_RTU);
        uct_srq_conn_established(iface, conn);
        break;
    case UCT_SRQ_CONN_READY:
    case UCT_SRQ_CONN_CONNECTED:
        uct_srq_hs_send(iface, conn, UCT_SRQ_HS_RTU); /* our RTU was lost */
        break;
    default:
        break;
    }
}

static void uct_srq_hs_handle_rx(uct_srq_iface_t *iface,
                                 const struct ibv_wc *wc)
{
    uct_srq_hs_t *hs = &iface->hs;
    unsigned index   = wc->wr_id;
    const uct_srq_hs_msg_t *msg;
    const void *grh;
    uct_srq_conn_key_t key;
    uct_srq_conn_t *conn;
    uint32_t rc_qpn;
    khiter_t it;
    int ret;

    if (wc->status == IBV_WC_WR_FLUSH_ERR) {
        return; /* the QP is in error: a repost would only flush again */
    }
    if (wc->status != IBV_WC_SUCCESS) {
        /* e.g. a datagram longer than the buffer (IBV_WC_LOC_LEN_ERR): on a
         * UD QP that fails this WR only, and the buffer must go back, or
         * a peer sending such datagrams leaves no room for real ones */
        ++hs->stats.dropped;
        ucs_diag("srq: handshake receive failed: %s",
                 ibv_wc_status_str(wc->status));
        goto out;
    }

    /* UD: the first 40 bytes hold the GRH */
    grh = UCS_PTR_BYTE_OFFSET(hs->bufs, (size_t)index * UCT_SRQ_HS_BUF_LEN);
    msg = UCS_PTR_BYTE_OFFSET(grh, UCT_SRQ_HS_GRH_LEN);
    if ((wc->byte_len < UCT_SRQ_HS_GRH_LEN) ||
        !uct_srq_hs_msg_valid(iface, msg, wc->byte_len - UCT_SRQ_HS_GRH_LEN)) {
        uct_srq_hs_drop(iface, "malformed", msg);
        goto out;
    }
    if (!uct_srq_hs_src_valid(msg, wc, grh)) {
        uct_srq_hs_drop(iface, "names another source than its own", msg);
        goto out;
    }

    key        = msg->src;
    key.ud_qpn = le32toh(msg->src.ud_qpn);
    rc_qpn     = le32toh(msg->rc_qpn) & 0xffffff;
    ucs_trace("srq: got %s from ud qpn 0x%x (rc qp 0x%x)",
              uct_srq_hs_msg_name(msg->type), key.ud_qpn, rc_qpn);

    it = kh_get(uct_srq_conns, &hs->conns, key);
    if (it != kh_end(&hs->conns)) {
        conn = kh_value(&hs->conns, it);
        if ((conn->state != UCT_SRQ_CONN_CONNECTING) &&
            (conn->remote_qpn != rc_qpn)) {
            uct_srq_hs_drop(iface, "names another QP than the connection's", msg);
            goto out;
        }
    } else if (msg->type == UCT_SRQ_HS_REQ) {
        if (hs->num_accepting >= hs->config.max_accepting) {
            uct_srq_hs_drop(iface, "too many half-open connections", msg);
            goto out;
        }
        if (uct_srq_conn_create(iface, &key, &conn) != UCS_OK) {
            uct_srq_hs_drop(iface, "cannot create a connection", msg);
            goto out;
        }
        conn->accepting = 1;
        ++hs->num_accepting;
    } else {
        uct_srq_hs_drop(iface, "no connection for it", msg);
        goto out;
    }

    switch (msg->type) {
    case UCT_SRQ_HS_REQ:
        uct_srq_hs_handle_req(iface, conn, rc_qpn);
        break;
    case UCT_SRQ_HS_REP:
        uct_srq_hs_handle_rep(iface, conn, rc_qpn);
        break;
    case UCT_SRQ_HS_RTU:
        if (conn->state == UCT_SRQ_CONN_REP_SENT) {
            uct_srq_conn_established(iface, conn);
        }
        break;
    case UCT_SRQ_HS_DISC:
        uct_srq_conn_lost(iface, conn, UCS_ERR_CONNECTION_RESET,
                          "the peer closed its interface");
        break;
    }

out:
    ret = uct_srq_hs_post_recv(hs, index);
    if (ret != 0) {
        ucs_error("srq: failed to repost a handshake buffer: %s",
                  strerror(ret));
    }
}

/*
 * A failed connection's QP is in the error state: its WRs still in flight
 * come back flushed, but an unsignaled tail that completed before gives no
 * completion at all. A signaled marker behind it does (as the kernel
 * drains a send queue), retiring the tail; it waits for a send slot and a
 * send CQ slot (the reaper tries again). No WR is queued behind a tail of
 * posted WRs: sends queue only while connecting, and a failed connection
 * with WRs in flight has told its endpoints.
 */
static void uct_srq_conn_drain(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    struct ibv_send_wr wr, *bad_wr;
    int ret;

    if ((conn->tx_avail <= 0) || (iface->tx_cq_avail <= 0)) {
        return;
    }
    conn->drain_pending = 0;
    uct_srq_conn_marker_wr(&wr);
    wr.wr_id = uct_srq_conn_wr_id(conn, conn->sn_posted + 1);
    ret      = ibv_post_send(conn->qp, &wr, &bad_wr);
    if (ret != 0) {
        ucs_error("srq: draining QP 0x%x failed: %s", conn->qp->qp_num,
                  strerror(ret));
        return;
    }
    conn->tx_unsignaled = 0;
    uct_srq_iface_tx_count(iface, conn);
}

/* No WR of @conn in flight or waiting, and (per-QP mode) no receive WR
 * still to come back flushed: their completions point at it */
static int uct_srq_conn_is_idle(const uct_srq_conn_t *conn)
{
    return (conn->sn_done == conn->sn_posted) && (conn->rq.posted == 0);
}

/* A failed connection goes once nothing refers to it any more: no
 * endpoint either */
static int uct_srq_conn_is_unused(uct_srq_conn_t *conn)
{
    return ucs_list_is_empty(&conn->eps) && uct_srq_conn_is_idle(conn);
}

/* Its endpoints learn that @conn failed, once */
static void uct_srq_conn_report(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    if (!conn->fail_reported) {
        conn->fail_reported = 1;
        iface->hs.hooks->failed(iface, conn, conn->fail_status);
    }
}

/*
 * Failed connections: endpoints that sent on one their error was not
 * reported to yet learn it now (their sends were queued, then dropped with
 * an error); the QP goes once nothing is in flight; the connection once
 * nothing refers to it.
 */
static void uct_srq_hs_reap(uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn, *tmp;

    ucs_list_for_each_safe(conn, tmp, &iface->hs.dead, list) {
        if (conn->drain_pending) {
            uct_srq_conn_drain(iface, conn);
        }
        if ((conn->num_queued > 0) &&
            (conn->sn_done + conn->num_queued == conn->sn_posted)) {
            uct_srq_conn_drop_queued(iface, conn, conn->fail_status);
            uct_srq_conn_report(iface, conn);
        }
        if (uct_srq_conn_is_unused(conn)) {
            ucs_list_del(&conn->list);
            uct_srq_conn_destroy(iface, conn);
        } else if ((conn->qp != NULL) && uct_srq_conn_is_idle(conn)) {
            uct_srq_conn_release_qp(iface, conn);
        }
    }
}

/* A probe on an idle connection: if the peer is gone, the send fails and
 * so does the connection. Skipped while the connection has no send slot:
 * its own traffic tells then. */
static void uct_srq_conn_probe(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    struct ibv_send_wr wr;

    if ((conn->tx_avail <= 0) || (iface->tx_cq_avail <= 0)) {
        return;
    }
    /* signaled: its slot comes back */
    uct_srq_am_wr(&wr, UCT_SRQ_AM_ID_KEEPALIVE, NULL, 0,
                  IBV_SEND_INLINE | IBV_SEND_SIGNALED);
    uct_srq_iface_post(iface, conn, &wr, NULL);
}

/* Connections no endpoint of ours uses are kept for endpoints to come;
 * the ones idle since the last look are probed, so that those whose peer
 * died without a word do not stay forever */
static void uct_srq_hs_check_idle(uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn;

    kh_foreach_value(&iface->hs.conns, conn, {
        if ((conn->state == UCT_SRQ_CONN_CONNECTED) &&
            ucs_list_is_empty(&conn->eps) && (conn->sn_posted == conn->ka_sn)) {
            uct_srq_conn_probe(iface, conn);
        }
        conn->ka_sn = conn->sn_posted;
    });
}

/* Handshake datagrams in, handshake sends back: how many completions */
static unsigned uct_srq_hs_poll(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs = &iface->hs;
    struct ibv_wc wc[UCT_SRQ_HS_POLL_BATCH];
    int i, n;

    n = ibv_poll_cq(hs->cq, UCT_SRQ_HS_POLL_BATCH, wc);
    if (n < 0) {
        ucs_error("srq: polling the handshake CQ failed: %s", strerror(-n));
        return 0;
    }
    for (i = 0; i < n; ++i) {
        if (wc[i].wr_id == UCT_SRQ_HS_SEND_WRID) {
            ++hs->ud_tx_avail; /* a handshake datagram went out */
        } else {
            uct_srq_hs_handle_rx(iface, &wc[i]);
        }
    }
    return n;
}

/* What the async thread left to the owner: connections it found up, or
 * failed */
static void uct_srq_hs_take_async_left(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs = &iface->hs;
    uct_srq_conn_t *conn;

    __atomic_store_n(&hs->async_left, 0, __ATOMIC_RELAXED);
    kh_foreach_value(&hs->conns, conn, {
        if (conn->fail_deferred == 1) {
            uct_srq_conn_fail(iface, conn, conn->fail_status,
                              conn->fail_reason);
        } else if (conn->fail_deferred == 2) {
            uct_srq_conn_lost(iface, conn, conn->fail_status,
                              conn->fail_reason);
        } else if (conn->state == UCT_SRQ_CONN_READY) {
            uct_srq_conn_established(iface, conn);
        }
    });
}

void uct_srq_hs_progress(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs = &iface->hs;
    uct_srq_conn_t *conn, *tmp;
    ucs_time_t now;

    pthread_mutex_lock(&hs->lock);
    hs->polls = 0;
    while (uct_srq_hs_poll(iface) == UCT_SRQ_HS_POLL_BATCH) {
    }
    if (__atomic_load_n(&hs->async_left, __ATOMIC_RELAXED)) {
        uct_srq_hs_take_async_left(iface);
    }
    if (!ucs_list_is_empty(&hs->dead)) {
        uct_srq_hs_reap(iface);
    }

    now = ucs_get_time();
    ucs_list_for_each_safe(conn, tmp, &hs->connecting, list) {
        if (now >= conn->deadline) {
            uct_srq_conn_lost(iface, conn, UCS_ERR_UNREACHABLE,
                              "connection establishment timed out");
            continue;
        }
        if (now < conn->next_retry) {
            continue;
        }
        ++hs->stats.retries;
        uct_srq_hs_send(iface, conn, (conn->state == UCT_SRQ_CONN_CONNECTING) ?
                                     UCT_SRQ_HS_REQ : UCT_SRQ_HS_REP);
        conn->retry_interval = ucs_min(conn->retry_interval * 2,
                                       UCT_SRQ_HS_MAX_RETRY);
        conn->next_retry     = now + conn->retry_interval;
    }

    if (now >= hs->next_idle_check) {
        hs->next_idle_check = now + hs->config.idle_check;
        uct_srq_hs_check_idle(iface);
    }
    pthread_mutex_unlock(&hs->lock);
}

ucs_status_t uct_srq_conn_signal_tail(uct_srq_iface_t *iface,
                                      uct_srq_conn_t *conn)
{
    struct ibv_send_wr wr;

    if (conn->tx_unsignaled == 0) {
        return UCS_OK; /* the last WR is signaled, or there is none */
    }
    if ((conn->tx_avail <= 0) || (iface->tx_cq_avail <= 0)) {
        return UCS_ERR_NO_RESOURCE; /* then the last WR is signaled */
    }
    uct_srq_conn_marker_wr(&wr);
    return uct_srq_iface_post(iface, conn, &wr, NULL);
}

/* Under the handshake's lock: the async thread may add connections */
void uct_srq_hs_signal_tails(uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn;

    pthread_mutex_lock(&iface->hs.lock);
    kh_foreach_value(&iface->hs.conns, conn, {
        if (conn->state != UCT_SRQ_CONN_FAILED) {
            (void)uct_srq_conn_signal_tail(iface, conn);
        }
    });
    pthread_mutex_unlock(&iface->hs.lock);
}

void uct_srq_hs_fence(uct_srq_iface_t *iface)
{
    uct_srq_conn_t *conn;

    pthread_mutex_lock(&iface->hs.lock);
    kh_foreach_value(&iface->hs.conns, conn, {
        conn->send_flags |= IBV_SEND_FENCE;
    });
    pthread_mutex_unlock(&iface->hs.lock);
}

/* ---- the async thread's look ------------------------------------------- */

/*
 * One timer for all interfaces of the process, ticking at the
 * ASYNC_INTERVAL of the first interface; each interface is looked at once
 * per its own interval, at the tick after it is due. The list's lock is
 * held through a tick: an interface that left the list is not looked at
 * any more.
 *
 * The timer is a timerfd that UCX's async thread waits on as an event, not
 * one of UCX's own timers: UCX 1.13's thread sleeps only in whole
 * milliseconds towards its next timer and spins through the last one
 * (epoll_wait with a timeout of 0), about a tenth of a core per process
 * at a 10 ms interval - an idle MPI rank would burn it. A timerfd lets the
 * thread sleep until it fires.
 */
static struct {
    pthread_mutex_t  lock;
    ucs_list_link_t  ifaces;     /* uct_srq_hs_t.async_link */
    int              timer_fd;   /* -1: none */
} uct_srq_hs_async = {
    .lock     = PTHREAD_MUTEX_INITIALIZER,
    .ifaces   = UCS_LIST_INITIALIZER(&uct_srq_hs_async.ifaces,
                                     &uct_srq_hs_async.ifaces),
    .timer_fd = -1
};

/*
 * An owner that progressed since the last look answers its peers itself.
 * Otherwise take the handshake's datagrams for it - polling a CQ also runs
 * the built-in soft device, which serves one-sided operations at us -
 * unless the owner holds the lock.
 */
static void uct_srq_hs_async_look(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs    = &iface->hs;
    unsigned long calls = __atomic_load_n(&iface->progress_calls,
                                          __ATOMIC_RELAXED);
    unsigned i;

    if ((calls != hs->progress_seen) ||
        (pthread_mutex_trylock(&hs->lock) != 0)) {
        hs->progress_seen = calls;
        return;
    }
    uct_srq_hs_in_async = 1;
    for (i = 0; i < UCT_SRQ_HS_ASYNC_POLLS; ++i) {
        uct_srq_hs_poll(iface);
    }
    uct_srq_hs_in_async = 0;
    pthread_mutex_unlock(&hs->lock);
}

static void uct_srq_hs_async_tick(int id, ucs_event_set_types_t events,
                                  void *arg)
{
    ucs_time_t now = ucs_get_time();
    uint64_t expirations;
    uct_srq_hs_t *hs;

    /* take the expirations: the fd would stay readable otherwise (none
     * when another thread took them first, a nonblocking read) */
    if (read(id, &expirations, sizeof(expirations)) < 0) {
        ucs_assert((errno == EAGAIN) || (errno == EINTR));
    }
    pthread_mutex_lock(&uct_srq_hs_async.lock);
    ucs_list_for_each(hs, &uct_srq_hs_async.ifaces, async_link) {
        if (now >= hs->next_look) {
            hs->next_look = now + hs->config.async_interval;
            uct_srq_hs_async_look(ucs_container_of(hs, uct_srq_iface_t, hs));
        }
    }
    pthread_mutex_unlock(&uct_srq_hs_async.lock);
}

/* The periodic timerfd and its handler on UCX's async thread; called
 * with the list's lock held */
static ucs_status_t uct_srq_hs_async_timer_start(ucs_time_t interval)
{
    uint64_t ns = (uint64_t)(ucs_time_to_sec(interval) * UCS_NSEC_PER_SEC);
    struct itimerspec its;
    ucs_status_t status;
    int fd;

    fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) {
        ucs_diag("srq: timerfd_create: %m");
        return UCS_ERR_IO_ERROR;
    }
    its.it_interval.tv_sec  = ns / UCS_NSEC_PER_SEC;
    its.it_interval.tv_nsec = ns % UCS_NSEC_PER_SEC;
    its.it_value            = its.it_interval;
    if (timerfd_settime(fd, 0, &its, NULL) < 0) {
        ucs_diag("srq: timerfd_settime: %m");
        close(fd);
        return UCS_ERR_IO_ERROR;
    }
    status = uct_srq_async_add_fd(fd, uct_srq_hs_async_tick, NULL);
    if (status != UCS_OK) {
        close(fd);
        return status;
    }
    uct_srq_hs_async.timer_fd = fd;
    return UCS_OK;
}

void uct_srq_hs_async_start(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs    = &iface->hs;
    ucs_status_t status = UCS_OK;

    /* per-QP receive queues come from the owner's pool: no answers from
     * the async thread then */
    if (iface->rx.srq == NULL) {
        return;
    }
    pthread_mutex_lock(&uct_srq_hs_async.lock);
    if (uct_srq_hs_async.timer_fd < 0) {
        status = uct_srq_hs_async_timer_start(hs->config.async_interval);
    }
    if (status == UCS_OK) {
        hs->next_look     = ucs_get_time() + hs->config.async_interval;
        /* the first look compares with the owner's calls until now */
        hs->progress_seen = __atomic_load_n(&iface->progress_calls,
                                            __ATOMIC_RELAXED);
        ucs_list_add_tail(&uct_srq_hs_async.ifaces, &hs->async_link);
        hs->async_on  = 1;
    } else {
        ucs_diag("srq: no async handshake answers (%s): an owner that does "
                 "not progress leaves its peers waiting",
                 ucs_status_string(status));
    }
    pthread_mutex_unlock(&uct_srq_hs_async.lock);
}

void uct_srq_hs_async_stop(uct_srq_iface_t *iface)
{
    int timer_fd = -1;

    if (!iface->hs.async_on) {
        return;
    }
    pthread_mutex_lock(&uct_srq_hs_async.lock);
    ucs_list_del(&iface->hs.async_link);
    iface->hs.async_on = 0;
    if (ucs_list_is_empty(&uct_srq_hs_async.ifaces)) {
        timer_fd                  = uct_srq_hs_async.timer_fd;
        uct_srq_hs_async.timer_fd = -1;
    }
    pthread_mutex_unlock(&uct_srq_hs_async.lock);
    /* outside the lock: a tick under way takes it. Removed (and waited
     * for) before it is closed: the number is not reused under a tick */
    if (timer_fd >= 0) {
        ucs_async_remove_handler(timer_fd, 1);
        close(timer_fd);
    }
}

/* ---- sends before the connection is up -------------------------------- */

ucs_status_t uct_srq_conn_queue_wr(uct_srq_conn_t *conn,
                                   const struct ibv_send_wr *wr, void *owner)
{
    int inl        = !!(wr->send_flags & IBV_SEND_INLINE);
    size_t length  = inl ? srq_verbs_sge_len(wr->sg_list, wr->num_sge) : 0;
    int num_sge    = ucs_max(wr->num_sge, 1);
    uct_srq_conn_wr_t *cwr;
    uint8_t *data;
    int i;

    cwr = ucs_malloc(sizeof(*cwr) + num_sge * sizeof(struct ibv_sge) + length,
                     "srq queued wr");
    if (cwr == NULL) {
        ucs_error("srq: no memory to keep a send until the connection is up");
        return UCS_ERR_NO_MEMORY;
    }
    cwr->owner      = owner;
    cwr->wr         = *wr;
    cwr->wr.next    = NULL;
    cwr->wr.sg_list = cwr->sge;
    if (inl) {
        /* inline data is the caller's, often on its stack: copied */
        data = (uint8_t*)(cwr->sge + num_sge);
        for (i = 0; i < wr->num_sge; ++i) {
            memcpy(data, (void*)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            data += wr->sg_list[i].length;
        }
        cwr->sge[0].addr   = (uintptr_t)(cwr->sge + num_sge);
        cwr->sge[0].length = length;
        cwr->sge[0].lkey   = 0;
        cwr->wr.num_sge    = (length > 0) ? 1 : 0;
    } else if (wr->num_sge > 0) { /* a flush's no-op has no list at all */
        memcpy(cwr->sge, wr->sg_list, wr->num_sge * sizeof(struct ibv_sge));
    }
    ucs_queue_push(&conn->queued, &cwr->queue);
    ++conn->num_queued;
    return UCS_OK;
}

/* A waiting WR whose endpoint is gone still takes its place in the
 * sequence, as a probe the peer discards: what it pointed to may be freed */
static void uct_srq_conn_wr_cancel(uct_srq_conn_wr_t *cwr)
{
    uct_srq_am_wr(&cwr->wr, UCT_SRQ_AM_ID_KEEPALIVE, NULL, 0,
                  IBV_SEND_INLINE | IBV_SEND_SIGNALED);
    cwr->owner = NULL;
}

void uct_srq_conn_cancel(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                         void *owner)
{
    uct_completion_t *comp;
    uct_srq_conn_wr_t *cwr;
    uct_srq_op_t *op;

    ucs_debug("srq: endpoint %p goes: its operations on QP 0x%x complete as "
              "canceled", owner, (conn->qp != NULL) ? conn->qp->qp_num : 0);
    ucs_queue_for_each(cwr, &conn->queued, queue) {
        if (cwr->owner == owner) {
            uct_srq_conn_wr_cancel(cwr);
        }
    }
    /* as an RC endpoint's destruction does: what it started completes now,
     * its resources are freed when the WRs complete */
    ucs_queue_for_each(op, &conn->ops, queue) {
        if (op->owner != owner) {
            continue;
        }
        op->owner = NULL;
        comp      = op->comp;
        op->comp  = NULL;
        if (comp != NULL) {
            uct_invoke_completion(comp, UCS_ERR_CANCELED);
        }
    }
}

/* ---- failure ---------------------------------------------------------- */

/* @conn failed: a new endpoint to the peer gets a new connection; WRs in
 * flight come back flushed; those waiting go at once if nothing is in
 * flight before them, else when it came back (uct_srq_hs_reap) */
static void uct_srq_conn_set_failed(uct_srq_iface_t *iface,
                                    uct_srq_conn_t *conn, ucs_status_t status,
                                    const char *reason)
{
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
    khiter_t it;

    if (uct_srq_conn_is_connecting(conn)) {
        uct_srq_conn_leave_connecting(&iface->hs, conn);
    }
    conn->state       = UCT_SRQ_CONN_FAILED;
    conn->fail_status = status;
    conn->fail_reason = reason;

    it = kh_get(uct_srq_conns, &iface->hs.conns, conn->key);
    if (it != kh_end(&iface->hs.conns)) {
        kh_del(uct_srq_conns, &iface->hs.conns, it);
    }
    ucs_list_add_tail(&iface->hs.dead, &conn->list);

    srq_verbs_modify_qp(iface->dev, conn->qp, &attr, IBV_QP_STATE);
    if (conn->sn_done + conn->num_queued == conn->sn_posted) {
        uct_srq_conn_drop_queued(iface, conn, status);
    } else if ((conn->tx_unsignaled > 0) && (conn->num_queued == 0)) {
        conn->drain_pending = 1;
        uct_srq_conn_drain(iface, conn);
    }
}

/* In the async thread: the owner fails @conn (@how: 1 as
 * uct_srq_conn_fail, 2 as uct_srq_conn_lost) in its progress */
static int uct_srq_conn_defer_fail(uct_srq_iface_t *iface,
                                   uct_srq_conn_t *conn, int how,
                                   ucs_status_t status, const char *reason)
{
    if (!uct_srq_hs_in_async) {
        return 0;
    }
    if (!conn->fail_deferred) {
        conn->fail_deferred = how;
        conn->fail_status   = status;
        conn->fail_reason   = reason;
        __atomic_store_n(&iface->hs.async_left, 1, __ATOMIC_RELAXED);
    }
    return 1;
}

void uct_srq_conn_fail(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                       ucs_status_t status, const char *reason)
{
    if ((conn->state == UCT_SRQ_CONN_FAILED) ||
        uct_srq_conn_defer_fail(iface, conn, 1, status, reason)) {
        return;
    }
    pthread_mutex_lock(&iface->hs.lock);
    uct_srq_conn_set_failed(iface, conn, status, reason);
    uct_srq_conn_report(iface, conn);
    pthread_mutex_unlock(&iface->hs.lock);
}

/*
 * The peer is gone as far as we can tell (it closed, or never answered the
 * handshake). Endpoints with traffic under way learn it now; idle ones when
 * they next send or check (uct_ep_check), as they would from an RC QP whose
 * peer vanished: a peer that ends normally is no error until it is used.
 */
static void uct_srq_conn_lost(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                              ucs_status_t status, const char *reason)
{
    int busy = (conn->sn_done != conn->sn_posted);

    if ((conn->state == UCT_SRQ_CONN_FAILED) ||
        uct_srq_conn_defer_fail(iface, conn, 2, status, reason)) {
        return;
    }
    uct_srq_conn_set_failed(iface, conn, status, reason);
    if (busy) {
        uct_srq_conn_report(iface, conn);
    }
}
