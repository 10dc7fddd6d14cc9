/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: an instance's shared memory (soft_shm.h): create
 * ours, map a peer's. Both files are memfds: nothing of an instance
 * outlives the processes that use it, and nobody has to clean up after a
 * process that died. A peer is found through /proc/<pid>/fd of its owner
 * (the pid is part of the instance id) and checked there: the file must
 * be ours (uid), carry the instance's name, and its header must name the
 * same instance; the queue and the wake pipe must be the very files the
 * header records (device and inode), so that a descriptor number reused by
 * an unrelated file is never written to.
 */
#define _GNU_SOURCE
#include "soft_shm.h"
#include "soft_fab.h"
#include "soft_proc.h"
#include "soft_report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  /* Linux 5.1 */
#endif

/* "<prefix><instance in hex>" */
static void srq_soft_shm_name(const char *prefix, const uint8_t *instance,
                              char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s", prefix);
    int i;

    for (i = 0; (i < SRQ_SOFT_INST_LEN) && (n + 2 < (int)len); ++i) {
        n += snprintf(buf + n, len - n, "%02x", instance[i]);
    }
}

static void *srq_soft_shm_map(int fd, size_t size, int prot)
{
    void *p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);

    return (p == MAP_FAILED) ? NULL : p;
}

static void srq_soft_seg_tables(srq_soft_seg_t *seg, void *base)
{
    seg->tab = base;
    seg->mrs = (srq_soft_mr_ent_t*)((uint8_t*)base + SRQ_SOFT_TAB_MR_OFF);
    seg->qps = (srq_soft_qp_ent_t*)((uint8_t*)base + SRQ_SOFT_TAB_QP_OFF);
    seg->mws = (srq_soft_mw_ent_t*)((uint8_t*)base + SRQ_SOFT_TAB_MW_OFF);
}

static void srq_soft_seg_queue(srq_soft_seg_t *seg, void *base)
{
    seg->hdr  = base;
    seg->ring = (uint8_t*)base + SRQ_SOFT_SHM_RING_OFF;
}

/* ---- our own ----------------------------------------------------------- */

/* A memfd of @size, owner-only, that can be neither shrunk nor grown (a
 * peer must not make our mapping fault); mapped read-write in *base_p.
 * Its pages are not reserved up front (the tables are mostly holes): a
 * memfd lives on the kernel's internal tmpfs, which has no size limit, so
 * a full /dev/shm cannot make a first touch raise SIGBUS as it could for
 * the registry (soft_lid.c); memory itself running out is the OOM
 * killer's, as for any page */
static int srq_soft_shm_memfd(const char *name, size_t size, void **base_p)
{
    int fd, ret;

    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return -errno;
    }
    if ((fchmod(fd, 0600) < 0) || (ftruncate(fd, size) < 0) ||
        (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)) {
        ret = errno;
        close(fd);
        return -ret;
    }
    *base_p = srq_soft_shm_map(fd, size, PROT_READ | PROT_WRITE);
    if (*base_p == NULL) {
        ret = errno;
        close(fd);
        return -ret;
    }
    return fd;
}

static void srq_soft_shm_file_id(int fd, uint64_t *dev_p, uint64_t *ino_p)
{
    struct stat st;

    if (fstat(fd, &st) == 0) {
        *dev_p = st.st_dev;
        *ino_p = st.st_ino;
    }
}

static void srq_soft_init_tab(srq_soft_fab_t *fab, srq_soft_tab_hdr_t *tab)
{
    tab->version     = SRQ_SOFT_SHM_VERSION;
    tab->hdr_size    = sizeof(*tab);
    tab->tab_size    = SRQ_SOFT_TAB_SIZE;
    tab->mr_off      = SRQ_SOFT_TAB_MR_OFF;
    tab->qp_off      = SRQ_SOFT_TAB_QP_OFF;
    tab->mr_cnt      = SRQ_SOFT_MR_TABLE_SIZE;
    tab->qp_cnt      = SRQ_SOFT_QP_TABLE_SIZE;
    tab->queue_size  = SRQ_SOFT_SHM_SIZE;
    tab->owner_uid   = getuid();
    tab->owner_pid   = fab->pid;
    tab->owner_start = fab->start_time;
    memcpy(tab->instance, fab->instance, SRQ_SOFT_INST_LEN);
    tab->queue_fd    = fab->queue_fd;
    tab->wake_fd     = fab->pipe_wfd;
    srq_soft_shm_file_id(fab->queue_fd, &tab->queue_dev, &tab->queue_ino);
    srq_soft_shm_file_id(fab->pipe_wfd, &tab->wake_dev, &tab->wake_ino);
    atomic_store_explicit((_Atomic uint32_t*)&tab->state, SRQ_SOFT_SEG_ACTIVE,
                          memory_order_relaxed);
}

