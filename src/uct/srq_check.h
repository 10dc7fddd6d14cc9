/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq: range checks of configuration values. Every rc_srq value is
 * checked before the interface creates anything, and a value out of range
 * refuses the interface with one error naming the variable and its range.
 */
#ifndef UCT_SRQ_CHECK_H_
#define UCT_SRQ_CHECK_H_

#include <ucs/debug/log_def.h>
#include <ucs/type/status.h>

/* Refuse the interface (return UCS_ERR_INVALID_PARAM from the caller) with an
 * error naming UCX_RC_SRQ_<_name>, when @_val is outside [@_min, @_max] */
#define UCT_SRQ_CHECK_RANGE(_name, _val, _min, _max) \
    do { \
        if (((_val) < (_min)) || ((_val) > (_max))) { \
            ucs_error("srq: UCX_RC_SRQ_" _name "=%lu is out of range " \
                      "(%lu..%lu)", (unsigned long)(_val), \
                      (unsigned long)(_min), (unsigned long)(_max)); \
            return UCS_ERR_INVALID_PARAM; \
        } \
    } while (0)

/* The same for a time in seconds, both ends included */
#define UCT_SRQ_CHECK_TIME_RANGE(_name, _val, _min, _max) \
    do { \
        if (((_val) < (_min)) || ((_val) > (_max))) { \
            ucs_error("srq: UCX_RC_SRQ_" _name "=%gs is out of range " \
                      "(%gs..%gs)", (double)(_val), (double)(_min), \
                      (double)(_max)); \
            return UCS_ERR_INVALID_PARAM; \
        } \
    } while (0)

#endif
