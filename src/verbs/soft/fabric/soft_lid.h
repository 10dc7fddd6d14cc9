/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the host's LID registry - which port (soft_port.h)
 * has which LID, so that LID-addressed peers (an AH or a QP without a GRH)
 * reach it - and the user's directory it lives in, which the QP number
 * table (soft_qpn.c) shares.
 */
#ifndef SRQ_SOFT_LID_H_
#define SRQ_SOFT_LID_H_

#include "soft_lid_dir.h"

#include <stdint.h>
#include <sys/types.h>

/* Unicast LIDs an instance may get: 1 .. SRQ_SOFT_LID_MAX */
#define SRQ_SOFT_LID_MAX  0xbfffu

/* The registry of our sharing domain, mapped (its size in *size_p) */
int  srq_soft_lid_map(void **tab_p, size_t *size_p);
/* In registry @tab, give port @id of process @owner (srq_soft_proc_id,
 * pid @pid) a LID no live port holds, in *lid_p: 0 or ENOSPC */
int  srq_soft_lid_claim(void *tab, uint64_t owner, pid_t pid,
                        const uint8_t *id, uint16_t *lid_p);
/* Give @lid back */
void srq_soft_lid_release(void *tab, uint16_t lid);
/* The port holding @lid, its id in @id: 0, or ENOENT when no live port
 * does */
int  srq_soft_lid_lookup(const void *tab, uint16_t lid, uint8_t *id);

/* The file "<kind>-<domain>" of @size bytes in the user's directory,
 * created if absent, its pages reserved (a full /dev/shm is ENOSPC here,
 * not SIGBUS later), mapped shared read-write in *tab_p: 0 or errno */
int  srq_soft_lid_map_file(const char *kind, size_t size, void **tab_p);

#endif
