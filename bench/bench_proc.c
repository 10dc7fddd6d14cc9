/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the benchmark programs share that is not UCX (see bench_proc.h).
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include "bench_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char *bench_prog = "bench";
volatile sig_atomic_t bench_stop;

static void (*exit_hook)(void);

void bench_set_exit_hook(void (*hook)(void))
{
    exit_hook = hook;
}

void bench_die(const char *fmt, ...)
{
    static int dying;
    void (*hook)(void) = exit_hook;
    va_list ap;

    fprintf(stderr, "%s[%d]: ", bench_prog, (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    /* a failure inside the hook must not run it again */
    if (!dying++ && (hook != NULL)) {
        hook();
    }
    exit(1);
}

static void on_signal(int sig)
{
    bench_stop = 1;
}

void bench_catch_signals(void)
{
    struct sigaction sa = {};

    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* a parent gone: its socket reports EOF, not a signal */
    signal(SIGPIPE, SIG_IGN);
}

void bench_check_stop(void)
{
    if (bench_stop) {
        bench_die("interrupted");
    }
}

double bench_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

void bench_mem_read(bench_mem_t *mem)
{
    static const struct {
        const char *key;
        size_t     offset;
    } fields[] = {
        {"VmRSS:",    offsetof(bench_mem_t, rss)},
        {"VmHWM:",    offsetof(bench_mem_t, hwm)},
        {"RssAnon:",  offsetof(bench_mem_t, anon)},
        {"RssShmem:", offsetof(bench_mem_t, shmem)},
    };
    char line[256];
    unsigned long kb;
    FILE *f;

    memset(mem, 0, sizeof(*mem));
    f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        bench_die("/proc/self/status: %s", strerror(errno));
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); ++i) {
            if (!strncmp(line, fields[i].key, strlen(fields[i].key)) &&
                (sscanf(line + strlen(fields[i].key), "%lu", &kb) == 1)) {
                *(uint64_t*)((char*)mem + fields[i].offset) = kb * 1024;
            }
        }
    }
    fclose(f);
}

int bench_mem_reset_peak(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    int ret;

    if (fd < 0) {
        return -1;
    }
    /* "5": reset the peak resident set size (Linux 4.0+) */
    ret = (write(fd, "5", 1) == 1) ? 0 : -1;
    close(fd);
    return ret;
}

pid_t bench_spawn(char *const argv[], int *fd)
{
    posix_spawn_file_actions_t actions;
    int sv[2], child_end, ret;
    pid_t pid;

    /* CLOEXEC: no child inherits the sockets of its siblings, so that each
     * sees EOF when the parent's end closes */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        bench_die("socketpair: %s", strerror(errno));
    }
    /* dup2 onto itself would keep CLOEXEC: move it out of the way */
    child_end = sv[1];
    if (child_end == BENCH_CHILD_FD) {
        child_end = fcntl(sv[1], F_DUPFD_CLOEXEC, BENCH_CHILD_FD + 1);
        if (child_end < 0) {
            bench_die("fcntl: %s", strerror(errno));
        }
        close(sv[1]);
    }
    /* posix_spawn, not fork: no fork handlers run (UCX's ib md warns of a
     * fork after registering memory), and nothing is copied */
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, child_end, BENCH_CHILD_FD);
    fflush(NULL);
    ret = posix_spawn(&pid, "/proc/self/exe", &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(child_end);
    if (ret != 0) {
        bench_die("posix_spawn: %s", strerror(ret));
    }
    *fd = sv[0];
    return pid;
}

void bench_log_pid(void)
{
    const char *log = getenv("BENCH_PID_LOG");
    char line[24];
    int fd, len;

    if ((log == NULL) || (*log == '\0')) {
        return;
    }
    fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        return; /* the script then cannot clean up after us: not fatal */
    }
    len = snprintf(line, sizeof(line), "%d\n", (int)getpid());
    if (write(fd, line, len) != len) {
        fprintf(stderr, "%s: BENCH_PID_LOG: short write\n", bench_prog);
    }
    close(fd);
}

void bench_watch_parent(pid_t parent)
{
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0) {
        bench_die("prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
    }
    /* the parent may have died before the call */
    if (getppid() != parent) {
        bench_die("the parent process is gone");
    }
}

