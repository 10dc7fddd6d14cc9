/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What another local user can plant where soft0 looks (/dev/shm, /tmp)
 * must not make this user's soft0 hang or fail. Each open runs in a child
 * process with a deadline, so a hang is a failure, not a stuck suite.
 */
#include "verbs/srq_verbs.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

/* Open and close soft0 in a child; 0 when that worked within @seconds,
 * -1 when it hung (the child is killed), else the child's exit code */
int open_soft0_in_child(double seconds, bool no_xdg = false)
{
    pid_t pid = fork();
    if (pid == 0) {
        srq_verbs_dev_t *dev;
        if (no_xdg) {
            unsetenv("XDG_RUNTIME_DIR");
        }
        int ret = srq_verbs_open("soft0", &dev);
        if (ret == 0) {
            srq_verbs_close(dev);
        }
        _exit(ret == 0 ? 0 : 10);
    }
    int status;
    for (int i = 0; i < seconds * 100; ++i) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            return WIFEXITED(status) ? WEXITSTATUS(status) : 20;
        }
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* A path removed when the test ends, however it ends */
struct planted {
    std::string path;
    bool        dir;
    ~planted() { dir ? rmdir(path.c_str()) : unlink(path.c_str()); }
};

} // namespace

/* A FIFO named like a segment: opening it for reading would block until a
 * writer comes, so every soft0 open on the host (reclaiming stale segments)
 * hung. It is not a segment: it is neither opened nor removed. */
TEST(soft_local_user, fifo_in_dev_shm_blocks_no_open)
{
    planted fifo{"/dev/shm/srq-soft-" + std::to_string(getpid()) +
                 "0000000000000000", false};
    ASSERT_EQ(0, mkfifo(fifo.path.c_str(), 0666)) << fifo.path;

    EXPECT_EQ(0, open_soft0_in_child(10)) << "soft0 open hung or failed";

    struct stat st;
    EXPECT_EQ(0, lstat(fifo.path.c_str(), &st)) << "not ours to remove";
}

/* The wake FIFO's directory: another user who creates the place soft0 used
 * to use (/tmp/srq-soft-<uid>) first must not make this user's open fail */
TEST(soft_local_user, precreated_fifo_dir_does_not_fail_open)
{
    if (getuid() != 0) {
        GTEST_SKIP() << "needs root to create a directory owned by another user";
    }
    std::string path = "/tmp/srq-soft-" + std::to_string(getuid());
    struct stat st;
    bool existed = (lstat(path.c_str(), &st) == 0);
    if (!existed) {
        ASSERT_EQ(0, mkdir(path.c_str(), 0755));
    } else if (!S_ISDIR(st.st_mode)) {
        GTEST_SKIP() << path << " exists and is not a directory";
    }
    planted dir{existed ? "" : path, true};
    uid_t old_uid = existed ? st.st_uid : getuid();
    gid_t old_gid = existed ? st.st_gid : getgid();
    ASSERT_EQ(0, chown(path.c_str(), 65534, 65534)); /* nobody */

    int ret = open_soft0_in_child(10, true);

    EXPECT_EQ(0, chown(path.c_str(), old_uid, old_gid));
    EXPECT_EQ(0, ret) << "soft0 open failed with " << path
                      << " owned by another user";
}
