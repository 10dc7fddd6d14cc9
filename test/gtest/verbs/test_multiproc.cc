/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: between real (forked) processes: one-sided
 * write/read with the target's CPU blocked in read(), a sleeping receiver
 * woken by a remote sender through its completion channel, peer death
 * (flush within a bounded time, its memory let go), an owner killed or
 * ended leaving nothing behind (remains(): once its peers let go, no
 * process of the user has its memory open or mapped, and no descriptor
 * of it is left with them), a producer dying while it holds the queue
 * lock, nothing landing after ibv_dereg_mr.
 *
 * Children are killed and reaped in TearDown whatever happens.
 */
#include "verbs_fixture.h"

extern "C" {
#include "verbs/soft/fabric/soft_pkt.h"
#include "verbs/soft/fabric/soft_qpn.h"
}

#include <algorithm>
#include <dirent.h>
#include <iostream>
#include <map>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

using namespace srq_test;

namespace {

const size_t kBufLen = 256 * 1024;

/* One side of an RC connection, self-contained (usable in a child) */
struct endpoint {
    srq_verbs_dev_t *dev = nullptr;
    ibv_pd *pd = nullptr;
    ibv_comp_channel *ch = nullptr;
    ibv_cq *cq = nullptr;
    ibv_qp *qp = nullptr;
    ibv_mr *mr = nullptr;
    char *buf = nullptr;
    peer_info_t info{};

    /* @still: the device moves only when polled (a soft device) */
    bool open(const std::string &name, bool channel = false,
              bool still = false)
    {
        if (srq_verbs_open(name.c_str(), &dev) != 0) {
            return false;
        }
        if (still && (srq_soft_test_stop_thread(dev) != 0)) {
            return false;
        }
        pd  = srq_verbs_alloc_pd(dev);
        ch  = channel ? srq_verbs_create_comp_channel(dev) : nullptr;
        cq  = srq_verbs_create_cq(dev, 256, nullptr, ch, 0);
        buf = (char*)aligned_alloc(4096, kBufLen);
        memset(buf, 0, kBufLen);
        mr  = srq_verbs_reg_mr(dev, pd, buf, kBufLen,
                               IBV_ACCESS_LOCAL_WRITE |
                               IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ);
        qp = (pd && cq && mr) ? new_qp() : nullptr;
        if (qp == nullptr) {
            return false;
        }
        srq_verbs_port_addr(dev, 1, &info.addr);
        info.qpn  = qp->qp_num;
        info.rkey = mr->rkey;
        info.buf  = (uintptr_t)buf;
        info.len  = kBufLen;
        srq_soft_segment_name(dev, info.seg_name, sizeof(info.seg_name));
        return true;
    }

    /* An RC QP on our CQ: the endpoint's own, or another one */
    ibv_qp *new_qp()
    {
        ibv_qp_init_attr attr = {};
        attr.send_cq = attr.recv_cq = cq;
        attr.qp_type = IBV_QPT_RC;
        attr.cap.max_send_wr = attr.cap.max_recv_wr = 64;
        attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
        return srq_verbs_create_qp(dev, pd, &attr);
    }

    bool connect(const peer_info_t &peer, uint8_t rnr_retry = 7,
                 uint8_t timeout = 0, uint8_t retry_cnt = 7)
    {
        ibv_qp_attr a = {};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                            IBV_ACCESS_REMOTE_READ;
        if (srq_verbs_modify_qp(dev, qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
            return false;
        }
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = peer.qpn;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 1;
        if (srq_verbs_ah_attr(dev, 1, &peer.addr, &a.ah_attr) ||
            srq_verbs_modify_qp(dev, qp, &a, IBV_QP_STATE | IBV_QP_AV |
                                IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                IBV_QP_MIN_RNR_TIMER)) {
            return false;
        }
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_RTS;
        a.timeout = timeout; /* default 0: only peer death ends it */
        a.retry_cnt = retry_cnt;
        a.rnr_retry = rnr_retry;
        a.max_rd_atomic = 1;
        return srq_verbs_modify_qp(dev, qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
                                   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                   IBV_QP_SQ_PSN |
                                   IBV_QP_MAX_QP_RD_ATOMIC) == 0;
    }

    int post(ibv_wr_opcode op, size_t off, uint32_t len, uint64_t wr_id,
             uint64_t raddr = 0, uint32_t rkey = 0)
    {
        ibv_sge sge = { (uintptr_t)buf + off, len, mr->lkey };
        ibv_send_wr wr = {}, *bad;
        wr.wr_id = wr_id; wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = op;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = raddr; wr.wr.rdma.rkey = rkey;
        return ibv_post_send(qp, &wr, &bad);
    }

    int post_recv(size_t off, uint32_t len, uint64_t wr_id)
    {
        ibv_sge sge = { (uintptr_t)buf + off, len, mr->lkey };
        ibv_recv_wr wr = {}, *bad;
        wr.wr_id = wr_id; wr.sg_list = &sge; wr.num_sge = 1;
        return ibv_post_recv(qp, &wr, &bad);
    }

    /* one completion, or status -1 on timeout */
    int wait(ibv_wc *wc, int timeout_ms = 5000)
    {
        uint64_t end = now_ms() + timeout_ms;
        while (now_ms() < end) {
            int n = ibv_poll_cq(cq, 1, wc);
            if (n != 0) {
                return (n < 0) ? -1 : (int)wc->status;
            }
        }
        return -1;
    }

    void close()
    {
        if (qp) srq_verbs_destroy_qp(dev, qp);
        if (mr) srq_verbs_dereg_mr(dev, mr);
        if (cq) srq_verbs_destroy_cq(dev, cq);
        if (ch) srq_verbs_destroy_comp_channel(dev, ch);
        if (pd) srq_verbs_dealloc_pd(dev, pd);
        if (dev) srq_verbs_close(dev);
        free(buf);
        *this = endpoint();
    }
};

/* A mapping of this process whose name contains @name */
bool mapped_here(const std::string &name)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    bool found = false;

