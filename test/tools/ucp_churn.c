/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucp_churn: a long-lived UCP server and many short-lived clients, for the
 * connection soak (contrib/stress-churn, test/churn.sh).
 *
 *   ucp_churn server ADDR_FILE
 * writes its worker address (hex) to ADDR_FILE, then serves: counts the
 * active messages (id 7) it receives, and answers each line on stdin with
 * "received N"; it ends when stdin closes, and prints "received N".
 *
 *   ucp_churn clients ADDR_FILE N PAR
 * runs N client processes, PAR at a time. Each opens its own UCP context
 * and worker, connects to the server, sends one active message and waits
 * for it to complete, then leaves the way its number says: 8 in 10 close
 * their endpoint with a flush and destroy their worker, 1 in 10 close it
 * with UCP_EP_CLOSE_FLAG_FORCE, 1 in 10 call _exit() at once. Prints
 * "clients N failed N" and exits 1 if any client failed to send.
 */
#define _GNU_SOURCE
#include <ucp/api/ucp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHURN_AM_ID 7

static unsigned long received;

static int churn_fail(const char *what, ucs_status_t status)
{
    fprintf(stderr, "ucp_churn: %s: %s\n", what, ucs_status_string(status));
    return 1;
}

static int churn_open(ucp_context_h *ctx, ucp_worker_h *worker)
{
    ucp_params_t params               = {};
    ucp_worker_params_t wparams       = {};
    ucs_status_t status;

    params.field_mask   = UCP_PARAM_FIELD_FEATURES;
    params.features     = UCP_FEATURE_AM;
    status = ucp_init(&params, NULL, ctx);
    if (status != UCS_OK) {
        return churn_fail("ucp_init", status);
    }
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(*ctx, &wparams, worker);
    if (status != UCS_OK) {
        ucp_cleanup(*ctx);
        return churn_fail("ucp_worker_create", status);
    }
    return 0;
}

static ucs_status_t churn_am_cb(void *arg, const void *header,
                                size_t header_length, void *data,
                                size_t length,
                                const ucp_am_recv_param_t *param)
{
    ++received;
    return UCS_OK;
}

static int churn_server(const char *addr_file)
{
    ucp_am_handler_param_t am = {};
    ucp_address_t *addr;
    size_t len, i;
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucs_status_t status;
    FILE *f;

    if (churn_open(&ctx, &worker) != 0) {
        return 1;
    }
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                    UCP_AM_HANDLER_PARAM_FIELD_CB;
    am.id         = CHURN_AM_ID;
    am.cb         = churn_am_cb;
    status = ucp_worker_set_am_recv_handler(worker, &am);
    if (status != UCS_OK) {
        return churn_fail("ucp_worker_set_am_recv_handler", status);
    }
    status = ucp_worker_get_address(worker, &addr, &len);
    if (status != UCS_OK) {
        return churn_fail("ucp_worker_get_address", status);
    }
    f = fopen(addr_file, "w");
    if (f == NULL) {
        perror("ucp_churn: address file");
        return 1;
    }
    for (i = 0; i < len; ++i) {
        fprintf(f, "%02x", ((unsigned char*)addr)[i]);
    }
    fprintf(f, "\n");
    fclose(f);
    ucp_worker_release_address(worker, addr);

    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    for (;;) {
        char c;
        ssize_t n;

        ucp_worker_progress(worker);
        n = read(0, &c, 1);
        if (n == 0) {
            break;
        }
        if ((n == 1) && (c == '\n')) {
            printf("received %lu\n", received);
            fflush(stdout);
        }
    }
    ucp_worker_destroy(worker); /* its interfaces write their counters */
    ucp_cleanup(ctx);
    printf("received %lu\n", received);
    return 0;
}

static int churn_read_addr(const char *addr_file, unsigned char *buf,
                           size_t max, size_t *len_p)
{
    char hex[8192];
    unsigned v;
    size_t i;
    FILE *f = fopen(addr_file, "r");

    if ((f == NULL) || (fgets(hex, sizeof(hex), f) == NULL)) {
        fprintf(stderr, "ucp_churn: cannot read %s\n", addr_file);
        if (f != NULL) {
            fclose(f);
        }
        return -1;
    }
    fclose(f);
    for (i = 0; (2 * i + 1 < strlen(hex)) && (i < max); ++i) {
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            break;
        }
        buf[i] = (unsigned char)v;
    }
    *len_p = i;
    return (i > 0) ? 0 : -1;
}

static int churn_wait(ucp_worker_h worker, void *req)
{
    ucs_status_t status;

    if (req == NULL) {
        return 0;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return churn_fail("request", UCS_PTR_STATUS(req));
    }
    do {
        ucp_worker_progress(worker);
        status = ucp_request_check_status(req);
    } while (status == UCS_INPROGRESS);
    ucp_request_free(req);
    return (status == UCS_OK) ? 0 : churn_fail("request", status);
}

/* One client: connect, send, leave as @how says (0 flush, 1 force, 2 exit) */
static int churn_client(const unsigned char *addr, int how)
{
    ucp_request_param_t rp = {};
    ucp_ep_params_t ep_params = {};
    uint64_t payload = 42;
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucs_status_t status;
    ucp_ep_h ep;
    int ret;

    if (churn_open(&ctx, &worker) != 0) {
        return 1;
    }
    /* as servers' clients do: told of a peer's failure (and force close
     * needs it) */
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.address    = (const ucp_address_t*)addr;
    ep_params.err_mode   = UCP_ERR_HANDLING_MODE_PEER;
    status = ucp_ep_create(worker, &ep_params, &ep);
    if (status != UCS_OK) {
        return churn_fail("ucp_ep_create", status);
    }
    ret = churn_wait(worker, ucp_am_send_nbx(ep, CHURN_AM_ID, NULL, 0,
                                             &payload, sizeof(payload), &rp));
    if (how == 2) {
        _exit(ret);
    }
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags        = (how == 1) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    if (churn_wait(worker, ucp_ep_close_nbx(ep, &rp)) != 0) {
        ret = 1;
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    return ret;
}

static int churn_clients(const char *addr_file, long n, long par)
{
    unsigned char addr[4096];
    long started = 0, running = 0, failed = 0, i;
    size_t len;
    int st;

    if (churn_read_addr(addr_file, addr, sizeof(addr), &len) != 0) {
        return 1;
    }
    for (i = 0; (started < n) || (running > 0); ++i) {
        if ((started < n) && (running < par)) {
            long k = started++;
            pid_t pid = fork();
            if (pid == 0) {
                _exit(churn_client(addr, (k % 10 == 8) ? 1 :
                                         (k % 10 == 9) ? 2 : 0));
            }
            if (pid < 0) {
                perror("ucp_churn: fork");
                ++failed;
            } else {
                ++running;
            }
            continue;
        }
        if (wait(&st) > 0) {
            --running;
            if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0)) {
                ++failed;
            }
        } else if (errno == ECHILD) {
            running = 0;
        }
    }
    printf("clients %ld failed %ld\n", n, failed);
    return (failed == 0) ? 0 : 1;
}

int main(int argc, char **argv)
{
    if ((argc == 3) && !strcmp(argv[1], "server")) {
        return churn_server(argv[2]);
    }
    if ((argc == 5) && !strcmp(argv[1], "clients")) {
        return churn_clients(argv[2], atol(argv[3]), atol(argv[4]));
    }
    fprintf(stderr, "usage: ucp_churn server ADDR_FILE | "
                    "ucp_churn clients ADDR_FILE N PAR\n");
    return 2;
}
