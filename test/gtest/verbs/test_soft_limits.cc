/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soft0 at a limit of the process (issue 51): no descriptor left is this
 * process's own error, never a peer taken for gone or for dead, never a
 * datagram lost without a word. Each case lowers RLIMIT_NOFILE around the
 * calls it checks and lifts it before it asserts anything.
 */
#include "verbs_fixture.h"
extern "C" {
#include "verbs/soft/fabric/soft_proc.h"
}

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace srq_test;

namespace {

/* While it lives, no descriptor can be made: RLIMIT_NOFILE is the lowest
 * free descriptor number */
class no_fds {
public:
    no_fds()
    {
        struct rlimit lim;
        int fd = 0;

        getrlimit(RLIMIT_NOFILE, &m_saved);
        while (fcntl(fd, F_GETFD) >= 0) {
            ++fd;
        }
        lim          = m_saved;
        lim.rlim_cur = fd;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    ~no_fds() { setrlimit(RLIMIT_NOFILE, &m_saved); }

private:
    struct rlimit m_saved;
};

/* A pid that was this process's child and is reaped: gone */
pid_t gone_pid()
{
    pid_t pid = fork();
    if (pid == 0) {
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    return pid;
}

} // namespace

/*
 * /proc/<pid>/stat cannot be opened: the process is not known to be dead.
 * Taken for dead, a live peer's QPs failed as "the peer is gone" (an MPI
 * rank one descriptor short), and a live holder's lock, LID or QP number
 * could be taken over. A pid that is gone stays dead.
 */
TEST(soft_limits, live_process_not_taken_for_dead_without_descriptors)
{
    uint64_t start;
    ASSERT_EQ(0, srq_soft_proc_start_time(getpid(), &start));
    uint64_t me   = srq_soft_proc_id(getpid(), start);
    pid_t    gone = gone_pid();
    bool dead, alive, gone_dead;
    {
        no_fds guard;
        dead      = srq_soft_proc_id_dead(me);
        alive     = srq_soft_owner_alive(getpid(), start);
        gone_dead = !srq_soft_owner_alive(gone, start);
    }
    EXPECT_FALSE(dead) << "this process taken for dead";
    EXPECT_TRUE(alive) << "this process taken for gone";
    EXPECT_TRUE(gone_dead) << "a reaped child taken for alive";
}

/*
 * The sharing domain names the registries a process uses: short of
 * descriptors (the boot id unreadable) it must stay the same - a process
 * that hashed an empty boot id made qpn-<another domain>, whose QPs no
 * peer could route to.
 */
TEST(soft_limits, sharing_domain_kept_without_descriptors)
{
    uint32_t before, after = 0;
    int ret;

    ASSERT_EQ(0, srq_soft_domain_id(&before));
    {
        no_fds guard;
        ret = srq_soft_domain_id(&after);
    }
    EXPECT_EQ(0, ret) << strerror(ret);
    EXPECT_EQ(before, after);
}

class soft_limits_dev : public verbs_test {};

/*
 * A UD send to an instance this process has no descriptor left to map:
 * the post fails with EMFILE. The datagram used to be lost as if the
 * destination were gone, and rc_srq retransmitted its handshake until
 * CONN_TIMEOUT. With the limit lifted the same post goes through.
 */
TEST_P(soft_limits_dev, ud_post_to_an_instance_it_cannot_map)
{
    SRQ_SKIP_UNLESS_SOFT();
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_UD, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_UD, cqb, cqb);
    char *sbuf = (char*)alloc(64), *rbuf = (char*)alloc(256);
    ibv_mr *smr = reg(a, sbuf, 64, 0);
    ibv_mr *rmr = reg(b, rbuf, 256, IBV_ACCESS_LOCAL_WRITE);
    ibv_ah *ah = make_ah(a, b.addr);
    int ret;

    ud_to_rts(a, qa, 0x1234);
    ud_to_rts(b, qb, 0x1234);
    ASSERT_EQ(0, post_recv(qb, rbuf, 256, rmr->lkey, 9));
    {
        no_fds guard;
        ret = post_ud_send(qa, ah, qb->qp_num, 0x1234, sbuf, 8, smr->lkey, 1);
    }
    EXPECT_EQ(EMFILE, ret) << "the post " << (ret ? strerror(ret) : "went");

    ASSERT_EQ(0, post_ud_send(qa, ah, qb->qp_num, 0x1234, sbuf, 8, smr->lkey,
                              2));
    ibv_wc wc = poll1(cqb);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(9u, wc.wr_id);
}

SRQ_INSTANTIATE(soft_limits_dev);
