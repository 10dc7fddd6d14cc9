/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: the tracing wrappers. srq_verbs_trace_attach()
 * puts them in a device's operations (control path) and in its context's
 * ops (data path: ibv_post_send and friends are inline functions of
 * <infiniband/verbs.h> that call through context->ops), keeping the real
 * ones to call. Each wrapper formats the call's inputs, makes the real
 * call unlocked, formats what it returned and writes the line.
 */
#include "srq_verbs_trace_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The device libsrq_ibv.so serves in this process shows itself to
 * libibverbs under this node name; it traces its own calls, so the verbs
 * layer that opens it through rdma-core (the plugin under srq-run
 * --verbs) does not trace them a second time */
#define SRQ_VERBS_TRACE_SERVED_NODE  "uverbs-soft0"

typedef struct srq_verbs_trace_dev {
    srq_verbs_dev_t            *dev;
    const srq_verbs_dev_ops_t  *real;
    struct ibv_context         *ctx;
    struct ibv_context_ops      data;  /* the real data path */
    struct srq_verbs_trace_dev *next;
} srq_verbs_trace_dev_t;

static srq_verbs_trace_dev_t *srq_verbs_trace_devs;
static pthread_rwlock_t srq_verbs_trace_devs_lock = PTHREAD_RWLOCK_INITIALIZER;

static srq_verbs_trace_dev_t *srq_verbs_trace_lookup(const void *dev,
                                                     const struct ibv_context *ctx)
{
    srq_verbs_trace_dev_t *t;

    pthread_rwlock_rdlock(&srq_verbs_trace_devs_lock);
    for (t = srq_verbs_trace_devs; t != NULL; t = t->next) {
        if ((t->dev == dev) || (t->ctx == ctx)) {
            break;
        }
    }
    pthread_rwlock_unlock(&srq_verbs_trace_devs_lock);
    return t;
}

static const srq_verbs_dev_ops_t *srq_verbs_trace_real(srq_verbs_dev_t *dev)
{
    return srq_verbs_trace_lookup(dev, NULL)->real;
}

static const struct ibv_context_ops *srq_verbs_trace_data(struct ibv_context *ctx)
{
    return &srq_verbs_trace_lookup(NULL, ctx)->data;
}

/*
 * The shape of every wrapper: inputs, the real call, outputs. _verb is the
 * contract's name, _call the real call, the rest the verb's arguments as
 * the contract orders them.
 */
#define SRQ_VERBS_TRACE_INT(_verb, _call, ...) \
    ({ \
        srq_verbs_trace_call_t _t; \
        int _ret; \
        srq_verbs_trace_begin(&_t); \
        srq_verbs_trace_in_##_verb(&_t.b, __VA_ARGS__); \
        srq_verbs_trace_pause(&_t); \
        _ret = (_call); \
        srq_verbs_trace_resume(&_t); \
        srq_verbs_trace_out_##_verb(&_t.b, __VA_ARGS__, _ret); \
        srq_verbs_trace_end(&_t); \
        _ret; \
    })

#define SRQ_VERBS_TRACE_OBJ(_verb, _call, ...) \
    ({ \
        srq_verbs_trace_call_t _t; \
        __typeof__(_call) _obj; \
        srq_verbs_trace_begin(&_t); \
        srq_verbs_trace_in_##_verb(&_t.b, __VA_ARGS__); \
        srq_verbs_trace_pause(&_t); \
        _obj = (_call); \
        srq_verbs_trace_resume(&_t); \
        srq_verbs_trace_out_##_verb(&_t.b, __VA_ARGS__, _obj, _t.err); \
        srq_verbs_trace_end(&_t); \
        _obj; \
    })

#define SRQ_VERBS_TRACE_VOID(_verb, _call, ...) \
    do { \
        srq_verbs_trace_call_t _t; \
        srq_verbs_trace_begin(&_t); \
        srq_verbs_trace_in_##_verb(&_t.b, __VA_ARGS__); \
        srq_verbs_trace_pause(&_t); \
        _call; \
        srq_verbs_trace_resume(&_t); \
        srq_verbs_trace_out_##_verb(&_t.b, __VA_ARGS__); \
        srq_verbs_trace_end(&_t); \
    } while (0)

#define REAL(_dev) srq_verbs_trace_real(_dev)

/* ---- data path ----------------------------------------------------------- */