    while ((maps != nullptr) && !found && fgets(line, sizeof(line), maps)) {
        found = (strstr(line, name.c_str()) != nullptr);
    }
    if (maps != nullptr) {
        fclose(maps);
    }
    return found;
}

/* The descriptors of process @pid ("self" too) and what they lead to */
std::map<int, std::string> fds_of(const std::string &pid)
{
    std::map<int, std::string> fds;
    std::string dir_path = "/proc/" + pid + "/fd";
    DIR *dir = opendir(dir_path.c_str());
    struct dirent *de;
    char link[256];

    while ((dir != nullptr) && ((de = readdir(dir)) != nullptr)) {
        ssize_t n = readlinkat(dirfd(dir), de->d_name, link, sizeof(link) - 1);
        if ((de->d_name[0] != '.') && (n > 0) &&
            (atoi(de->d_name) != dirfd(dir))) {
            link[n] = '\0';
            fds[atoi(de->d_name)] = link;
        }
    }
    if (dir != nullptr) {
        closedir(dir);
    }
    return fds;
}

/* Descriptors this process has now and did not have in @before */
std::vector<std::string> new_fds(const std::map<int, std::string> &before)
{
    std::vector<std::string> added;
    for (auto &fd : fds_of("self")) {
        auto it = before.find(fd.first);
        if ((it == before.end()) || (it->second != fd.second)) {
            added.push_back(std::to_string(fd.first) + " -> " + fd.second);
        }
    }
    return added;
}

/*
 * What remains of instance @hex (instance_hex(): its id's first bytes) on
 * the host: every process of this user that still has its tables or its
 * queue (memfds "srq-soft-<hex>", "srq-softq-<hex>") open or mapped - the
 * kernel frees them with the last one - and any name carrying the id in
 * /dev/shm, /tmp or $XDG_RUNTIME_DIR (the device names nothing there; a
 * change that did would show). While the instance lives its owner holds
 * both memfds, so a probe that sees nothing then is broken: the tests
 * check that first.
 */
std::vector<std::string> remains(const std::string &hex)
{
    const std::string tab = "srq-soft-" + hex, queue = "srq-softq-" + hex;
    std::vector<std::string> found, dirs = { "/dev/shm", "/tmp" };
    DIR *proc = opendir("/proc");
    struct dirent *de;
    struct stat st;
    char line[512];

    while ((proc != nullptr) && ((de = readdir(proc)) != nullptr)) {
        std::string pid = de->d_name, base = "/proc/" + pid;
        if ((pid.find_first_not_of("0123456789") != std::string::npos) ||
            (stat(base.c_str(), &st) != 0) || (st.st_uid != getuid())) {
            continue;
        }
        for (auto &fd : fds_of(pid)) {
            if ((fd.second.find(tab) != std::string::npos) ||
                (fd.second.find(queue) != std::string::npos)) {
                found.push_back(base + "/fd/" + std::to_string(fd.first) +
                                " -> " + fd.second);
            }
        }
        FILE *maps = fopen((base + "/maps").c_str(), "r");
        while ((maps != nullptr) && fgets(line, sizeof(line), maps)) {
            if (strstr(line, tab.c_str()) || strstr(line, queue.c_str())) {
                found.push_back(base + "/maps: " + line);
            }
        }
        if (maps != nullptr) {
            fclose(maps);
        }
    }
    if (proc != nullptr) {
        closedir(proc);
    }
    if (getenv("XDG_RUNTIME_DIR") != nullptr) {
        dirs.push_back(getenv("XDG_RUNTIME_DIR"));
    }
    for (const std::string &d : dirs) {
        DIR *dir = opendir(d.c_str());
        while ((dir != nullptr) && ((de = readdir(dir)) != nullptr)) {
            if (strstr(de->d_name, hex.c_str()) != nullptr) {
                found.push_back(d + "/" + de->d_name);
            }
        }
        if (dir != nullptr) {
            closedir(dir);
        }
    }
    return found;
}

/* Where process @pid maps the memfd whose name begins with @name writable (its owner's
 * own mapping: what a same-user attacker finds in /proc/PID/maps), or 0 */
uint64_t writable_mapping(pid_t pid, const std::string &name)
{
    std::string path = "/proc/" + std::to_string(pid) + "/maps";
    FILE *maps = fopen(path.c_str(), "r");
    char line[512], perms[8];
    unsigned long start = 0, found = 0;

    while ((maps != nullptr) && !found && fgets(line, sizeof(line), maps)) {
        if ((strstr(line, ("/memfd:" + name).c_str()) != nullptr) &&
            (sscanf(line, "%lx-%*x %7s", &start, perms) == 2) &&
            (strcmp(perms, "rw-s") == 0)) {
            found = start;
        }
    }
    if (maps != nullptr) {
        fclose(maps);
    }
    return found;
}

/* process_vm_readv / _writev of @len bytes at @addr of @pid */
bool peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
    struct iovec local = { buf, len }, remote = { (void*)addr, len };
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

bool poke(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
    struct iovec local = { (void*)buf, len }, remote = { (void*)addr, len };
    return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

std::string first_of(const std::vector<std::string> &v)
{
    return v.empty() ? std::string("nothing") : v[0];
}

/* The hex every instance id of the process at @addr begins with: its
 * port's id without the serial (soft_port.h). The tests' processes open
 * one instance each */
std::string instance_hex(const srq_verbs_port_addr_t &addr)
{
    char hex[32];
    for (int i = 0; i < 10; ++i) {
        snprintf(hex + 2 * i, 3, "%02x", addr.gid[4 + i]);
    }
    return hex;
}

} // namespace

class multiproc : public verbs_test {
protected:
    void SetUp() override
    {
        verbs_test::SetUp();
        if (IsSkipped()) {
            return;
        }
        ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    }

    void TearDown() override
    {
        verbs_test::TearDown(); /* children first */
        me.close();
        if (sv[0] >= 0) {
            ::close(sv[0]);
            ::close(sv[1]);
        }
    }

    /* Fork a child that opens the device, swaps peer_info with us and
     * connects; then runs @body(child endpoint, socket) */
    /* @still: the child's device moves only when it polls; @channel: its
     * CQ has a completion channel (it can be armed) */
    pid_t spawn(const std::function<int(endpoint&, int)> &body,
                bool connect = true, bool still = false, bool channel = false)
    {
        std::string name = GetParam();
        int s = sv[1];
        pid_t pid = fork_child([name, s, body, connect, still, channel]() {
            endpoint ep;
            peer_info_t peer;
            if (!ep.open(name, channel, still) || !write_full(s, &ep.info, sizeof(ep.info)) ||
                !read_full(s, &peer, sizeof(peer))) {
                return 10;
            }
            /* connected (RTR) before the parent sends: a packet that
             * finds the QP not ready yet is dropped, as on an HCA */
            char up = 'c';
            if (connect && (!ep.connect(peer) || !write_full(s, &up, 1))) {
                return 11;
            }
            int rc = body(ep, s);
            ep.close();
            return rc;
        });
        EXPECT_TRUE(read_full(sv[0], &child, sizeof(child)));
        EXPECT_TRUE(write_full(sv[0], &me.info, sizeof(me.info)));
        char up = 0;
        if (connect) {
            EXPECT_TRUE(read_full(sv[0], &up, 1, 30000));
            EXPECT_EQ('c', up) << "the child did not connect";
        }
        return pid;
    }

    /* Destroy our QP: we let go of its peer */
    void let_go()
    {
        ASSERT_EQ(0, srq_verbs_destroy_qp(me.dev, me.qp));
        me.qp = nullptr;
    }

    /* The channel's next event is for our CQ; acknowledged */
    void expect_event()
    {
        ibv_cq *ev_cq;
        void *ev_ctx;

        ASSERT_EQ(0, srq_verbs_get_cq_event(me.dev, me.ch, &ev_cq, &ev_ctx));
        EXPECT_EQ(me.cq, ev_cq);
        srq_verbs_ack_cq_events(me.dev, ev_cq, 1);
    }

    /* The child's reply to a command, our device moved meanwhile (the
     * child's send completes once we ACK, in our progress) */
    char child_reply_polling()
    {
        char r = 0;
        ibv_wc wc;

        for (uint64_t end = now_ms() + 5000; (r == 0) && (now_ms() < end);) {
            ibv_poll_cq(me.cq, 0, &wc);
            struct pollfd sp = { sv[0], POLLIN, 0 };
            if (::poll(&sp, 1, 1) == 1) {
                read_full(sv[0], &r, 1);
            }
        }
        return r;
    }

    char cmd(char c)
    {
        char r = 0;
        EXPECT_TRUE(write_full(sv[0], &c, 1));
        EXPECT_TRUE(read_full(sv[0], &r, 1));
        return r;
    }

    int sv[2] = { -1, -1 };
    endpoint me;
    peer_info_t child{};
};

static uint64_t now_ns()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A program that sleeps between polls, as UCX's does (uct_iface_event_arm,
 * then its fd): poll the CQ; when it is empty, take the channel's events
 * (any: progress again), arm the CQ and sleep on the channel's fd, with
 * no look at the CQ between the arm and the sleep. The next completion,
 * or status -2 when nothing woke us within @wake_ms.
 */
