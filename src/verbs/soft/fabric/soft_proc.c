/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: process identity and liveness (pid + start time),
 * and the sharing domain that says which processes can reach each other.
 */
#include "soft_proc.h"
#include "soft_report.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Field 22 of /proc/<pid>/stat; also fails for zombies, which are dead to
 * us (a killed child not reaped yet still answers kill(pid, 0)). */
int srq_soft_proc_start_time(pid_t pid, uint64_t *start_p)
{
    char path[64], buf[1024], *p;
    unsigned long long start;
    char state;
    ssize_t n;
    int fd, i;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return EIO;
    }
    buf[n] = '\0';

    /* comm may hold spaces and parentheses: parse after the last ')' */
    p = strrchr(buf, ')');
    if ((p == NULL) || (sscanf(p + 1, " %c", &state) != 1)) {
        return EIO;
    }
    if ((state == 'Z') || (state == 'X') || (state == 'x')) {
        return ESRCH;
    }
    p += 2; /* ") " */
    for (i = 3; i < 22; ++i) {
        p = strchr(p, ' ');
        if (p == NULL) {
            return EIO;
        }
        ++p;
    }
    if (sscanf(p, "%llu", &start) != 1) {
        return EIO;
    }
    *start_p = start;
    return 0;
}

/*
 * A start time we could not read for a limit of ours (no descriptor left
 * to open /proc/<pid>/stat with) says nothing of the other process: it
 * counts as alive while kill(2) finds its pid. Taken for dead, a live
 * peer's QPs would fail as "gone", and its lock, LID or QP number would be
 * taken over while it still uses them.
 */
static bool srq_soft_proc_unknown_alive(int err, pid_t pid)
{
    return srq_soft_err_is_limit(err) &&
           !((kill(pid, 0) < 0) && (errno == ESRCH));
}

bool srq_soft_owner_alive(pid_t pid, uint64_t start_time)
{
    uint64_t start;
    int ret;

    if (pid <= 0) {
        return false;
    }
    if ((kill(pid, 0) < 0) && (errno == ESRCH)) {
        return false;
    }
    ret = srq_soft_proc_start_time(pid, &start);
    if (ret != 0) {
        return srq_soft_proc_unknown_alive(ret, pid);
    }
    return start == start_time;
}

static uint32_t srq_soft_fnv(uint32_t h, const void *p, size_t len)
{
    for (size_t i = 0; i < len; ++i) {
        h = (h ^ ((const uint8_t*)p)[i]) * 16777619u;
    }
    return h;
}

/*
 * The kernel's boot id into @boot_id (64 bytes), read once per process: a
 * process short of descriptors later must still name the same registries
 * (it changes only with a reboot). 0, or a limit of ours that kept it from
 * being read (EMFILE): that is an error, not a boot id of "" - the process
 * would silently join another domain, its peers unreachable.
 */
static int srq_soft_boot_id(char *boot_id)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char cached[64];
    static bool known;
    int ret = 0;
    FILE *f;

    pthread_mutex_lock(&lock);
    if (!known) {
        f = fopen("/proc/sys/kernel/random/boot_id", "re");
        if (f != NULL) {
            if (fgets(cached, sizeof(cached), f) == NULL) {
                cached[0] = '\0';
            }
            fclose(f);
        }
        if ((f == NULL) && srq_soft_err_is_limit(errno)) {
            ret = errno;
        } else {
            known = true;
        }
    }
    memcpy(boot_id, cached, sizeof(cached));
    pthread_mutex_unlock(&lock);
    return ret;
}

/*
 * Which processes can this instance talk to? Those of the same kernel
 * (boot id) that see the same /dev/shm and the same pid and IPC namespaces:
 * the soft device needs the peer's segment and its pid (liveness, cross-
 * memory attach). Two hosts, or two containers that share none of this,
 * get different values, and their addresses are unreachable to each other.
 */
int srq_soft_domain_id(uint32_t *id_p)
{
    static const char *ns[] = {"/proc/self/ns/pid", "/proc/self/ns/ipc"};
    uint32_t h = 2166136261u;
    char boot_id[64];
    struct stat st;
    int ret;

    ret = srq_soft_boot_id(boot_id);
    if (ret != 0) {
        return ret;
    }
    h = srq_soft_fnv(h, boot_id, strlen(boot_id));
    if (stat("/dev/shm", &st) == 0) {
        h = srq_soft_fnv(h, &st.st_dev, sizeof(st.st_dev));
        h = srq_soft_fnv(h, &st.st_ino, sizeof(st.st_ino));
    }
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); ++i) {
        if (stat(ns[i], &st) == 0) {
            h = srq_soft_fnv(h, &st.st_ino, sizeof(st.st_ino));
        }
    }
    *id_p = h;
    return 0;
}

uint64_t srq_soft_proc_id(pid_t pid, uint64_t start_time)
{
    return ((start_time & 0xffffffffull) << 32) | (uint32_t)pid;
}

bool srq_soft_proc_id_dead(uint64_t id)
{
    pid_t pid = (pid_t)(id & 0xffffffffu);
    uint64_t start;
    int ret;

    ret = srq_soft_proc_start_time(pid, &start);
    if (ret != 0) {
        /* gone, or a zombie; or we cannot tell */
        return !srq_soft_proc_unknown_alive(ret, pid);
    }
    return srq_soft_proc_id(pid, start) != id;
}
