/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soft0's LID registry against another local user and a full /dev/shm.
 * Each case runs in a child with its own mount namespace, an empty tmpfs
 * on /dev/shm and another on the user's home (where a private name is
 * kept when /dev/shm/srq-<uid> is taken): what it plants, fills or writes
 * disappears with the child, however the case ends, and the host's
 * /dev/shm and home are never touched. Needs root (to mount, and to make
 * files of another uid); skipped otherwise.
 */
#include "verbs/srq_verbs.h"
extern "C" {
#include "verbs/soft/fabric/soft_lid.h"
#include "verbs/soft/fabric/soft_proc.h"
}

#include <gtest/gtest.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <functional>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <string>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

const uid_t OTHER_UID = 65534; /* nobody */
const int   SKIP_CODE = 77;

/* Run @body in a child whose /dev/shm is a fresh tmpfs of @size, and its
 * home another; its exit
 * code, -SIGNAL when a signal ended it, or -1 when it outlived @seconds
 * (then it is killed). SKIP_CODE: no private /dev/shm could be made */
int in_private_shm(const std::function<int()> &body, const char *size,
                   double seconds = 20)
{
    pid_t pid = fork();
    if (pid == 0) {
        char opts[64];
        struct passwd *pw = getpwuid(getuid());
        snprintf(opts, sizeof(opts), "size=%s,mode=1777", size);
        if ((getuid() != 0) || (pw == NULL) || (strcmp(pw->pw_dir, "/") == 0) ||
            (unshare(CLONE_NEWNS) != 0) ||
            (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) ||
            (mount("tmpfs", "/dev/shm", "tmpfs", 0, opts) != 0) ||
            (mount("tmpfs", pw->pw_dir, "tmpfs", 0, "mode=0700") != 0)) {
            _exit(SKIP_CODE);
        }
        _exit(body());
    }
    int status;
    for (int i = 0; i < seconds * 100; ++i) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            return WIFSIGNALED(status) ? -WTERMSIG(status) :
                                         WEXITSTATUS(status);
        }
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

std::string describe(int code)
{
    if (code == -1) {
        return "hung";
    }
    if (code < 0) {
        return std::string("killed by ") + strsignal(-code);
    }
    return "exit " + std::to_string(code);
}

/* @_code's child was expected to end with @_expect; @_what says which */
#define EXPECT_CHILD_WHAT(_expect, _code, _what) \
    do { \
        int _c = (_code); \
        if (_c == SKIP_CODE) { \
            GTEST_SKIP() << "needs root and a private mount namespace"; \
        } \
        EXPECT_EQ(_expect, _c) << describe(_c) << " " << (_what); \
    } while (0)
#define EXPECT_CHILD(_expect, _code) EXPECT_CHILD_WHAT(_expect, _code, "")

/* 0 when soft0 opens and closes, else the errno of the open */
int open_close_soft0()
{
    srq_verbs_dev_t *dev;
    int ret = srq_verbs_open("soft0", &dev);

    if (ret == 0) {
        srq_verbs_close(dev);
    }
    return ret;
}

/* This process's sharing domain (soft_proc.h) */
uint32_t domain_id()
{
    uint32_t id = 0;
    EXPECT_EQ(0, srq_soft_domain_id(&id));
    return id;
}

std::string user_dir()
{
    char path[64];
    snprintf(path, sizeof(path), SRQ_SOFT_LID_DIR_FMT, (unsigned)getuid());
    return path;
}

/* Where the registry was before it moved into the user's directory */
std::string old_registry_name()
{
    char path[96];
    snprintf(path, sizeof(path), "/dev/shm/srq-softlid-%u-%08x",
             (unsigned)getuid(), domain_id());
    return path;
}

/* Make @path (absent) a @kind owned by OTHER_UID; 0 or errno */
int plant(const std::string &path, const std::string &kind)
{
    int ret;

    if (kind == "file0666" || kind == "file0600") {
        int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY,
                      kind == "file0666" ? 0666 : 0600);
        ret = (fd < 0) ? -1 : close(fd);
        if (kind == "file0666") {
            chmod(path.c_str(), 0666); /* past the umask */
        }
    } else if (kind == "fifo") {
        ret = mkfifo(path.c_str(), 0666);
    } else if (kind == "dir") {
        ret = mkdir(path.c_str(), 0777);
    } else { /* a symlink to a file of the other user */
        std::string target = "/dev/shm/other-target";
        int fd = open(target.c_str(), O_CREAT | O_WRONLY, 0666);
        ret = (fd < 0) ? -1 : (write(fd, "keep", 4) == 4 ? close(fd) : -1);
        if (ret == 0) {
            ret = chown(target.c_str(), OTHER_UID, OTHER_UID);
        }
        if (ret == 0) {
            ret = symlink(target.c_str(), path.c_str());
        }
    }
    if (ret == 0) {
        ret = lchown(path.c_str(), OTHER_UID, OTHER_UID);
    }
    return (ret == 0) ? 0 : errno;
}

