/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A measured interface (the "server") and its peers in other processes,
 * shared by the benchmark programs: the server spawns peer processes
 * (this same program, role "--peer"), connects to each peer through the
 * child's socket (bench_connect: to-iface or to-ep as the transport says)
 * and then drives them with commands on that socket: connect (one
 * process at a time), say hello (every peer sends one active message, and
 * the server one back on each of its endpoints), flood (every peer sends a
 * burst as fast as its send queue takes it), exit. The server's own memory is never the peers'.
 *
 * A peer process holds its share of the peers as the transport allows
 * them: one interface with an endpoint per peer where the transport
 * connects to endpoints (rc_verbs: every endpoint is a connection), an
 * interface per peer where it connects to interfaces (rc_srq: one
 * connection per pair of interfaces).
 */
#ifndef BENCH_PEERS_H_
#define BENCH_PEERS_H_

#include "bench_uct.h"

/* active message ids */
#define BENCH_AM_HELLO  1
#define BENCH_AM_FLOOD  2

typedef struct {
    bench_iface_t *server;
    int           peers;       /* in all processes */
    int           num_procs;
    pid_t         *pids;
    int           *fds;
    int           *peers_of;   /* peers in each process */
    int           server_eps;  /* the server has an endpoint per peer */
    /* counted by the server's handlers */
    uint64_t      hellos;
    uint64_t      floods;
    double        first_flood_us;
    double        last_flood_us;
} bench_peers_t;

typedef struct {
    int procs;       /* peer processes (peers are spread evenly) */
    int server_eps;  /* also where the transport does not need it (to-iface)
                        the server creates an endpoint to every peer, as a
                        job whose ranks all talk to each other would */
    int small_tx;    /* peers' send queues small too (many idle peers) */
    int block;       /* peers do not progress while waiting for a command
                        (idle peers cost the server's measurement no CPU) */
} bench_peers_opts_t;

/* Set the server's handlers, spawn the peer processes and connect @peers
 * peers to @server, one process after the other; every peer then sends one
 * message to the server, and the server one to every peer where it has
 * endpoints. Returns once all arrived and are flushed: every connection is
 * up, and the peer processes wait (blocked with opts->block) */
void bench_peers_start(bench_peers_t *p, bench_iface_t *server, int peers,
                       const bench_peers_opts_t *opts);

/* Every peer sends @per_peer messages (8-byte header) as fast as its send
 * queue takes them; returns as the last one arrives at the server (the
 * peers may still be flushing), calling @sample about every millisecond
 * meanwhile (NULL: none) */
void bench_peers_flood(bench_peers_t *p, uint64_t per_peer,
                       void (*sample)(void *arg), void *arg);

/* Wait until every peer has flushed its flood */
void bench_peers_flood_done(bench_peers_t *p);

/* The peers exit; returns how many did not exit cleanly */
int bench_peers_stop(bench_peers_t *p);

/* The peer role: main() hands over when argv[1] is "--peer" */
int bench_peers_main(int argc, char **argv);

#endif
