/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the user's directory that the LID registry
 * (soft_lid.h) and the QP number table live in (soft_lid_dir.c).
 */
#ifndef SRQ_SOFT_LID_DIR_H_
#define SRQ_SOFT_LID_DIR_H_

#include <stdint.h>
#include <sys/types.h>

/* The user's directory of registries: in SRQ_SOFT_LID_SHM, named
 * SRQ_SOFT_LID_DIR_NAME (printf format, the uid); SRQ_SOFT_LID_DIR_FMT is
 * its path. When another user holds that name: the same, "-<token>" */
#define SRQ_SOFT_LID_SHM       "/dev/shm"
#define SRQ_SOFT_LID_DIR_NAME  "srq-%u"
#define SRQ_SOFT_LID_DIR_FMT   SRQ_SOFT_LID_SHM "/" SRQ_SOFT_LID_DIR_NAME

/* The user's directory, opened (or -errno), and the check of a
 * descriptor: a @type (S_IFDIR, S_IFREG) of ours nobody else can write
 * (0 or errno) */
int  srq_soft_lid_dir(void);
int  srq_soft_lid_check_own(int fd, mode_t type);

#endif
