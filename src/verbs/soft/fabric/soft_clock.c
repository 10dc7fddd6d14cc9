/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the clock.
 */
#include "soft_clock.h"

#include <time.h>

uint64_t srq_soft_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
