/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: the types the layer's API and its device kinds
 * share (a device's kind, name and port address, the length of a WR's
 * data). Below both: srq_verbs.h includes it for its callers, a device
 * kind (soft/, srq_verbs_rdma.c) for what it fills in, so that soft/ needs
 * nothing of the layer above it.
 */
#ifndef SRQ_VERBS_TYPES_H_
#define SRQ_VERBS_TYPES_H_

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SRQ_VERBS_DEV_NAME_MAX  64

/* Kind of device behind a name */
typedef enum srq_verbs_dev_kind {
    SRQ_VERBS_DEV_RDMA,   /* rdma-core device */
    SRQ_VERBS_DEV_SOFT    /* built-in software HCA */
} srq_verbs_dev_kind_t;

typedef struct srq_verbs_dev_info {
    char                  name[SRQ_VERBS_DEV_NAME_MAX];
    srq_verbs_dev_kind_t  kind;
} srq_verbs_dev_info_t;

/* An opened device */
typedef struct srq_verbs_dev srq_verbs_dev_t;

/*
 * Address of a port, exchanged between processes so that a peer can build
 * an address handle / connect a QP. Fixed size and byte order, so it can be
 * put on the wire as is.
 */
typedef struct srq_verbs_port_addr {
    uint8_t   kind;        /* srq_verbs_dev_kind_t */
    uint8_t   port_num;
    uint16_t  lid;         /* network order; rdma-core IB ports */
    uint8_t   gid[16];     /* rdma-core: port GID; soft: device instance id */
} __attribute__((packed)) srq_verbs_port_addr_t;


/* Bytes a scatter/gather list covers (the length of a WR's data) */
static inline uint64_t srq_verbs_sge_len(const struct ibv_sge *sge, int num)
{
    uint64_t len = 0;
    int i;

    for (i = 0; i < num; ++i) {
        len += sge[i].length;
    }
    return len;
}

#ifdef __cplusplus
}
#endif

#endif