static int srq_verbs_trace_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                                     struct ibv_send_wr **bad_wr)
{
    const struct ibv_context_ops *ops = srq_verbs_trace_data(qp->context);

    return SRQ_VERBS_TRACE_INT(ibv_post_send, ops->post_send(qp, wr, bad_wr),
                               qp, wr, bad_wr);
}

static int srq_verbs_trace_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                                     struct ibv_recv_wr **bad_wr)
{
    const struct ibv_context_ops *ops = srq_verbs_trace_data(qp->context);

    return SRQ_VERBS_TRACE_INT(ibv_post_recv, ops->post_recv(qp, wr, bad_wr),
                               qp, wr, bad_wr);
}

static int srq_verbs_trace_post_srq_recv(struct ibv_srq *srq,
                                         struct ibv_recv_wr *wr,
                                         struct ibv_recv_wr **bad_wr)
{
    const struct ibv_context_ops *ops = srq_verbs_trace_data(srq->context);

    return SRQ_VERBS_TRACE_INT(ibv_post_srq_recv,
                               ops->post_srq_recv(srq, wr, bad_wr),
                               srq, wr, bad_wr);
}

static int srq_verbs_trace_poll_cq(struct ibv_cq *cq, int num_entries,
                                   struct ibv_wc *wc)
{
    const struct ibv_context_ops *ops = srq_verbs_trace_data(cq->context);
    srq_verbs_trace_call_t t;
    int ret, err;

    ret = ops->poll_cq(cq, num_entries, wc);
    if (ret == 0) {
        srq_verbs_trace_idle_poll(cq, num_entries);
        return 0;
    }
    /* nothing to format before: num_entries and the CQ are unchanged */
    err = errno;
    srq_verbs_trace_begin(&t);
    t.err = err;
    srq_verbs_trace_in_ibv_poll_cq(&t.b, cq, num_entries, wc);
    srq_verbs_trace_out_ibv_poll_cq(&t.b, cq, num_entries, wc, ret);
    srq_verbs_trace_end(&t);
    return ret;
}

static int srq_verbs_trace_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    const struct ibv_context_ops *ops = srq_verbs_trace_data(cq->context);

    return SRQ_VERBS_TRACE_INT(ibv_req_notify_cq,
                               ops->req_notify_cq(cq, solicited_only),
                               cq, solicited_only);
}

/* ---- control path ------------------------------------------------------- */

static void srq_verbs_trace_close(srq_verbs_dev_t *dev)
{
    srq_verbs_trace_dev_t *t = srq_verbs_trace_lookup(dev, NULL), **pp;
    const srq_verbs_dev_ops_t *real = t->real;
    struct ibv_context *ctx = dev->context;
    srq_verbs_trace_call_t c;

    srq_verbs_trace_begin(&c);
    srq_verbs_trace_in_ibv_close_device(&c.b, ctx);
    srq_verbs_trace_out_ibv_close_device(&c.b, ctx, 0);
    srq_verbs_trace_end(&c);

    pthread_rwlock_wrlock(&srq_verbs_trace_devs_lock);
    for (pp = &srq_verbs_trace_devs; *pp != t; pp = &(*pp)->next) {
    }
    *pp = t->next;
    pthread_rwlock_unlock(&srq_verbs_trace_devs_lock);
    free(t);
    real->close(dev);
}

static int srq_verbs_trace_query_device(srq_verbs_dev_t *dev,
                                        struct ibv_device_attr *attr)
{
    return REAL(dev)->query_device(dev, attr);
}

static int srq_verbs_trace_query_device_ex(srq_verbs_dev_t *dev,
                                           struct ibv_device_attr_ex *attr)
{
    return REAL(dev)->query_device_ex(dev, attr);
}

static int srq_verbs_trace_query_port(srq_verbs_dev_t *dev, uint8_t port_num,
                                      struct ibv_port_attr *attr)
{
    return REAL(dev)->query_port(dev, port_num, attr);
}

static int srq_verbs_trace_port_addr(srq_verbs_dev_t *dev, uint8_t port_num,
                                     srq_verbs_port_addr_t *addr)
{
    return REAL(dev)->port_addr(dev, port_num, addr);
}

static int srq_verbs_trace_ah_attr(srq_verbs_dev_t *dev, uint8_t port_num,
                                   const srq_verbs_port_addr_t *addr,
                                   struct ibv_ah_attr *ah_attr)
{
    return REAL(dev)->ah_attr(dev, port_num, addr, ah_attr);
}

