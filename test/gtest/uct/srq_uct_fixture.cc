/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the UCT test suites.
 */
#include "srq_uct_fixture.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <thread>
#include <dlfcn.h>

#include <verbs/srq_verbs.h>

namespace srq_test {

void *plugin_symbol(const char *name)
{
    void *plugin = dlopen("libuct_srq.so", RTLD_LAZY | RTLD_NOLOAD);
    void *sym    = (plugin == NULL) ? NULL : dlsym(plugin, name);

    if (plugin != NULL) {
        dlclose(plugin); /* it stays loaded by whoever loaded it */
    }
    return sym;
}

bool builtin_soft(uct_md_h md)
{
    typedef srq_verbs_dev_t *(*md_dev_func_t)(uct_md_h);
    typedef srq_verbs_dev_kind_t (*dev_kind_func_t)(const srq_verbs_dev_t*);
    auto md_dev   = (md_dev_func_t)plugin_symbol("uct_srq_md_verbs_dev");
    auto dev_kind = (dev_kind_func_t)plugin_symbol("srq_verbs_dev_kind");
    srq_verbs_dev_t *dev = (md_dev == NULL) ? NULL : md_dev(md);

    return (dev != NULL) && (dev_kind != NULL) &&
           (dev_kind(dev) == SRQ_VERBS_DEV_SOFT);
}

ucs_status_t config_modify(uct_iface_config_t *config, const std::string &name,
                           const std::string &value)
{
    /* UCX 1.13 matches the name as given; later releases match a field of
     * the transport's own table only with the table prefix (RC_SRQ_), the
     * fields of its sub-tables either way */
    ucs_status_t status = uct_config_modify(config, name.c_str(),
                                            value.c_str());
    if (status == UCS_ERR_NO_ELEM) {
        status = uct_config_modify(config, ("RC_SRQ_" + name).c_str(),
                                   value.c_str());
    }
    return status;
}

uct_component_h srq_component()
{
    static uct_component_h srq = NULL;
    uct_component_h *components;
    uct_component_attr_t attr;
    unsigned num;

    if (srq != NULL) {
        return srq;
    }
    if (uct_query_components(&components, &num) != UCS_OK) {
        return NULL;
    }
    for (unsigned i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "srq")) {
            srq = components[i];
        }
    }
    /* the handles stay valid for the life of the process */
    uct_release_component_list(components);
    return srq;
}

