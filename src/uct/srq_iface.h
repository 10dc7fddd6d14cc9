/*
 * ucx-srq: the rc_srq interface.
 */
#ifndef UCT_SRQ_IFACE_H_
#define UCT_SRQ_IFACE_H_

#include "srq_md.h"

#include <uct/base/uct_iface.h>

typedef struct uct_srq_iface_config {
    uct_iface_config_t  super;
} uct_srq_iface_config_t;

typedef struct uct_srq_iface {
    uct_base_iface_t       super;
    uint8_t                port_num;
    srq_verbs_port_addr_t  port_addr;   /* this interface's device address */
} uct_srq_iface_t;

extern ucs_config_field_t uct_srq_iface_config_table[];

#endif
