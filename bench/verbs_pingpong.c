/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_pingpong: RC send/recv between two processes on one verbs device,
 * through the project's verbs layer and the standard data-path verbs.
 *
 *   verbs_pingpong [-d DEVICE] [-s SIZE] [-n ITERS] [-m MSGS]
 *
 * Prints, one per line:
 *   latency_us <one-way latency of a SIZE-byte ping-pong, microseconds>
 *   msgrate_mps <streaming SIZE-byte sends, millions of messages per second>
 *
 * The process forks its peer and exchanges QP addresses over a socketpair.
 */
#include <verbs/srq_verbs.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RX_DEPTH  256
#define WINDOW    128

typedef struct {
    srq_verbs_port_addr_t addr;
    uint32_t              qpn;
} peer_info_t;

typedef struct {
    srq_verbs_dev_t *dev;
    struct ibv_pd   *pd;
    struct ibv_cq   *cq;
    struct ibv_qp   *qp;
    struct ibv_mr   *mr;
    char            *buf;
    size_t           size;
} ctx_t;

static void die(const char *what, int err)
{
    fprintf(stderr, "verbs_pingpong: %s: %s\n", what, strerror(err));
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void post_recvs(ctx_t *c, int count)
{
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge = {(uintptr_t)c->buf, (uint32_t)c->size, c->mr->lkey};
    int ret;

    wr.wr_id   = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.next    = NULL;
    while (count-- > 0) {
        ret = ibv_post_recv(c->qp, &wr, &bad);
        if (ret) {
            die("ibv_post_recv", ret);
        }
    }
}

static void post_send(ctx_t *c, int signaled)
{
    struct ibv_send_wr wr = {}, *bad;
    struct ibv_sge sge = {(uintptr_t)c->buf, (uint32_t)c->size, c->mr->lkey};
    int ret;

    wr.wr_id      = 2;
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.opcode     = IBV_WR_SEND;
    wr.send_flags = (signaled ? IBV_SEND_SIGNALED : 0) |
                    ((c->size <= 128) ? IBV_SEND_INLINE : 0);
    ret = ibv_post_send(c->qp, &wr, &bad);
    if (ret) {
        die("ibv_post_send", ret);
    }
}

/* Poll until @want completions of kind wr_id @kind; returns how many recvs */
static int wait_wc(ctx_t *c, uint64_t kind, int want)
{
    struct ibv_wc wc[16];
    int got = 0, n, i;

    while (got < want) {
        n = ibv_poll_cq(c->cq, 16, wc);
        if (n < 0) {
            die("ibv_poll_cq", -n);
        }
        for (i = 0; i < n; ++i) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                fprintf(stderr, "completion error: %s\n",
                        ibv_wc_status_str(wc[i].status));
                exit(1);
            }
            if (wc[i].wr_id == 1) {
                post_recvs(c, 1); /* keep the receive queue full */
            }
            if (wc[i].wr_id == kind) {
                ++got;
            }
        }
    }
    return got;
}

