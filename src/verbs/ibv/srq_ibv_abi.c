/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq libibverbs provider: finding libibverbs' own functions - the
 * public ones we stand in front of, by symbol version, and the private
 * provider interface (srq_ibv_abi.h), checked once.
 */
#define _GNU_SOURCE
#include "srq_ibv.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

srq_ibv_abi_t srq_ibv_abi;

static void *srq_ibv_libibverbs(void)
{
    static void *handle;

    if (handle == NULL) {
        handle = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
    }
    return handle;
}

void *srq_ibv_real(const char *name, const char *version)
{
    void *lib = srq_ibv_libibverbs();

    return (lib == NULL) ? NULL : dlvsym(lib, name, version);
}

static pthread_once_t srq_ibv_abi_once = PTHREAD_ONCE_INIT;
static bool srq_ibv_abi_found;

static void srq_ibv_abi_resolve(void)
{
    srq_ibv_abi_t abi;

    abi.init_and_alloc_context = srq_ibv_real("_verbs_init_and_alloc_context",
                                              SRQ_IBV_PRIVATE_ABI);
    abi.set_ops        = srq_ibv_real("verbs_set_ops", SRQ_IBV_PRIVATE_ABI);
    abi.uninit_context = srq_ibv_real("verbs_uninit_context",
                                      SRQ_IBV_PRIVATE_ABI);
    if ((abi.init_and_alloc_context == NULL) || (abi.set_ops == NULL) ||
        (abi.uninit_context == NULL)) {
        fprintf(stderr, "ucx-srq: libibverbs has no %s provider interface "
                "(not rdma-core 44's): %s is not offered\n",
                SRQ_IBV_PRIVATE_ABI, SRQ_IBV_DEV_NAME);
        return;
    }
    srq_ibv_abi = abi;
    __atomic_store_n(&srq_ibv_abi_found, true, __ATOMIC_RELEASE);
}

bool srq_ibv_abi_ready(void)
{
    return __atomic_load_n(&srq_ibv_abi_found, __ATOMIC_ACQUIRE);
}

bool srq_ibv_abi_ok(void)
{
    pthread_once(&srq_ibv_abi_once, srq_ibv_abi_resolve);
    return srq_ibv_abi_found;
}

