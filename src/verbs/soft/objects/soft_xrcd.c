/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: XRC domains and XRC SRQs.
 *
 * An XRC domain groups XRC SRQs and XRC target QPs: a message that arrives
 * at a target QP names an SRQ by number, and is taken only by an SRQ of
 * the target's domain. ibv_open_xrcd with a file's descriptor makes the
 * domains opened on one inode one domain; the table of those domains is
 * this process's. soft0 has no shared table of them (a target QP and its
 * SRQs are one context's objects: packets reach the context that owns
 * the QP), so a domain cannot be shared between processes: the process
 * that has one on an inode holds an exclusive flock on the file, and
 * another process's open of it is refused (EOPNOTSUPP) rather than
 * given a second domain that silently is not the first. XRC SRQs are made in soft_srq_ex.c; here, how a target finds
 * one by number.
 */
#include "soft_xrcd.h"
#include "../srq_soft_api.h"
#include "soft_dev.h"
#include "soft_pd.h"
#include "soft_srq.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRQ_SOFT_XRCD_MASK (IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)

/* A domain: opened by @opens handles; on an inode, or private */
struct srq_soft_xdom {
    srq_soft_xdom_t *next;
    bool             on_inode;
    int              lock_fd;  /* on_inode: our own open of the file,
                                  holding the flock, or -1 */
    dev_t            st_dev;
    ino_t            st_ino;
    int              opens;
};

static pthread_mutex_t  srq_soft_xdom_lock = PTHREAD_MUTEX_INITIALIZER;
static srq_soft_xdom_t *srq_soft_xdoms;    /* those on an inode */

static srq_soft_xdom_t *srq_soft_xdom_find(const struct stat *st)
{
    srq_soft_xdom_t *d;

    for (d = srq_soft_xdoms; d != NULL; d = d->next) {
        if ((d->st_dev == st->st_dev) && (d->st_ino == st->st_ino)) {
            return d;
        }
    }
    return NULL;
}

/* This process takes the inode of @fd for its domain: an exclusive flock
 * on an open of the file of our own (the program may close @fd), which
 * another process that has a domain on it holds already (EOPNOTSUPP). A
 * file that takes no flock is not checked */
static int srq_soft_xdom_flock(srq_soft_xdom_t *d, int fd)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    d->lock_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (d->lock_fd < 0) {
        d->lock_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    }
    if ((d->lock_fd >= 0) && (flock(d->lock_fd, LOCK_EX | LOCK_NB) != 0) &&
        (errno == EWOULDBLOCK)) {
        close(d->lock_fd);
        d->lock_fd = -1;
        return EOPNOTSUPP; /* another process's domain */
    }
    return 0;
}

/* The domain @attr asks for, one more open of it: 0 or an errno value
 * (man ibv_open_xrcd: O_CREAT makes one if there is none, with O_EXCL
 * only then; fd -1: a new private domain, O_CREAT required) */
static int srq_soft_xdom_open(const struct ibv_xrcd_init_attr *attr,
                              srq_soft_xdom_t **dom_p)
{
    srq_soft_xdom_t *d = NULL;
    struct stat st;
    int ret = 0;

    if ((attr->fd != -1) && (fstat(attr->fd, &st) != 0)) {
        return EBADF;
    }
    if ((attr->fd == -1) && !(attr->oflags & O_CREAT)) {
        return EINVAL;
    }
    pthread_mutex_lock(&srq_soft_xdom_lock);
    if (attr->fd != -1) {
        d = srq_soft_xdom_find(&st);
    }
    if ((d != NULL) && (attr->oflags & O_CREAT) && (attr->oflags & O_EXCL)) {
        ret = EEXIST;
    } else if ((d == NULL) && !(attr->oflags & O_CREAT)) {
        ret = EINVAL; /* none on the inode, and not to be made */
    } else if (d == NULL) {
        d = calloc(1, sizeof(*d));
        ret = (d == NULL) ? ENOMEM :
              (attr->fd != -1) ? srq_soft_xdom_flock(d, attr->fd) : 0;
        if (ret != 0) {
            free(d);
        } else if (attr->fd != -1) {
            d->on_inode = true;
            d->st_dev   = st.st_dev;
            d->st_ino   = st.st_ino;
            d->next     = srq_soft_xdoms;
            srq_soft_xdoms = d;
        }
    }
    if (ret == 0) {
        ++d->opens;
        *dom_p = d;
    }
    pthread_mutex_unlock(&srq_soft_xdom_lock);
    return ret;
}