static int sleep_wait(endpoint &ep, ibv_wc *wc, int wake_ms = 5000)
{
    int flags = fcntl(ep.ch->fd, F_GETFL);
    ibv_cq *ev_cq;
    void *ev_ctx;
    int n, events;

    if (!(flags & O_NONBLOCK) &&
        (fcntl(ep.ch->fd, F_SETFL, flags | O_NONBLOCK) != 0)) {
        return -1;
    }
    for (;;) {
        n = ibv_poll_cq(ep.cq, 1, wc);
        if (n != 0) {
            return (n < 0) ? -1 : (int)wc->status;
        }
        for (events = 0;
             srq_verbs_get_cq_event(ep.dev, ep.ch, &ev_cq, &ev_ctx) == 0;
             ++events) {
            srq_verbs_ack_cq_events(ep.dev, ev_cq, 1);
        }
        if (events > 0) {
            continue;
        }
        if (ibv_req_notify_cq(ep.cq, 0) != 0) {
            return -1;
        }
        struct pollfd pfd = { ep.ch->fd, POLLIN, 0 };
        if (::poll(&pfd, 1, wake_ms) != 1) {
            return -2;
        }
    }
}

/* The next receive completion, sleeping as sleep_wait; send completions
 * on the way are taken */
static int sleep_wait_recv(endpoint &ep, ibv_wc *wc)
{
    int ret;

    while (((ret = sleep_wait(ep, wc)) == IBV_WC_SUCCESS) &&
           !(wc->opcode & IBV_WC_RECV)) {
    }
    return ret;
}

/* Rounds of the event-mode ping-pong (multiproc.sleeping_pingpong) */
static const int kSleepRounds = 200;

/* child side of the command protocol */
static int child_serve(endpoint &ep, int s)
{
    char c, r;
    for (;;) {
        /* blocked here: no CPU of ours takes part in one-sided ops */
        if (!read_full(s, &c, 1, 30000)) {
            return 20;
        }
        switch (c) {
        case 'c': /* pattern A written by the parent? */
            r = 'y';
            for (size_t i = 0; i < kBufLen; ++i) {
                if (ep.buf[i] != (char)(i * 7 + 1)) {
                    r = 'n';
                    break;
                }
            }
            break;
        case 'f': /* fill with pattern B */
            for (size_t i = 0; i < kBufLen; ++i) {
                ep.buf[i] = (char)(i * 5 + 3);
            }
            r = 'y';
            break;
        case 's': { /* wait a little, send a message, wait for its ACK */
            ibv_wc wc;
            usleep(200000);
            strcpy(ep.buf, "wake up");
            r = (ep.post(IBV_WR_SEND, 0, 8, 1) == 0 && ep.wait(&wc) == 0) ?
                'y' : 'n';
            break;
        }
        case 'r': { /* post a receive, wait for a message */
            ibv_wc wc;
            r = (ep.post_recv(0, 64, 9) == 0 && ep.wait(&wc) == 0) ? 'y' : 'n';
            break;
        }
        case 'p': /* post a receive, do not wait for it */
            r = (ep.post_recv(0, 64, 9) == 0) ? 'y' : 'n';
            break;
        case 'a': /* arm our CQ: producers poke our wake pipe from now */
            r = (ibv_req_notify_cq(ep.cq, 0) == 0) ? 'y' : 'n';
            break;
        case 'e': { /* echo kSleepRounds messages, sleeping between them */
            ibv_wc wc;
            r = (ep.post_recv(0, 64, 0) == 0) ? 'y' : 'n';
            if (!write_full(s, &r, 1)) {
                return 21;
            }
            for (int i = 0; (i < kSleepRounds) && (r == 'y'); ++i) {
                r = 'n';
                if ((sleep_wait_recv(ep, &wc) != IBV_WC_SUCCESS) ||
                    (ep.post_recv(0, 64, i + 1) != 0)) {
                    break;
                }
                memcpy(ep.buf + 128, ep.buf, 64);
                r = (ep.post(IBV_WR_SEND, 128, 64, i) == 0) ? 'y' : 'n';
            }
            break;
        }
        case 'x': { /* move our QP to the error state */
            ibv_qp_attr a = {};
            a.qp_state = IBV_QPS_ERR;
            r = (srq_verbs_modify_qp(ep.dev, ep.qp, &a, IBV_QP_STATE) == 0) ?
                'y' : 'n';
            break;
        }
        case 'q':
            return 0;
        default:
            r = '?';
        }
        if (!write_full(s, &r, 1)) {
            return 21;
        }
    }
}

TEST_P(multiproc, one_sided_write_read)
{
    ASSERT_TRUE(me.open(GetParam()));
    pid_t pid = spawn(child_serve);
    ASSERT_TRUE(me.connect(child));
    ibv_wc wc;

    for (size_t i = 0; i < kBufLen; ++i) {
        me.buf[i] = (char)(i * 7 + 1);
    }
    ASSERT_EQ(0, me.post(IBV_WR_RDMA_WRITE, 0, kBufLen, 1, child.buf,
                         child.rkey));
    ASSERT_EQ(IBV_WC_SUCCESS, me.wait(&wc));
    EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
    EXPECT_EQ('y', cmd('c')) << "the child sees what we wrote";

    EXPECT_EQ('y', cmd('f'));
    memset(me.buf, 0, kBufLen);
    ASSERT_EQ(0, me.post(IBV_WR_RDMA_READ, 0, kBufLen, 2, child.buf,
                         child.rkey));
    ASSERT_EQ(IBV_WC_SUCCESS, me.wait(&wc));
    for (size_t i = 0; i < kBufLen; ++i) {
        ASSERT_EQ((char)(i * 5 + 3), me.buf[i]) << i;
    }

    /* bounds are checked against the child's registration */
    ASSERT_EQ(0, me.post(IBV_WR_RDMA_READ, 0, 64, 3, child.buf + kBufLen - 8,
                         child.rkey));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, me.wait(&wc));

    std::string hex = instance_hex(child.addr);
    if (is_soft()) {
        ASSERT_FALSE(remains(hex).empty()) << "the probe sees no live instance";
    }
    char q = 'q';
    ASSERT_TRUE(write_full(sv[0], &q, 1));
    EXPECT_EQ(0, wait_child(pid));
    if (is_soft()) {
        let_go();
        std::vector<std::string> left = remains(hex);
        EXPECT_TRUE(left.empty()) << "closed, and we let go: " << left.size()
                                  << " remain, e.g. " << first_of(left);
    }
}

TEST_P(multiproc, sleeping_receiver_woken_by_peer)
{
    ASSERT_TRUE(me.open(GetParam(), true));
    pid_t pid = spawn(child_serve);
    ASSERT_TRUE(me.connect(child));
    ibv_wc wc;

    ASSERT_EQ(0, me.post_recv(0, 64, 5));
    ASSERT_EQ(0, ibv_req_notify_cq(me.cq, 0));
    char c = 's';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    /* sleep in poll() on the channel fd: only the peer can wake us */
    struct pollfd pfd = { me.ch->fd, POLLIN, 0 };
    uint64_t t0 = now_ms();
    ASSERT_EQ(1, ::poll(&pfd, 1, 5000)) << "not woken";
    EXPECT_GE(now_ms() - t0, 100u) << "woke before the peer sent";
    expect_event();
    ASSERT_EQ(IBV_WC_SUCCESS, me.wait(&wc));
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_STREQ("wake up", me.buf);
    EXPECT_EQ('y', child_reply_polling());
    c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid));
}

/*
 * The wake pipe sits in the channel armed last (soft_cq.c): here a second
 * channel's CQ, armed after ours, whose owner never sleeps. Our sleep
 * must still end when the peer's message lands - the progress thread's
 * looks take it in and raise our event - and not wait for a poll of the
 * other channel.
 */