static void setup(ctx_t *c, const char *devname, size_t size, int sock)
{
    struct ibv_qp_init_attr init = {};
    struct ibv_qp_attr attr = {};
    peer_info_t me, peer;
    int ret;

    ret = srq_verbs_open(devname, &c->dev);
    if (ret) {
        die("open", ret);
    }
    c->size = size;
    c->buf  = calloc(1, size ? size : 1);
    c->pd   = srq_verbs_alloc_pd(c->dev);
    c->mr   = srq_verbs_reg_mr(c->dev, c->pd, c->buf, size ? size : 1,
                               IBV_ACCESS_LOCAL_WRITE);
    c->cq   = srq_verbs_create_cq(c->dev, 4 * RX_DEPTH, NULL, NULL, 0);
    if (!c->pd || !c->mr || !c->cq) {
        die("pd/mr/cq", errno);
    }
    init.send_cq          = c->cq;
    init.recv_cq          = c->cq;
    init.qp_type          = IBV_QPT_RC;
    init.cap.max_send_wr  = RX_DEPTH;
    init.cap.max_recv_wr  = RX_DEPTH;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = 128;
    c->qp = srq_verbs_create_qp(c->dev, c->pd, &init);
    if (!c->qp) {
        die("create_qp", errno);
    }

    attr.qp_state        = IBV_QPS_INIT;
    attr.port_num        = 1;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    ret = srq_verbs_modify_qp(c->dev, c->qp, &attr, IBV_QP_STATE |
                              IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                              IBV_QP_ACCESS_FLAGS);
    if (ret) {
        die("INIT", ret);
    }
    post_recvs(c, RX_DEPTH);

    srq_verbs_port_addr(c->dev, 1, &me.addr);
    me.qpn = c->qp->qp_num;
    if ((write(sock, &me, sizeof(me)) != sizeof(me)) ||
        (read(sock, &peer, sizeof(peer)) != sizeof(peer))) {
        die("address exchange", errno);
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state      = IBV_QPS_RTR;
    attr.path_mtu      = IBV_MTU_4096;
    attr.dest_qp_num   = peer.qpn;
    attr.min_rnr_timer = 1;
    srq_verbs_ah_attr(c->dev, 1, &peer.addr, &attr.ah_attr);
    ret = srq_verbs_modify_qp(c->dev, c->qp, &attr, IBV_QP_STATE | IBV_QP_AV |
                              IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                              IBV_QP_MIN_RNR_TIMER);
    if (ret) {
        die("RTR", ret);
    }
    attr.qp_state  = IBV_QPS_RTS;
    attr.timeout   = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    ret = srq_verbs_modify_qp(c->dev, c->qp, &attr, IBV_QP_STATE |
                              IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                              IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                              IBV_QP_MAX_QP_RD_ATOMIC);
    if (ret) {
        die("RTS", ret);
    }
    /* both sides ready before traffic */
    if ((write(sock, &me, 1) != 1) || (read(sock, &peer, 1) != 1)) {
        die("sync", errno);
    }
}

static void teardown(ctx_t *c)
{
    srq_verbs_destroy_qp(c->dev, c->qp);
    srq_verbs_destroy_cq(c->dev, c->cq);
    srq_verbs_dereg_mr(c->dev, c->mr);
    srq_verbs_dealloc_pd(c->dev, c->pd);
    srq_verbs_close(c->dev);
    free(c->buf);
}

static void run(int client, const char *dev, size_t size, int iters, int msgs,
                int sock)
{
    ctx_t c = {};
    double t0 = 0, t1;
    int i, inflight = 0, done;

    setup(&c, dev, size, sock);

    /* ping-pong: the client sends, the server answers */
    for (i = 0; i < 100 + iters; ++i) {
        if (i == 100) {
            t0 = now();
        }
        if (client) {
            post_send(&c, 1);
            wait_wc(&c, 1, 1);
        } else {
            wait_wc(&c, 1, 1);
            post_send(&c, 1);
        }
    }
    t1 = now();
    /* drain send completions */
    if (client) {
        printf("latency_us %.3f\n", (t1 - t0) * 1e6 / iters / 2);
    }

    /* streaming: the client keeps a window of sends in flight; the server
     * counts receives and acknowledges the end */
    if (write(sock, "s", 1) != 1 || read(sock, &i, 1) != 1) {
        die("sync", errno);
    }
    t0 = now();
    if (client) {
        for (done = 0; done < msgs; ) {
            while ((inflight < WINDOW) && (done + inflight < msgs)) {
                post_send(&c, 1);
                ++inflight;
            }
            i         = wait_wc(&c, 2, 1);
            inflight -= i;
            done     += i;
        }
        wait_wc(&c, 1, 1); /* the server's end message */
        t1 = now();
        printf("msgrate_mps %.3f\n", msgs / (t1 - t0) / 1e6);
    } else {
        wait_wc(&c, 1, msgs);
        post_send(&c, 1);
    }
    fflush(stdout);
    if (write(sock, "e", 1) != 1 || read(sock, &i, 1) != 1) {
        die("sync", errno);
    }
    teardown(&c);
}

int main(int argc, char **argv)
{
    const char *dev = "soft0";
    size_t size = 8;
    int iters = 100000, msgs = 1000000, opt, sv[2], status;
    pid_t pid;

    while ((opt = getopt(argc, argv, "d:s:n:m:")) != -1) {
        switch (opt) {
        case 'd': dev   = optarg; break;
        case 's': size  = strtoul(optarg, NULL, 0); break;
        case 'n': iters = atoi(optarg); break;
        case 'm': msgs  = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-d dev] [-s size] [-n iters] [-m msgs]\n",
                    argv[0]);
            return 2;
        }
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        die("socketpair", errno);
    }
    pid = fork();
    if (pid < 0) {
        die("fork", errno);
    }
    if (pid == 0) {
        close(sv[0]);
        run(0, dev, size, iters, msgs, sv[1]);
        _exit(0);
    }
    close(sv[1]);
    run(1, dev, size, iters, msgs, sv[0]);
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
