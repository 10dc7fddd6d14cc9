/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: the user's directory of LID registries (soft_lid.h)
 * and the QP number table (soft_qpn.h).
 *
 * /dev/shm/srq-<uid>, created 0700 by the user's first open and never
 * removed: once it exists no other user can plant anything in it, replace
 * or remove it (/dev/shm is sticky). Another user can still create that
 * name first. Then the user's processes agree on a name nobody else can
 * know in advance: /dev/shm/srq-<uid>-<token>, the token 16 random bytes
 * kept for this boot in the user's home (~/.ucx-srq/boot-<boot id>, the
 * home of the passwd entry, not $HOME: every process of the user finds
 * the same). Once a token exists for this boot every open that does not
 * find the user's plain directory uses it, and the plain one is made only
 * where no token is: a squatter who later removes what it planted splits
 * nothing.
 *
 * Every name is opened without following a symlink and without blocking
 * (a FIFO cannot hold us), and checked by descriptor: a directory or file
 * of this user that nobody else can write.
 */
#include "soft_lid_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRQ_SOFT_LID_TOKEN_LEN  16
#define SRQ_SOFT_LID_KEY_DIR    ".ucx-srq"

/* @fd is a @type (S_IFDIR, S_IFREG) of ours that nobody else can write */
int srq_soft_lid_check_own(int fd, mode_t type)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        return errno;
    }
    if (((st.st_mode & S_IFMT) != type) || (st.st_uid != getuid()) ||
        (st.st_mode & 077)) {
        return EPERM;
    }
    return 0;
}

/* Open directory @name (relative to @at), creating it 0700 if absent and
 * @make: the descriptor, or -errno (EPERM: something not ours is there) */
static int srq_soft_lid_open_dir(int at, const char *name, int make)
{
    int fd, ret;

    if (make && (mkdirat(at, name, 0700) != 0) && (errno != EEXIST)) {
        return -errno;
    }
    fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
                          O_CLOEXEC);
    if (fd < 0) {
        ret = errno;
        return ((ret == ENOTDIR) || (ret == ELOOP)) ? -EPERM : -ret;
    }
    ret = srq_soft_lid_check_own(fd, S_IFDIR);
    if (ret != 0) {
        close(fd);
        return -ret;
    }
    return fd;
}

/* The user's key directory, ~/.ucx-srq of the passwd entry; created only
 * when a token is to be made (a look leaves the home as it is) */
static int srq_soft_lid_key_dir(int make)
{
    struct passwd pw, *res = NULL;
    char buf[1024];
    int home, fd;

    if ((getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) != 0) ||
        (res == NULL) || (pw.pw_dir == NULL) || (pw.pw_dir[0] != '/')) {
        return -ENOENT;
    }
    home = open(pw.pw_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (home < 0) {
        return -errno;
    }
    fd = srq_soft_lid_open_dir(home, SRQ_SOFT_LID_KEY_DIR, make);
    close(home);
    return fd;
}