TEST_P(multiproc, sleeper_woken_while_another_channel_holds_the_pipe)
{
    ASSERT_TRUE(me.open(GetParam(), true));
    ibv_comp_channel *ch2 = srq_verbs_create_comp_channel(me.dev);
    ASSERT_NE(nullptr, ch2);
    ibv_cq *cq2 = srq_verbs_create_cq(me.dev, 16, nullptr, ch2, 0);
    ASSERT_NE(nullptr, cq2);
    pid_t pid = spawn(child_serve);
    ASSERT_TRUE(me.connect(child));
    ibv_wc wc;

    /* twice: the first time the thread may still sleep on the pipe itself
     * (it chose before we armed); the second it has seen the arms */
    for (int round = 0; round < 2; ++round) {
        ASSERT_EQ(0, me.post_recv(0, 64, round));
        ASSERT_EQ(0, ibv_req_notify_cq(me.cq, 0));
        ASSERT_EQ(0, ibv_req_notify_cq(cq2, 0));
        char c = 's';
        ASSERT_TRUE(write_full(sv[0], &c, 1));
        struct pollfd pfd = { me.ch->fd, POLLIN, 0 };
        uint64_t t0 = now_ms();
        ASSERT_EQ(1, ::poll(&pfd, 1, 5000)) << "round " << round
                                             << ": not woken";
        std::cout << GetParam() << ": round " << round << " woken "
                  << (now_ms() - t0) << " ms after arming, the peer sent "
                     "after 200 ms (printed, not judged)" << std::endl;
        expect_event();
        ASSERT_EQ(IBV_WC_SUCCESS, me.wait(&wc));
        EXPECT_EQ((uint64_t)round, wc.wr_id);
        EXPECT_EQ('y', child_reply_polling());
    }
    char c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid));
    EXPECT_EQ(0, srq_verbs_destroy_cq(me.dev, cq2));
    EXPECT_EQ(0, srq_verbs_destroy_comp_channel(me.dev, ch2));
}

/*
 * Completion-channel wakeups, both sides asleep between messages the way
 * UCX sleeps (sleep_wait): each message must wake its reader. The round
 * trip's latency is printed, not judged.
 */
TEST_P(multiproc, sleeping_pingpong)
{
    ASSERT_TRUE(me.open(GetParam(), true));
    pid_t pid = spawn(child_serve, true, false, true);
    ASSERT_TRUE(me.connect(child));
    std::vector<uint64_t> ns;
    srq_soft_stats_t st0, st1;
    ibv_wc wc;

    /* the device's counters: on the built-in path */
    bool counted = (srq_soft_query_stats(me.dev, &st0) == 0);
    ASSERT_EQ('y', cmd('e'));
    ASSERT_EQ(0, me.post_recv(0, 64, 0));
    for (int i = 0; i < kSleepRounds; ++i) {
        snprintf(me.buf + 128, 64, "ping %d", i);
        uint64_t t0 = now_ns();
        ASSERT_EQ(0, me.post(IBV_WR_SEND, 128, 64, i));
        ASSERT_EQ(IBV_WC_SUCCESS, sleep_wait_recv(me, &wc))
            << "round " << i << ": not woken (-2) or failed";
        ns.push_back(now_ns() - t0);
        ASSERT_STREQ(me.buf + 128, me.buf) << "round " << i;
        ASSERT_EQ(0, me.post_recv(0, 64, i + 1));
    }
    char r = 0;
    ASSERT_TRUE(read_full(sv[0], &r, 1));
    EXPECT_EQ('y', r);
    /* a poke wakes the sleeper, which moves the device itself: one wakeup
     * per message, as an HCA's interrupt, not the thread's then ours */
    if (counted) {
        ASSERT_EQ(0, srq_soft_query_stats(me.dev, &st1));
        EXPECT_LT(st1.thread_rounds - st0.thread_rounds,
                  (uint64_t)kSleepRounds / 4)
            << "the progress thread moved the device for the sleeper";
    }
    std::sort(ns.begin(), ns.end());
    std::cout << GetParam() << ": sleeping round trip, 64 B: median "
              << ns[ns.size() / 2] / 1000.0 << " us, 90% "
              << ns[ns.size() * 9 / 10] / 1000.0 << " us (printed, not judged)"
              << std::endl;
    char c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid));
}

/*
 * A CQ armed while it holds a completion nobody polled raises its event at
 * once, as an mlx5 HCA does (its arm carries the consumer index): a
 * program that polled it empty, armed it and sleeps must not sleep on a
 * completion added in between.
 */
TEST_P(multiproc, arm_with_unpolled_completion_raises_event)
{
    ASSERT_TRUE(me.open(GetParam(), true));
    pid_t pid = spawn(child_serve);
    ASSERT_TRUE(me.connect(child));
    ibv_wc wc;

    ASSERT_EQ(0, me.post_recv(0, 64, 5));
    /* the child's send completes on our ACK, which our device sends after
     * it wrote the receive's completion: the completion is in our CQ */
    ASSERT_EQ('y', cmd('s'));
    ASSERT_EQ(0, ibv_req_notify_cq(me.cq, 0));
    struct pollfd pfd = { me.ch->fd, POLLIN, 0 };
    ASSERT_EQ(1, ::poll(&pfd, 1, 0)) << "armed with a completion: no event";
    expect_event();
    ASSERT_EQ(1, ibv_poll_cq(me.cq, 1, &wc));
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_STREQ("wake up", me.buf);
    char c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid));
}

TEST_P(multiproc, peer_killed_flush_bounded)
{
    SRQ_SKIP_UNLESS_SOFT(); /* segment names are soft-device specific */
    ASSERT_TRUE(me.open(GetParam()));
    pid_t pid = spawn(child_serve);
    ASSERT_TRUE(me.connect(child));
    const int n = 5;
    ibv_wc wc;

    /* the child never polls: these stay unacknowledged */
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(0, me.post(IBV_WR_SEND, 0, 16, i));
    }
    EXPECT_EQ(0, ibv_poll_cq(me.cq, 1, &wc));
    std::string hex = instance_hex(child.addr);
    ASSERT_FALSE(remains(hex).empty()) << "the probe sees no live instance";
    kill(pid, SIGKILL);
    uint64_t t0 = now_ms();
    for (int i = 0; i < n; ++i) {
        int st = me.wait(&wc, 3000);
        ASSERT_NE(-1, st) << "no completion after the peer died";
        EXPECT_EQ((uint64_t)i, wc.wr_id);
        EXPECT_EQ(i == 0 ? IBV_WC_RETRY_EXC_ERR : IBV_WC_WR_FLUSH_ERR, st);
    }
    EXPECT_LT(now_ms() - t0, 1500u) << "flush took too long";
    ibv_qp_attr attr;
    ibv_qp_init_attr init;
    ASSERT_EQ(0, srq_verbs_query_qp(me.dev, me.qp, &attr, IBV_QP_STATE, &init));
    EXPECT_EQ(IBV_QPS_ERR, attr.qp_state);
    srq_soft_stats_t st;
    ASSERT_EQ(0, srq_soft_query_stats(me.dev, &st));
    EXPECT_EQ(1u, st.peers_dead);
    /* once our QP lets go of the dead peer, so does our mapping of it */
    std::string name = "srq-soft-" + hex;
    EXPECT_TRUE(mapped_here(name));
    let_go();
    EXPECT_FALSE(mapped_here(name)) << "still mapped: " << name;
    std::vector<std::string> left = remains(hex);
    EXPECT_TRUE(left.empty()) << "dead peer's memory remains: " << left.size()
                              << ", e.g. " << first_of(left);
}

/*
 * A peer that sent on two QPs and closed before we took the messages: one
 * progress call takes both and owes two ACKs; the first finds the peer
 * gone, which fails both QPs, so the ACK list loses the second while it is
 * walked (it looped forever on the unlinked element, seen in
 * ibv_srq_pingpong -e at exit). The child is the receiver: a hang is a
 * child that does not end.
 */
