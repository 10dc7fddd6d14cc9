/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the rc_srq interface: one SRQ, one send CQ and one receive CQ
 * for all the RC connections of the interface.
 */
#ifndef UCT_SRQ_IFACE_H_
#define UCT_SRQ_IFACE_H_

#include "srq_types.h"

extern ucs_config_field_t uct_srq_iface_config_table[];

#endif
