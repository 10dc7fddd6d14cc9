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
#define _GNU_SOURCE
#include "soft_lid.h"
#include "soft_proc.h"
#include "soft_report.h"
#include "soft_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

typedef struct srq_soft_lid_ent {
    uint64_t  owner;                        /* atomic: 0 or a process id */
    uint32_t  ready;                        /* atomic: instance is valid */
    uint8_t   instance[SRQ_SOFT_INST_LEN];   /* the port's id */
} srq_soft_lid_ent_t;

#define SRQ_SOFT_LID_TABLE_SIZE  (SRQ_SOFT_LID_MAX * sizeof(srq_soft_lid_ent_t))

/*
 * A new file @name of @size bytes in @dfd, its pages reserved before it
 * has a name: a full /dev/shm (ENOSPC) leaves no empty file behind for
 * the next opener to trip over, and nobody ever maps a file shorter than
 * its table. The descriptor, or -errno; -EEXIST when another process
 * linked its own first (then that one is used).
 */
static int srq_soft_lid_create(int dfd, const char *name, size_t size)
{
    char path[64];
    int fd, ret;

    fd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        return -errno;
    }
    ret = posix_fallocate(fd, 0, size);
    /* linkat(AT_EMPTY_PATH) would need CAP_DAC_READ_SEARCH */
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    if ((ret == 0) &&
        (linkat(AT_FDCWD, path, dfd, name, AT_SYMLINK_FOLLOW) != 0)) {
        ret = errno;
    }
    if (ret != 0) {
        close(fd);
        return -ret;
    }
    return fd;
}

/* The file @name in @dfd, made if absent: the descriptor or -errno */
static int srq_soft_lid_open_file(int dfd, const char *name, size_t size)
{
    const int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int fd, ret;

    fd = openat(dfd, name, flags);
    if ((fd < 0) && (errno == ENOENT)) {
        fd = srq_soft_lid_create(dfd, name, size);
        if (fd == -EEXIST) {
            fd = openat(dfd, name, flags);
        } else if (fd < 0) {
            return fd;
        }
    }
    if (fd < 0) {
        return -errno;
    }
    ret = srq_soft_lid_check_own(fd, S_IFREG);
    /* a file made before its pages were reserved first (an older
     * version): every opener reserves the same size, a race is benign */
    if (ret == 0) {
        ret = posix_fallocate(fd, 0, size);
    }
    if (ret != 0) {
        close(fd);
        return -ret;
    }
    return fd;
}

/* The bytes free in the file system of @path, for a message */
static unsigned long long srq_soft_lid_free(const char *path)
{
    struct statvfs st;

    return (statvfs(path, &st) == 0) ?
           (unsigned long long)st.f_bavail * st.f_frsize : 0;
}

/* Where directory @dfd is, for a message: the user's plain one when it
 * could not be opened */
static void srq_soft_lid_dir_path(int dfd, char *buf, size_t len)
{
    char link[64];
    ssize_t n = -1;

    if (dfd >= 0) {
        snprintf(link, sizeof(link), "/proc/self/fd/%d", dfd);
        n = readlink(link, buf, len - 1);
    }
    if (n <= 0) {
        snprintf(buf, len, SRQ_SOFT_LID_DIR_FMT, (unsigned)getuid());
    } else {
        buf[n] = '\0';
    }
}

int srq_soft_lid_map_file(const char *kind, size_t size, void **tab_p)
{
    char name[32], dir[128];
    uint32_t domain;
    void *tab;
    int dfd, fd, ret;

    ret = srq_soft_domain_id(&domain);
    if (ret != 0) {
        srq_soft_report(ret, "reading /proc/sys/kernel/random/boot_id");
        return ret;
    }
    snprintf(name, sizeof(name), "%s-%08x", kind, domain);
    dfd = srq_soft_lid_dir();
    fd  = (dfd < 0) ? dfd : srq_soft_lid_open_file(dfd, name, size);
    srq_soft_lid_dir_path(dfd, dir, sizeof(dir));
    if (dfd >= 0) {
        close(dfd);
    }
    if ((fd < 0) && (fd == -ENOSPC)) {
        srq_soft_report(-fd, "making %s/%s (%zu bytes, %llu free there)", dir,
                        name, size, srq_soft_lid_free(dir));
    } else if (fd < 0) {
        srq_soft_report(-fd, "making %s/%s (%zu bytes)", dir, name, size);
    }
    if (fd < 0) {
        return -fd;
    }
    tab = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (tab == MAP_FAILED) {
        ret = errno;
        srq_soft_report(ret, "mapping %s/%s (%zu bytes)", dir, name, size);
    } else {
        *tab_p = tab;
    }
    close(fd);
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