TEST_P(multiproc, peer_gone_while_acks_owed_on_two_qps)
{
    SRQ_SKIP_UNLESS_SOFT(); /* the ACK list is soft's */
    ASSERT_TRUE(me.open(GetParam()));
    ibv_qp *qp2 = me.new_qp();
    ASSERT_NE(nullptr, qp2);
    m_cleanup.push_back([this, qp2]() { srq_verbs_destroy_qp(me.dev, qp2); });
    pid_t pid = spawn([](endpoint &ep, int s) {
        endpoint e2 = ep; /* the second QP of the same device */
        peer_info_t peer2;
        ibv_wc wc[4];
        int got = 0;
        char c;

        e2.qp      = ep.new_qp();
        e2.info.qpn = e2.qp ? e2.qp->qp_num : 0;
        if (!e2.qp || !write_full(s, &e2.info, sizeof(e2.info)) ||
            !read_full(s, &peer2, sizeof(peer2)) || !e2.connect(peer2) ||
            ep.post_recv(0, 64, 1) || e2.post_recv(64, 64, 2)) {
            return 40;
        }
        c = 'y';
        /* no progress of ours until both messages wait in our queue */
        if (!write_full(s, &c, 1) || !read_full(s, &c, 1, 30000)) {
            return 41;
        }
        for (uint64_t end = now_ms() + 5000; (got < 2) && (now_ms() < end);) {
            int n = ibv_poll_cq(ep.cq, 4 - got, wc + got);
            got += (n > 0) ? n : 0;
        }
        srq_verbs_destroy_qp(ep.dev, e2.qp);
        return ((got == 2) && (wc[0].status == IBV_WC_SUCCESS) &&
                (wc[1].status == IBV_WC_SUCCESS)) ? 0 : 42;
    });
    ASSERT_TRUE(me.connect(child));
    peer_info_t child2, me2 = me.info;
    me2.qpn = qp2->qp_num;
    ASSERT_TRUE(read_full(sv[0], &child2, sizeof(child2)));
    ASSERT_TRUE(write_full(sv[0], &me2, sizeof(me2)));
    endpoint e2 = me;
    e2.qp = qp2;
    ASSERT_TRUE(e2.connect(child2));
    char c = 0;
    ASSERT_TRUE(read_full(sv[0], &c, 1));
    ASSERT_EQ(0, me.post(IBV_WR_SEND, 0, 16, 1));
    ASSERT_EQ(0, e2.post(IBV_WR_SEND, 16, 16, 2));
    e2 = endpoint(); /* not its own: nothing to close */
    /* both are queued at the child once a progress call has run; then we
     * go away with their ACKs owed */
    ibv_wc wc;
    ibv_poll_cq(me.cq, 0, &wc);
    srq_verbs_destroy_qp(me.dev, qp2);
    m_cleanup.pop_back();
    me.close();
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid)) << "the receiver hung, or lost a message";
}

/*
 * A peer that took our message (and ACKed it) and then ended: its ACK is
 * in our queue when we find it gone, as an HCA would have had it long
 * before any timeout. The message it took completes successfully; only
 * what it never answered fails.
 */
TEST_P(multiproc, peer_gone_after_answering_fails_only_the_rest)
{
    SRQ_SKIP_UNLESS_SOFT(); /* an HCA needs retry_cnt timeouts to say so */
    ASSERT_TRUE(me.open(GetParam()));
    pid_t pid = spawn(child_serve);
    ASSERT_TRUE(me.connect(child));
    ibv_wc wc;

    ASSERT_EQ(0, me.post(IBV_WR_SEND, 0, 16, 1));
    ASSERT_EQ('y', cmd('r')) << "the child took it";
    char c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    ASSERT_EQ(0, wait_child(pid));
    /* we have not polled: its ACK waits in our queue. This one finds the
     * peer gone as it is posted */
    ASSERT_EQ(0, me.post(IBV_WR_SEND, 0, 16, 2));
    ASSERT_EQ(IBV_WC_SUCCESS, me.wait(&wc)) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, me.wait(&wc));
    EXPECT_EQ(2u, wc.wr_id);
}

/* An owner killed with SIGKILL leaves nothing to reclaim: its memory is
 * gone with it, and a new instance has nothing to clean up */
/* A sender pokes the wake pipe of a peer that asked for it; once the peer
 * is killed nobody reads that pipe, and the poke must not raise SIGPIPE
 * (its default action ends the sender) */
static volatile sig_atomic_t g_sigpipes;

TEST_P(multiproc, poking_a_killed_peer_raises_no_sigpipe)
{
    SRQ_SKIP_UNLESS_SOFT(); /* the wake pipe is soft's */
    struct sigaction sa = {}, old;
    sa.sa_handler = [](int) { ++g_sigpipes; };
    ASSERT_EQ(0, sigaction(SIGPIPE, &sa, &old));
    m_cleanup.push_back([old]() { sigaction(SIGPIPE, &old, nullptr); });
    g_sigpipes = 0;

    ASSERT_TRUE(me.open(GetParam()));
    pid_t pid = spawn(child_serve, true, false, true);
    ASSERT_TRUE(me.connect(child));
    ASSERT_EQ('y', cmd('a'));
    ASSERT_EQ(0, kill(pid, SIGKILL));
    wait_child(pid);

    ibv_wc wc;
    ASSERT_EQ(0, me.post(IBV_WR_SEND, 0, 16, 1));
    EXPECT_NE(IBV_WC_SUCCESS, me.wait(&wc)) << "a dead peer took a message";
    EXPECT_EQ(0, g_sigpipes);
}

TEST_P(multiproc, killed_owner_leaves_nothing)
{
    SRQ_SKIP_UNLESS_SOFT();
    ASSERT_TRUE(me.open(GetParam()));
    pid_t pid = spawn([](endpoint &, int s) {
        char c;
        read_full(s, &c, 1, 30000); /* killed while waiting */
        return 0;
    }, false);
    std::string hex = instance_hex(child.addr);
    ASSERT_FALSE(remains(hex).empty()) << "the probe sees no live instance";
    kill(pid, SIGKILL);
    EXPECT_EQ(-1, wait_child(pid)) << "killed";
    std::vector<std::string> left = remains(hex);
    EXPECT_TRUE(left.empty()) << "a killed owner left " << left.size()
                              << ", e.g. " << first_of(left);
    EXPECT_FALSE(remains(instance_hex(me.info.addr)).empty())
        << "live ones stay";
}

TEST_P(multiproc, producer_dies_holding_queue_lock)
{
    SRQ_SKIP_UNLESS_SOFT();
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();

    /* a "producer" takes b's queue lock and dies holding it */
    srq_verbs_dev_t *bdev = b.dev;
    pid_t pid = fork_child([bdev]() {
        return srq_soft_test_hold_lock(bdev);
    });
    EXPECT_EQ(0, wait_child(pid));

    check_traffic_flows(a, b, 1);
    /* whoever took b's lock first took it over: a sending, or b's own
     * device arming its wake request */
    srq_soft_stats_t sa, sb;
    ASSERT_EQ(0, srq_soft_query_stats(a.dev, &sa));
    ASSERT_EQ(0, srq_soft_query_stats(b.dev, &sb));
    EXPECT_EQ(1u, sa.producer_recovered + sb.producer_recovered);
}

/*
 * A producer killed while filling a frame it claimed costs no other
 * producer's frame: the owner skips the dead one's claim (one frame
 * dropped) and takes what others queued behind it.
 */
