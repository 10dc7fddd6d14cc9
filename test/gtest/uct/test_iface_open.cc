/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Interface open failure paths: a failure at any step of uct_iface_open of
 * rc_srq gives a clean error - no crash, and nothing the attempt created is
 * left (verbs objects counted by the soft device's fault hook; memory by
 * LeakSanitizer in the ASan build):
 *
 *   - every control verb the open calls (PD, memory registration,
 *     completion channel, CQs, SRQ, QPs and their state changes, AHs),
 *     failed one after the other (srq_soft_test_fail_verb): each is an
 *     error but arming the SRQ limit, which is optional (a device may not
 *     have limit events);
 *   - the first receive post (srq_soft_test_fail_post);
 *   - no file descriptor left (RLIMIT_NOFILE), at every budget from none
 *     to what the open needs.
 */
#include "srq_uct_fixture.h"

extern "C" {
#include "verbs/soft/device/soft_test_hooks.h"
}

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <set>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>

using namespace srq_test;

namespace {

typedef srq_verbs_dev_t *(*md_dev_func_t)(uct_md_h);
typedef int (*fail_verb_func_t)(srq_verbs_dev_t*, unsigned, int);
typedef int (*verbs_func_t)(srq_verbs_dev_t*, srq_soft_test_verbs_t*);
typedef int (*stop_func_t)(srq_verbs_dev_t*);
typedef int (*fail_post_func_t)(srq_verbs_dev_t*, unsigned, int);

/* The plugin's test hooks */
struct hooks {
    md_dev_func_t    md_dev    = (md_dev_func_t)
                                 plugin_symbol("uct_srq_md_verbs_dev");
    fail_verb_func_t fail_verb = (fail_verb_func_t)
                                 plugin_symbol("srq_soft_test_fail_verb");
    verbs_func_t     verbs     = (verbs_func_t)
                                 plugin_symbol("srq_soft_test_verbs");
    stop_func_t      stop      = (stop_func_t)
                                 plugin_symbol("srq_soft_test_verbs_stop");
    fail_post_func_t fail_post = (fail_post_func_t)
                                 plugin_symbol("srq_soft_test_fail_post");

    bool ok() const
    {
        return md_dev && fail_verb && verbs && stop && fail_post;
    }
};

/* Open an interface on @base's md and worker: UCS_OK, or the error the
 * open returned (the entity throws it as text) */
std::string open_second(const entity &base, const config_t &config)
{
    entity_params params;

    params.share  = &base;
    params.config = config;
    try {
        entity second(params);
    } catch (const std::exception &e) {
        return e.what();
    }
    return "";
}

/* The lowest free descriptor numbers: a limit of the k-th leaves exactly
 * k descriptors to allocate */
std::vector<int> free_fds(int count)
{
    std::set<int> used;
    std::vector<int> free;
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *de;

    while ((dir != NULL) && ((de = readdir(dir)) != NULL)) {
        if (de->d_name[0] != '.') {
            used.insert(atoi(de->d_name));
        }
    }
    if (dir != NULL) {
        closedir(dir);
    }
    for (int fd = 0; (int)free.size() < count; ++fd) {
        if (!used.count(fd)) {
            free.push_back(fd);
        }
    }
    return free;
}

class iface_open : public ::testing::TestWithParam<config_t> {
protected:
    void SetUp() override
    {
        if (!h.ok()) {
            GTEST_FAIL() << "the plugin's test hooks are not exported";
        }
    }

    hooks h;
};

} // namespace

/*
 * Fail the control verb number 0, 1, 2, ... of an interface open, until
 * an open calls no more than that: each open fails with an error, and
 * leaves no object behind.
 */