int srq_soft_shm_create(srq_soft_fab_t *fab)
{
    char name[64];
    void *base;
    int fd;

    srq_soft_shm_name(SRQ_SOFT_SHM_Q_PREFIX, fab->instance, name,
                      sizeof(name));
    fd = srq_soft_shm_memfd(name, SRQ_SOFT_SHM_SIZE, &base);
    if (fd < 0) {
        srq_soft_report(-fd, "making its queue (%zu bytes)",
                        (size_t)SRQ_SOFT_SHM_SIZE);
        return -fd;
    }
    fab->queue_fd = fd;
    srq_soft_seg_queue(&fab->seg, base);
    memcpy(fab->seg.hdr->instance, fab->instance, SRQ_SOFT_INST_LEN);
    atomic_store_explicit((_Atomic uint64_t*)&fab->seg.hdr->magic,
                          SRQ_SOFT_SHM_MAGIC, memory_order_release);

    srq_soft_shm_name(SRQ_SOFT_SHM_PREFIX, fab->instance, name, sizeof(name));
    fd = srq_soft_shm_memfd(name, SRQ_SOFT_TAB_SIZE, &base);
    if (fd < 0) {
        srq_soft_report(-fd, "making its tables (%zu bytes)",
                        (size_t)SRQ_SOFT_TAB_SIZE);
        return -fd; /* the queue goes in srq_soft_shm_destroy */
    }
    fab->tab_fd = fd;
    srq_soft_seg_tables(&fab->seg, base);
    fab->seg.own = true;
    /* from now on nobody maps the tables writable, we keep our mapping.
     * A kernel older than 5.1 refuses the seal: peers still map them
     * read-only, as they open them for reading only */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0) {
        fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL);
    }
    srq_soft_init_tab(fab, fab->seg.tab);
    /* peers check magic last: everything above is visible before it */
    atomic_store_explicit((_Atomic uint64_t*)&fab->seg.tab->magic,
                          SRQ_SOFT_SHM_MAGIC, memory_order_release);
    return 0;
}

void srq_soft_shm_destroy(srq_soft_fab_t *fab)
{
    /* peers that still map it see the state and stop using it; a forked
     * child closing an inherited device must not close the parent's */
    if ((fab->seg.tab != NULL) && (fab->seg.tab->owner_pid == getpid())) {
        atomic_store_explicit((_Atomic uint32_t*)&fab->seg.tab->state,
                              SRQ_SOFT_SEG_CLOSED, memory_order_release);
    }
    srq_soft_shm_unmap(&fab->seg);
    if (fab->tab_fd >= 0) {
        close(fab->tab_fd);
        fab->tab_fd = -1;
    }
    if (fab->queue_fd >= 0) {
        close(fab->queue_fd);
        fab->queue_fd = -1;
    }
}

void srq_soft_shm_unmap(srq_soft_seg_t *seg)
{
    if (seg->hdr != NULL) {
        munmap(seg->hdr, SRQ_SOFT_SHM_SIZE);
        seg->hdr  = NULL;
        seg->ring = NULL;
    }
    if (seg->tab != NULL) {
        munmap(seg->tab, SRQ_SOFT_TAB_SIZE);
        seg->tab = NULL;
        seg->mrs = NULL;
        seg->qps = NULL;
        seg->mws = NULL;
    }
}

int srq_soft_shm_path(srq_soft_fab_t *fab, char *buf, size_t len)
{
    int n = snprintf(buf, len, "/proc/%d/fd/%d", (int)fab->pid, fab->tab_fd);

    return ((n < 0) || ((size_t)n >= len)) ? EINVAL : 0;
}

/* ---- a peer's ---------------------------------------------------------- */

