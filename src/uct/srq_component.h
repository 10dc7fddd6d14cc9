/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the UCT component "srq" and its registration.
 */
#ifndef UCT_SRQ_COMPONENT_H_
#define UCT_SRQ_COMPONENT_H_

#include <uct/base/uct_component.h>
#include <uct/base/uct_iface.h>

#define UCT_SRQ_COMPONENT_NAME  "srq"
#define UCT_SRQ_TL_NAME         "rc_srq"

/* UCX_SRQ_*: the md configuration (UCX_SRQ_SOFT) */
#define UCT_SRQ_MD_CONFIG_PREFIX "SRQ_"

extern uct_component_t uct_srq_component;
extern uct_tl_t        uct_rc_srq_tl;

#endif