const char *KINDS[] = {"file0666", "file0600", "fifo", "dir", "symlink"};

} // namespace

/* The attack: whatever another user plants at the registry's old
 * name, /dev/shm/srq-softlid-<uid>-<domain>, blocks no open */
TEST(soft_registry, planted_at_old_name_blocks_no_open)
{
    for (const char *kind : KINDS) {
        EXPECT_CHILD_WHAT(0, in_private_shm([kind]() {
            int ret = plant(old_registry_name(), kind);
            if (ret != 0) {
                fprintf(stderr, "planting failed: %s\n", strerror(ret));
                return 100;
            }
            return open_close_soft0();
        }, "8m"), kind);
    }
}

/* The user's directory and its registry: nobody else can write there;
 * and an open that needs no private name leaves the home as it was */
TEST(soft_registry, user_dir_is_private)
{
    EXPECT_CHILD(0, in_private_shm([]() {
        std::string dir = user_dir();
        std::string key = std::string(getpwuid(getuid())->pw_dir) + "/.ucx-srq";
        struct stat st;
        if ((open_close_soft0() != 0) || (lstat(dir.c_str(), &st) != 0)) {
            return 100;
        }
        if (lstat(key.c_str(), &st) == 0) {
            fprintf(stderr, "%s made by a plain open\n", key.c_str());
            return 105;
        }
        if (lstat(dir.c_str(), &st) != 0) {
            return 100;
        }
        if (!S_ISDIR(st.st_mode) || (st.st_uid != getuid()) ||
            ((st.st_mode & 0777) != 0700)) {
            fprintf(stderr, "%s: mode %o uid %u\n", dir.c_str(),
                    st.st_mode, st.st_uid);
            return 101;
        }
        /* the other user tries to plant something inside */
        pid_t pid = fork();
        if (pid == 0) {
            if (setresuid(OTHER_UID, OTHER_UID, OTHER_UID) != 0) {
                _exit(102);
            }
            std::string f = dir + "/lid-planted";
            _exit((open(f.c_str(), O_CREAT | O_WRONLY, 0666) < 0) &&
                  (errno == EACCES) ? 0 : 103);
        }
        int status;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 104;
    }, "8m"));
}

/* A registry file at the right place that is not ours (root planted it
 * for another user) is refused, not used */
TEST(soft_registry, foreign_registry_file_is_refused)
{
    EXPECT_CHILD(EPERM, in_private_shm([]() {
        std::string dir = user_dir();
        char name[96];
        snprintf(name, sizeof(name), "%s/lid-%08x", dir.c_str(),
                 domain_id());
        if ((mkdir(dir.c_str(), 0700) != 0) || (plant(name, "file0600") != 0)) {
            return 100;
        }
        return open_close_soft0();
    }, "8m"));
}

/* The user's directories in /dev/shm: the plain one, and those with a
 * private name */
std::vector<std::string> user_dirs()
{
    std::vector<std::string> found;
    std::string plain = "srq-" + std::to_string(getuid());
    DIR *dir = opendir("/dev/shm");
    struct dirent *de;

    while ((dir != nullptr) && ((de = readdir(dir)) != nullptr)) {
        std::string n = de->d_name;
        if ((n == plain) || (n.rfind(plain + "-", 0) == 0)) {
            found.push_back(n);
        }
    }
    if (dir != nullptr) {
        closedir(dir);
    }
    return found;
}

/* 0 when the only directory of ours is a private one (mode 0700, with one
 * registry in it), else a code saying what is wrong */
int private_dir_used()
{
    std::string plain = "srq-" + std::to_string(getuid());
    int n = 0, ret = 0;
    for (const std::string &d : user_dirs()) {
        struct stat st;
        std::string path = "/dev/shm/" + d;
        if ((d == plain) || (lstat(path.c_str(), &st) != 0)) {
            continue; /* the other user's, or gone */
        }
        ++n;
        if (!S_ISDIR(st.st_mode) || (st.st_uid != getuid()) ||
            ((st.st_mode & 0777) != 0700) || (d.size() != plain.size() + 33)) {
            ret = 110;
        }
    }
    return (n == 1) ? ret : 111;
}

/* Another user takes /dev/shm/srq-<uid> before the user's first soft0 open
 * since boot: the user's processes go to a name nobody could know (a token
 * kept in the home), whatever is there - no hang on a FIFO, no symlink
 * followed - and every later open goes there too */
