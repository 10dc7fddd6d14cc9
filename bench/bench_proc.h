/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the benchmark programs share that is not UCX: failing loudly,
 * stopping on a signal, clocks, the process's own memory (/proc/self/status)
 * and child processes connected through a socketpair.
 */
#ifndef BENCH_PROC_H_
#define BENCH_PROC_H_

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* the program's name in its messages; each main() sets it */
extern const char *bench_prog;

/* set by SIGINT/SIGTERM (and so by a parent's death, see bench_spawn):
 * every wait loop of the benchmarks checks it */
extern volatile sig_atomic_t bench_stop;

/* The file descriptor a spawned child finds its socket on */
#define BENCH_CHILD_FD  3

/* Seconds any wait of a benchmark may last before it is called a hang */
#ifndef BENCH_WAIT_LIMIT_S
#define BENCH_WAIT_LIMIT_S 120
#endif

/* Print "<prog>[pid]: <message>" and exit(1), running the exit hook first
 * (bench_uct closes what it opened, so that no device segment outlives a
 * failed run) */
void bench_die(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));

/* Called by bench_die before it exits (one hook; NULL: none) */
void bench_set_exit_hook(void (*hook)(void));

/* SIGINT and SIGTERM set bench_stop (no SA_RESTART: a blocking wait wakes) */
void bench_catch_signals(void);

/* bench_die("interrupted") once bench_stop is set */
void bench_check_stop(void);

double bench_now_us(void);

/* The process's memory, bytes, from /proc/self/status */
typedef struct {
    uint64_t rss;    /* VmRSS: resident now */
    uint64_t hwm;    /* VmHWM: most resident since start or the last reset */
    uint64_t anon;   /* RssAnon: of rss, private memory (heap, pools) */
    uint64_t shmem;  /* RssShmem: of rss, shared memory (device segments) */
} bench_mem_t;

void bench_mem_read(bench_mem_t *mem);

/* Make VmHWM start again from VmRSS (/proc/self/clear_refs); 0 on success,
 * -1 where the kernel does not allow it (then VmHWM counts from start) */
int bench_mem_reset_peak(void);

/*
 * Start a child: this program (/proc/self/exe) with @argv (argv[0]
 * included) and the environment, its end of a new socketpair on
 * BENCH_CHILD_FD; returns the child's pid and the parent's end in @fd. The
 * child is in the parent's process group (a Ctrl-C reaches it); it should
 * call bench_watch_parent.
 */
pid_t bench_spawn(char *const argv[], int *fd);

/* In a child: SIGTERM when @parent dies (PR_SET_PDEATHSIG); exits at once
 * when it is already gone */
void bench_watch_parent(pid_t parent);

/* Run every thread of @pid (0: this process) on CPU @cpu only; dies if it
 * cannot */
void bench_pin(pid_t pid, int cpu);

/* Append this process's pid to the file BENCH_PID_LOG names, when set: a
 * script that runs the benchmark removes what a killed process of its own
 * left behind, and nobody else's (bench/lib.sh) */
void bench_log_pid(void);

/* Wait up to @timeout_s for the children to exit, then SIGTERM, then
 * SIGKILL; returns how many did not exit with status 0 by themselves */
int bench_reap(const pid_t *pids, int count, double timeout_s);

/* Messages on a socket: a word. The reader waits, calling @idle (when not
 * NULL) between looks, or blocking otherwise; a closed socket, bench_stop or
 * BENCH_WAIT_LIMIT_S ends the program with an error naming @what */
void bench_write_u64(int fd, uint64_t value);
uint64_t bench_read_u64(int fd, void (*idle)(void *arg), void *arg,
                        const char *what);

/* The same for @len bytes */
void bench_write_all(int fd, const void *buf, size_t len);
void bench_read_all(int fd, void *buf, size_t len, void (*idle)(void *arg),
                    void *arg, const char *what);

#endif
