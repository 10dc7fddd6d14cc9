/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the port of a process (soft_port.h). One record per
 * process, under a mutex (opening and closing are the slow path): how
 * many instances hold it, its id, its LID and the LID registry it holds
 * the LID in. A child forked while its parent held the port starts its
 * own: the inherited record is its parent's.
 */
#include "soft_port.h"
#include "../fabric/soft_lid.h"
#include "../fabric/soft_proc.h"
#include "soft_dev.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

typedef struct srq_soft_port {
    pid_t     pid;        /* whose record this is (0: none yet) */
    uint16_t  tag;        /* drawn once per process */
    uint16_t  serial;     /* the last instance serial handed out */
    unsigned  refcnt;     /* instances holding the port */
    uint8_t   id[SRQ_SOFT_INST_LEN];
    uint16_t  lid;
    void     *lid_tab;    /* the LID registry, mapped while held */
    size_t    lid_tab_size;
} srq_soft_port_t;

static pthread_mutex_t srq_soft_port_lock = PTHREAD_MUTEX_INITIALIZER;
static srq_soft_port_t srq_soft_port;

/* A record of this process (a parent's inherited one is forgotten: its
 * LID and mapping are the parent's business) */
static int srq_soft_port_own(srq_soft_port_t *port, pid_t pid)
{
    uint32_t domain;
    int ret;

    if (port->pid == pid) {
        return 0;
    }
    ret = srq_soft_domain_id(&domain);
    if (ret != 0) {
        return ret;
    }
    memset(port, 0, sizeof(*port));
    do {
        if (getrandom(&port->tag, sizeof(port->tag), 0) < 0) {
            return errno;
        }
    } while (port->tag == 0);
    port->pid = pid;
    /* domain first: it is the GID's subnet prefix (SRQ_SOFT_ADDR_MAGIC) */
    memcpy(port->id, &domain, sizeof(domain));
    memcpy(port->id + sizeof(domain), &pid, sizeof(pid));
    memcpy(port->id + sizeof(domain) + sizeof(pid), &port->tag,
           sizeof(port->tag));
    return 0;
}

/* The first holder maps the registry and takes a LID */
static int srq_soft_port_claim(srq_soft_port_t *port, srq_soft_dev_t *dev)
{
    int ret;

    ret = srq_soft_lid_map(&port->lid_tab, &port->lid_tab_size);
    if (ret != 0) {
        return ret;
    }
    ret = srq_soft_lid_claim(port->lid_tab, dev->fab.lock_id, dev->fab.pid,
                             port->id, &port->lid);
    if (ret != 0) {
        munmap(port->lid_tab, port->lid_tab_size);
        port->lid_tab = NULL;
    }
    return ret;
}

/* The next serial: never 0 (the port's own id), and with 65535 in use
 * in a process the same one comes back only after all the others */
static uint16_t srq_soft_port_serial(srq_soft_port_t *port)
{
    if (++port->serial == 0) {
        port->serial = 1;
    }
    return port->serial;
}

int srq_soft_port_join(srq_soft_dev_t *dev)
{
    srq_soft_port_t *port = &srq_soft_port;
    uint16_t serial;
    int ret;

    pthread_mutex_lock(&srq_soft_port_lock);
    ret = srq_soft_port_own(port, dev->fab.pid);
    if ((ret == 0) && (port->refcnt == 0)) {
        ret = srq_soft_port_claim(port, dev);
    }
    if (ret == 0) {
        ++port->refcnt;
        serial = srq_soft_port_serial(port);
        memcpy(dev->fab.instance, port->id, SRQ_SOFT_INST_LEN);
        memcpy(dev->fab.instance + SRQ_SOFT_PORT_SERIAL_OFF, &serial,
               sizeof(serial));
        memcpy(dev->port_id, port->id, SRQ_SOFT_INST_LEN);
        dev->lid         = port->lid;
        dev->port_joined = true;
    }
    pthread_mutex_unlock(&srq_soft_port_lock);
    return ret;
}

void srq_soft_port_leave(srq_soft_dev_t *dev)
{
    srq_soft_port_t *port = &srq_soft_port;

    if (!dev->port_joined) {
        return;
    }
    dev->port_joined = false;
    pthread_mutex_lock(&srq_soft_port_lock);
    if ((port->pid == getpid()) && (--port->refcnt == 0)) {
        srq_soft_lid_release(port->lid_tab, port->lid);
        munmap(port->lid_tab, port->lid_tab_size);
        port->lid_tab = NULL;
        port->lid     = 0;
    }
    pthread_mutex_unlock(&srq_soft_port_lock);
}

int srq_soft_port_by_lid(uint16_t lid, uint8_t *id)
{
    srq_soft_port_t *port = &srq_soft_port;
    int ret;

    pthread_mutex_lock(&srq_soft_port_lock);
    ret = ((port->pid == getpid()) && (port->lid_tab != NULL)) ?
          srq_soft_lid_lookup(port->lid_tab, lid, id) : ENOENT;
    pthread_mutex_unlock(&srq_soft_port_lock);
    return ret;
}