static int reap_until(const pid_t *pids, int count, int *done, int *failed,
                      double deadline_us)
{
    int status, left;

    do {
        left = 0;
        for (int i = 0; i < count; ++i) {
            if (done[i]) {
                continue;
            }
            if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                done[i] = 1;
                if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
                    ++*failed;
                }
            } else {
                ++left;
            }
        }
        if (left > 0) {
            usleep(10000);
        }
    } while ((left > 0) && (bench_now_us() < deadline_us));
    return left;
}

static void signal_left(const pid_t *pids, int count, const int *done, int sig)
{
    for (int i = 0; i < count; ++i) {
        if (!done[i]) {
            kill(pids[i], sig);
        }
    }
}

int bench_reap(const pid_t *pids, int count, double timeout_s)
{
    int *done = calloc(count, sizeof(*done));
    int failed = 0, signalled = 0, left;

    if ((done == NULL) && (count > 0)) {
        bench_die("out of memory");
    }
    left = reap_until(pids, count, done, &failed,
                      bench_now_us() + timeout_s * 1e6);
    failed += left;
    /* TERM lets a child close its devices; what still hangs gets KILL */
    if (left > 0) {
        signal_left(pids, count, done, SIGTERM);
        left = reap_until(pids, count, done, &signalled, bench_now_us() + 3e6);
    }
    if (left > 0) {
        signal_left(pids, count, done, SIGKILL);
        reap_until(pids, count, done, &signalled, bench_now_us() + 10e6);
    }
    free(done);
    return failed;
}

void bench_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) {
                bench_check_stop();
                continue;
            }
            bench_die("write to peer: %s", strerror(errno));
        }
        p   += n;
        len -= n;
    }
}

void bench_read_all(int fd, void *buf, size_t len, void (*idle)(void *arg),
                    void *arg, const char *what)
{
    double deadline = bench_now_us() + BENCH_WAIT_LIMIT_S * 1e6;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        bench_check_stop();
        if (bench_now_us() > deadline) {
            bench_die("%s: nothing from the peer in %d s", what,
                      BENCH_WAIT_LIMIT_S);
        }
        /* with an idle function (a worker to progress) only look */
        if (poll(&pfd, 1, (idle != NULL) ? 0 : 100) <= 0) {
            if (idle != NULL) {
                idle(arg);
            }
            continue;
        }
        n = read(fd, p, len);
        if (n == 0) {
            bench_die("%s: the peer closed its socket", what);
        } else if ((n < 0) && (errno != EINTR) && (errno != EAGAIN)) {
            bench_die("%s: %s", what, strerror(errno));
        } else if (n > 0) {
            p   += n;
            len -= n;
        }
    }
}

void bench_write_u64(int fd, uint64_t value)
{
    bench_write_all(fd, &value, sizeof(value));
}

uint64_t bench_read_u64(int fd, void (*idle)(void *arg), void *arg,
                        const char *what)
{
    uint64_t value;

    bench_read_all(fd, &value, sizeof(value), idle, arg, what);
    return value;
}

/*
 * Every thread of @pid, not only its first: sched_setaffinity takes one
 * thread, and UCX's async thread (created with the context, before any
 * pinning) would otherwise keep running on every CPU. Measured: with 16
 * senders, their async threads ran on the receiver's CPU and stalled it
 * for milliseconds at a time.
 */
void bench_pin(pid_t pid, int cpu)
{
    char dir[64];
    struct dirent *e;
    cpu_set_t set;
    pid_t tid;
    DIR *d;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    snprintf(dir, sizeof(dir), "/proc/%d/task", (pid == 0) ? (int)getpid() :
             (int)pid);
    d = opendir(dir);
    if (d == NULL) {
        bench_die("opendir(%s): %s", dir, strerror(errno));
    }
    while ((e = readdir(d)) != NULL) {
        tid = (pid_t)atoi(e->d_name);
        if ((tid > 0) && (sched_setaffinity(tid, sizeof(set), &set) != 0) &&
            (errno != ESRCH)) { /* a thread that just ended */
            bench_die("sched_setaffinity(%d, CPU %d): %s", (int)tid, cpu,
                      strerror(errno));
        }
    }
    closedir(d);
}