TEST_P(multiproc, producer_dies_filling_its_frame)
{
    SRQ_SKIP_UNLESS_SOFT();
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    srq_soft_stats_t st;

    ASSERT_EQ(0, srq_soft_query_stats(b.dev, &st));
    uint64_t dropped = st.rx_dropped;
    srq_verbs_dev_t *adev = a.dev;
    srq_verbs_dev_t *bdev = b.dev;
    pid_t pid = fork_child([adev, bdev]() {
        srq_soft_pkt_t pad{};
        pad.opcode = SRQ_SOFT_OP_PAD;
        return srq_soft_inject(adev, bdev, &pad, sizeof(pad),
                               SRQ_SOFT_INJECT_CLAIM);
    });
    EXPECT_EQ(0, wait_child(pid));

    check_traffic_flows(a, b, 10); /* queued behind the dead claim */
    ASSERT_EQ(0, srq_soft_query_stats(b.dev, &st));
    EXPECT_EQ(dropped + 1, st.rx_dropped) << "the dead one's frame alone";
}

/*
 * A live process that keeps a target's producer lock (stopped, or never
 * releasing it) makes no verb wait for it: ibv_post_send returns at once,
 * the WR waits as under back-pressure, and fails with RETRY_EXC_ERR once
 * the QP's transport timeout and its retries have passed (here 2 x 17 ms;
 * the holder keeps the lock for 30 s).
 */
TEST_P(multiproc, live_holder_of_queue_lock_blocks_no_verb)
{
    SRQ_SKIP_UNLESS_SOFT();
    tdev_t &a = open_dev();
    tdev_t &b = open_dev();
    ibv_cq *cqa = make_cq(a), *cqb = make_cq(b);
    ibv_qp *qa = make_qp(a, IBV_QPT_RC, cqa, cqa);
    ibv_qp *qb = make_qp(b, IBV_QPT_RC, cqb, cqb);
    char *buf = (char*)alloc(64, 'k');
    ibv_mr *mra = reg(a, buf, 64, 0);
    conn_opts_t o;
    o.timeout   = 12; /* ~16.8 ms */
    o.retry_cnt = 1;
    connect_rc(a, qa, b, qb, o);

    srq_verbs_dev_t *bdev = b.dev;
    int sv2[2];
    ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv2));
    pid_t pid = fork_child([bdev, sv2]() {
        int rc = srq_soft_test_hold_lock(bdev);
        char c = rc ? 'n' : 'y';
        if (!write_full(sv2[1], &c, 1)) {
            return 2;
        }
        sleep(30); /* alive, holding it; TearDown kills us */
        return rc;
    });
    char c = 0;
    ASSERT_TRUE(read_full(sv2[0], &c, 1, 10000));
    close(sv2[0]);
    close(sv2[1]);
    ASSERT_EQ('y', c) << "the child did not get the lock";

    uint64_t t0 = now_ms();
    ASSERT_EQ(0, post_send(qa, IBV_WR_SEND, buf, 16, mra->lkey, 1));
    EXPECT_LT(now_ms() - t0, 1000u) << "ibv_post_send waited for the holder";
    ibv_wc wc = poll1_alone(cqa, 10000);
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status) << ibv_wc_status_str(wc.status);
    EXPECT_LT(now_ms() - t0, 5000u);
    srq_soft_stats_t st;
    ASSERT_EQ(0, srq_soft_query_stats(a.dev, &st));
    EXPECT_GT(st.tx_lock_busy, 0u);
    kill(pid, SIGKILL);
    wait_child(pid);
}

TEST_P(multiproc, slow_peer_is_not_a_lost_packet)
{
    SRQ_SKIP_UNLESS_SOFT(); /* an HCA ACKs without the peer's CPU anyway */
    ASSERT_TRUE(me.open(GetParam()));
    /* a child whose device does not run while it sits in read() */
    pid_t pid = spawn(child_serve, true, true);
    /* ~1 ms ACK timeout, one retry: a lossy link would fail in ~2 ms */
    ASSERT_TRUE(me.connect(child, 7, 8, 1));
    ibv_wc wc;

    ASSERT_EQ(0, me.post(IBV_WR_SEND, 0, 16, 1));
    /* the child sits in read(): nothing consumes our packet for a while */
    EXPECT_EQ(-1, me.wait(&wc, 300)) << ibv_wc_status_str(wc.status);
    EXPECT_EQ('y', cmd('r'));
    EXPECT_EQ(IBV_WC_SUCCESS, me.wait(&wc));
    char c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid));
}

/*
 * The other side of slow_peer_is_not_a_lost_packet: a peer whose QP is in
 * the error state answers nothing however long we wait, so the packet is
 * lost and costs a retry even while the peer's device stands still (an
 * HCA drops it without the peer's CPU). Waiting for the idle peer's
 * device instead cost atomics to a QP in error 35 s rather than 6 (issue
 * 47); a SEND takes the same path (both are packets its responder takes).
 */
TEST_P(multiproc, still_peer_in_error_costs_retries)
{
    SRQ_SKIP_UNLESS_SOFT(); /* a soft device's peer may stand still */
    ASSERT_TRUE(me.open(GetParam()));
    pid_t pid = spawn(child_serve, true, true);
    /* ~1 ms ACK timeout, one retry: about 2 ms of timeouts in all */
    ASSERT_TRUE(me.connect(child, 7, 8, 1));
    EXPECT_EQ('y', cmd('x'));
    ibv_wc wc;

    ASSERT_EQ(0, me.post(IBV_WR_SEND, 0, 16, 1));
    /* the child sits in read() all along: its device takes nothing */
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, me.wait(&wc, 3000));
    char c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid));
}

/* Whether process @pid is stopped (state T in /proc/PID/stat) */
static bool is_stopped(pid_t pid)
{
    std::string path = "/proc/" + std::to_string(pid) + "/stat";
    FILE *f = fopen(path.c_str(), "r");
    char state = 0;

    if (f != nullptr) {
        if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1) {
            state = 0;
        }
        fclose(f);
    }
    return state == 'T';
}

/*
 * A peer stopped with SIGSTOP (its device thread with it) is alive: with
 * a ~1 ms ACK timeout and one retry, a SEND, a WRITE and a READ toward it
 * must not fail in the 500 ms it stays stopped (an HCA would have ACKed
 * and served them meanwhile), and all complete once it runs again. A
 * stopped peer is what a starved one looks like at its worst.
 */
TEST_P(multiproc, stopped_peer_is_alive)
{
    ASSERT_TRUE(me.open(GetParam()));
    pid_t pid = spawn(child_serve);
    ASSERT_TRUE(me.connect(child, 7, 8, 1));
    ASSERT_EQ('y', cmd('p')) << "the child posts a receive";
    ASSERT_EQ(0, kill(pid, SIGSTOP));
    m_cleanup.push_back([pid]() { kill(pid, SIGCONT); });
    for (uint64_t end = now_ms() + 5000; !is_stopped(pid) && (now_ms() < end);) {
        usleep(1000);
    }
    ASSERT_TRUE(is_stopped(pid));

    ASSERT_EQ(0, me.post(IBV_WR_SEND, 0, 16, 1));
    ASSERT_EQ(0, me.post(IBV_WR_RDMA_WRITE, 0, 65536, 2, child.buf,
                         child.rkey));
    ASSERT_EQ(0, me.post(IBV_WR_RDMA_READ, 65536, 4096, 3, child.buf,
                         child.rkey));
    std::vector<ibv_wc> done;
    ibv_wc wc;
    for (uint64_t end = now_ms() + 500; now_ms() < end;) {
        if (ibv_poll_cq(me.cq, 1, &wc) == 1) {
            done.push_back(wc);
            EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
                << "wr " << wc.wr_id << " toward a stopped peer: "
                << ibv_wc_status_str(wc.status);
        }
    }
    EXPECT_TRUE(is_stopped(pid)) << "it ran meanwhile: the test proves less";
    ASSERT_EQ(0, kill(pid, SIGCONT));
    while (done.size() < 3) {
        ASSERT_EQ(IBV_WC_SUCCESS, me.wait(&wc)) << "after SIGCONT, "
            << done.size() << " of 3 completed; this one: "
            << ibv_wc_status_str(wc.status);
        done.push_back(wc);
    }
    char c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid));
}