/* "boot-<boot id>": a token per boot, as /dev/shm is per boot */
static int srq_soft_lid_key_name(char *name, size_t len)
{
    char boot_id[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

    if (f == NULL) {
        return errno;
    }
    if (fgets(boot_id, sizeof(boot_id), f) == NULL) {
        boot_id[0] = '\0';
    }
    fclose(f);
    boot_id[strcspn(boot_id, "\n")] = '\0';
    if (boot_id[0] == '\0') {
        return ENOENT;
    }
    snprintf(name, len, "boot-%s", boot_id);
    return 0;
}

/* Read the token in file @name of @kdir: 0, ENOENT (none yet), or errno */
static int srq_soft_lid_token_read(int kdir, const char *name, uint8_t *token)
{
    int fd, ret;

    fd = openat(kdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    ret = srq_soft_lid_check_own(fd, S_IFREG);
    if ((ret == 0) &&
        (read(fd, token, SRQ_SOFT_LID_TOKEN_LEN) != SRQ_SOFT_LID_TOKEN_LEN)) {
        ret = EINVAL;
    }
    close(fd);
    return ret;
}

/* Make the token of this boot, or read the one another process made
 * first: written whole to a file of our own, then linked in (atomic) */
static int srq_soft_lid_token_make(int kdir, const char *name, uint8_t *token)
{
    char tmp[128];
    int fd, ret = 0;

    snprintf(tmp, sizeof(tmp), "%s.%d", name, (int)getpid());
    unlinkat(kdir, tmp, 0);
    fd = openat(kdir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                           O_CLOEXEC, 0600);
    if (fd < 0) {
        return errno;
    }
    if ((getrandom(token, SRQ_SOFT_LID_TOKEN_LEN, 0) !=
         SRQ_SOFT_LID_TOKEN_LEN) ||
        (write(fd, token, SRQ_SOFT_LID_TOKEN_LEN) != SRQ_SOFT_LID_TOKEN_LEN)) {
        ret = EIO;
    }
    close(fd);
    if ((ret == 0) && (linkat(kdir, tmp, kdir, name, 0) != 0)) {
        ret = (errno == EEXIST) ? srq_soft_lid_token_read(kdir, name, token) :
                                  errno;
    }
    unlinkat(kdir, tmp, 0);
    return ret;
}

/* The token of this boot: 0, or ENOENT when there is none and @make is
 * false, or an errno */
static int srq_soft_lid_token(uint8_t *token, int make)
{
    char name[96];
    int kdir, ret;

    ret = srq_soft_lid_key_name(name, sizeof(name));
    if (ret != 0) {
        return ret;
    }
    kdir = srq_soft_lid_key_dir(make);
    if (kdir < 0) {
        return make ? -kdir : ENOENT;
    }
    ret = srq_soft_lid_token_read(kdir, name, token);
    if ((ret == ENOENT) && make) {
        ret = srq_soft_lid_token_make(kdir, name, token);
    }
    close(kdir);
    return ret;
}

/* /dev/shm/srq-<uid>-<token> */
static int srq_soft_lid_private_dir(const uint8_t *token)
{
    char name[64];
    int i, n, shm, fd;

    n = snprintf(name, sizeof(name), SRQ_SOFT_LID_DIR_NAME "-",
                 (unsigned)getuid());
    for (i = 0; i < SRQ_SOFT_LID_TOKEN_LEN; ++i) {
        n += snprintf(name + n, sizeof(name) - n, "%02x", token[i]);
    }
    shm = open(SRQ_SOFT_LID_SHM, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (shm < 0) {
        return -errno;
    }
    fd = srq_soft_lid_open_dir(shm, name, 1);
    close(shm);
    return fd;
}

int srq_soft_lid_dir(void)
{
    uint8_t token[SRQ_SOFT_LID_TOKEN_LEN];
    char name[32];
    struct stat st;
    int shm, fd, ret;

    snprintf(name, sizeof(name), SRQ_SOFT_LID_DIR_NAME, (unsigned)getuid());
    shm = open(SRQ_SOFT_LID_SHM, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (shm < 0) {
        return -errno;
    }
    /* ours already: the usual case, which costs no look in the home (no
     * token can be younger than it: one is looked for before it is made) */
    fd = srq_soft_lid_open_dir(shm, name, 0);
    if (fd == -ENOENT) {
        if (srq_soft_lid_token(token, 0) == 0) {
            /* the user's processes went private this boot already */
            close(shm);
            return srq_soft_lid_private_dir(token);
        }
        fd = srq_soft_lid_open_dir(shm, name, 1);
    }
    if ((fd == -EPERM) && (fstatat(shm, name, &st, AT_SYMLINK_NOFOLLOW) == 0)) {
        /* the one case the library speaks: someone else's is in the way */
        ret = srq_soft_lid_token(token, 1);
        fprintf(stderr, "ucx-srq: soft0: %s/%s belongs to uid %u (mode %o): "
                "%s\n", SRQ_SOFT_LID_SHM, name, (unsigned)st.st_uid,
                (unsigned)st.st_mode, (ret == 0) ?
                "using a private name for the LID registry instead" :
                "cannot keep a private name in the home directory");
        fd = (ret == 0) ? srq_soft_lid_private_dir(token) : -EPERM;
    }
    close(shm);
    return fd;
}
