/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the port of a process. As every context of an HCA
 * shares its port, every instance of a process shares one LID and one GID
 * (the port id), made by the first instance that opens and kept while any
 * is open. Which instance a packet to the port goes to is said by the QP
 * number it names (soft_qpn.c, unique on the host).
 *
 * Ids are 12 bytes: domain (4) | pid (4) | tag (2) | serial (2). The tag
 * is drawn once per process, so that a reused pid gives another port; an
 * instance's serial is never 0, the port's own id is the instance's with
 * serial 0: the port of any instance is known from its id alone.
 */
#ifndef SRQ_SOFT_PORT_H_
#define SRQ_SOFT_PORT_H_

#include "../fabric/soft_shm.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct srq_soft_dev srq_soft_dev_t;

#define SRQ_SOFT_PORT_SERIAL_OFF  10  /* where an id's serial is */

/* Give @dev its instance id and its port (dev->fab.instance, dev->port_id,
 * dev->lid): the process's, made now if @dev is the first. 0 or errno */
int  srq_soft_port_join(srq_soft_dev_t *dev);
/* @dev's share of the port back (nothing when it has none, or when the
 * port is a parent's, inherited through fork) */
void srq_soft_port_leave(srq_soft_dev_t *dev);
/* The port holding @lid, its id in @id: 0, or ENOENT */
int  srq_soft_port_by_lid(uint16_t lid, uint8_t *id);

/* Is @id a port's id (not an instance's)? */
static inline bool srq_soft_port_is_port(const uint8_t *id)
{
    return (id[SRQ_SOFT_PORT_SERIAL_OFF] == 0) &&
           (id[SRQ_SOFT_PORT_SERIAL_OFF + 1] == 0);
}

/* The id of the port of instance @inst, in @id */
static inline void srq_soft_port_of(const uint8_t *inst, uint8_t *id)
{
    memcpy(id, inst, SRQ_SOFT_PORT_SERIAL_OFF);
    memset(id + SRQ_SOFT_PORT_SERIAL_OFF, 0,
           SRQ_SOFT_INST_LEN - SRQ_SOFT_PORT_SERIAL_OFF);
}

/* Is instance @inst one of port @id's? */
static inline bool srq_soft_port_has(const uint8_t *id, const uint8_t *inst)
{
    return memcmp(id, inst, SRQ_SOFT_PORT_SERIAL_OFF) == 0;
}

#endif
