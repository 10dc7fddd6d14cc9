/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the UCT test suites: interfaces on soft0:1 opened through the
 * public UCT API, connected with CONNECT_TO_IFACE, and progressed until a
 * condition holds or a deadline passes.
 */
#ifndef SRQ_UCT_FIXTURE_H_
#define SRQ_UCT_FIXTURE_H_

#include <gtest/gtest.h>

extern "C" {
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/debug/log_def.h>
#include <uct/ucx_srq.h>
}

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace srq_test {

/* Sets (or with NULL unsets) an environment variable for its lifetime */
class env_guard {
public:
    env_guard(const char *name, const char *value) : m_name(name)
    {
        const char *old = getenv(name);
        m_had           = (old != NULL);
        if (m_had) {
            m_old = old;
        }
        if (value == NULL) {
            unsetenv(name);
        } else {
            setenv(name, value, 1);
        }
    }
    ~env_guard()
    {
        if (m_had) {
            setenv(m_name.c_str(), m_old.c_str(), 1);
        } else {
            unsetenv(m_name.c_str());
        }
    }

private:
    std::string m_name, m_old;
    bool        m_had;
};

/* The srq component, or NULL */
uct_component_h srq_component();

/* A symbol of the loaded plugin, found by its soname whether it was
 * preloaded or loaded RTLD_LOCAL by the plugin scan of UCX 1.22+ (where
 * dlsym(RTLD_DEFAULT) does not see it); NULL if there is none */
void *plugin_symbol(const char *name);

/*
 * Does @md reach soft0 through the plugin's built-in listing (not through
 * libibverbs, as under srq-run --verbs, where the device is an rdma-core
 * device to the plugin)? Tests of the soft device's internals (its
 * statistics and test hooks act on the plugin's own instance) need it.
 */
bool builtin_soft(uct_md_h md);

/* Skip the test unless @md's device is the built-in soft0 */
#define SRQ_TEST_REQUIRE_BUILTIN_SOFT(_md) \
    do { \
        if (!srq_test::builtin_soft(_md)) { \
            GTEST_SKIP() << "tests the built-in soft0's internals; here " \
                            "soft0 is reached through libibverbs"; \
        } \
    } while (0)

/* uct_config_modify of an rc_srq interface configuration by the variable's
 * name without UCX_RC_SRQ_ (as "TX_QUEUE_LEN") */
ucs_status_t config_modify(uct_iface_config_t *config, const std::string &name,
                           const std::string &value);

typedef std::map<std::string, std::string> config_t;

/* How to open an entity's interface */
struct entity_params {
    config_t             config;              /* UCX_RC_SRQ_* overrides */
    unsigned             rx_headroom = 0;
    uct_error_handler_t  err_handler = NULL;
    void                *err_arg     = NULL;
    const class entity  *share       = NULL;  /* use this one's md and worker */
    /* tag-matching offload's unexpected messages (TM_ENABLE) */
    uct_tag_unexp_eager_cb_t eager_cb  = NULL;
    void                *eager_arg   = NULL;
    uct_tag_unexp_rndv_cb_t  rndv_cb   = NULL;
    void                *rndv_arg    = NULL;
};

/* A memory domain + worker + interface on soft0:1 */
class entity {
public:
    entity(const config_t &config = {});
    explicit entity(const entity_params &params);
    ~entity();

    uct_iface_h iface() const { return m_iface; }
    uct_md_h md() const { return m_md; }
    uct_worker_h worker() const { return m_worker; }
    const uct_iface_attr_t &attr() const { return m_attr; }

    /* An endpoint connected to @peer's interface */
    uct_ep_h connect(const entity &peer);

    unsigned progress() { return uct_worker_progress(m_worker); }

    /* the interface's counters (uct_srq_iface_query_counters of the
     * preloaded plugin) */
    uct_srq_iface_counters_t counters() const;

    std::vector<char> dev_addr() const;
    std::vector<char> iface_addr() const;

private:
    void init(const entity_params &params);
    void init_or_cleanup(const entity_params &params);
    void cleanup();

    bool                 m_owner        = true;   /* of md and worker */
    uct_md_config_t     *m_md_config    = NULL;
    uct_md_h             m_md           = NULL;
    ucs_async_context_t *m_async        = NULL;
    uct_worker_h         m_worker       = NULL;
    uct_iface_config_t  *m_iface_config = NULL;
    uct_iface_h          m_iface        = NULL;
    uct_iface_attr_t     m_attr;
    std::vector<uct_ep_h> m_eps;
};

/* Progress every entity until @cond is true or @seconds passed */
bool progress_until(const std::vector<entity*> &entities,
                    const std::function<bool()> &cond, double seconds = 10.0);

/* Progress @e until it holds no connection, live or failed and kept, or
 * @seconds passed */
bool progress_until_no_connections(entity &e, double seconds = 10.0);

/* Call @op until it says anything but UCS_ERR_NO_RESOURCE, progressing
 * every entity between tries, for at most @seconds: its last status */
ucs_status_t retry_op(const std::vector<entity*> &entities,
                      const std::function<ucs_status_t()> &op,
                      double seconds = 10.0);

/* A registered buffer */
class mem_buffer {
public:
    mem_buffer(uct_md_h md, size_t size, char fill = 0);
    ~mem_buffer();

    char *ptr() { return m_buf.data(); }
    size_t size() const { return m_buf.size(); }
    uct_mem_h memh() const { return m_memh; }
    uint64_t addr() const { return (uintptr_t)m_buf.data(); }
    /* unpacked remote key of this buffer (for the same component) */
    uct_rkey_t rkey();

private:
    uct_md_h          m_md;
    std::vector<char> m_buf;
    uct_mem_h         m_memh = UCT_MEM_HANDLE_NULL;
    uct_rkey_bundle_t m_rkey = {};
    bool              m_rkey_valid = false;
};

/* A completion counting how many times it fired, and its last status */
struct test_comp {
    uct_completion_t comp;
    int              done = 0;
    ucs_status_t     status = UCS_OK;

    explicit test_comp(int count = 1)
    {
        comp.func   = cb;
        comp.count  = count;
        comp.status = UCS_OK;
    }
    void reset(int count = 1)
    {
        comp.count  = count;
        comp.status = UCS_OK;
        done        = 0;
    }
    static void cb(uct_completion_t *c)
    {
        test_comp *self = reinterpret_cast<test_comp*>(c);
        self->done++;
        self->status = c->status;
    }
};

/* Log lines of @level or more urgent, from push to pop */
struct log_capture {
    explicit log_capture(ucs_log_level_t level);
    ~log_capture();

    static ucs_log_func_rc_t handler(const char *file, unsigned line,
                                     const char *func, ucs_log_level_t level,
                                     const ucs_log_component_config_t *comp,
                                     const char *fmt, va_list ap);
    /* a captured line holds @text */
    static bool has(const std::string &text);

    static ucs_log_level_t s_level;
    static std::vector<std::string> s_lines;
};

/* UCX_RC_SRQ_<name>=<value> in the environment while it lives */
struct scoped_env {
    scoped_env(const std::string &name, const char *value);
    ~scoped_env();
    std::string m_name;
};

} // namespace srq_test

#endif