/*
 * A peer that takes nothing for a while (its CPU elsewhere) fills its
 * inbound queue; the sender retries from progress, and each retry must
 * not ask the kernel whether the peer lives (kill, /proc): liveness has
 * its own timer, SRQ_SOFT_PEER_CHECK_NS (100 ms).
 */
TEST_P(multiproc, back_pressure_makes_no_system_call_per_retry)
{
    SRQ_SKIP_UNLESS_SOFT(); /* the inbound queue and statistics are soft's */
    const uint32_t len = 2048;
    const int ms = 300;
    tdev_t &d  = open_dev();
    ibv_cq *cq = make_cq(d);
    ibv_qp *qp = make_qp(d, IBV_QPT_UD, cq, cq);
    char *buf  = (char*)alloc(len, 'b');
    ibv_mr *mr = reg(d, buf, len, 0);
    /* it sits in read(), its device still: its queue fills */
    pid_t pid  = spawn(child_serve, false, true);
    ud_to_rts(d, qp, 0x1234);
    ibv_ah *ah = make_ah(d, child.addr);
    srq_soft_stats_t st;
    ibv_wc wc[64];

    uint64_t end = now_ms() + ms;
    while (now_ms() < end) {
        ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
        ibv_send_wr wr = {}, *bad;
        wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.ud.ah = ah; wr.wr.ud.remote_qpn = child.qpn;
        wr.wr.ud.remote_qkey = 0x1234;
        ibv_post_send(qp, &wr, &bad); /* fails while the send queue is full */
        /* take the completions (a send completes once queued at the peer):
         * an empty poll runs progress, which retries what waits */
        int n;
        while ((n = ibv_poll_cq(cq, 64, wc)) > 0) {
        }
        ASSERT_EQ(0, n) << "the CQ overran";
    }
    ASSERT_EQ(0, srq_soft_query_stats(d.dev, &st));
    EXPECT_GT(st.tx_ring_full, 100u) << "the peer's queue never filled";
    EXPECT_LE(st.liveness_checks, (uint64_t)(ms / 100 + 2))
        << st.tx_ring_full << " retries into a full queue";
    char c = 'q';
    ASSERT_TRUE(write_full(sv[0], &c, 1));
    EXPECT_EQ(0, wait_child(pid));
}

/*
 * Nothing lands after ibv_dereg_mr returns. The child writes a large
 * region of ours (one RDMA WRITE of kBigLen, done by the child's CPU with
 * cross-memory attach); as soon as its first bytes arrive we deregister,
 * then overwrite the region with a sentinel. Once the child's write has
 * completed (with an error: it was cut off), not one sentinel byte may
 * have been overwritten. An attempt where the write had already finished
 * when dereg returned proves nothing and is repeated.
 */
TEST_P(multiproc, nothing_lands_after_dereg)
{
    const size_t kBigLen = 64ul << 20;
    ASSERT_TRUE(me.open(GetParam()));
    pid_t pid = spawn([kBigLen](endpoint &ep, int s) {
        char *src = (char*)aligned_alloc(4096, kBigLen);
        memset(src, 0x5a, kBigLen);
        ibv_mr *mr = srq_verbs_reg_mr(ep.dev, ep.pd, src, kBigLen,
                                      IBV_ACCESS_LOCAL_WRITE);
        peer_info_t big;
        char c;
        while (mr && read_full(s, &big, sizeof(big), 30000)) {
            ibv_sge sge = { (uintptr_t)src, (uint32_t)big.len, mr->lkey };
            ibv_send_wr wr = {}, *bad;
            ibv_wc wc;
            wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_RDMA_WRITE;
            wr.send_flags = IBV_SEND_SIGNALED;
            wr.wr.rdma.remote_addr = big.buf; wr.wr.rdma.rkey = big.rkey;
            c = 'g';
            if (!write_full(s, &c, 1) || ibv_post_send(ep.qp, &wr, &bad)) {
                return 30;
            }
            c = (char)ep.wait(&wc, 20000);
            if (!write_full(s, &c, 1)) {
                return 31;
            }
            /* a new QP for the next attempt: this one is in error now */
            if (!read_full(s, &c, 1, 30000) || (c != 'n')) {
                break;
            }
            srq_verbs_destroy_qp(ep.dev, ep.qp);
            ep.qp = ep.new_qp();
            ep.info.qpn = ep.qp ? ep.qp->qp_num : 0;
            peer_info_t peer;
            if (!write_full(s, &ep.info, sizeof(ep.info)) ||
                !read_full(s, &peer, sizeof(peer)) || !ep.connect(peer)) {
                return 32;
            }
        }
        if (mr) srq_verbs_dereg_mr(ep.dev, mr);
        free(src);
        return 0;
    });
    ASSERT_TRUE(me.connect(child));
    char *big = (char*)aligned_alloc(4096, kBigLen);
    ASSERT_NE(nullptr, big);
    m_bufs.push_back(big);

    bool conclusive = false;
    for (int attempt = 0; (attempt < 5) && !conclusive; ++attempt) {
        memset(big, 0, kBigLen);
        ibv_mr *mr = srq_verbs_reg_mr(me.dev, me.pd, big, kBigLen,
                                      IBV_ACCESS_LOCAL_WRITE |
                                      IBV_ACCESS_REMOTE_WRITE);
        ASSERT_NE(nullptr, mr);
        peer_info_t info = me.info;
        info.buf  = (uintptr_t)big;
        info.len  = kBigLen;
        info.rkey = mr->rkey;
        char c = 0;
        ASSERT_TRUE(write_full(sv[0], &info, sizeof(info)));
        ASSERT_TRUE(read_full(sv[0], &c, 1));
        ASSERT_EQ('g', c);
        /* the write is under way once its first bytes are here */
        volatile char *first = big, *last = big + kBigLen - 1;
        for (uint64_t end = now_ms() + 10000; (*first == 0) && (now_ms() < end);) {
        }
        ASSERT_NE(0, *first) << "the write never started";
        ASSERT_EQ(0, srq_verbs_dereg_mr(me.dev, mr));
        conclusive = (*last == 0); /* still in flight when dereg returned */
        memset(big, 0xee, kBigLen);
        ASSERT_TRUE(read_full(sv[0], &c, 1, 30000));
        int status = (unsigned char)c;
        if (!conclusive) {
            std::cout << "attempt " << attempt << ": the write was over "
                         "before dereg returned, again" << std::endl;
        } else {
            EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, status)
                << "a write cut off by dereg: " << status;
            size_t landed = 0;
            for (size_t i = 0; i < kBigLen; ++i) {
                landed += ((unsigned char)big[i] != 0xee);
            }
            EXPECT_EQ(0u, landed) << "bytes landed after dereg returned";
        }
        c = conclusive ? 'q' : 'n';
        ASSERT_TRUE(write_full(sv[0], &c, 1));
        if (!conclusive) {
            /* the child's QP is in error: connect its new one */
            ASSERT_TRUE(read_full(sv[0], &child, sizeof(child)));
            srq_verbs_destroy_qp(me.dev, me.qp);
            me.qp = me.new_qp();
            ASSERT_NE(nullptr, me.qp);
            me.info.qpn = me.qp->qp_num;
            ASSERT_TRUE(write_full(sv[0], &me.info, sizeof(me.info)));
            ASSERT_TRUE(me.connect(child));
        }
    }
    EXPECT_TRUE(conclusive) << "every write finished before dereg returned";
    EXPECT_EQ(0, wait_child(pid, 30000));
}