static struct ibv_pd *srq_verbs_trace_alloc_pd(srq_verbs_dev_t *dev)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_alloc_pd, REAL(dev)->alloc_pd(dev),
                               dev->context);
}

static int srq_verbs_trace_dealloc_pd(srq_verbs_dev_t *dev, struct ibv_pd *pd)
{
    return SRQ_VERBS_TRACE_INT(ibv_dealloc_pd, REAL(dev)->dealloc_pd(dev, pd),
                               pd);
}

/* A parent domain is named as a PD (pdN): what is made in it replays as
 * made in it. Its allocators are recorded only as given or not */
static struct ibv_td *srq_verbs_trace_alloc_td(srq_verbs_dev_t *dev,
                                               struct ibv_td_init_attr *attr)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_alloc_td, REAL(dev)->alloc_td(dev, attr),
                               dev->context, attr);
}

static int srq_verbs_trace_dealloc_td(srq_verbs_dev_t *dev, struct ibv_td *td)
{
    return SRQ_VERBS_TRACE_INT(ibv_dealloc_td, REAL(dev)->dealloc_td(dev, td),
                               td);
}

static struct ibv_pd *srq_verbs_trace_alloc_parent_domain(
        srq_verbs_dev_t *dev, struct ibv_parent_domain_init_attr *attr)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_alloc_parent_domain,
                               REAL(dev)->alloc_parent_domain(dev, attr),
                               dev->context, attr);
}

static struct ibv_mr *srq_verbs_trace_reg_mr(srq_verbs_dev_t *dev,
                                             struct ibv_pd *pd, void *addr,
                                             size_t length, int access)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_reg_mr,
                               REAL(dev)->reg_mr(dev, pd, addr, length, access),
                               pd, addr, length, access);
}

static struct ibv_mr *srq_verbs_trace_reg_mr_iova(srq_verbs_dev_t *dev,
                                                  struct ibv_pd *pd, void *addr,
                                                  size_t length, uint64_t iova,
                                                  int access)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_reg_mr_iova,
                               REAL(dev)->reg_mr_iova(dev, pd, addr, length,
                                                      iova, access),
                               pd, addr, length, iova, access);
}

static int srq_verbs_trace_dereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr)
{
    return SRQ_VERBS_TRACE_INT(ibv_dereg_mr, REAL(dev)->dereg_mr(dev, mr), mr);
}

static struct ibv_comp_channel *
srq_verbs_trace_create_comp_channel(srq_verbs_dev_t *dev)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_create_comp_channel,
                               REAL(dev)->create_comp_channel(dev),
                               dev->context);
}

static int srq_verbs_trace_destroy_comp_channel(srq_verbs_dev_t *dev,
                                                struct ibv_comp_channel *ch)
{
    return SRQ_VERBS_TRACE_INT(ibv_destroy_comp_channel,
                               REAL(dev)->destroy_comp_channel(dev, ch), ch);
}

static struct ibv_cq *srq_verbs_trace_create_cq(srq_verbs_dev_t *dev, int cqe,
                                                void *cq_context,
                                                struct ibv_comp_channel *channel,
                                                int comp_vector)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_create_cq,
                               REAL(dev)->create_cq(dev, cqe, cq_context,
                                                    channel, comp_vector),
                               dev->context, cqe, cq_context, channel,
                               comp_vector);
}

static int srq_verbs_trace_destroy_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq)
{
    return SRQ_VERBS_TRACE_INT(ibv_destroy_cq, REAL(dev)->destroy_cq(dev, cq),
                               cq);
}

static int srq_verbs_trace_get_cq_event(srq_verbs_dev_t *dev,
                                        struct ibv_comp_channel *channel,
                                        struct ibv_cq **cq_p,
                                        void **cq_context_p)
{
    return SRQ_VERBS_TRACE_INT(ibv_get_cq_event,
                               REAL(dev)->get_cq_event(dev, channel, cq_p,
                                                       cq_context_p),
                               channel, cq_p, cq_context_p);
}

static void srq_verbs_trace_ack_cq_events(srq_verbs_dev_t *dev,
                                          struct ibv_cq *cq, unsigned nevents)
{
    SRQ_VERBS_TRACE_VOID(ibv_ack_cq_events,
                         REAL(dev)->ack_cq_events(dev, cq, nevents),
                         cq, nevents);
}

static struct ibv_srq *srq_verbs_trace_create_srq(srq_verbs_dev_t *dev,
                                                  struct ibv_pd *pd,
                                                  struct ibv_srq_init_attr *attr)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_create_srq,
                               REAL(dev)->create_srq(dev, pd, attr), pd, attr);
}

