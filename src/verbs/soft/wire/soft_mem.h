/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: copies into and out of the program's memory made
 * by progress.
 *
 * soft0 pins nothing. A program may unmap a buffer whose region stays
 * registered: UCX frees a UD QP's receive buffers before it destroys the
 * QP, and its registration cache deregisters them later. An HCA survives
 * that, holding the pages pinned; memcpy into them would take the process
 * down. Progress driven by the program's own polls copies with memcpy:
 * that thread is not unmapping what it polls for, and it is the fast
 * path. Progress that runs beside the program (the device's thread, a
 * completion-channel wakeup: dev->guard_copies) copies through the kernel,
 * which answers EFAULT instead.
 */
#ifndef SRQ_SOFT_MEM_H_
#define SRQ_SOFT_MEM_H_

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The copy through the kernel (soft_mem.c). false: a page of either side
 * is not there */
bool srq_soft_mem_copy_guarded(void *dst, const void *src, size_t len);

/* Copy @len bytes from @src to @dst, both in this process; through the
 * kernel when @guard. false: a page of either is not there */
static inline bool srq_soft_mem_copy(bool guard, void *dst, const void *src,
                                     size_t len)
{
    if (!guard) {
        memcpy(dst, src, len);
        return true;
    }
    return srq_soft_mem_copy_guarded(dst, src, len);
}

#endif
