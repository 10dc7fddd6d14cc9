/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq libibverbs provider: the entry points we stand in front of.
 *
 * libibverbs has no way to add a device without a kernel, and a few of its
 * calls go to the kernel or sysfs whatever the provider says. This library,
 * preloaded (srq-run --verbs), defines those calls itself: for our device
 * it answers, for any other it calls libibverbs' own definition (found by
 * symbol version in libibverbs itself, so a program's references to any
 * version of a call reach the same place). When the running libibverbs is
 * not the one the provider interface was written for (srq_ibv_abi.h), the
 * device is not listed and every call goes straight through: a program
 * runs as without the library.
 */
#define _GNU_SOURCE
#include "srq_ibv.h"
#include "../soft/srq_soft_api.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define SRQ_IBV_REAL(_var, _name, _version) \
    static __typeof__(&_name) _var; \
    if (_var == NULL) { \
        _var = (__typeof__(&_name))srq_ibv_real(#_name, _version); \
    }

/* ---- importing a context ----------------------------------------------- */

/* A context of our device has /dev/null for its cmd_fd (srq_ibv_provider.c) */
static bool srq_ibv_is_our_cmd_fd(int fd)
{
    struct stat st;

    return (fstat(fd, &st) == 0) && S_ISCHR(st.st_mode) &&
           (major(st.st_rdev) == 1) && (minor(st.st_rdev) == 3);
}

/*
 * A context of our device cannot be imported, as one of a provider without
 * import_context cannot (EOPNOTSUPP); libibverbs' own import would compare
 * the descriptor with every listed device's sysfs node, which ours has not
 */
struct ibv_context *ibv_import_device(int cmd_fd)
{
    SRQ_IBV_REAL(real, ibv_import_device, "IBVERBS_1.10");

    if ((real == NULL) || srq_ibv_is_our_cmd_fd(cmd_fd)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return real(cmd_fd);
}

/* ---- the device list ---------------------------------------------------- */

/*
 * Our list is libibverbs' list with our device after its devices. The
 * slot after the terminating NULL keeps libibverbs' own list, which
 * ibv_free_device_list gives back to it.
 */
struct ibv_device **ibv_get_device_list(int *num_devices)
{
    SRQ_IBV_REAL(real_get, ibv_get_device_list, "IBVERBS_1.1");
    SRQ_IBV_REAL(real_free, ibv_free_device_list, "IBVERBS_1.1");
    struct ibv_device **real = NULL, **list;
    int n = 0, i;

    if (real_get != NULL) {
        /* NULL (ENOSYS) where the kernel has no RDMA support at all */
        real = real_get(&n);
    }
    if (!srq_ibv_abi_ok()) {
        if (num_devices != NULL) {
            *num_devices = n;
        }
        return real;
    }
    if (real == NULL) {
        n = 0;
    }
    list = calloc(n + 3, sizeof(*list));
    if (list == NULL) {
        if (real != NULL) {
            real_free(real);
        }
        errno = ENOMEM;
        return NULL;
    }
    for (i = 0; i < n; ++i) {
        list[i] = real[i];
    }
    list[n]     = srq_ibv_device();
    list[n + 1] = NULL;
    list[n + 2] = (struct ibv_device*)real;
    if (num_devices != NULL) {
        *num_devices = n + 1;
    }
    return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
    SRQ_IBV_REAL(real_free, ibv_free_device_list, "IBVERBS_1.1");
    int n;

    if ((list == NULL) || (real_free == NULL)) {
        return;
    }
    if (!srq_ibv_abi_ok()) {
        real_free(list);
        return;
    }
    for (n = 0; list[n] != NULL; ++n) {
    }
    if (list[n + 1] != NULL) {
        real_free((struct ibv_device**)list[n + 1]);
    }
    free(list);
}

/* ---- completion channels (a kernel object in libibverbs) --------------- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
    SRQ_IBV_REAL(real, ibv_create_comp_channel, "IBVERBS_1.0");

    if (srq_ibv_is_ours(ctx)) {
        return srq_verbs_create_comp_channel(srq_ibv_dev(ctx));
    }
    return (real == NULL) ? NULL : real(ctx);
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    SRQ_IBV_REAL(real, ibv_destroy_comp_channel, "IBVERBS_1.0");

    if (srq_ibv_is_ours(channel->context)) {
        return srq_verbs_destroy_comp_channel(srq_ibv_dev(channel->context),
                                              channel);
    }
    return (real == NULL) ? ENOSYS : real(channel);
}

/*
 * libibverbs reads an event from the channel's fd, as a kernel writes it;
 * ours is an epoll set that a peer's packet makes readable (soft_cq.c), so
 * that the sleeper wakes at once and moves the device itself
 */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                     void **cq_context)
{
    SRQ_IBV_REAL(real, ibv_get_cq_event, "IBVERBS_1.1");
    int ret;

    if (srq_ibv_is_ours(channel->context)) {
        ret = srq_verbs_get_cq_event(srq_ibv_dev(channel->context), channel,
                                     cq, cq_context);
        if (ret != 0) {
            errno = ret;
            return -1;
        }
        return 0;
    }
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return real(channel, cq, cq_context);
}

/* ---- GID and pkey tables, GUID (sysfs in libibverbs) ------------------- */

/*
 * An IB port's GID table as an HCA's sysfs shows it: entry 0 holds the
 * port's GID, the others up to gid_tbl_len exist and are empty (all zero),
 * so ibv_query_gid reads them as zeros (programs written for RoCE query
 * index 1 or 3 and go on). An empty entry is no valid GID: the queries that
 * give valid entries only (_ibv_query_gid_ex, ibv_query_gid_type) refuse it
 * with ENODATA, as libibverbs does for an HCA's.
 */
static int srq_ibv_port_gid(struct ibv_context *ctx, uint8_t port_num,
                            int index, union ibv_gid *gid)
{
    srq_verbs_port_addr_t addr;
    struct ibv_port_attr attr;
    int ret;

    ret = srq_verbs_query_port(srq_ibv_dev(ctx), port_num, &attr);
    if (ret != 0) {
        return ret;
    }
    if ((index < 0) || (index >= attr.gid_tbl_len)) {
        return EINVAL;
    }
    if (index != 0) {
        memset(gid->raw, 0, sizeof(gid->raw));
        return ENODATA;
    }
    ret = srq_verbs_port_addr(srq_ibv_dev(ctx), port_num, &addr);
    if (ret == 0) {
        memcpy(gid->raw, addr.gid, sizeof(gid->raw));
    }
    return ret;
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port_num, int index,
                  union ibv_gid *gid)
{
    SRQ_IBV_REAL(real, ibv_query_gid, "IBVERBS_1.1");

    int ret;

    if (srq_ibv_is_ours(ctx)) {
        ret = srq_ibv_port_gid(ctx, port_num, index, gid);
        return ((ret == 0) || (ret == ENODATA)) ? 0 : -1; /* empty: zeros */
    }
    return (real == NULL) ? -1 : real(ctx, port_num, index, gid);
}

int ibv_query_pkey(struct ibv_context *ctx, uint8_t port_num, int index,
                   __be16 *pkey)
{
    SRQ_IBV_REAL(real, ibv_query_pkey, "IBVERBS_1.1");
    struct ibv_port_attr attr;

    if (srq_ibv_is_ours(ctx)) {
        if ((index != 0) ||
            (srq_verbs_query_port(srq_ibv_dev(ctx), port_num, &attr) != 0)) {
            return -1;
        }
        *pkey = htobe16(0xffff); /* the default partition, full member */
        return 0;
    }
    return (real == NULL) ? -1 : real(ctx, port_num, index, pkey);
}

/* One entry of our GID table, as the _ex queries give it */
static int srq_ibv_gid_entry(struct ibv_context *ctx, uint32_t port_num,
                             uint32_t index, struct ibv_gid_entry *entry)
{
    int ret;

    memset(entry, 0, sizeof(*entry));
    ret = srq_ibv_port_gid(ctx, port_num, index, &entry->gid);
    if (ret == 0) {
        entry->gid_index = index;
        entry->port_num  = port_num;
        entry->gid_type  = IBV_GID_TYPE_IB;
    }
    return ret;
}

int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port_num,
                      uint32_t gid_index, struct ibv_gid_entry *entry,
                      uint32_t flags, size_t entry_size)
{
    SRQ_IBV_REAL(real, _ibv_query_gid_ex, "IBVERBS_1.11");

    if (srq_ibv_is_ours(ctx)) {
        if ((flags != 0) || (entry_size < sizeof(*entry))) {
            return EINVAL;
        }
        return srq_ibv_gid_entry(ctx, port_num, gid_index, entry);
    }
    return (real == NULL) ? ENOSYS :
           real(ctx, port_num, gid_index, entry, flags, entry_size);
}

