/*
 * ucx-srq soft device: shared-memory segments (create, map a peer's,
 * remove, reclaim those of dead owners). A segment names its owner by
 * (pid, process start time), soft_proc.c: a pid alone may have been reused
 * by an unrelated process since the segment was created.
 */
#include "soft_shm.h"
#include "soft_dev.h"
#include "soft_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SRQ_SOFT_STALE_INIT_S  60  /* a never-initialised segment this old is
                                      garbage, not a creation in progress */

void srq_soft_shm_name(const uint8_t *instance, char *buf, size_t len)
{
    int n = snprintf(buf, len, "/%s", SRQ_SOFT_SHM_PREFIX);
    int i;

    for (i = 0; (i < SRQ_SOFT_INST_LEN) && (n + 2 < (int)len); ++i) {
        n += snprintf(buf + n, len - n, "%02x", instance[i]);
    }
}

static void srq_soft_seg_layout(srq_soft_seg_t *seg, void *base, size_t size)
{
    seg->hdr  = base;
    seg->ring = (uint8_t*)base + SRQ_SOFT_SHM_RING_OFF;
    seg->mrs  = (srq_soft_mr_ent_t*)((uint8_t*)base + SRQ_SOFT_SHM_MR_OFF);
    seg->size = size;
}

static void srq_soft_init_hdr(srq_soft_dev_t *dev, srq_soft_shm_hdr_t *hdr)
{
    hdr->version     = SRQ_SOFT_SHM_VERSION;
    hdr->hdr_size    = sizeof(*hdr);
    hdr->seg_size    = SRQ_SOFT_SHM_SIZE;
    hdr->ring_off    = SRQ_SOFT_SHM_RING_OFF;
    hdr->ring_size   = SRQ_SOFT_RING_SIZE;
    hdr->mr_off      = SRQ_SOFT_SHM_MR_OFF;
    hdr->mr_cnt      = SRQ_SOFT_MR_TABLE_SIZE;
    hdr->owner_uid   = getuid();
    hdr->owner_pid   = dev->pid;
    hdr->owner_start = dev->start_time;
    memcpy(hdr->instance, dev->instance, SRQ_SOFT_INST_LEN);
    snprintf(hdr->fifo_path, sizeof(hdr->fifo_path), "%s", dev->fifo_path);
    atomic_store_explicit((_Atomic uint32_t*)&hdr->state, SRQ_SOFT_SEG_ACTIVE,
                          memory_order_relaxed);
}

int srq_soft_shm_create(srq_soft_dev_t *dev)
{
    void *base;
    int fd, ret;

    srq_soft_shm_name(dev->instance, dev->shm_name, sizeof(dev->shm_name));
    fd = shm_open(dev->shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return errno;
    }
    /* owner-only whatever the umask says (it can only remove bits, but be
     * explicit: this mode is what keeps other users out) */
    if ((fchmod(fd, 0600) < 0) || (ftruncate(fd, SRQ_SOFT_SHM_SIZE) < 0)) {
        ret = errno;
        goto err_unlink;
    }
    base = mmap(NULL, SRQ_SOFT_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                fd, 0);
    if (base == MAP_FAILED) {
        ret = errno;
        goto err_unlink;
    }
    close(fd);

    srq_soft_seg_layout(&dev->seg, base, SRQ_SOFT_SHM_SIZE);
    srq_soft_init_hdr(dev, dev->seg.hdr);
    /* peers check magic last: everything above is visible before it */
    atomic_store_explicit((_Atomic uint64_t*)&dev->seg.hdr->magic,
                          SRQ_SOFT_SHM_MAGIC, memory_order_release);
    return 0;

err_unlink:
    close(fd);
    shm_unlink(dev->shm_name);
    return ret;
}

void srq_soft_shm_destroy(srq_soft_dev_t *dev)
{
    if (dev->seg.hdr == NULL) {
        return;
    }
    /* peers that still map it see the state and stop using it */
    atomic_store_explicit((_Atomic uint32_t*)&dev->seg.hdr->state,
                          SRQ_SOFT_SEG_CLOSED, memory_order_release);
    /* a forked child closing an inherited device must not remove the
     * parent's segment */
    if (dev->seg.hdr->owner_pid == getpid()) {
        shm_unlink(dev->shm_name);
    }
    srq_soft_shm_unmap(&dev->seg);
}

void srq_soft_shm_unmap(srq_soft_seg_t *seg)
{
    if (seg->hdr != NULL) {
        munmap(seg->hdr, seg->size);
        seg->hdr = NULL;
    }
}

/* A segment is usable only if it is ours (uid, mode) and fully built */
static int srq_soft_shm_check_file(int fd)
{
    struct stat st;

    if (fstat(fd, &st) < 0) {
        return errno;
    }
    if ((st.st_uid != getuid()) || ((st.st_mode & 077) != 0)) {
        return EPERM;
    }
    return (st.st_size >= (off_t)SRQ_SOFT_SHM_SIZE) ? 0 : ENODEV;
}

