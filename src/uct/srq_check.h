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
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* What the user wrote in UCX_RC_SRQ_<@name>, or NULL */
static inline const char *uct_srq_config_env(const char *name)
{
    char var[64];

    snprintf(var, sizeof(var), "UCX_RC_SRQ_%s", name);
    return getenv(var);
}

/* The number the user wrote for @name when UCX's parser made @val of
 * something else: its unsigned parser wraps 4294967296 to 0, which is in
 * range for some variables and a value never written for the others. NULL
 * when not written, or not a plain decimal number (-1, units, "inf": what
 * UCX made of those stands) */
static inline const char *uct_srq_config_wrapped(const char *name,
                                                 unsigned long val)
{
    const char *s = uct_srq_config_env(name);
    unsigned long long v;
    char *end;

    if ((s == NULL) || !isdigit((unsigned char)s[0])) {
        return NULL;
    }
    errno = 0;
    v     = strtoull(s, &end, 10);
    if (*end != '\0') {
        return NULL;
    }
    return ((errno == ERANGE) || (v != val)) ? s : NULL;
}

/* Refuse the interface (return UCS_ERR_INVALID_PARAM from the caller) with an
 * error naming UCX_RC_SRQ_<_name> and the value the user wrote, when @_val is
 * outside [@_min, @_max] or UCX's parser wrapped what was written */
#define UCT_SRQ_CHECK_RANGE(_name, _val, _min, _max) \
    do { \
        const char *_written = uct_srq_config_wrapped(_name, \
                                                      (unsigned long)(_val)); \
        if (_written != NULL) { \
            ucs_error("srq: UCX_RC_SRQ_" _name "=%s is out of range " \
                      "(%lu..%lu)", _written, (unsigned long)(_min), \
                      (unsigned long)(_max)); \
            return UCS_ERR_INVALID_PARAM; \
        } \
        if (((_val) < (_min)) || ((_val) > (_max))) { \
            ucs_error("srq: UCX_RC_SRQ_" _name "=%lu is out of range " \
                      "(%lu..%lu)", (unsigned long)(_val), \
                      (unsigned long)(_min), (unsigned long)(_max)); \
            return UCS_ERR_INVALID_PARAM; \
        } \
    } while (0)

/* A variable the user set that the current mode does not read: said once
 * per interface, as UCX says of variables it does not know */
#define UCT_SRQ_CHECK_UNUSED(_name, _why) \
    do { \
        const char *_written = uct_srq_config_env(_name); \
        if (_written != NULL) { \
            ucs_warn("srq: UCX_RC_SRQ_" _name "=%s is not used: %s", \
                     _written, _why); \
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