/*
 * rdma-core's private ibv_query_gid_type (pyverbs' Context.query_gid_type)
 * reads the GID entry through its internal query, which asks the kernel
 * (an ioctl on the context's cmd_fd, which for our device is no uverbs file)
 * and never the provider or the public _ibv_query_gid_ex we answer: so we
 * answer it too. Our GIDs are IB GIDs, which the sysfs type names
 * "IB/RoCE v1".
 */
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port_num,
                       unsigned int index, enum srq_ibv_gid_type_sysfs *type)
{
    SRQ_IBV_REAL(real, ibv_query_gid_type, SRQ_IBV_PRIVATE_ABI);
    struct ibv_gid_entry entry;
    int ret;

    if (!srq_ibv_is_ours(ctx)) {
        if (real == NULL) {
            errno = ENOSYS;
            return -1;
        }
        return real(ctx, port_num, index, type);
    }
    ret = srq_ibv_gid_entry(ctx, port_num, index, &entry);
    if (ret != 0) {
        errno = ret;
        return -1;
    }
    *type = SRQ_IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
    return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *ctx,
                             struct ibv_gid_entry *entries,
                             size_t max_entries, uint32_t flags,
                             size_t entry_size)
{
    SRQ_IBV_REAL(real, _ibv_query_gid_table, "IBVERBS_1.11");
    struct ibv_device_attr attr;
    size_t n = 0;
    uint8_t port;

    if (!srq_ibv_is_ours(ctx)) {
        return (real == NULL) ? -ENOSYS :
               real(ctx, entries, max_entries, flags, entry_size);
    }
    if ((flags != 0) || (entry_size < sizeof(*entries))) {
        return -EINVAL;
    }
    if (srq_verbs_query_device(srq_ibv_dev(ctx), &attr) != 0) {
        return -EIO;
    }
    for (port = 1; port <= attr.phys_port_cnt; ++port, ++n) {
        if (n >= max_entries) {
            return -EINVAL;
        }
        srq_ibv_gid_entry(ctx, port, 0,
                          (struct ibv_gid_entry*)((char*)entries +
                                                  n * entry_size));
    }
    return (ssize_t)n;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
    SRQ_IBV_REAL(real, ibv_get_device_guid, "IBVERBS_1.1");

    if (device == srq_ibv_device()) {
        /* the node GUID every context's ibv_query_device gives */
        return htobe64(SRQ_SOFT_NODE_GUID);
    }
    return (real == NULL) ? 0 : real(device);
}

