/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: reachability. A peer's device address is its port address
 * (srq_verbs_port_addr_t); the verbs layer says whether this port can
 * build an address handle to it, and if not, why (an errno). The v2 call
 * hands that reason back in words, as UCX's own transports do: UCP prints
 * it when it finds no transport to a peer.
 */
#include "srq_iface_reach.h"

#include <ucs/sys/string.h>
#include <stdarg.h>
#include <errno.h>
#include <string.h>

/* 0 when this port reaches @dev_addr, else the verbs layer's errno */
static int uct_srq_iface_reach_error(uct_srq_iface_t *iface,
                                     const uct_device_addr_t *dev_addr)
{
    struct ibv_ah_attr ah_attr;

    return srq_verbs_ah_attr(iface->dev, iface->port_num,
                             (const srq_verbs_port_addr_t*)dev_addr,
                             &ah_attr);
}

/* One side's messages start with a TMH and the other's do not: neither
 * could read the other's (srq_tm.h) */
static int uct_srq_iface_tm_differs(uct_srq_iface_t *iface,
                                    const uct_iface_addr_t *iface_addr)
{
    const uct_srq_iface_addr_t *addr = (const uct_srq_iface_addr_t*)iface_addr;

    return !!(addr->flags & UCT_SRQ_IFACE_ADDR_FLAG_TM) != !!iface->tm.enabled;
}

int uct_srq_iface_is_reachable(const uct_iface_h tl_iface,
                               const uct_device_addr_t *dev_addr,
                               const uct_iface_addr_t *iface_addr)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);

    if ((dev_addr == NULL) || (iface_addr == NULL) ||
        uct_srq_iface_tm_differs(iface, iface_addr)) {
        return 0;
    }
    return uct_srq_iface_reach_error(iface, dev_addr) == 0;
}

#ifdef HAVE_UCX_IFACE_IS_REACHABLE_V2

/* Not reachable: say why in the caller's info string, if it gave one */
static int UCS_F_PRINTF(2, 3)
uct_srq_iface_unreachable(const uct_iface_is_reachable_params_t *params,
                          const char *fmt, ...)
{
    const uint64_t info = UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING |
                          UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH;
    va_list ap;

    if (((params->field_mask & info) == info) &&
        (params->info_string != NULL) && (params->info_string_length > 0)) {
        va_start(ap, fmt);
        ucs_vsnprintf_safe(params->info_string, params->info_string_length,
                           fmt, ap);
        va_end(ap);
    }
    return 0;
}

static const char *uct_srq_dev_kind_str(unsigned kind)
{
    switch (kind) {
    case SRQ_VERBS_DEV_SOFT:
        return "soft0";
    case SRQ_VERBS_DEV_RDMA:
        return "rdma-core device";
    default:
        return "unknown device kind";
    }
}

/* Why the verbs layer's @err keeps this port from @addr, in words */
static int uct_srq_iface_unreachable_port(
        uct_srq_iface_t *iface, const uct_iface_is_reachable_params_t *params,
        const srq_verbs_port_addr_t *addr, int err)
{
    if (addr->kind != iface->port_addr.kind) {
        return uct_srq_iface_unreachable(params, "local %s remote %s",
                   uct_srq_dev_kind_str(iface->port_addr.kind),
                   uct_srq_dev_kind_str(addr->kind));
    }
    switch (err) {
    case EHOSTUNREACH:
        return uct_srq_iface_unreachable(params, "no route to the remote "
                   "%s port from %s:%u (another host, or no address)",
                   uct_srq_dev_kind_str(addr->kind),
                   srq_verbs_dev_name(iface->dev), iface->port_num);
    case ENETUNREACH:
        return uct_srq_iface_unreachable(params, "remote port on another "
                   "subnet than %s:%u", srq_verbs_dev_name(iface->dev),
                   iface->port_num);
    default:
        return uct_srq_iface_unreachable(params, "invalid remote address "
                   "(%s)", strerror(err));
    }
}

/* UCP asks through the v2 call: the addresses it has, maybe their lengths
 * and a scope, maybe a buffer for the reason of a "no" */
int uct_srq_iface_is_reachable_v2(const uct_iface_h tl_iface,
                                  const uct_iface_is_reachable_params_t *params)
{
    uct_srq_iface_t *iface = ucs_derived_of(tl_iface, uct_srq_iface_t);
    const srq_verbs_port_addr_t *addr;
    int err;

    if (!(params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR) ||
        (params->device_addr == NULL)) {
        return uct_srq_iface_unreachable(params, "no device address");
    }
    if (!(params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR) ||
        (params->iface_addr == NULL)) {
        return uct_srq_iface_unreachable(params, "no interface address");
    }
#ifdef HAVE_UCX_REACHABLE_ADDR_LENGTH
    /* a shorter address than a port's is read no further */
    if ((params->field_mask &
         UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH) &&
        (params->device_addr_length < sizeof(*addr))) {
        return uct_srq_iface_unreachable(params, "device address of %zu "
                   "bytes, rc_srq's has %zu", params->device_addr_length,
                   sizeof(*addr));
    }
#endif

    if (uct_srq_iface_tm_differs(iface, params->iface_addr)) {
        return uct_srq_iface_unreachable(params, "tag-matching offload "
                   "(RC_SRQ_TM_ENABLE) on one side only");
    }

    addr = (const srq_verbs_port_addr_t*)params->device_addr;
    err  = uct_srq_iface_reach_error(iface, params->device_addr);
    if (err != 0) {
        return uct_srq_iface_unreachable_port(iface, params, addr, err);
    }
#ifdef HAVE_UCX_REACHABLE_SCOPE
    /* scope "device": only an interface on this very port */
    if ((params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_SCOPE) &&
        (params->scope == UCT_IFACE_REACHABILITY_SCOPE_DEVICE) &&
        memcmp(addr, &iface->port_addr, sizeof(*addr))) {
        return uct_srq_iface_unreachable(params, "device address is "
                                         "different");
    }
#endif
    return 1;
}
#endif