static int srq_verbs_trace_modify_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                                      struct ibv_srq_attr *attr, int attr_mask)
{
    return SRQ_VERBS_TRACE_INT(ibv_modify_srq,
                               REAL(dev)->modify_srq(dev, srq, attr, attr_mask),
                               srq, attr, attr_mask);
}

static int srq_verbs_trace_query_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq,
                                     struct ibv_srq_attr *attr)
{
    return SRQ_VERBS_TRACE_INT(ibv_query_srq, REAL(dev)->query_srq(dev, srq, attr),
                               srq, attr);
}

static int srq_verbs_trace_destroy_srq(srq_verbs_dev_t *dev, struct ibv_srq *srq)
{
    return SRQ_VERBS_TRACE_INT(ibv_destroy_srq, REAL(dev)->destroy_srq(dev, srq),
                               srq);
}

static struct ibv_qp *srq_verbs_trace_create_qp(srq_verbs_dev_t *dev,
                                                struct ibv_pd *pd,
                                                struct ibv_qp_init_attr *attr)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_create_qp, REAL(dev)->create_qp(dev, pd, attr),
                               pd, attr);
}

/* Traced as the ibv_create_qp it amounts to for a replay (the attributes
 * begin with struct ibv_qp_init_attr); the ibv_wr_* posts of such a QP go
 * straight to the device and are not traced */
static struct ibv_qp *srq_verbs_trace_create_qp_ex(
    srq_verbs_dev_t *dev, struct ibv_qp_init_attr_ex *attr)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_create_qp,
                               REAL(dev)->create_qp_ex(dev, attr), attr->pd,
                               (struct ibv_qp_init_attr*)attr);
}

static int srq_verbs_trace_modify_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                                     struct ibv_qp_attr *attr, int attr_mask)
{
    return SRQ_VERBS_TRACE_INT(ibv_modify_qp,
                               REAL(dev)->modify_qp(dev, qp, attr, attr_mask),
                               qp, attr, attr_mask);
}

static int srq_verbs_trace_query_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp,
                                    struct ibv_qp_attr *attr, int attr_mask,
                                    struct ibv_qp_init_attr *init_attr)
{
    return SRQ_VERBS_TRACE_INT(ibv_query_qp,
                               REAL(dev)->query_qp(dev, qp, attr, attr_mask,
                                                   init_attr),
                               qp, attr, attr_mask, init_attr);
}

static int srq_verbs_trace_destroy_qp(srq_verbs_dev_t *dev, struct ibv_qp *qp)
{
    return SRQ_VERBS_TRACE_INT(ibv_destroy_qp, REAL(dev)->destroy_qp(dev, qp),
                               qp);
}

static struct ibv_ah *srq_verbs_trace_create_ah(srq_verbs_dev_t *dev,
                                                struct ibv_pd *pd,
                                                struct ibv_ah_attr *attr)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_create_ah, REAL(dev)->create_ah(dev, pd, attr),
                               pd, attr);
}

static int srq_verbs_trace_destroy_ah(srq_verbs_dev_t *dev, struct ibv_ah *ah)
{
    return SRQ_VERBS_TRACE_INT(ibv_destroy_ah, REAL(dev)->destroy_ah(dev, ah),
                               ah);
}

static int srq_verbs_trace_async_fd(srq_verbs_dev_t *dev)
{
    return REAL(dev)->async_fd(dev);
}

static int srq_verbs_trace_get_async_event(srq_verbs_dev_t *dev,
                                           struct ibv_async_event *event)
{
    srq_verbs_trace_call_t t;
    int ret, err;

    /* the transport polls for events (non-blocking): "none" is no call
     * worth a line */
    ret = REAL(dev)->get_async_event(dev, event);
    if (ret == EAGAIN) {
        return ret;
    }
    err = errno;
    srq_verbs_trace_begin(&t);
    t.err = err;
    srq_verbs_trace_in_ibv_get_async_event(&t.b, dev->context, event);
    srq_verbs_trace_out_ibv_get_async_event(&t.b, dev->context, event, ret);
    srq_verbs_trace_end(&t);
    return ret;
}

static void srq_verbs_trace_ack_async_event(srq_verbs_dev_t *dev,
                                            struct ibv_async_event *event)
{
    SRQ_VERBS_TRACE_VOID(ibv_ack_async_event,
                         REAL(dev)->ack_async_event(dev, event), event);
}