/*
 * Why a peer's file could not be opened or mapped, for the caller: a
 * limit of ours (descriptors, memory) as itself, said once with @what
 * and @size (0: none) - such a peer is not gone, we are short of room;
 * anything else as the peer gone (EHOSTUNREACH)
 */
static int srq_soft_shm_peer_err(int err, pid_t pid, const char *what,
                                 size_t size)
{
    if (!srq_soft_err_is_limit(err)) {
        return EHOSTUNREACH;
    }
    if (size > 0) {
        srq_soft_report(err, "mapping %s of pid %d (%zu bytes)", what,
                        (int)pid, size);
    } else {
        srq_soft_report(err, "opening %s of pid %d", what, (int)pid);
    }
    return err;
}

/* The descriptor number, in /proc/<pid>/fd, of the memfd called @name:
 * -ENOENT when it has none, -errno when its directory cannot be read */
static int srq_soft_shm_find(pid_t pid, const char *name)
{
    char dir_path[64], link[128], want[128];
    struct dirent *de;
    int dfd, fd = -ENOENT;
    ssize_t n;
    DIR *dir;

    snprintf(dir_path, sizeof(dir_path), "/proc/%d/fd", (int)pid);
    snprintf(want, sizeof(want), "/memfd:%s (deleted)", name);
    dir = opendir(dir_path);
    if (dir == NULL) {
        return -errno;
    }
    dfd = dirfd(dir);
    while ((fd < 0) && ((de = readdir(dir)) != NULL)) {
        n = readlinkat(dfd, de->d_name, link, sizeof(link) - 1);
        if (n <= 0) {
            continue;
        }
        link[n] = '\0';
        if (strcmp(link, want) == 0) {
            fd = atoi(de->d_name);
        }
    }
    closedir(dir);
    return fd;
}

/* Open descriptor @fd of process @pid; -errno */
static int srq_soft_shm_open_fd(pid_t pid, int fd, int flags)
{
    char path[64];
    int ret;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
    ret = open(path, flags | O_CLOEXEC);
    return (ret < 0) ? -errno : ret;
}

/* A file of ours, at least @size bytes (0: any), and, when @dev or @ino
 * is not 0, that very file */
static int srq_soft_shm_check_file(int fd, size_t size, uint64_t dev,
                                   uint64_t ino)
{
    struct stat st;

    if (fstat(fd, &st) < 0) {
        return errno;
    }
    if ((st.st_uid != getuid()) || ((st.st_mode & 077) != 0)) {
        return EPERM;
    }
    if (((dev != 0) || (ino != 0)) &&
        (((uint64_t)st.st_dev != dev) || ((uint64_t)st.st_ino != ino))) {
        return ENODEV;
    }
    return (st.st_size >= (off_t)size) ? 0 : ENODEV;
}

static int srq_soft_shm_check_tab(const srq_soft_tab_hdr_t *tab,
                                  const uint8_t *instance, pid_t pid)
{
    uint64_t magic = atomic_load_explicit((_Atomic uint64_t*)&tab->magic,
                                          memory_order_acquire);

    if ((magic != SRQ_SOFT_SHM_MAGIC) ||
        (tab->version != SRQ_SOFT_SHM_VERSION) ||
        (tab->hdr_size != sizeof(*tab)) ||
        (tab->tab_size != SRQ_SOFT_TAB_SIZE) ||
        (tab->mr_off != SRQ_SOFT_TAB_MR_OFF) ||
        (tab->qp_off != SRQ_SOFT_TAB_QP_OFF) ||
        (tab->mr_cnt != SRQ_SOFT_MR_TABLE_SIZE) ||
        (tab->qp_cnt != SRQ_SOFT_QP_TABLE_SIZE) ||
        (tab->queue_size != SRQ_SOFT_SHM_SIZE) ||
        (tab->owner_pid != pid) ||
        memcmp(tab->instance, instance, SRQ_SOFT_INST_LEN)) {
        return ENODEV;
    }
    return 0;
}