static int srq_soft_shm_check_hdr(const srq_soft_shm_hdr_t *hdr,
                                  const uint8_t *instance)
{
    uint64_t magic = atomic_load_explicit((_Atomic uint64_t*)&hdr->magic,
                                          memory_order_acquire);

    if ((magic != SRQ_SOFT_SHM_MAGIC) ||
        (hdr->version != SRQ_SOFT_SHM_VERSION) ||
        (hdr->hdr_size != sizeof(*hdr)) ||
        (hdr->seg_size != SRQ_SOFT_SHM_SIZE) ||
        (hdr->ring_off != SRQ_SOFT_SHM_RING_OFF) ||
        (hdr->ring_size != SRQ_SOFT_RING_SIZE) ||
        (hdr->mr_off != SRQ_SOFT_SHM_MR_OFF) ||
        (hdr->mr_cnt != SRQ_SOFT_MR_TABLE_SIZE) ||
        memcmp(hdr->instance, instance, SRQ_SOFT_INST_LEN)) {
        return ENODEV;
    }
    return 0;
}

int srq_soft_shm_map_peer(const uint8_t *instance, srq_soft_seg_t *seg)
{
    char name[64];
    void *base;
    int fd, ret;

    srq_soft_shm_name(instance, name, sizeof(name));
    fd = shm_open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0) {
        return (errno == ENOENT) ? EHOSTUNREACH : errno;
    }
    ret = srq_soft_shm_check_file(fd);
    if (ret != 0) {
        close(fd);
        return ret;
    }
    base = mmap(NULL, SRQ_SOFT_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        return errno;
    }
    srq_soft_seg_layout(seg, base, SRQ_SOFT_SHM_SIZE);
    ret = srq_soft_shm_check_hdr(seg->hdr, instance);
    if (ret != 0) {
        srq_soft_shm_unmap(seg);
    }
    return ret;
}

static bool srq_soft_shm_is_stale(int fd, const char *name)
{
    const srq_soft_shm_hdr_t *hdr;
    struct stat st;
    bool stale = false;
    uint64_t magic;

    if ((fstat(fd, &st) < 0) || (st.st_uid != getuid())) {
        return false;
    }
    if (st.st_size < (off_t)sizeof(*hdr)) {
        return (time(NULL) - st.st_mtime) > SRQ_SOFT_STALE_INIT_S;
    }
    hdr = mmap(NULL, sizeof(*hdr), PROT_READ, MAP_SHARED, fd, 0);
    if (hdr == MAP_FAILED) {
        return false;
    }
    magic = atomic_load_explicit((_Atomic uint64_t*)&hdr->magic,
                                 memory_order_acquire);
    if (magic == SRQ_SOFT_SHM_MAGIC) {
        stale = !srq_soft_owner_alive(hdr->owner_pid, hdr->owner_start);
    } else {
        stale = (time(NULL) - st.st_mtime) > SRQ_SOFT_STALE_INIT_S;
    }
    if (stale && (magic == SRQ_SOFT_SHM_MAGIC) &&
        (memchr(hdr->fifo_path, '\0', sizeof(hdr->fifo_path)) != NULL) &&
        (hdr->fifo_path[0] == '/')) {
        srq_soft_unlink_with_dir(hdr->fifo_path);
    }
    munmap((void*)hdr, sizeof(*hdr));
    return stale;
}

void srq_soft_unlink_with_dir(const char *path)
{
    char dir[SRQ_SOFT_PATH_MAX];
    char *slash;

    unlink(path);
    if (strlen(path) >= sizeof(dir)) {
        return;
    }
    strcpy(dir, path);
    slash = strrchr(dir, '/');
    if ((slash != NULL) && (slash != dir)) {
        *slash = '\0';
        rmdir(dir); /* only if empty: another instance may share it */
    }
}

/* A regular file of ours: anything else in /dev/shm with our prefix (a
 * FIFO, a device node, a link, another user's file) is not a segment and
 * is not opened - opening a FIFO for reading blocks until a writer comes */
static bool srq_soft_shm_is_our_file(const struct stat *st)
{
    return S_ISREG(st->st_mode) && (st->st_uid == getuid());
}

/* Remove segment @name (without '/') if its owner is dead: 1 if removed */
int srq_soft_shm_reclaim_one(const char *name, srq_soft_dev_t *dev)
{
    char path[80], file[96];
    struct stat st;
    bool stale;
    int fd;

    snprintf(file, sizeof(file), "/dev/shm/%s", name);
    if ((lstat(file, &st) < 0) || !srq_soft_shm_is_our_file(&st)) {
        return 0;
    }
    snprintf(path, sizeof(path), "/%s", name);
    /* O_NONBLOCK: swapped for a FIFO since the lstat, it still cannot block */
    fd = shm_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) {
        return 0;
    }
    stale = (fstat(fd, &st) == 0) && srq_soft_shm_is_our_file(&st) &&
            srq_soft_shm_is_stale(fd, name);
    close(fd);
    if (!stale || (shm_unlink(path) < 0)) {
        return 0;
    }
    if (dev != NULL) {
        ++dev->stats.segs_reclaimed;
    }
    return 1;
}

void srq_soft_shm_reclaim_stale(srq_soft_dev_t *dev)
{
    struct dirent *de;
    DIR *dir;

    dir = opendir("/dev/shm");
    if (dir == NULL) {
        return;
    }
    while ((de = readdir(dir)) != NULL) {
        if (strncmp(de->d_name, SRQ_SOFT_SHM_PREFIX,
                    strlen(SRQ_SOFT_SHM_PREFIX)) == 0) {
            srq_soft_shm_reclaim_one(de->d_name, dev);
        }
    }
    closedir(dir);
}