static int srq_verbs_trace_rereg_mr(srq_verbs_dev_t *dev, struct ibv_mr *mr,
                                    int flags, struct ibv_pd *pd, void *addr,
                                    size_t length, int access)
{
    return SRQ_VERBS_TRACE_INT(ibv_rereg_mr,
                               REAL(dev)->rereg_mr(dev, mr, flags, pd, addr,
                                                   length, access),
                               mr, flags, pd, addr, length, access);
}

static int srq_verbs_trace_advise_mr(srq_verbs_dev_t *dev, struct ibv_pd *pd,
                                     enum ibv_advise_mr_advice advice,
                                     uint32_t flags, struct ibv_sge *sg_list,
                                     uint32_t num_sge)
{
    return SRQ_VERBS_TRACE_INT(ibv_advise_mr,
                               REAL(dev)->advise_mr(dev, pd, advice, flags,
                                                    sg_list, num_sge),
                               pd, advice, flags, sg_list, num_sge);
}

static struct ibv_cq_ex *
srq_verbs_trace_create_cq_ex(srq_verbs_dev_t *dev,
                             struct ibv_cq_init_attr_ex *attr)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_create_cq_ex,
                               REAL(dev)->create_cq_ex(dev, attr),
                               dev->context, attr);
}

static int srq_verbs_trace_resize_cq(srq_verbs_dev_t *dev, struct ibv_cq *cq,
                                     int cqe)
{
    return SRQ_VERBS_TRACE_INT(ibv_resize_cq, REAL(dev)->resize_cq(dev, cq, cqe),
                               cq, cqe);
}

static struct ibv_srq *
srq_verbs_trace_create_srq_ex(srq_verbs_dev_t *dev,
                              struct ibv_srq_init_attr_ex *attr)
{
    return SRQ_VERBS_TRACE_OBJ(ibv_create_srq_ex,
                               REAL(dev)->create_srq_ex(dev, attr),
                               dev->context, attr);
}

static int srq_verbs_trace_post_srq_ops(srq_verbs_dev_t *dev,
                                        struct ibv_srq *srq,
                                        struct ibv_ops_wr *wr,
                                        struct ibv_ops_wr **bad_wr)
{
    return SRQ_VERBS_TRACE_INT(ibv_post_srq_ops,
                               REAL(dev)->post_srq_ops(dev, srq, wr, bad_wr),
                               srq, wr, bad_wr);
}

/* a statistic of the device, not a verb: not traced */
static int srq_verbs_trace_query_srq_rnr(srq_verbs_dev_t *dev,
                                         struct ibv_srq *srq, uint64_t *count_p)
{
    return REAL(dev)->query_srq_rnr(dev, srq, count_p);
}

static const srq_verbs_dev_ops_t srq_verbs_trace_ops = {
    .close                = srq_verbs_trace_close,
    .query_device         = srq_verbs_trace_query_device,
    .query_device_ex      = srq_verbs_trace_query_device_ex,
    .query_port           = srq_verbs_trace_query_port,
    .port_addr            = srq_verbs_trace_port_addr,
    .ah_attr              = srq_verbs_trace_ah_attr,
    .alloc_pd             = srq_verbs_trace_alloc_pd,
    .dealloc_pd           = srq_verbs_trace_dealloc_pd,
    .alloc_td             = srq_verbs_trace_alloc_td,
    .dealloc_td           = srq_verbs_trace_dealloc_td,
    .alloc_parent_domain  = srq_verbs_trace_alloc_parent_domain,
    .reg_mr               = srq_verbs_trace_reg_mr,
    .reg_mr_iova          = srq_verbs_trace_reg_mr_iova,
    .dereg_mr             = srq_verbs_trace_dereg_mr,
    .rereg_mr             = srq_verbs_trace_rereg_mr,
    .advise_mr            = srq_verbs_trace_advise_mr,
    .create_comp_channel  = srq_verbs_trace_create_comp_channel,
    .destroy_comp_channel = srq_verbs_trace_destroy_comp_channel,
    .create_cq            = srq_verbs_trace_create_cq,
    .destroy_cq           = srq_verbs_trace_destroy_cq,
    .create_cq_ex         = srq_verbs_trace_create_cq_ex,
    .resize_cq            = srq_verbs_trace_resize_cq,
    .get_cq_event         = srq_verbs_trace_get_cq_event,
    .ack_cq_events        = srq_verbs_trace_ack_cq_events,
    .create_srq           = srq_verbs_trace_create_srq,
    .modify_srq           = srq_verbs_trace_modify_srq,
    .query_srq            = srq_verbs_trace_query_srq,
    .destroy_srq          = srq_verbs_trace_destroy_srq,
    .create_srq_ex        = srq_verbs_trace_create_srq_ex,
    .post_srq_ops         = srq_verbs_trace_post_srq_ops,
    .create_qp            = srq_verbs_trace_create_qp,
    .create_qp_ex         = srq_verbs_trace_create_qp_ex,
    .modify_qp            = srq_verbs_trace_modify_qp,
    .query_qp             = srq_verbs_trace_query_qp,
    .destroy_qp           = srq_verbs_trace_destroy_qp,
    .create_ah            = srq_verbs_trace_create_ah,
    .destroy_ah           = srq_verbs_trace_destroy_ah,
    .async_fd             = srq_verbs_trace_async_fd,
    .get_async_event      = srq_verbs_trace_get_async_event,
    .ack_async_event      = srq_verbs_trace_ack_async_event,
    .query_srq_rnr        = srq_verbs_trace_query_srq_rnr,
};