/*
 * A same-user process rewrites what a peer's tables and queue say - in the
 * peer's own writable mappings, with process_vm_writev, the attack of
 * issue 34 - and a third process (we) then reads and writes that peer:
 * every value we read from it is checked before use, so we neither crash
 * nor write a byte of our memory outside the buffer an operation names;
 * each operation completes (its status is the forged peer's business) in
 * bounded time. What the forger does to the peer itself is within the
 * trust boundary of one user (it could ptrace it).
 */
TEST_P(multiproc, forged_peer_tables_harm_no_third_process)
{
    SRQ_SKIP_UNLESS_SOFT();
    const uint64_t wild = 0x10000; /* unmapped in the child */
    const uint32_t len  = 65536;
    struct forgery {
        const char     *what;
        ibv_wr_opcode   op;
        std::function<bool(pid_t, const std::string&)> forge;
    };
    /* the child's own MR entry of its buffer: anywhere, any length, any
     * access (4096 -> 1 TiB, as the probe did with 1 GiB) */
    auto forge_mr = [this](pid_t pid, const std::string &hex) {
        uint64_t tab = writable_mapping(pid, "srq-soft-" + hex);
        uint64_t at  = tab + SRQ_SOFT_TAB_MR_OFF +
                       (child.rkey & (SRQ_SOFT_MR_TABLE_SIZE - 1)) *
                       sizeof(srq_soft_mr_ent_t);
        srq_soft_mr_ent_t e;
        if ((tab == 0) || !peek(pid, at, &e, sizeof(e)) || (e.key != child.rkey)) {
            return false; /* the forger did not find it: nothing tested */
        }
        e.addr   = wild;
        e.length = 1ull << 40;
        e.access = ~0u;
        return poke(pid, at, &e, sizeof(e));
    };
    std::vector<forgery> forgeries = {
        {"MR entry, READ", IBV_WR_RDMA_READ, forge_mr},
        {"MR entry, WRITE", IBV_WR_RDMA_WRITE, forge_mr},
        /* the child's QP entry: another destination, PD, every access */
        {"QP entry", IBV_WR_RDMA_WRITE, [this](pid_t pid, const std::string &hex) {
            uint64_t tab = writable_mapping(pid, "srq-soft-" + hex);
            uint64_t at  = tab + SRQ_SOFT_TAB_QP_OFF +
                           srq_soft_qpn_index(child.qpn) * sizeof(srq_soft_qp_ent_t);
            srq_soft_qp_ent_t e;
            if ((tab == 0) || !peek(pid, at, &e, sizeof(e)) || (e.qpn != child.qpn)) {
                return false;
            }
            e.seq &= ~1u;
            e.pd = 0x5a5a5a5a; e.access = ~0u; e.ready = 7;
            e.dest_qpn = 0xffffff;
            memset(e.dest_inst, 0xa5, sizeof(e.dest_inst));
            return poke(pid, at, &e, sizeof(e));
        }},
        /* the queue's indices: a tail far off and misaligned, a head
         * ahead of it */
        {"queue indices", IBV_WR_SEND, [](pid_t pid, const std::string &hex) {
            uint64_t q = writable_mapping(pid, "srq-softq-" + hex);
            uint64_t idx[2] = { 0x7ffffffffffff3c1ull, 5 };
            return (q != 0) &&
                   poke(pid, q + offsetof(srq_soft_shm_hdr_t, tail), &idx[0], 8) &&
                   poke(pid, q + offsetof(srq_soft_shm_hdr_t, head), &idx[1], 8);
        }},
        /* the tables' header: state, where the queue and pipe are, an
         * access in flight */
        {"tables header", IBV_WR_SEND, [](pid_t pid, const std::string &hex) {
            uint64_t tab = writable_mapping(pid, "srq-soft-" + hex);
            srq_soft_tab_hdr_t h;
            if ((tab == 0) || !peek(pid, tab, &h, sizeof(h))) {
                return false;
            }
            h.state = 0xdead; h.queue_fd = 0; h.wake_fd = 1;
            h.queue_size = 1; h.inflight.seq = 1;
            return poke(pid, tab, &h, sizeof(h));
        }},
    };

    for (const forgery &f : forgeries) {
        SCOPED_TRACE(f.what);
        ASSERT_TRUE(me.open(GetParam()));
        pid_t pid = spawn(child_serve);
        /* a transport timeout: a forged peer must not keep us forever */
        ASSERT_TRUE(me.connect(child, 7, 14, 1));
        ibv_wc wc;
        ASSERT_EQ(0, me.post(IBV_WR_RDMA_WRITE, 0, 64, 1, child.buf, child.rkey));
        ASSERT_EQ(IBV_WC_SUCCESS, me.wait(&wc)) << "not working before";

        ASSERT_TRUE(f.forge(pid, instance_hex(child.addr))) << "nothing forged";
        memset(me.buf, 0x5a, kBufLen);
        uint64_t raddr = (f.op == IBV_WR_SEND) ? 0 :
                         (f.what[0] == 'M') ? wild : child.buf;
        ASSERT_EQ(0, me.post(f.op, 4096, len, 2, raddr, child.rkey));
        int st = me.wait(&wc, 20000);
        EXPECT_NE(-1, st) << "no completion";
        /* a READ may write [4096, 4096 + len) of ours, nothing else */
        size_t bad = kBufLen;
        for (size_t i = 0; (i < kBufLen) && (bad == kBufLen); ++i) {
            bool mine = (f.op == IBV_WR_RDMA_READ) && (i >= 4096) && (i < 4096 + len);
            if (!mine && (me.buf[i] != 0x5a)) {
                bad = i;
            }
        }
        EXPECT_EQ(kBufLen, bad) << "our byte " << bad << " changed";
        kill(pid, SIGKILL);
        wait_child(pid);
        me.close();
    }
}

/* A child opens soft0 (as a device, and with a QP connected to us) and
 * then ends as @how says; nothing of it may remain */
class multiproc_end : public multiproc {
protected:
    void run(int how)
    {
        ASSERT_TRUE(me.open(GetParam()));
        pid_t pid = spawn([how](endpoint &, int s) {
            char c = 'r';
            /* not before we connected to it: an ended peer is unreachable */
            if (!read_full(s, &c, 1, 30000) || !write_full(s, &c, 1)) {
                return 40;
            }
            if (how == 0) {
                exit(0); /* normally, without closing anything */
            }
            read_full(s, &c, 1, 30000); /* SIGTERM comes meanwhile */
            return 41;
        });
        std::map<int, std::string> fds = fds_of("self");
        ASSERT_TRUE(me.connect(child));
        std::string hex = instance_hex(child.addr);
        ASSERT_FALSE(remains(hex).empty()) << "the probe sees no live instance";
        char c = 'g';
        ASSERT_TRUE(write_full(sv[0], &c, 1));
        ASSERT_TRUE(read_full(sv[0], &c, 1));
        if (how == 1) {
            kill(pid, SIGTERM);
        }
        int rc = wait_child(pid);
        if (how == 0) {
            EXPECT_EQ(0, rc);
        }
        /* its memory goes with the last holder: we are one while our QP
         * is connected to it */
        let_go();
        std::vector<std::string> left = remains(hex);
        EXPECT_TRUE(left.empty()) << left.size() << " remain, e.g. "
                                  << first_of(left);
        /* nor do we keep a descriptor of it (its wake pipe) */
        std::vector<std::string> added = new_fds(fds);
        EXPECT_TRUE(added.empty()) << added.size() << " descriptors more, e.g. "
                                   << first_of(added);
    }
};

TEST_P(multiproc_end, exit_leaves_nothing)
{
    SRQ_SKIP_UNLESS_SOFT();
    run(0);
}

TEST_P(multiproc_end, sigterm_leaves_nothing)
{
    SRQ_SKIP_UNLESS_SOFT();
    run(1);
}

SRQ_INSTANTIATE(multiproc_end);

SRQ_INSTANTIATE(multiproc);
