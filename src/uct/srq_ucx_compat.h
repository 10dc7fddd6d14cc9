/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: one shape for the internal UCX API that changes between releases
 * (UCX 1.13 .. 1.22 and master). configure probes the headers this build
 * uses and puts -DHAVE_UCX_* on the compile line (never a version number:
 * vendors backport, and 1.21 dropped an op 1.20 had); this header turns
 * them into the few types, signatures and calls the transport is written
 * against.
 */
#ifndef UCT_SRQ_UCX_COMPAT_H_
#define UCT_SRQ_UCX_COMPAT_H_

#include <uct/base/uct_md.h>
#include <uct/base/uct_component.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/memory/rcache.h>
#include <ucs/sys/math.h>
#ifdef HAVE_UCX_PTR_ARITH_H
#  include <ucs/sys/ptr_arith.h> /* ucs_align_up, once in ucs/sys/math.h */
#endif
#include <string.h>

/* md query: uct_md_attr_t and its .cap, or the flat uct_md_attr_v2_t */
#ifdef HAVE_UCX_MD_QUERY_V2
typedef uct_md_attr_v2_t uct_srq_md_attr_t;
#  define UCT_SRQ_MD_CAP(_attr) (*(_attr))
#else
typedef uct_md_attr_t uct_srq_md_attr_t;
#  define UCT_SRQ_MD_CAP(_attr) ((_attr)->cap)
#endif

/* Clears what the md query fills; a v2 caller's field mask stays */
static inline void uct_srq_md_attr_reset(uct_srq_md_attr_t *attr)
{
#ifdef HAVE_UCX_MD_QUERY_V2
    uint64_t field_mask = attr->field_mask;

    memset(attr, 0, sizeof(*attr));
    attr->field_mask = field_mask;
#else
    memset(attr, 0, sizeof(*attr));
#endif
#ifdef HAVE_UCX_MD_REG_ALIGNMENT
    attr->reg_alignment = 1; /* any address, any length */
#endif
}

/* mem_reg: the flags themselves, or params that may carry them */
#ifdef HAVE_UCX_MEM_REG_PARAMS
typedef const uct_md_mem_reg_params_t *uct_srq_mem_reg_arg_t;

static inline unsigned uct_srq_mem_reg_flags(uct_srq_mem_reg_arg_t params)
{
    return (params->field_mask & UCT_MD_MEM_REG_FIELD_FLAGS) ?
           params->flags : 0;
}
#else
typedef unsigned uct_srq_mem_reg_arg_t;

static inline unsigned uct_srq_mem_reg_flags(uct_srq_mem_reg_arg_t flags)
{
    return flags;
}
#endif

/* mkey_pack: the region's address and length come before the params */
#ifdef HAVE_UCX_MKEY_PACK_ADDRESS
#  define UCT_SRQ_MKEY_PACK_REGION_ARGS void *address, size_t length,
#else
#  define UCT_SRQ_MKEY_PACK_REGION_ARGS
#endif

/* rkey_unpack: params between the packed key and the results */
#ifdef HAVE_UCX_RKEY_UNPACK_PARAMS
#  define UCT_SRQ_RKEY_UNPACK_PARAMS_ARG const uct_rkey_unpack_params_t *params,
#else
#  define UCT_SRQ_RKEY_UNPACK_PARAMS_ARG
#endif

/* A parser type's doc function (none before it was added) */
#ifdef HAVE_UCX_PARSER_DOC
#  define UCT_SRQ_CONFIG_PARSER_DOC .doc = ucs_config_doc_nop,
#else
#  define UCT_SRQ_CONFIG_PARSER_DOC
#endif

/* Reads a configuration table from the environment */
static inline ucs_status_t
uct_srq_config_fill(void *opts, ucs_config_global_list_entry_t *entry,
                    const char *env_prefix)
{
#ifdef HAVE_UCX_FILL_OPTS_ENTRY
    return ucs_config_parser_fill_opts(opts, entry, env_prefix, 0);
#else
    return ucs_config_parser_fill_opts(opts, entry->table, env_prefix,
                                       entry->prefix, 0);
#endif
}

/* Page-aligned regions of a registration cache: the alignment is a
 * parameter of the cache, or (later releases) of each lookup */
static inline void uct_srq_rcache_params_align(ucs_rcache_params_t *params,
                                               size_t alignment)
{
#ifdef HAVE_UCX_RCACHE_PARAMS_ALIGNMENT
    params->alignment     = alignment;
    params->max_alignment = alignment;
#endif
}

static inline ucs_status_t
uct_srq_rcache_get(ucs_rcache_t *rcache, void *address, size_t length,
                   size_t alignment, int prot, void *arg,
                   ucs_rcache_region_t **region_p)
{
#ifdef HAVE_UCX_RCACHE_GET_ALIGNMENT
    return ucs_rcache_get(rcache, address, length, alignment, prot, arg,
                          region_p);
#else
    return ucs_rcache_get(rcache, address, length, prot, arg, region_p);
#endif
}

/* A memory pool whose chunks all hold elems_per_chunk elements */
static inline ucs_status_t
uct_srq_ucs_mpool_init(ucs_mpool_t *mp, size_t priv_size, size_t elem_size,
                       size_t align_offset, size_t alignment,
                       unsigned elems_per_chunk, unsigned max_elems,
                       ucs_mpool_ops_t *ops, const char *name)
{
#ifdef HAVE_UCX_MPOOL_PARAMS
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.priv_size       = priv_size;
    params.elem_size       = elem_size;
    params.align_offset    = align_offset;
    params.alignment       = alignment;
    params.elems_per_chunk = elems_per_chunk;
    params.max_elems       = max_elems;
    params.ops             = ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, priv_size, elem_size, align_offset, alignment,
                          elems_per_chunk, max_elems, ops, name);
#endif
}

#endif
