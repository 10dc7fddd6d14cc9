/*
 * ucx-srq soft device: the host's LID registry - which instance has which
 * LID, so that LID-addressed peers (an AH or a QP without a GRH) reach it.
 */
#ifndef SRQ_SOFT_LID_H_
#define SRQ_SOFT_LID_H_

#include <stdint.h>
#include <sys/types.h>

typedef struct srq_soft_dev srq_soft_dev_t;

/* Unicast LIDs an instance may get: 1 .. SRQ_SOFT_LID_MAX */
#define SRQ_SOFT_LID_MAX  0xbfffu

/* The user's directory of registries: in SRQ_SOFT_LID_SHM, named
 * SRQ_SOFT_LID_DIR_NAME (printf format, the uid); SRQ_SOFT_LID_DIR_FMT is
 * its path. When another user holds that name: the same, "-<token>" */
#define SRQ_SOFT_LID_SHM       "/dev/shm"
#define SRQ_SOFT_LID_DIR_NAME  "srq-%u"
#define SRQ_SOFT_LID_DIR_FMT   SRQ_SOFT_LID_SHM "/" SRQ_SOFT_LID_DIR_NAME

/* Give @dev a LID no live instance of its domain holds (dev->lid) */
int  srq_soft_lid_claim(srq_soft_dev_t *dev);
/* Give it back (nothing if it has none) */
void srq_soft_lid_release(srq_soft_dev_t *dev);
/* The instance holding @lid: 0, or ENOENT when no live instance does */
int  srq_soft_lid_lookup(srq_soft_dev_t *dev, uint16_t lid, uint8_t *instance);

/* soft_lid_dir.c: the user's directory, opened (or -errno), and the check
 * of a descriptor: a @type (S_IFDIR, S_IFREG) of ours nobody else can
 * write (0 or errno) */
int  srq_soft_lid_dir(void);
int  srq_soft_lid_check_own(int fd, mode_t type);

#endif
