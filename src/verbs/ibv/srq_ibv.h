/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq libibverbs provider (libsrq_ibv.so, srq-run --verbs): the soft
 * device as a device of libibverbs, for any unmodified verbs program.
 *
 *   srq_ibv_interpose.c  the libibverbs entry points that would need a
 *                        kernel (device list, completion channels, GID and
 *                        pkey tables, device GUID) and the stat()/access()
 *                        a program makes on the device's /dev node
 *   srq_ibv_provider.c   the device object and the provider operations,
 *                        each one a call of the verbs layer (srq_verbs.h)
 *   srq_ibv_abi.c/.h     libibverbs' own functions, and its private
 *                        provider interface
 */
#ifndef SRQ_IBV_H_
#define SRQ_IBV_H_

#include "srq_ibv_abi.h"
#include "../srq_verbs.h"

#include <stdbool.h>

/* libibverbs' own definition of @name at @version; NULL if none
 * (srq_ibv_abi.c) */
void *srq_ibv_real(const char *name, const char *version);

/* The private functions, once resolved; NULL members: not offered */
extern srq_ibv_abi_t srq_ibv_abi;

/* Find the private functions in the running libibverbs (once): true if it
 * is the rdma-core we were written for, else says so on stderr, once */
bool srq_ibv_abi_ok(void);
/* Was it found already? (no lookup: safe where a lookup could recurse,
 * e.g. inside stat()) */
bool srq_ibv_abi_ready(void);

/* Our device, as libibverbs lists it */
struct ibv_device *srq_ibv_device(void);
/* Is @ctx a context of our device? */
bool srq_ibv_is_ours(struct ibv_context *ctx);
/* The verbs-layer device behind a context of ours */
srq_verbs_dev_t *srq_ibv_dev(struct ibv_context *ctx);

#endif