TEST(soft_registry, squatted_user_dir_is_worked_around)
{
    for (const char *kind : KINDS) {
        EXPECT_CHILD_WHAT(0, in_private_shm([kind]() {
            srq_verbs_dev_t *a, *b;
            srq_verbs_port_addr_t la, lb;
            if (plant(user_dir(), kind) != 0) {
                return 100;
            }
            /* two instances: the registry gives their port one LID */
            if ((srq_verbs_open("soft0", &a) != 0) ||
                (srq_verbs_open("soft0", &b) != 0)) {
                return 101;
            }
            srq_verbs_port_addr(a, 1, &la);
            srq_verbs_port_addr(b, 1, &lb);
            srq_verbs_close(b);
            srq_verbs_close(a);
            if ((la.lid == 0) || (la.lid != lb.lid)) {
                return 102;
            }
            struct stat st;
            if ((strcmp(kind, "symlink") == 0) &&
                ((stat("/dev/shm/other-target", &st) != 0) ||
                 (st.st_size != 4) || !S_ISREG(st.st_mode))) {
                return 103; /* something was made through the symlink */
            }
            int ret = private_dir_used();
            if (ret != 0) {
                return ret;
            }
            /* the squatter leaves: the user's processes stay where they are */
            if ((strcmp(kind, "dir") == 0) ? rmdir(user_dir().c_str()) :
                                             unlink(user_dir().c_str())) {
                return 104;
            }
            if (open_close_soft0() != 0) {
                return 105;
            }
            return (lstat(user_dir().c_str(), &st) == 0) ? 106 :
                   private_dir_used();
        }, "8m", 10), kind);
    }
}

/* The private name's key, in the home, is the user's: another user's file
 * there is not read - with /dev/shm/srq-<uid> free it is used; with that
 * taken too, the open fails (EPERM) */
TEST(soft_registry, foreign_key_file_is_not_used)
{
    for (bool squatted : {false, true}) {
        EXPECT_CHILD_WHAT(squatted ? EPERM : 0, in_private_shm([squatted]() {
            struct passwd *pw = getpwuid(getuid());
            char boot_id[64] = "";
            FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
            if ((f == nullptr) || (fgets(boot_id, sizeof(boot_id), f) == nullptr)) {
                return 100;
            }
            fclose(f);
            boot_id[strcspn(boot_id, "\n")] = '\0';
            std::string kdir = std::string(pw->pw_dir) + "/.ucx-srq";
            if ((mkdir(kdir.c_str(), 0700) != 0) ||
                (plant(kdir + "/boot-" + boot_id, "file0600") != 0) ||
                (squatted && (plant(user_dir(), "dir") != 0))) {
                return 101;
            }
            int ret = open_close_soft0();
            struct stat st;
            if ((ret == 0) && (lstat(user_dir().c_str(), &st) != 0)) {
                return 102; /* opened, but not in the plain directory */
            }
            return ret;
        }, "8m"), squatted ? "/dev/shm/srq-<uid> taken" : "free");
    }
}

/* A full /dev/shm: the open fails with ENOSPC, it does not crash (SIGBUS
 * on the first store into a page that was never reserved) */
TEST(soft_registry, full_dev_shm_fails_cleanly)
{
    EXPECT_CHILD(0, in_private_shm([]() {
        int fd = open("/dev/shm/filler", O_CREAT | O_WRONLY, 0600);
        static char block[65536];
        while (write(fd, block, sizeof(block)) > 0) {
        }
        int ret = open_close_soft0();
        if (ret != ENOSPC) {
            fprintf(stderr, "open on a full /dev/shm: %d\n", ret);
            return 100;
        }
        /* and works again once there is room */
        close(fd);
        unlink("/dev/shm/filler");
        return open_close_soft0();
    }, "4m"));
}

/* A /dev/shm filled after the registry exists: instances still open and
 * run (their own memory is anonymous, not in /dev/shm) */
TEST(soft_registry, dev_shm_filled_later_runs)
{
    EXPECT_CHILD(0, in_private_shm([]() {
        srq_verbs_dev_t *a, *b;
        if (open_close_soft0() != 0) {
            return 100;
        }
        int fd = open("/dev/shm/filler", O_CREAT | O_WRONLY, 0600);
        static char block[65536];
        while (write(fd, block, sizeof(block)) > 0) {
        }
        if (srq_verbs_open("soft0", &a) != 0) {
            return 101;
        }
        int ret = srq_verbs_open("soft0", &b);
        if (ret == 0) {
            srq_verbs_close(b);
        }
        srq_verbs_close(a);
        return ret;
    }, "4m"));
}