/* ---- attaching ------------------------------------------------------------ */

/* The line "ibv_open_device device=NAME ret=ctxN": the context and its
 * ports' LIDs and GIDs, which the address vectors of later lines name */
static void srq_verbs_trace_open_line(srq_verbs_dev_t *dev,
                                      const srq_verbs_dev_ops_t *real)
{
    uint16_t lid[SRQ_VERBS_TRACE_MAX_PORTS + 1] = {0};
    union ibv_gid gid[SRQ_VERBS_TRACE_MAX_PORTS + 1];
    struct ibv_device_attr dattr;
    struct ibv_port_attr pattr;
    srq_verbs_port_addr_t addr;
    struct ibv_device device;
    srq_verbs_trace_call_t t;
    int p, ports = 0;

    memset(gid, 0, sizeof(gid));
    if (real->query_device(dev, &dattr) == 0) {
        ports = dattr.phys_port_cnt;
    }
    for (p = 1; (p <= ports) && (p <= SRQ_VERBS_TRACE_MAX_PORTS); ++p) {
        if (real->query_port(dev, p, &pattr) == 0) {
            lid[p] = pattr.lid;
        }
        if (real->port_addr(dev, p, &addr) == 0) {
            memcpy(gid[p].raw, addr.gid, sizeof(gid[p].raw));
        }
    }
    memset(&device, 0, sizeof(device));
    snprintf(device.name, sizeof(device.name), "%s", dev->name);
    srq_verbs_trace_begin(&t);
    srq_verbs_trace_in_ibv_open_device(&t.b, &device);
    srq_verbs_trace_add_context(dev->context, &t.b, ports, lid, gid);
    srq_verbs_trace_end(&t);
}

void srq_verbs_trace_attach(srq_verbs_dev_t *dev)
{
    struct ibv_context *ctx = dev->context;
    srq_verbs_trace_dev_t *t;

    if ((getenv(SRQ_VERBS_TRACE_ENV) == NULL) || (dev->ops == &srq_verbs_trace_ops)) {
        return; /* the common case: not a single thing changes */
    }
    if ((dev->kind == SRQ_VERBS_DEV_RDMA) && (ctx->device != NULL) &&
        !strcmp(ctx->device->dev_name, SRQ_VERBS_TRACE_SERVED_NODE)) {
        return;
    }
    if (!srq_verbs_trace_enabled()) {
        return;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return;
    }
    t->dev  = dev;
    t->real = dev->ops;
    t->ctx  = ctx;
    t->data = ctx->ops;
    pthread_rwlock_wrlock(&srq_verbs_trace_devs_lock);
    t->next              = srq_verbs_trace_devs;
    srq_verbs_trace_devs = t;
    pthread_rwlock_unlock(&srq_verbs_trace_devs_lock);

    srq_verbs_trace_open_line(dev, t->real);
    dev->ops = &srq_verbs_trace_ops;
    ctx->ops.post_send     = srq_verbs_trace_post_send;
    ctx->ops.post_recv     = srq_verbs_trace_post_recv;
    ctx->ops.post_srq_recv = srq_verbs_trace_post_srq_recv;
    ctx->ops.poll_cq       = srq_verbs_trace_poll_cq;
    ctx->ops.req_notify_cq = srq_verbs_trace_req_notify_cq;
}