/* ---- the device's node, /dev/infiniband/uverbs-soft0 --------------------
 *
 * UCX checks that a device's uverbs node is a character device it may open
 * read-write before it uses the device; ours has no node, and behaves as
 * if it had one: a character device, mode 0666.
 */
static bool srq_ibv_is_node(const char *path)
{
    return (path != NULL) && srq_ibv_abi_ready() &&
           (strcmp(path, SRQ_IBV_UVERBS_PATH) == 0);
}

static void srq_ibv_node_stat(struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_mode = S_IFCHR | 0666;
    st->st_uid  = getuid();
    st->st_gid  = getgid();
}

int stat(const char *path, struct stat *st)
{
    static int (*real)(const char*, struct stat*);

    if (srq_ibv_is_node(path)) {
        srq_ibv_node_stat(st);
        return 0;
    }
    if (real == NULL) {
        real = (int(*)(const char*, struct stat*))dlsym(RTLD_NEXT, "stat");
    }
    return real(path, st);
}

int access(const char *path, int mode)
{
    static int (*real)(const char*, int);

    if (srq_ibv_is_node(path)) {
        return 0;
    }
    if (real == NULL) {
        real = (int(*)(const char*, int))dlsym(RTLD_NEXT, "access");
    }
    return real(path, mode);
}