/* The tables of @instance, owned by @pid, mapped read-only */
static int srq_soft_shm_map_tables(pid_t pid, const uint8_t *instance,
                                   srq_soft_seg_t *seg)
{
    char name[64];
    void *base;
    int fd, num, ret;

    srq_soft_shm_name(SRQ_SOFT_SHM_PREFIX, instance, name, sizeof(name));
    num = srq_soft_shm_find(pid, name);
    if (num < 0) {
        return srq_soft_shm_peer_err(-num, pid, "the descriptor directory", 0);
    }
    fd = srq_soft_shm_open_fd(pid, num, O_RDONLY);
    if (fd < 0) {
        return srq_soft_err_is_limit(-fd) ?
               srq_soft_shm_peer_err(-fd, pid, "the tables", 0) :
               (fd == -ENOENT) ? EHOSTUNREACH : -fd;
    }
    ret = srq_soft_shm_check_file(fd, SRQ_SOFT_TAB_SIZE, 0, 0);
    base = (ret == 0) ? srq_soft_shm_map(fd, SRQ_SOFT_TAB_SIZE, PROT_READ) :
                        NULL;
    if ((ret == 0) && (base == NULL)) {
        ret = srq_soft_shm_peer_err(errno, pid, "the tables",
                                    SRQ_SOFT_TAB_SIZE);
    }
    close(fd);
    if (ret != 0) {
        return ret;
    }
    srq_soft_seg_tables(seg, base);
    return srq_soft_shm_check_tab(seg->tab, instance, pid);
}

/* Its queue, mapped read-write, and the write end of its wake pipe */
static int srq_soft_shm_map_queue(pid_t pid, srq_soft_seg_t *seg,
                                  int *wake_fd_p)
{
    const srq_soft_tab_hdr_t *tab = seg->tab;
    void *base;
    int fd, ret;

    fd = srq_soft_shm_open_fd(pid, tab->queue_fd, O_RDWR);
    if (fd < 0) {
        return srq_soft_shm_peer_err(-fd, pid, "the queue", 0);
    }
    ret = srq_soft_shm_check_file(fd, SRQ_SOFT_SHM_SIZE, tab->queue_dev,
                                  tab->queue_ino);
    base = (ret == 0) ? srq_soft_shm_map(fd, SRQ_SOFT_SHM_SIZE,
                                         PROT_READ | PROT_WRITE) : NULL;
    if ((ret == 0) && (base == NULL)) {
        ret = srq_soft_shm_peer_err(errno, pid, "the queue",
                                    SRQ_SOFT_SHM_SIZE);
    }
    close(fd);
    if (ret != 0) {
        return ret;
    }
    srq_soft_seg_queue(seg, base);
    if ((atomic_load_explicit((_Atomic uint64_t*)&seg->hdr->magic,
                              memory_order_acquire) != SRQ_SOFT_SHM_MAGIC) ||
        memcmp(seg->hdr->instance, tab->instance, SRQ_SOFT_INST_LEN)) {
        return ENODEV;
    }

    /* non-blocking: a full pipe holds enough wakeups already. Read-write:
     * we then hold a read end too, so a poke after the owner died (its
     * read end gone with it) fills the pipe instead of raising SIGPIPE,
     * whose default action would end this process */
    fd = srq_soft_shm_open_fd(pid, tab->wake_fd, O_RDWR | O_NONBLOCK);
    if (fd < 0) {
        return srq_soft_shm_peer_err(-fd, pid, "the wake pipe", 0);
    }
    ret = srq_soft_shm_check_file(fd, 0, tab->wake_dev, tab->wake_ino);
    if (ret != 0) {
        close(fd);
        return ret;
    }
    *wake_fd_p = fd;
    return 0;
}

int srq_soft_shm_map_peer(const uint8_t *instance, srq_soft_seg_t *seg,
                          int *wake_fd_p)
{
    pid_t pid;
    int ret;

    /* the instance id holds its owner's pid (soft_device.c) */
    memcpy(&pid, instance + sizeof(uint32_t), sizeof(pid));
    memset(seg, 0, sizeof(*seg));
    if (pid <= 0) {
        return EHOSTUNREACH;
    }
    ret = srq_soft_shm_map_tables(pid, instance, seg);
    if (ret == 0) {
        ret = srq_soft_shm_map_queue(pid, seg, wake_fd_p);
    }
    if (ret != 0) {
        srq_soft_shm_unmap(seg);
    }
    return ret;
}