TEST_P(iface_open, every_failing_verb_is_a_clean_error)
{
    entity base(GetParam());
    SRQ_TEST_REQUIRE_BUILTIN_SOFT(base.md());
    srq_verbs_dev_t *dev = h.md_dev(base.md());
    ASSERT_NE(nullptr, dev);
    std::set<std::string> verbs;
    unsigned step;

    for (step = 0; step < 500; ++step) {
        srq_soft_test_verbs_t st;
        ASSERT_EQ(0, h.fail_verb(dev, step, ENOMEM));
        std::string err = open_second(base, GetParam());
        ASSERT_EQ(0, h.verbs(dev, &st));
        h.stop(dev);
        if (st.failed == NULL) {
            EXPECT_EQ("", err) << "no step failed, yet the open did";
            EXPECT_EQ(0, st.live) << "an open and close left objects";
            break;
        }
        verbs.insert(st.failed);
        /* arming the SRQ limit is the one optional step: a device without
         * limit events (IBV_SRQ_LIMIT) still refills from progress */
        EXPECT_TRUE(!err.empty() || !strcmp(st.failed, "modify_srq"))
            << "step " << step << " (" << st.failed
            << ") failed, yet the interface opened";
        EXPECT_EQ(0, st.live) << "step " << step << " (" << st.failed
                              << ") failed: " << st.live
                              << " objects left behind";
    }
    std::string seen;
    for (const std::string &v : verbs) {
        seen += " " + v;
    }
    std::cout << step << " steps of an interface open failed one by one:"
              << seen << std::endl;
    EXPECT_GE(step, 8u) << "an interface open has more steps than that";
    EXPECT_TRUE(verbs.count("create_comp_channel") && verbs.count("create_cq") &&
                verbs.count("create_qp") && verbs.count("modify_qp") &&
                verbs.count("reg_mr")) << seen;
}

/* The first receive post fails (the handshake QP's) */
TEST_P(iface_open, failing_first_post_is_a_clean_error)
{
    entity base(GetParam());
    SRQ_TEST_REQUIRE_BUILTIN_SOFT(base.md());
    srq_verbs_dev_t *dev = h.md_dev(base.md());
    srq_soft_test_verbs_t st;

    ASSERT_EQ(0, h.fail_verb(dev, UINT_MAX, ENOMEM)); /* count only */
    ASSERT_EQ(0, h.fail_post(dev, 0, ENOMEM));
    std::string err = open_second(base, GetParam());
    ASSERT_EQ(0, h.verbs(dev, &st));
    h.stop(dev);
    EXPECT_NE("", err) << "a failing post went unnoticed";
    EXPECT_EQ(0, st.live) << "objects left behind";
}

/* Out of file descriptors at every point of the open: from none left to
 * as many as it needs */
TEST_P(iface_open, no_file_descriptors_is_a_clean_error)
{
    entity base(GetParam());
    SRQ_TEST_REQUIRE_BUILTIN_SOFT(base.md());
    srq_verbs_dev_t *dev = h.md_dev(base.md());
    struct rlimit saved, lim;
    bool opened = false;
    int budget;

    ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &saved));
    for (budget = 0; (budget < 32) && !opened; ++budget) {
        srq_soft_test_verbs_t st;
        std::vector<int> free = free_fds(budget + 1);
        ASSERT_EQ(0, h.fail_verb(dev, UINT_MAX, ENOMEM)); /* count only */
        lim          = saved;
        lim.rlim_cur = free[budget];
        ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &lim));
        std::string err = open_second(base, GetParam());
        EXPECT_EQ(0, setrlimit(RLIMIT_NOFILE, &saved));
        ASSERT_EQ(0, h.verbs(dev, &st));
        h.stop(dev);
        opened = err.empty();
        EXPECT_EQ(0, st.live) << budget << " descriptors: " << err << ": "
                              << st.live << " objects left behind";
    }
    std::cout << "an interface open needs " << budget - 1
              << " file descriptors" << std::endl;
    EXPECT_TRUE(opened) << "no open succeeded with " << budget
                        << " descriptors";
}

INSTANTIATE_TEST_SUITE_P(mode, iface_open,
                         ::testing::Values(config_t{},
                                           config_t{{"SRQ", "n"}}),
                         [](const ::testing::TestParamInfo<config_t> &info) {
                             return info.param.empty() ? std::string("srq") :
                                                         std::string("per_qp");
                         });
