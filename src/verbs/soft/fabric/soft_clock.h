/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the clock every timer of the device reads.
 */
#ifndef SRQ_SOFT_CLOCK_H_
#define SRQ_SOFT_CLOCK_H_

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds */
uint64_t srq_soft_now_ns(void);

#endif
