/*
 * ucx-srq soft device: the host's LID registry - which instance has which
 * LID, so that LID-addressed peers (an AH or a QP without a GRH) reach it.
 */
#ifndef SRQ_SOFT_LID_H_
#define SRQ_SOFT_LID_H_

#include <stdint.h>

typedef struct srq_soft_dev srq_soft_dev_t;

/* Unicast LIDs an instance may get: 1 .. SRQ_SOFT_LID_MAX */
#define SRQ_SOFT_LID_MAX  0xbfffu

/* The user's directory of registries (printf format, the uid) */
#define SRQ_SOFT_LID_DIR_FMT  "/dev/shm/srq-%u"

/* Give @dev a LID no live instance of its domain holds (dev->lid) */
int  srq_soft_lid_claim(srq_soft_dev_t *dev);
/* Give it back (nothing if it has none) */
void srq_soft_lid_release(srq_soft_dev_t *dev);
/* The instance holding @lid: 0, or ENOENT when no live instance does */
int  srq_soft_lid_lookup(srq_soft_dev_t *dev, uint16_t lid, uint8_t *instance);

#endif
