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
#include "srq_hs_msg.h"
#include "srq_hs_rx.h"
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

#define UCT_SRQ_HS_UD_TX_LEN  64
#define UCT_SRQ_HS_MAX_RETRY  ucs_time_from_sec(1.0)

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
