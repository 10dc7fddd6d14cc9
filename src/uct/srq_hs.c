/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the in-band handshake of connections.
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
#include "srq_hs.h"
#include "srq_check.h"
#include "srq_conn.h"
#include "srq_conn_probe.h"
#include "srq_limit.h"
#include "srq_qp.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/math.h>
#include <ucs/debug/memtrack.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define UCT_SRQ_HS_MAGIC      0x43515253u  /* "SRQC" */
/* 2: the am id travels as the immediate (srq_am.h); a peer of another
 * version is not connected to */
#define UCT_SRQ_HS_VERSION    2
#define UCT_SRQ_HS_QKEY       0x1ee75a5cu
#define UCT_SRQ_HS_GRH_LEN    40
#define UCT_SRQ_HS_UD_TX_LEN  64
/* Handshake completions per poll */
#define UCT_SRQ_HS_POLL_BATCH  16
/* wr_id of a handshake send (a receive's is its buffer's index) */
#define UCT_SRQ_HS_SEND_WRID   UINT64_MAX
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
     "Tuning knob (no user needs it: leave the default).\n"
     "First retransmission interval of a handshake datagram that got no\n"
     "answer; it doubles with each retry, up to 1s.",
     ucs_offsetof(uct_srq_hs_config_t, retry), UCS_CONFIG_TYPE_TIME},

#ifdef SRQ_TEST_BUILD
    /* a test hook: only the plugin make check builds for its tests
     * (test/plugin/libuct_srq.so) has it */
    {"CONN_DROP", "0",
     "Test build only: drop this percentage (0..100) of the handshake\n"
     "datagrams the interface sends, to exercise retransmission.",
     ucs_offsetof(uct_srq_hs_config_t, drop), UCS_CONFIG_TYPE_UINT},
