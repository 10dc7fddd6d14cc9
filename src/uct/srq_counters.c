/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the counters of an rc_srq interface: the public query
 * (ucx_srq.h) and the line UCX_RC_SRQ_COUNTERS_FILE appends at close.
 */
#include "srq_counters.h"
#include "srq_types.h"
#include "srq_ep.h"
#include "ucx_srq.h"

#include <ucs/debug/log_def.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Collect the counters @iface's parts keep (rx, handshake, sends) */
static void uct_srq_counters_fill(uct_srq_iface_t *iface,
                                  uct_srq_iface_counters_t *counters)
{
    memset(counters, 0, sizeof(*counters));
    counters->rx_posted       = iface->rx.stats.posted;
    counters->rx_consumed     = iface->rx.stats.consumed;
    counters->rx_refills      = iface->rx.stats.refills;
    counters->rx_dropped      = iface->rx.stats.dropped;
    counters->rx_bytes        = iface->rx.stats.bytes;
    counters->rx_queue_now    = iface->rx.posted;
    counters->rx_queue_target = (iface->rx.srq != NULL) ? iface->rx.depth :
                                iface->rx.depth * iface->rx.num_rqs;
    counters->rx_bytes_held   = uct_srq_rx_pool_bytes(&iface->rx.pool);
    counters->rx_srq          = (iface->rx.srq != NULL);
    counters->rx_queue_peak   = iface->rx.stats.peak;
    counters->rx_queue_min    = iface->rx.config.min;
    counters->rx_queue_max    = iface->rx.config.max;
    counters->rx_limit_events = iface->rx.stats.limit_events;
    counters->rx_rnr          = iface->rx.stats.rnr;
    counters->rx_grows        = iface->rx.stats.grows;
    counters->rx_shrinks      = iface->rx.stats.shrinks;
    counters->rx_retired      = iface->rx.stats.retired;
    counters->rx_held         = iface->rx.stats.held;
    counters->rx_starved      = iface->rx.stats.starved;
    counters->conns           = kh_size(&iface->hs.conns);
    counters->conn_sent       = iface->hs.stats.sent;
    counters->conn_retries    = iface->hs.stats.retries;
    counters->conn_dropped    = iface->hs.stats.dropped;
    counters->tx_wrs          = iface->tx_stats.retired +
                                iface->tx_outstanding;
    counters->tx_outstanding  = iface->tx_outstanding;
    counters->conns_failed    = ucs_list_length(&iface->hs.dead);
    counters->rx_descs_in_use = iface->rx.pool.in_use;
    counters->tx_atomics      = iface->tx_stats.atomics;
    counters->tx_atomic_retries = iface->tx_stats.atomic_retries;
    counters->rx_queue_demand = iface->rx.stats.target;
    counters->rx_periods      = iface->rx.stats.periods;
    counters->rx_saturated    = iface->rx.stats.starved_saturated;
    counters->tx_completions  = iface->tx_stats.completions;
    counters->tm_enabled      = iface->tm.enabled;
    counters->tm_matched      = iface->tm.stats.matched;
    counters->tm_unexpected   = iface->tm.stats.unexp;
    counters->tm_rndv_read    = iface->tm.stats.rndv_read;
    counters->tm_sw_rndv      = iface->tm.stats.sw_rndv;
    counters->tm_fin          = iface->tm.stats.fin;
    counters->tm_list_ops     = iface->tm.stats.list_add +
                                iface->tm.stats.list_del +
                                iface->tm.stats.sync;
}

ucs_status_t uct_srq_iface_query_counters(uct_iface_h tl_iface,
                                          uct_srq_iface_counters_t *counters)
{
    /* an rc_srq interface is one whose operations are ours */
    if ((tl_iface == NULL) ||
        (tl_iface->ops.ep_am_short != uct_srq_ep_am_short)) {
        return UCS_ERR_INVALID_PARAM;
    }

    uct_srq_counters_fill(ucs_derived_of(tl_iface, uct_srq_iface_t),
                          counters);
    return UCS_OK;
}

/* The counters file, to append to: a regular file of ours, not reached
 * through a symlink (another user's, in /tmp), never a FIFO (whose open
 * would wait for a reader, at interface close) */
static FILE *uct_srq_counters_open(const char *path)
{
    struct stat st;
    FILE *f;
    int fd;

    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK |
                    O_CLOEXEC, 0600);
    if (fd < 0) {
        return NULL;
    }
    if ((fstat(fd, &st) != 0) || !S_ISREG(st.st_mode) ||
        (st.st_uid != geteuid())) {
        close(fd);
        errno = EPERM;
        return NULL;
    }
    f = fdopen(fd, "a");
    if (f == NULL) {
        close(fd);
    }
    return f;
}

/* One line, for UCX_RC_SRQ_COUNTERS_FILE */
void uct_srq_counters_dump(uct_srq_iface_t *iface, const char *file_template)
{
    uct_srq_iface_counters_t c;
    char path[PATH_MAX];
    FILE *f;

    ucs_fill_filename_template(file_template, path, sizeof(path));
    f = uct_srq_counters_open(path);
    if (f == NULL) {
        ucs_warn("srq: cannot write counters to %s: %m (only a regular file "
                 "of this user, not through a symlink)", path);
        return;
    }
    uct_srq_counters_fill(iface, &c);
    fprintf(f, "rc_srq %s:%d pid %d rx_msgs %lu rx_bytes %lu tx_wrs %lu "
            "conns %lu rx_refills %lu rx_queue %lu rx_bytes_held "
            "%lu rx_srq %lu rx_queue_peak %lu rx_limit_events %lu rx_rnr %lu "
            "rx_grows %lu rx_shrinks %lu rx_retired %lu rx_starved %lu "
            "tx_atomics %lu tx_atomic_retries %lu rx_demand %lu "
            "rx_saturated %lu tm %lu tm_matched %lu tm_unexpected %lu "
            "tm_rndv_read %lu path %s\n",
            srq_verbs_dev_name(iface->dev), iface->port_num, (int)getpid(),
            c.rx_consumed, c.rx_bytes, c.tx_wrs, c.conns,
            c.rx_refills, c.rx_queue_target, c.rx_bytes_held, c.rx_srq,
            c.rx_queue_peak, c.rx_limit_events, c.rx_rnr, c.rx_grows,
            c.rx_shrinks, c.rx_retired, c.rx_starved, c.tx_atomics,
            c.tx_atomic_retries, c.rx_queue_demand, c.rx_saturated,
            c.tm_enabled, c.tm_matched, c.tm_unexpected, c.tm_rndv_read,
            /* the device through libibverbs (an HCA, or soft0 under
             * srq-run --verbs), or the plugin's built-in soft0 */
            (srq_verbs_dev_kind(iface->dev) == SRQ_VERBS_DEV_SOFT) ?
            "built-in" : "rdma-core");
    fclose(f);
}