#define SRQ_TEST_CHECK(_expr) \
    do { \
        ucs_status_t _s = (_expr); \
        if (_s != UCS_OK) { \
            throw std::runtime_error(std::string(#_expr) + ": " + \
                                     ucs_status_string(_s)); \
        } \
    } while (0)

entity::entity(const config_t &config)
{
    entity_params params;

    params.config = config;
    init_or_cleanup(params);
}

entity::entity(const entity_params &params)
{
    init_or_cleanup(params);
}

/* A constructor that throws runs no destructor: undo what was made */
void entity::init_or_cleanup(const entity_params &params)
{
    try {
        init(params);
    } catch (...) {
        cleanup();
        throw;
    }
}

void entity::init(const entity_params &ep)
{
    uct_iface_params_t params = {};
    uct_component_h srq       = srq_component();

    if (srq == NULL) {
        throw std::runtime_error("component srq is not registered");
    }
    if (ep.share != NULL) {
        m_owner  = false;
        m_md     = ep.share->m_md;
        m_worker = ep.share->m_worker;
    } else {
        SRQ_TEST_CHECK(uct_md_config_read(srq, NULL, NULL, &m_md_config));
        SRQ_TEST_CHECK(uct_md_open(srq, "soft0", m_md_config, &m_md));
        SRQ_TEST_CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                                &m_async));
        SRQ_TEST_CHECK(uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                         &m_worker));
    }
    SRQ_TEST_CHECK(uct_md_iface_config_read(m_md, "rc_srq", NULL, NULL,
                                            &m_iface_config));
    for (auto &kv : ep.config) {
        SRQ_TEST_CHECK(config_modify(m_iface_config, kv.first, kv.second));
    }

    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_srq";
    params.mode.device.dev_name = "soft0:1";
    params.rx_headroom          = ep.rx_headroom;
    params.err_handler          = ep.err_handler;
    params.err_handler_arg      = ep.err_arg;
    params.err_handler_flags    = 0;
    if (ep.eager_cb != NULL) {
        params.field_mask |= UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB |
                             UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG;
        params.eager_cb    = ep.eager_cb;
        params.eager_arg   = ep.eager_arg;
    }
    if (ep.rndv_cb != NULL) {
        params.field_mask |= UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB |
                             UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG;
        params.rndv_cb     = ep.rndv_cb;
        params.rndv_arg    = ep.rndv_arg;
    }
    SRQ_TEST_CHECK(uct_iface_open(m_md, m_worker, &params, m_iface_config,
                                  &m_iface));
    SRQ_TEST_CHECK(uct_iface_query(m_iface, &m_attr));
    uct_iface_progress_enable(m_iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

entity::~entity()
{
    cleanup();
}

void entity::cleanup()
{
    for (auto ep : m_eps) {
        uct_ep_destroy(ep);
    }
    m_eps.clear();
    if (m_iface != NULL) {
        uct_iface_close(m_iface);
        m_iface = NULL;
    }
    if (m_iface_config != NULL) {
        uct_config_release(m_iface_config);
        m_iface_config = NULL;
    }
    if (!m_owner) {
        return;
    }
    if (m_worker != NULL) {
        uct_worker_destroy(m_worker);
        m_worker = NULL;
    }
    if (m_async != NULL) {
        ucs_async_context_destroy(m_async);
        m_async = NULL;
    }
    if (m_md != NULL) {
        uct_md_close(m_md);
        m_md = NULL;
    }
    if (m_md_config != NULL) {
        uct_config_release(m_md_config);
        m_md_config = NULL;
    }
}

std::vector<char> entity::dev_addr() const
{
    std::vector<char> addr(m_attr.device_addr_len);
    SRQ_TEST_CHECK(uct_iface_get_device_address(m_iface,
                                                (uct_device_addr_t*)addr.data()));
    return addr;
}

std::vector<char> entity::iface_addr() const
{
    std::vector<char> addr(m_attr.iface_addr_len);
    SRQ_TEST_CHECK(uct_iface_get_address(m_iface,
                                         (uct_iface_addr_t*)addr.data()));
    return addr;
}

uct_ep_h entity::connect(const entity &peer)
{
    std::vector<char> dev   = peer.dev_addr();
    std::vector<char> iface = peer.iface_addr();
    uct_ep_params_t params  = {};
    uct_ep_h ep;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = m_iface;
    params.dev_addr   = (const uct_device_addr_t*)dev.data();
    params.iface_addr = (const uct_iface_addr_t*)iface.data();
    SRQ_TEST_CHECK(uct_ep_create(&params, &ep));
    m_eps.push_back(ep);
    return ep;
}

uct_srq_iface_counters_t entity::counters() const
{
    typedef ucs_status_t (*query_func_t)(uct_iface_h, uct_srq_iface_counters_t*);
    query_func_t query = (query_func_t)
                         plugin_symbol("uct_srq_iface_query_counters");
    uct_srq_iface_counters_t c;

    if (query == NULL) {
        throw std::runtime_error("uct_srq_iface_query_counters not found");
    }
    SRQ_TEST_CHECK(query(m_iface, &c));
    return c;
}

bool progress_until(const std::vector<entity*> &entities,
                    const std::function<bool()> &cond, double seconds)
{
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(seconds);

    while (!cond()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        unsigned count = 0;
        for (auto e : entities) {
            count += e->progress();
        }
        if (count == 0) {
            std::this_thread::yield();
        }
    }
    return true;
}

ucs_status_t retry_op(const std::vector<entity*> &entities,
                      const std::function<ucs_status_t()> &op, double seconds)
{
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(seconds);
    ucs_status_t status;

    while (((status = op()) == UCS_ERR_NO_RESOURCE) &&
           (std::chrono::steady_clock::now() <= deadline)) {
        for (auto e : entities) {
            e->progress();
        }
    }
    return status;
}

bool progress_until_no_connections(entity &e, double seconds)
{
    return progress_until({&e}, [&] {
        uct_srq_iface_counters_t c = e.counters();
        return (c.conns == 0) && (c.conns_failed == 0);
    }, seconds);
}

mem_buffer::mem_buffer(uct_md_h md, size_t size, char fill) :
    m_md(md), m_buf(size ? size : 1, fill)
{
    SRQ_TEST_CHECK(uct_md_mem_reg(m_md, m_buf.data(), m_buf.size(),
                                  UCT_MD_MEM_ACCESS_ALL, &m_memh));
}

mem_buffer::~mem_buffer()
{
    if (m_rkey_valid) {
        uct_rkey_release(srq_component(), &m_rkey);
    }
    uct_md_mem_dereg(m_md, m_memh);
}

uct_rkey_t mem_buffer::rkey()
{
    if (!m_rkey_valid) {
        uct_md_attr_t attr;
        SRQ_TEST_CHECK(uct_md_query(m_md, &attr));
        std::vector<char> packed(attr.rkey_packed_size);
        SRQ_TEST_CHECK(uct_md_mkey_pack(m_md, m_memh, packed.data()));
        SRQ_TEST_CHECK(uct_rkey_unpack(srq_component(), packed.data(), &m_rkey));
        m_rkey_valid = true;
    }
    return m_rkey.rkey;
}

log_capture::log_capture(ucs_log_level_t level)
{
    s_level = level;
    s_lines.clear();
    ucs_log_push_handler(handler);
}

log_capture::~log_capture()
{
    ucs_log_pop_handler();
}

ucs_log_func_rc_t log_capture::handler(const char *file, unsigned line,
                                       const char *func, ucs_log_level_t level,
                                       const ucs_log_component_config_t *comp,
                                       const char *fmt, va_list ap)
{
    char buf[512];

    if (level <= s_level) {
        vsnprintf(buf, sizeof(buf), fmt, ap);
        s_lines.push_back(buf);
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

bool log_capture::has(const std::string &text)
{
    for (auto &l : s_lines) {
        if (l.find(text) != std::string::npos) {
            return true;
        }
    }
    return false;
}

ucs_log_level_t log_capture::s_level;
std::vector<std::string> log_capture::s_lines;

scoped_env::scoped_env(const std::string &name, const char *value) :
    m_name("UCX_RC_SRQ_" + name)
{
    setenv(m_name.c_str(), value, 1);
}

scoped_env::~scoped_env()
{
    unsetenv(m_name.c_str());
}

} // namespace srq_test
