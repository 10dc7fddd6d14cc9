/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: control-verb faults (soft_test_hooks.h). The armed
 * device's operations table is swapped for one whose creating and
 * modifying verbs count themselves and fail on the chosen call, and whose
 * destroy verbs count what goes; the device itself is not changed, and
 * nothing of this is in the installed library.
 */
#include "../../dev/srq_verbs_dev.h"
#include "soft_test_hooks.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

static struct {
    srq_verbs_dev_t           *dev;    /* the armed device, or NULL */
    const srq_verbs_dev_ops_t *orig;   /* its own operations */
    srq_verbs_dev_ops_t        ops;    /* what it has now */
    unsigned                   fail_at;
    int                        err;
    srq_soft_test_verbs_t      st;
} srq_soft_tv;

/* One more step: true when this is the one to fail (errno is set) */
static bool srq_soft_tv_fail(const char *verb)
{
    if (srq_soft_tv.st.calls++ != srq_soft_tv.fail_at) {
        return false;
    }
    srq_soft_tv.st.failed = verb;
    errno = srq_soft_tv.err;
    return true;
}

static void *srq_soft_tv_created(void *obj)
{
    srq_soft_tv.st.live += (obj != NULL);
    return obj;
}

static int srq_soft_tv_destroyed(int ret)
{
    srq_soft_tv.st.live -= (ret == 0);
    return ret;
}