static void srq_soft_xdom_close(srq_soft_xdom_t *dom)
{
    srq_soft_xdom_t **p;

    pthread_mutex_lock(&srq_soft_xdom_lock);
    if (--dom->opens == 0) {
        for (p = &srq_soft_xdoms; *p != NULL; p = &(*p)->next) {
            if (*p == dom) {
                *p = dom->next;
                break;
            }
        }
        if (dom->on_inode && (dom->lock_fd >= 0)) {
            close(dom->lock_fd); /* the flock goes with it */
        }
        free(dom);
    }
    pthread_mutex_unlock(&srq_soft_xdom_lock);
}

struct ibv_xrcd *srq_soft_open_xrcd(srq_verbs_dev_t *vdev,
                                    struct ibv_xrcd_init_attr *attr)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_xrcd_t *x;
    int ret;

    /* both fields are needed, as the kernel's command needs them */
    if ((attr == NULL) || (attr->comp_mask & ~SRQ_SOFT_XRCD_MASK) ||
        ((attr->comp_mask & SRQ_SOFT_XRCD_MASK) != SRQ_SOFT_XRCD_MASK) ||
        (attr->oflags & ~(O_CREAT | O_EXCL))) {
        errno = EINVAL;
        return NULL;
    }
    x = calloc(1, sizeof(*x));
    if (x == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ret = srq_soft_xdom_open(attr, &x->dom);
    if (ret != 0) {
        free(x);
        errno = ret;
        return NULL;
    }
    x->dev              = dev;
    x->ibv.context      = &dev->vctx.context;
    x->handle           = srq_soft_handle(dev, x);
    return &x->ibv;
}

bool srq_soft_xrcd_valid(srq_soft_dev_t *dev, struct ibv_xrcd *ibx)
{
    return (ibx != NULL) && srq_soft_owns(dev, ibx->context) &&
           (srq_soft_xrcd(ibx)->handle == srq_soft_handle(dev, ibx));
}

int srq_soft_close_xrcd(srq_verbs_dev_t *vdev, struct ibv_xrcd *ibx)
{
    srq_soft_dev_t *dev = srq_soft_dev(vdev);
    srq_soft_xrcd_t *x;

    if (!srq_soft_xrcd_valid(dev, ibx)) {
        return ENOENT;
    }
    x = srq_soft_xrcd(ibx);
    srq_soft_dev_lock(dev);
    if (x->users > 0) {
        srq_soft_dev_unlock(dev);
        return EBUSY;
    }
    x->handle = 0; /* a second close finds it gone */
    srq_soft_dev_unlock(dev);
    srq_soft_xdom_close(x->dom);
    free(x);
    return 0;
}

bool srq_soft_xrc_same_domain(const srq_soft_srq_t *srq,
                              const struct ibv_xrcd *ibx)
{
    return (srq->xrcd != NULL) && (ibx != NULL) &&
           (srq_soft_xrcd((struct ibv_xrcd*)srq->xrcd)->dom ==
            srq_soft_xrcd((struct ibv_xrcd*)ibx)->dom);
}

/* ---- XRC SRQs --------------------------------------------------------- */

srq_soft_srq_t *srq_soft_xrc_srq_lookup(srq_soft_dev_t *dev, uint32_t srqn)
{
    return ((dev->xrc_srqs == NULL) || (srqn == 0) ||
            (srqn >= SRQ_SOFT_MAX_SRQ)) ? NULL : dev->xrc_srqs[srqn];
}
