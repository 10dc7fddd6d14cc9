/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test/verbs_py.sh: the program around the generate_c() output of the
 * classes `srq_contracts verbs-py` generates (run_verbspy.py writes the
 * rest). What the rdma-fuzzing framework's template gives its generated
 * code, written here for the test: the includes, IF_OK_PTR, dev_list and
 * port_attr; and the test's own checks.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the framework's guard: run the block only when the object exists */
#define IF_OK_PTR(p, ...) \
    do { \
        if ((p) != NULL) { \
            __VA_ARGS__ \
        } else { \
            printf("skipped: %s is NULL\n", #p); \
        } \
    } while (0)

#define CHECK(cond, what) check((cond), (what), #cond)

static struct ibv_device **dev_list;
static struct ibv_port_attr port_attr;
static int checks_passed, checks_failed, calls_made;

/* wr_id -> completion status, -1 for none yet */
#define MAX_WR_ID 0x200
static int wc_status_of[MAX_WR_ID];

static void check(int ok, const char *what, const char *cond)
{
    if (ok) {
        ++checks_passed;
        printf("PASS: verbs_py_run: %s\n", what);
    } else {
        ++checks_failed;
        printf("FAIL: verbs_py_run: %s (%s)\n", what, cond);
    }
}

static void mark(const char *call)
{
    ++calls_made;
    printf("made: %s\n", call);
}

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, const char *what)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    if (poll(&pfd, 1, 10000) <= 0) {
        printf("no %s within 10 s\n", what);
        return 0;
    }
    return 1;
}

static void record(const struct ibv_wc *wc)
{
    printf("completion: wr_id 0x%llx %s\n", (unsigned long long)wc->wr_id,
           ibv_wc_status_str(wc->status));
    if (wc->wr_id < MAX_WR_ID) {
        wc_status_of[wc->wr_id] = wc->status;
    }
}

static int status_of(uint64_t wr_id)
{
    return wc_status_of[wr_id];
}

/* Post WRs without SGEs one at a time until the SRQ is full: its free slots */
static int fill_srq(struct ibv_srq *srq)
{
    struct ibv_recv_wr wr, *bad;
    int n;

    for (n = 0; n < 4096; ++n) {
        memset(&wr, 0, sizeof(wr));
        wr.wr_id = 0x1000 + n;
        if (ibv_post_srq_recv(srq, &wr, &bad) != 0) {
            break;
        }
    }
    return n;
}

/* soft0 first in dev_list, where the generated OpenDevice looks */
static void setup(void)
{
    struct ibv_device *tmp;
    int i;

    memset(wc_status_of, 0xff, sizeof(wc_status_of));
    setvbuf(stdout, NULL, _IOLBF, 0);
    dev_list = ibv_get_device_list(NULL);
    for (i = 0; dev_list && dev_list[i]; ++i) {
        if (!strcmp(ibv_get_device_name(dev_list[i]), "soft0")) {
            tmp = dev_list[0];
            dev_list[0] = dev_list[i];
            dev_list[i] = tmp;
            return;
        }
    }
    printf("FAIL: verbs_py_run: no soft0 device\n");
    exit(2);
}

static int finish(int calls, int srq_room)
{
    (void)srq_room;
    printf("verbs_py program: %d of %d calls made, %d checks passed, %d failed\n",
           calls_made, calls, checks_passed, checks_failed);
    ibv_free_device_list(dev_list);
    return (checks_failed || (calls_made != calls)) ? 1 : 0;
}