/* A creating verb: (NAME, RETURN TYPE, PARAMS, ARGS) */
#define SRQ_SOFT_TV_CREATE(_name, _type, _params, _args) \
    static _type *srq_soft_tv_##_name _params \
    { \
        if (srq_soft_tv_fail(#_name)) { \
            return NULL; \
        } \
        return srq_soft_tv_created(srq_soft_tv.orig->_name _args); \
    }

#define SRQ_SOFT_TV_MODIFY(_name, _params, _args) \
    static int srq_soft_tv_##_name _params \
    { \
        return srq_soft_tv_fail(#_name) ? srq_soft_tv.err : \
                                          srq_soft_tv.orig->_name _args; \
    }

#define SRQ_SOFT_TV_DESTROY(_name, _type, _arg) \
    static int srq_soft_tv_##_name(srq_verbs_dev_t *dev, _type *_arg) \
    { \
        return srq_soft_tv_destroyed(srq_soft_tv.orig->_name(dev, _arg)); \
    }

SRQ_SOFT_TV_CREATE(alloc_pd, struct ibv_pd, (srq_verbs_dev_t *dev), (dev))
SRQ_SOFT_TV_CREATE(reg_mr, struct ibv_mr,
                   (srq_verbs_dev_t *dev, struct ibv_pd *pd, void *addr,
                    size_t length, int access),
                   (dev, pd, addr, length, access))
SRQ_SOFT_TV_CREATE(create_comp_channel, struct ibv_comp_channel,
                   (srq_verbs_dev_t *dev), (dev))
SRQ_SOFT_TV_CREATE(create_cq, struct ibv_cq,
                   (srq_verbs_dev_t *dev, int cqe, void *ctx,
                    struct ibv_comp_channel *ch, int vector),
                   (dev, cqe, ctx, ch, vector))
SRQ_SOFT_TV_CREATE(create_cq_ex, struct ibv_cq_ex,
                   (srq_verbs_dev_t *dev, struct ibv_cq_init_attr_ex *attr),
                   (dev, attr))
SRQ_SOFT_TV_CREATE(create_srq, struct ibv_srq,
                   (srq_verbs_dev_t *dev, struct ibv_pd *pd,
                    struct ibv_srq_init_attr *attr), (dev, pd, attr))
SRQ_SOFT_TV_CREATE(create_srq_ex, struct ibv_srq,
                   (srq_verbs_dev_t *dev, struct ibv_srq_init_attr_ex *attr),
                   (dev, attr))
SRQ_SOFT_TV_CREATE(create_qp, struct ibv_qp,
                   (srq_verbs_dev_t *dev, struct ibv_pd *pd,
                    struct ibv_qp_init_attr *attr), (dev, pd, attr))
SRQ_SOFT_TV_CREATE(create_ah, struct ibv_ah,
                   (srq_verbs_dev_t *dev, struct ibv_pd *pd,
                    struct ibv_ah_attr *attr), (dev, pd, attr))
SRQ_SOFT_TV_MODIFY(modify_srq,
                   (srq_verbs_dev_t *dev, struct ibv_srq *srq,
                    struct ibv_srq_attr *attr, int mask),
                   (dev, srq, attr, mask))
SRQ_SOFT_TV_MODIFY(modify_qp,
                   (srq_verbs_dev_t *dev, struct ibv_qp *qp,
                    struct ibv_qp_attr *attr, int mask),
                   (dev, qp, attr, mask))
SRQ_SOFT_TV_DESTROY(dealloc_pd, struct ibv_pd, pd)
SRQ_SOFT_TV_DESTROY(dereg_mr, struct ibv_mr, mr)
SRQ_SOFT_TV_DESTROY(destroy_comp_channel, struct ibv_comp_channel, ch)
SRQ_SOFT_TV_DESTROY(destroy_cq, struct ibv_cq, cq)
SRQ_SOFT_TV_DESTROY(destroy_srq, struct ibv_srq, srq)
SRQ_SOFT_TV_DESTROY(destroy_qp, struct ibv_qp, qp)
SRQ_SOFT_TV_DESTROY(destroy_ah, struct ibv_ah, ah)

/* The device goes: it must not keep our table, nor we it */
static void srq_soft_tv_close(srq_verbs_dev_t *dev)
{
    void (*close)(srq_verbs_dev_t*) = srq_soft_tv.orig->close;

    srq_soft_test_verbs_stop(dev);
    close(dev);
}

int srq_soft_test_verbs_stop(srq_verbs_dev_t *dev)
{
    if ((dev == NULL) || (dev != srq_soft_tv.dev)) {
        return EINVAL;
    }
    dev->ops       = srq_soft_tv.orig;
    srq_soft_tv.dev = NULL;
    return 0;
}

int srq_soft_test_fail_verb(srq_verbs_dev_t *dev, unsigned fail_at, int err)
{
    srq_verbs_dev_ops_t *ops = &srq_soft_tv.ops;

    if ((dev == NULL) || (dev->kind != SRQ_VERBS_DEV_SOFT) || (err == 0)) {
        return EINVAL;
    }
    if (srq_soft_tv.dev != NULL) {
        srq_soft_test_verbs_stop(srq_soft_tv.dev);
    }
    srq_soft_tv.dev     = dev;
    srq_soft_tv.orig    = dev->ops;
    srq_soft_tv.fail_at = fail_at;
    srq_soft_tv.err     = err;
    srq_soft_tv.st.calls  = 0;
    srq_soft_tv.st.live   = 0;
    srq_soft_tv.st.failed = NULL;

    *ops = *dev->ops;
#define SRQ_SOFT_TV_SET(_name)  ops->_name = srq_soft_tv_##_name;
    SRQ_SOFT_TV_SET(close)
    SRQ_SOFT_TV_SET(alloc_pd)
    SRQ_SOFT_TV_SET(dealloc_pd)
    SRQ_SOFT_TV_SET(reg_mr)
    SRQ_SOFT_TV_SET(dereg_mr)
    SRQ_SOFT_TV_SET(create_comp_channel)
    SRQ_SOFT_TV_SET(destroy_comp_channel)
    SRQ_SOFT_TV_SET(create_cq)
    SRQ_SOFT_TV_SET(create_cq_ex)
    SRQ_SOFT_TV_SET(destroy_cq)
    SRQ_SOFT_TV_SET(create_srq)
    SRQ_SOFT_TV_SET(create_srq_ex)
    SRQ_SOFT_TV_SET(modify_srq)
    SRQ_SOFT_TV_SET(destroy_srq)
    SRQ_SOFT_TV_SET(create_qp)
    SRQ_SOFT_TV_SET(modify_qp)
    SRQ_SOFT_TV_SET(destroy_qp)
    SRQ_SOFT_TV_SET(create_ah)
    SRQ_SOFT_TV_SET(destroy_ah)
#undef SRQ_SOFT_TV_SET
    dev->ops = ops;
    return 0;
}

int srq_soft_test_verbs(srq_verbs_dev_t *dev, srq_soft_test_verbs_t *st)
{
    if ((dev == NULL) || (dev != srq_soft_tv.dev)) {
        return EINVAL;
    }
    *st = srq_soft_tv.st;
    return 0;
}
