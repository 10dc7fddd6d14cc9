/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: test hooks - fault injection (posts, control verbs),
 * packet injection and lock hijacking, for the tests of what a misbehaving
 * peer, a failing post or a failing setup step does. Everything here
 * fails with EINVAL on a device that is not a soft device.
 */
#ifndef SRQ_SOFT_TEST_HOOKS_H_
#define SRQ_SOFT_TEST_HOOKS_H_

#include "../../dev/srq_verbs_types.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    /* push as one frame through the producer protocol, content unchecked */
    SRQ_SOFT_INJECT_FRAME    = 0,
    /* write bytes at the tail and publish them, bypassing all framing */
    SRQ_SOFT_INJECT_SCRIBBLE = 1,
    /* as FRAME, but stop after the claim: the frame is claimed under this
     * process's id and never filled nor published (a producer descheduled,
     * stopped or killed while filling it) */
    SRQ_SOFT_INJECT_CLAIM = 2,
    /* publish the frame the last CLAIM of this process left (@buf and
     * @len unused) */
    SRQ_SOFT_INJECT_PUBLISH = 3
};

/* Put @len raw bytes into the inbound queue of instance @to (opened in
 * this process, or in a parent before fork), as a (misbehaving) peer
 * would. */
int srq_soft_inject(srq_verbs_dev_t *from, srq_verbs_dev_t *to,
                    const void *buf, size_t len, int mode);

/* The instance id of @dev (SRQ_SOFT_INST_LEN bytes into @id: what its
 * packets carry as src_inst; its address is its port's, shared with the
 * other instances of the process) */
int srq_soft_test_instance(srq_verbs_dev_t *dev, uint8_t *id);

/* In a child forked after @dev was opened (whose mapping of @dev's queue
 * it shares), take the queue's producer lock as this process and never
 * release it - then die, to test that producers take over a dead holder's
 * lock. */
int srq_soft_test_hold_lock(srq_verbs_dev_t *dev);
/* Release @dev's queue lock whoever holds it (after srq_soft_test_hold_lock
 * in this process: a live holder that lets go) */
int srq_soft_test_release_lock(srq_verbs_dev_t *dev);

/* Run @fn(@arg) holding @dev's own (process-private) lock, the one every
 * verb of the device takes: a thread that holds it and loses its CPU */
int srq_soft_test_with_dev_lock(srq_verbs_dev_t *dev, void (*fn)(void *arg),
                                void *arg);

/* The completions written into @cq (a soft CQ) and not polled yet; a
 * look, taking none */
int srq_soft_test_cq_pending(struct ibv_cq *cq);

/*
 * Stop @dev's progress thread: from now on the device moves only when its
 * owner polls (ibv_poll_cq, srq_verbs_get_cq_event), as an HCA never
 * does - for the tests of what a peer sees while this side does not run
 * (its ACKs late, its queue filling) and of the device's work done in a
 * poll. Call it before creating a completion channel on @dev (a channel
 * made while the thread ran leaves the moving to it).
 */
int srq_soft_test_stop_thread(srq_verbs_dev_t *dev);

/*
 * Have @dev's progress thread leave a polling owner alone for @ms at each
 * look, from its next look on (0: the default, SRQ_SOFT_THREAD_LOOK_MS
 * doubling up to _MAX_MS): for the tests of what wakes the thread other
 * than its own looks.
 */
int srq_soft_test_thread_look(srq_verbs_dev_t *dev, unsigned ms);

/*
 * Arm a one-shot fault. The next ibv_post_srq_recv or
 * ibv_post_recv on this device whose WR chain has more than @wr_index WRs
 * fails at WR number @wr_index (0-based) as a post-time check would: it
 * returns @err with *bad_wr pointing at that WR, the WRs before it are
 * posted, it and the ones after it are not. That post disarms the fault
 * even when one of its earlier WRs fails on its own; shorter chains leave
 * it armed. Arming again replaces an armed fault. Safe to call while other
 * threads post. EINVAL: not a soft device, or @err is 0. The device's own
 * post path knows nothing of it: arming puts this library's wrappers in
 * the context's post_recv and post_srq_recv, which post the WRs before
 * @wr_index one at a time.
 */
int srq_soft_test_fail_post(srq_verbs_dev_t *dev, unsigned wr_index, int err);

/*
 * Control-verb faults (soft_test_verbs.c), for the tests of what a caller
 * does when a step of its setup fails. From now on the control verbs of
 * @dev that create or change an object (alloc_pd, reg_mr,
 * create_comp_channel, create_cq, create_srq, modify_srq, create_qp,
 * modify_qp, create_ah) are counted, each a step, and the one numbered
 * @fail_at (0-based; UINT_MAX: none) fails with @err as the device reports
 * errors (NULL and errno, or the errno returned), without doing anything;
 * objects created are counted against objects destroyed. One device at a
 * time: arming another stops the first. Destroy verbs never fail. EINVAL:
 * not a soft device, or @err is 0.
 */
int srq_soft_test_fail_verb(srq_verbs_dev_t *dev, unsigned fail_at, int err);

typedef struct srq_soft_test_verbs {
    unsigned    calls;   /* steps counted since arming */
    int         live;    /* objects created since arming, minus those
                            destroyed since (any object) */
    const char *failed;  /* the verb that was failed, or NULL */
} srq_soft_test_verbs_t;

/* What happened on @dev since srq_soft_test_fail_verb. EINVAL: not armed */
int srq_soft_test_verbs(srq_verbs_dev_t *dev, srq_soft_test_verbs_t *st);
/* Back to the device's own operations (also when the device closes) */
int srq_soft_test_verbs_stop(srq_verbs_dev_t *dev);

#ifdef __cplusplus
}
#endif

#endif
