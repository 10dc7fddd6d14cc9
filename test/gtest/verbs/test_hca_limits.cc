/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: every count limit ibv_query_device reports is
 * held, as on an HCA: creates succeed up to it, the one past it fails with
 * ENOMEM, and a destroy makes room again (PDs, CQs, SRQs, QPs, AHs, MRs).
 */
#include "verbs_fixture.h"

#include <errno.h>
#include <string.h>

using namespace srq_test;

/* Every count limit ibv_query_device reports is held: creates succeed up
 * to it and fail with ENOMEM past it, and one destroyed makes room for
 * one. Each on a fresh device (the fixture's devices hold a PD each) */
class hca_limits : public verbs_test {
protected:
    /* Create with @make until it fails or @max + 1 succeeded; then the
     * checks; then destroy them all with @destroy */
    template <typename T>
    void check_limit(const char *what, uint32_t max, uint32_t held,
                     const std::function<T*()> &make,
                     const std::function<int(T*)> &destroy)
    {
        std::vector<T*> objs;
        T *obj;
        int err = 0;

        SCOPED_TRACE(what);
        while (objs.size() + held <= max) {
            errno = 0;
            obj   = make();
            if (obj == nullptr) {
                err = errno;
                break;
            }
            objs.push_back(obj);
        }
        EXPECT_EQ(max, objs.size() + held) << "created up to the limit";
        EXPECT_EQ(ENOMEM, err) << "the one past it: " << strerror(err);
        if (!objs.empty()) {
            EXPECT_EQ(0, destroy(objs.back()));
            objs.pop_back();
            obj = make();
            EXPECT_NE(nullptr, obj) << "room again after a destroy";
            if (obj != nullptr) {
                objs.push_back(obj);
            }
        }
        for (T *o : objs) {
            EXPECT_EQ(0, destroy(o));
        }
    }

    ibv_device_attr query(tdev_t &d)
    {
        ibv_device_attr attr = {};

        EXPECT_EQ(0, srq_verbs_query_device(d.dev, &attr));
        return attr;
    }
};

TEST_P(hca_limits, pds)
{
    tdev_t &d = open_dev();
    srq_verbs_dev_t *dev = d.dev;

    check_limit<ibv_pd>("max_pd", query(d).max_pd, 1,
                        [dev]() { return srq_verbs_alloc_pd(dev); },
                        [dev](ibv_pd *pd) {
                            return srq_verbs_dealloc_pd(dev, pd);
                        });
}

TEST_P(hca_limits, cqs)
{
    tdev_t &d = open_dev();
    srq_verbs_dev_t *dev = d.dev;

    check_limit<ibv_cq>("max_cq", query(d).max_cq, 0,
                        [dev]() {
                            return srq_verbs_create_cq(dev, 1, nullptr,
                                                       nullptr, 0);
                        },
                        [dev](ibv_cq *cq) {
                            return srq_verbs_destroy_cq(dev, cq);
                        });
}

TEST_P(hca_limits, srqs)
{
    tdev_t &d = open_dev();
    srq_verbs_dev_t *dev = d.dev;
    ibv_pd *pd = d.pd;

    check_limit<ibv_srq>("max_srq", query(d).max_srq, 0,
                         [dev, pd]() {
                             ibv_srq_init_attr a = {};
                             a.attr.max_wr  = 1;
                             a.attr.max_sge = 1;
                             return srq_verbs_create_srq(dev, pd, &a);
                         },
                         [dev](ibv_srq *srq) {
                             return srq_verbs_destroy_srq(dev, srq);
                         });
}

TEST_P(hca_limits, qps)
{
    tdev_t &d = open_dev();
    srq_verbs_dev_t *dev = d.dev;
    ibv_pd *pd = d.pd;
    ibv_cq *cq = make_cq(d, 1);

    check_limit<ibv_qp>("max_qp", query(d).max_qp, 0,
                        [dev, pd, cq]() {
                            ibv_qp_init_attr a = {};
                            a.send_cq          = cq;
                            a.recv_cq          = cq;
                            a.qp_type          = IBV_QPT_UD;
                            a.cap.max_send_wr  = 1;
                            a.cap.max_recv_wr  = 1;
                            a.cap.max_send_sge = 1;
                            a.cap.max_recv_sge = 1;
                            return srq_verbs_create_qp(dev, pd, &a);
                        },
                        [dev](ibv_qp *qp) {
                            return srq_verbs_destroy_qp(dev, qp);
                        });
}

TEST_P(hca_limits, ahs)
{
    tdev_t &d = open_dev();
    srq_verbs_dev_t *dev = d.dev;
    ibv_pd *pd = d.pd;
    ibv_ah_attr attr;

    ASSERT_EQ(0, srq_verbs_ah_attr(dev, 1, &d.addr, &attr));
    check_limit<ibv_ah>("max_ah", query(d).max_ah, 0,
                        [dev, pd, &attr]() {
                            return srq_verbs_create_ah(dev, pd, &attr);
                        },
                        [dev](ibv_ah *ah) {
                            return srq_verbs_destroy_ah(dev, ah);
                        });
}

TEST_P(hca_limits, mrs)
{
    tdev_t &d = open_dev();
    srq_verbs_dev_t *dev = d.dev;
    ibv_pd *pd = d.pd;
    char *buf = (char*)alloc(64);

    check_limit<ibv_mr>("max_mr", query(d).max_mr, 0,
                        [dev, pd, buf]() {
                            return srq_verbs_reg_mr(dev, pd, buf, 64, 0);
                        },
                        [dev](ibv_mr *mr) {
                            return srq_verbs_dereg_mr(dev, mr);
                        });
}

SRQ_INSTANTIATE(hca_limits);
