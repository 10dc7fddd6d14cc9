/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: memory regions.
 */
#include "verbs_fixture.h"

#include <string.h>

using namespace srq_test;

class mr : public verbs_test {};

TEST_P(mr, reg_dereg)
{
    tdev_t &d  = open_dev();
    void *buf = alloc(4096);
    ibv_mr *m = srq_verbs_reg_mr(d.dev, d.pd, buf, 4096,
                                 IBV_ACCESS_LOCAL_WRITE);

    ASSERT_NE(nullptr, m);
    EXPECT_EQ(buf, m->addr);
    EXPECT_EQ(4096u, m->length);
    EXPECT_EQ(d.pd, m->pd);
    EXPECT_EQ(0, srq_verbs_dereg_mr(d.dev, m));
}

TEST_P(mr, keys_unique_and_not_reused)
{
    tdev_t &d  = open_dev();
    void *buf = alloc(4096);
    ibv_mr *m1, *m2;
    uint32_t old_key;

    m1 = srq_verbs_reg_mr(d.dev, d.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(nullptr, m1);
    old_key = m1->lkey;
    ASSERT_EQ(0, srq_verbs_dereg_mr(d.dev, m1));
    m2 = srq_verbs_reg_mr(d.dev, d.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(nullptr, m2);
    /* a stale key must not match the new region */
    EXPECT_NE(old_key, m2->lkey);
    EXPECT_EQ(0, srq_verbs_dereg_mr(d.dev, m2));
}

TEST_P(mr, remote_write_needs_local_write)
{
    tdev_t &d  = open_dev();
    void *buf = alloc(4096);

    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_reg_mr(d.dev, d.pd, buf, 4096,
                                        IBV_ACCESS_REMOTE_WRITE));
    EXPECT_EQ(EINVAL, errno);
}

TEST_P(mr, soft_rejects_bad_args)
{
    SRQ_SKIP_UNLESS_SOFT();
    tdev_t &d  = open_dev();
    void *buf = alloc(64);

    ibv_device_attr attr = {};
    ASSERT_EQ(0, srq_verbs_query_device(d.dev, &attr));
    errno = 0;
    /* (a zero-length region is allowed: test_mr_rereg.cc) */
    EXPECT_EQ(nullptr, srq_verbs_reg_mr(d.dev, d.pd, buf,
                                        attr.max_mr_size + 1,
                                        IBV_ACCESS_LOCAL_WRITE));
    EXPECT_EQ(EINVAL, errno);
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_reg_mr(d.dev, d.pd, (void*)UINTPTR_MAX, 64,
                                        IBV_ACCESS_LOCAL_WRITE));
    EXPECT_EQ(EINVAL, errno);
    errno = 0;
    /* remote atomics need local write (IB spec), as remote write does */
    EXPECT_EQ(nullptr, srq_verbs_reg_mr(d.dev, d.pd, buf, 64,
                                        IBV_ACCESS_REMOTE_ATOMIC));
    EXPECT_EQ(EINVAL, errno);
    ibv_mr *mr = srq_verbs_reg_mr(d.dev, d.pd, buf, 64,
                                  IBV_ACCESS_LOCAL_WRITE |
                                  IBV_ACCESS_REMOTE_ATOMIC);
    ASSERT_NE(nullptr, mr);
    EXPECT_EQ(0, srq_verbs_dereg_mr(d.dev, mr));
    /* the program's promise that huge pages back the region: taken, on
     * any region, as the kernel takes it (traffic over huge pages:
     * test_mr_odp.cc) */
    mr = srq_verbs_reg_mr(d.dev, d.pd, buf, 64,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_HUGETLB);
    ASSERT_NE(nullptr, mr) << strerror(errno);
    EXPECT_EQ(0, srq_verbs_dereg_mr(d.dev, mr));
    errno = 0;
    EXPECT_EQ(nullptr, srq_verbs_reg_mr(d.dev, d.pd, buf, 64, 1 << 30));
    EXPECT_EQ(EINVAL, errno) << "an access bit verbs does not define";
}

SRQ_INSTANTIATE(mr);
