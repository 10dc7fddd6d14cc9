/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the host's LID registry.
 *
 * On a fabric the subnet manager gives every port a LID; here each port
 * (a process's, soft_port.c) takes one from a table in shared memory, one per user and sharing domain
 * ("/dev/shm/srq-<uid>/lid-<domain>": a file 0600 in a directory 0700 that
 * only the user owns, soft_lid_dir.c). An entry is free (owner 0) or names
 * its holder's process (srq_soft_proc_id), so an entry whose holder died
 * is taken over, as a dead producer's lock is. The holder writes its
 * port id, then sets ready (release); a reader that sees ready (acquire)
 * reads a whole port id.
 */
#include "soft_lid.h"
#include "soft_shm.h"
#include "soft_proc.h"
#include "soft_report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct srq_soft_lid_ent {
    uint64_t  owner;                        /* atomic: 0 or a process id */
    uint32_t  ready;                        /* atomic: instance is valid */
    uint8_t   instance[SRQ_SOFT_INST_LEN];   /* the port's id */
} srq_soft_lid_ent_t;

#define SRQ_SOFT_LID_TABLE_SIZE  (SRQ_SOFT_LID_MAX * sizeof(srq_soft_lid_ent_t))

int srq_soft_lid_map_file(const char *kind, size_t size, void **tab_p)
{
    char name[32];
    uint32_t domain;
    void *tab;
    int dfd, fd, ret;

    ret = srq_soft_domain_id(&domain);
    if (ret != 0) {
        srq_soft_report(ret, "reading /proc/sys/kernel/random/boot_id");
        return ret;
    }
    dfd = srq_soft_lid_dir();
    if (dfd < 0) {
        return -dfd;
    }
    snprintf(name, sizeof(name), "%s-%08x", kind, domain);
    fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
                           O_CLOEXEC, 0600);
    ret = (fd < 0) ? errno : srq_soft_lid_check_own(fd, S_IFREG);
    close(dfd);
    /* every opener reserves the same size: a race of two is benign */
    if (ret == 0) {
        ret = posix_fallocate(fd, 0, size);
    }
    if (ret == 0) {
        tab = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (tab == MAP_FAILED) {
            ret = errno;
        } else {
            *tab_p = tab;
        }
    }
    if (fd >= 0) {
        close(fd);
    }
    return ret;
}

int srq_soft_lid_map(void **tab_p, size_t *size_p)
{
    *size_p = SRQ_SOFT_LID_TABLE_SIZE;
    return srq_soft_lid_map_file("lid", SRQ_SOFT_LID_TABLE_SIZE, tab_p);
}

static srq_soft_lid_ent_t *srq_soft_lid_ent(const void *tab, uint32_t idx)
{
    return &((srq_soft_lid_ent_t*)tab)[idx];
}

/* Take entry @idx for @id if it is free or its holder is dead */
static int srq_soft_lid_take(void *tab, uint32_t idx, uint64_t me,
                             const uint8_t *id)
{
    srq_soft_lid_ent_t *e = srq_soft_lid_ent(tab, idx);
    _Atomic uint64_t *owner = (_Atomic uint64_t*)&e->owner;
    uint64_t cur = atomic_load(owner);

    if ((cur != 0) && !srq_soft_proc_id_dead(cur)) {
        return 0;
    }
    if (!atomic_compare_exchange_strong(owner, &cur, me)) {
        return 0;
    }
    atomic_store_explicit((_Atomic uint32_t*)&e->ready, 0,
                          memory_order_relaxed);
    memcpy(e->instance, id, SRQ_SOFT_INST_LEN);
    atomic_store_explicit((_Atomic uint32_t*)&e->ready, 1,
                          memory_order_release);
    return 1;
}

int srq_soft_lid_claim(void *tab, uint64_t owner, pid_t pid,
                       const uint8_t *id, uint16_t *lid_p)
{
    uint32_t start, i, idx;

    /* start where the pid points: the processes of one job spread out */
    start = ((uint32_t)pid * 2654435761u) % SRQ_SOFT_LID_MAX;
    for (i = 0; i < SRQ_SOFT_LID_MAX; ++i) {
        idx = (start + i) % SRQ_SOFT_LID_MAX;
        if (srq_soft_lid_take(tab, idx, owner, id)) {
            *lid_p = (uint16_t)(idx + 1);
            return 0;
        }
    }
    return ENOSPC;
}

void srq_soft_lid_release(void *tab, uint16_t lid)
{
    srq_soft_lid_ent_t *e = srq_soft_lid_ent(tab, lid - 1u);

    atomic_store((_Atomic uint32_t*)&e->ready, 0);
    atomic_store((_Atomic uint64_t*)&e->owner, 0);
}

int srq_soft_lid_lookup(const void *tab, uint16_t lid, uint8_t *id)
{
    srq_soft_lid_ent_t *e;
    uint64_t owner;

    if ((lid == 0) || (lid > SRQ_SOFT_LID_MAX) || (tab == NULL)) {
        return ENOENT;
    }
    e     = srq_soft_lid_ent(tab, lid - 1u);
    owner = atomic_load((_Atomic uint64_t*)&e->owner);
    if ((owner == 0) ||
        !atomic_load_explicit((_Atomic uint32_t*)&e->ready,
                              memory_order_acquire)) {
        return ENOENT;
    }
    memcpy(id, e->instance, SRQ_SOFT_INST_LEN);
    /* taken over while we copied: the id may be torn */
    return (atomic_load((_Atomic uint64_t*)&e->owner) == owner) ? 0 : ENOENT;
}
