/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: slices of scatter lists, for the copies done with
 * cross-memory attach in chunks (the requester's one-sided RDMA, the
 * responder's pull of a WRITE it executes).
 */
#ifndef SRQ_SOFT_IOV_H_
#define SRQ_SOFT_IOV_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* [off, off + len) of the list @iov (@n entries) as a list of its own in
 * @out (at most @n entries); returns its length */
static inline int srq_soft_iov_slice(const struct iovec *iov, int n,
                                     size_t off, size_t len,
                                     struct iovec *out)
{
    int i, m = 0;
    size_t part;

    for (i = 0; (i < n) && (len > 0); ++i) {
        if (off >= iov[i].iov_len) {
            off -= iov[i].iov_len;
            continue;
        }
        part = iov[i].iov_len - off;
        part = (part < len) ? part : len;
        out[m].iov_base = (uint8_t*)iov[i].iov_base + off;
        out[m].iov_len  = part;
        ++m;
        len -= part;
        off  = 0;
    }
    return m;
}

#endif
