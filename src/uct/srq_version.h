/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: the UCX version guard.
 */
#ifndef UCT_SRQ_VERSION_H_
#define UCT_SRQ_VERSION_H_

#include <ucs/type/status.h>

/*
 * Compare the runtime UCX version with the one this plugin was compiled
 * against. The plugin reaches into UCX internals (uct_base_iface_t, the
 * UCS_CLASS machinery), whose layouts change between releases, so any
 * difference is refused: UCS_ERR_UNSUPPORTED, after one error line saying
 * what was found and what to do.
 */
ucs_status_t uct_srq_version_check(void);

#endif
