/*
 * What the UCT benchmark programs share: failing loudly, finding the srq
 * component and the counters query of the preloaded plugin.
 */
#ifndef BENCH_UCT_H_
#define BENCH_UCT_H_

#include <uct/api/uct.h>
#include <uct/ucx_srq.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* the program's name in its messages; each main() sets it */
extern const char *bench_prog;

#define CHECK(_e) \
    do { \
        ucs_status_t _s = (_e); \
        if (_s != UCS_OK) { \
            fprintf(stderr, "%s[%d]: %s: %s\n", bench_prog, (int)getpid(), \
                    #_e, ucs_status_string(_s)); \
            exit(1); \
        } \
    } while (0)

typedef ucs_status_t (*query_func_t)(uct_iface_h, uct_srq_iface_counters_t*);

/* The srq component; exits when the plugin is not loaded */
uct_component_h bench_srq_component(void);

/* uct_srq_iface_query_counters of the preloaded plugin; exits without it */
query_func_t bench_counters_query(void);

#endif
