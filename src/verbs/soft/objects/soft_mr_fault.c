/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the page fault of an access to an ODP region.
 *
 * An HCA that accesses a page of an ODP region faults it in first, and
 * fails the access where the fault finds nothing mapped there, or a
 * mapping without the access. soft0 accesses its own process's regions
 * with memcpy and atomics, which take the process down on such a page; so
 * for an ODP region (which may hold such pages legally: the implicit one
 * is the whole address space) it takes the fault through the kernel
 * first, and so does ibv_advise_mr's prefetch.
 *
 * MADV_POPULATE_READ/_WRITE (Linux 5.14) fault the pages in as the access
 * would, and fail where it would. An older kernel read-faults through
 * process_vm_readv, which fails where nothing readable is mapped: a page
 * mapped read-only passes for a write there.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include "soft_mr.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* Linux 5.14's values, for headers older than the kernel */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ  22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static uintptr_t srq_soft_mr_page(void)
{
    static uintptr_t page;

    if (page == 0) {
        page = (uintptr_t)sysconf(_SC_PAGESIZE);
    }
    return page;
}

/* Does madvise know MADV_POPULATE_READ? Asked once, on a page of our
 * stack (mapped, readable): EINVAL is then an older kernel's answer */
static bool srq_soft_mr_populate_works(void)
{
    static int works = -1;
    char probe;

    if (works < 0) {
        works = madvise((void*)((uintptr_t)&probe &
                                ~(srq_soft_mr_page() - 1)),
                        srq_soft_mr_page(), MADV_POPULATE_READ) == 0;
    }
    return works;
}

/* Read-fault [addr, addr + len) through the kernel, a chunk at a time
 * (what is read is thrown away) */
static int srq_soft_mr_touch(uintptr_t addr, uint64_t len)
{
    uint8_t scratch[16384];
    struct iovec local, remote;
    size_t n;

    while (len > 0) {
        n               = (len < sizeof(scratch)) ? len : sizeof(scratch);
        local.iov_base  = scratch;
        local.iov_len   = n;
        remote.iov_base = (void*)addr;
        remote.iov_len  = n;
        if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) !=
            (ssize_t)n) {
            return EFAULT;
        }
        addr += n;
        len  -= n;
    }
    return 0;
}

int srq_soft_mr_fault(uint64_t addr, uint64_t len, bool write)
{
    uintptr_t start = (uintptr_t)addr & ~(srq_soft_mr_page() - 1);

    if (len == 0) {
        return 0;
    }
    if (!srq_soft_mr_populate_works()) {
        return srq_soft_mr_touch((uintptr_t)addr, len);
    }
    /* ENOMEM: not mapped; EINVAL: not with the access; EFAULT: a page
     * that cannot be had */
    return (madvise((void*)start, (size_t)(addr + len - start),
                    write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0) ?
           0 : EFAULT;
}