#endif

    {"CONN_MAX_ACCEPTING", "1024",
     "Tuning knob (no user needs it: leave the default).\n"
     "Connections asked for by peers (a request received) that may be half\n"
     "open at once, waiting for the peer's last handshake message (1..65536).\n"
     "Further requests are dropped until some complete or time out\n"
     "(CONN_TIMEOUT), and their peers retry: this bounds what requests,\n"
     "which anyone on the fabric can send, cost in QPs and memory.",
     ucs_offsetof(uct_srq_hs_config_t, max_accepting), UCS_CONFIG_TYPE_UINT},

    {"CONN_QUEUE_LEN", "64",
     "Tuning knob (no user needs it: leave the default).\n"
     "Receive buffers of the handshake (UD) QP (8..4096).",
     ucs_offsetof(uct_srq_hs_config_t, queue_len), UCS_CONFIG_TYPE_UINT},

    {"ASYNC_INTERVAL", "10ms",
     "Tuning knob (no user needs it: leave the default).\n"
     "How often UCX's async thread looks at an interface whose owner has not\n"
     "progressed it since the last look (100us..60s). It then answers peers'\n"
     "handshakes for it, so that a process busy elsewhere does not time its\n"
     "peers out, and (on the built-in soft device) runs the device, which\n"
     "serves one-sided operations targeting it, as an HCA does without the\n"
     "host's CPU. An owner that progresses costs one counter comparison per\n"
     "look, and looks at its handshake itself at its next call. One timer\n"
     "per process, at the first interface's interval. Not with SRQ=n: a\n"
     "QP's receive buffers come from the owner's pool.",
     ucs_offsetof(uct_srq_hs_config_t, async_interval), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

static int uct_srq_hs_send(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                           uint8_t type);

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

    /* a CQ of its own: the async thread polls it, never the data CQs. On
     * the interface's channel: a peer's handshake wakes a sleeping owner
     * (uct_srq_iface_event_arm arms it) */
    hs->cq = srq_verbs_create_cq(iface->dev,
                                 hs->num_bufs + UCT_SRQ_HS_UD_TX_LEN, NULL,
                                 iface->channel, 0);
    if (hs->cq == NULL) {
        ret = errno;
        ucs_error("srq: failed to create the handshake CQ: %s",
                  UCT_SRQ_STRERROR(ret));
        return uct_srq_err_status(ret, UCS_ERR_IO_ERROR);
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
        /* on soft0 the first QP of a process maps the QP number table in
         * /dev/shm: ENOSPC, EMFILE are said as such */
        ret = errno;
        ucs_error("srq: failed to create the handshake UD QP: %s",
                  UCT_SRQ_STRERROR(ret));
        srq_verbs_destroy_cq(iface->dev, hs->cq);
        return uct_srq_err_status(ret, UCS_ERR_IO_ERROR);
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
#ifdef SRQ_TEST_BUILD
    UCT_SRQ_CHECK_RANGE("CONN_DROP", config->drop, 0, 100);
#endif
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
    hs->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (hs->wake_fd < 0) {
        ret = errno;
        ucs_error("srq: failed to create the handshake's wake eventfd: %s",
                  UCT_SRQ_STRERROR(ret));
        return uct_srq_err_status(ret, UCS_ERR_IO_ERROR);
    }
    hs->config.async_interval = ucs_time_from_sec(config->async_interval);
    kh_init_inplace(uct_srq_conns, &hs->conns);
    ucs_list_head_init(&hs->connecting);
    ucs_list_head_init(&hs->dead);
    hs->config.timeout = ucs_time_from_sec(config->timeout);
    hs->config.idle_check = ucs_time_from_sec(config->idle_check);
    hs->next_idle_check   = ucs_get_time() + hs->config.idle_check;
    hs->config.retry   = ucs_time_from_sec(config->retry);
#ifdef SRQ_TEST_BUILD
    hs->config.drop    = config->drop;
#endif
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
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
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
    close(hs->wake_fd);
    return status;
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
    close(hs->wake_fd);
}

/* 0, or the errno of a datagram that could not be posted: a limit of ours
 * (uct_srq_err_is_limit) is an error, anything else is retried */
static int uct_srq_hs_send(uct_srq_iface_t *iface, uct_srq_conn_t *conn,
                           uint8_t type)
{
    uct_srq_hs_t *hs = &iface->hs;
    struct ibv_send_wr wr, *bad_wr;
    uct_srq_hs_msg_t msg;
    struct ibv_sge sge;
    int ret;

    if (hs->ud_tx_avail <= 0) {
        return 0; /* the retry timer sends it later */
    }
#ifdef SRQ_TEST_BUILD
    if (ucs_unlikely(hs->config.drop > 0) &&
        ((unsigned)rand_r(&hs->seed) % 100 < hs->config.drop)) {
        ++hs->stats.lost;
        return 0; /* lost on the way, as far as the peer can tell */
    }
#endif

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
    if (uct_srq_err_is_limit(ret)) {
        /* e.g. soft0 could not map the peer for lack of address space:
         * no retransmission will do better */
        ucs_error("srq: failed to send a handshake %s to ud qpn 0x%x: %s",
                  uct_srq_hs_msg_name(type), conn->key.ud_qpn,
                  UCT_SRQ_STRERROR(ret));
        return ret;
    } else if (ret != 0) {
        ucs_diag("srq: failed to send a handshake %s: %s",
                 uct_srq_hs_msg_name(type), strerror(ret));
        return 0;
    }
    --hs->ud_tx_avail;
    ++hs->stats.sent;
    ucs_trace("srq: sent %s to ud qpn 0x%x (rc qp 0x%x)",
              uct_srq_hs_msg_name(type), conn->key.ud_qpn, conn->qp->qp_num);
    return 0;
}

/* Send @type for @conn; when a limit of ours stops it, @conn fails: 0 or
 * that errno */
static int uct_srq_hs_send_or_fail(uct_srq_iface_t *iface,
                                   uct_srq_conn_t *conn, uint8_t type)
{
    int err = uct_srq_hs_send(iface, conn, type);

    if (err != 0) {
        uct_srq_conn_fail_limit(iface, conn, err,
                                "a handshake datagram could not be sent");
    }
    return err;
}

/* A connection just made, whose REQ could not go: nobody knows of it */
static void uct_srq_hs_discard(uct_srq_iface_t *iface, uct_srq_conn_t *conn)
{
    khiter_t it = kh_get(uct_srq_conns, &iface->hs.conns, conn->key);

    kh_del(uct_srq_conns, &iface->hs.conns, it);
    uct_srq_conn_leave_connecting(&iface->hs, conn);
    uct_srq_conn_destroy(iface, conn);
}

ucs_status_t uct_srq_hs_get_conn(uct_srq_iface_t *iface,
                                 const uct_srq_conn_key_t *key,
                                 uct_srq_conn_t **conn_p)
{
    ucs_status_t status = UCS_OK;
    uct_srq_conn_t *conn;
    khiter_t it;
    int ret;

    pthread_mutex_lock(&iface->hs.lock);
    it = kh_get(uct_srq_conns, &iface->hs.conns, *key);
    if (it != kh_end(&iface->hs.conns)) {
        *conn_p = kh_value(&iface->hs.conns, it);
    } else {
        status = uct_srq_conn_create(iface, key, &conn);
        if (status == UCS_OK) {
            ret = uct_srq_hs_send(iface, conn, UCT_SRQ_HS_REQ);
            if (ret != 0) {
                /* the endpoint is not made: its creator learns it now */
                uct_srq_hs_discard(iface, conn);
                status = uct_srq_err_status(ret, UCS_ERR_IO_ERROR);
            } else {
                *conn_p = conn;
            }
        }
    }
    pthread_mutex_unlock(&iface->hs.lock);
    return status;
}

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
 * with @reply; a QP that cannot be connected, or an answer a limit of ours
 * stops, fails the connection */
static ucs_status_t uct_srq_hs_connect_reply(uct_srq_iface_t *iface,
                                             uct_srq_conn_t *conn,
                                             uint32_t rc_qpn, uint8_t reply)
{
    ucs_status_t status;
    int err;

    status = uct_srq_qp_connect(iface, conn->qp, &conn->key.dev, rc_qpn);
    err    = errno;
    if ((status != UCS_OK) && uct_srq_err_is_limit(err)) {
        uct_srq_conn_fail_limit(iface, conn, err,
                                "the QP could not be connected");
        return status;
    } else if (status != UCS_OK) {
        uct_srq_conn_fail(iface, conn, status,
                          (status == UCS_ERR_UNREACHABLE) ?
                          "the peer is gone" : "the QP could not be connected");
        return status;
    }
    conn->remote_qpn = rc_qpn;
    err = uct_srq_hs_send_or_fail(iface, conn, reply);
    return (err == 0) ? UCS_OK : uct_srq_err_status(err, UCS_ERR_IO_ERROR);
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
        uct_srq_hs_send_or_fail(iface, conn, UCT_SRQ_HS_REP);
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
        if (uct_srq_hs_send_or_fail(iface, conn, UCT_SRQ_HS_RTU) == 0) {
            uct_srq_conn_established(iface, conn);
        }
        break;
    case UCT_SRQ_CONN_READY:
    case UCT_SRQ_CONN_CONNECTED:
        /* our RTU was lost */
        uct_srq_hs_send_or_fail(iface, conn, UCT_SRQ_HS_RTU);
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

/* Handshake datagrams in, handshake sends back: how many completions */
unsigned uct_srq_hs_poll(uct_srq_iface_t *iface)
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

void uct_srq_hs_progress(uct_srq_iface_t *iface)
{
    uct_srq_hs_t *hs = &iface->hs;
    uct_srq_conn_t *conn, *tmp;
    ucs_time_t now;

    pthread_mutex_lock(&hs->lock);
    __atomic_store_n(&hs->polls, 0, __ATOMIC_RELAXED);
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
            /* it never came up: its endpoints learn it now, idle or not
             * (an idle one waiting for the peer's first message would
             * wait forever) */
            uct_srq_conn_fail(iface, conn, UCS_ERR_UNREACHABLE,
                              "connection establishment timed out");
            continue;
        }
        if (now < conn->next_retry) {
            continue;
        }
        ++hs->stats.retries;
        if (uct_srq_hs_send_or_fail(iface, conn,
                                    (conn->state == UCT_SRQ_CONN_CONNECTING) ?
                                    UCT_SRQ_HS_REQ : UCT_SRQ_HS_REP) != 0) {
            continue;
        }
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

/*
 * For an owner about to sleep: when its handshake next needs its progress
 * - 0 if now (work the async thread left, failed connections to report),
 * else the earliest retransmission or timeout of a handshake under way,
 * or the idle check while there are connections; UCS_TIME_INFINITY if
 * never. Datagrams that arrive wake the owner through the handshake's CQ.
 */
ucs_time_t uct_srq_hs_due(uct_srq_hs_t *hs)
{
    ucs_time_t due = UCS_TIME_INFINITY;
    uct_srq_conn_t *conn;

    pthread_mutex_lock(&hs->lock);
    if (__atomic_load_n(&hs->async_left, __ATOMIC_RELAXED) ||
        !ucs_list_is_empty(&hs->dead)) {
        due = 0;
    } else {
        if (kh_size(&hs->conns) > 0) {
            due = hs->next_idle_check;
        }
        ucs_list_for_each(conn, &hs->connecting, list) {
            due = ucs_min(due, ucs_min(conn->next_retry, conn->deadline));
        }
    }
    pthread_mutex_unlock(&hs->lock);
    return due;
}
