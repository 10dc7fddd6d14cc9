/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * OpenSHMEM over spml ucx: put/get of many sizes, atomics (fetch-add,
 * compare-swap), shmem_wait_until, barrier, broadcast and reductions;
 * every result verified. Exit status 1 on any error.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX (1 << 20)

static int errors;

#define EXPECT(_cond, ...) \
    do { if (!(_cond)) { fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); ++errors; } } while (0)

static unsigned char pat(int seed, size_t i) { return (unsigned char)(seed * 31 + i * 7); }

long psync[SHMEM_BCAST_SYNC_SIZE];
long rsync[SHMEM_REDUCE_SYNC_SIZE];
long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
long counter, swapped, flag, bval[16], rin[8], rout[8];

int main(void)
{
    int me, npes, right;
    unsigned char *dst, *src;

    shmem_init();
    me    = shmem_my_pe();
    npes  = shmem_n_pes();
    right = (me + 1) % npes;
    dst   = shmem_malloc(MAX);
    src   = malloc(MAX);
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) rsync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();

    /* put and get of every size class */
    for (size_t len = 1; len <= MAX; len *= 4) {
        for (size_t i = 0; i < len; ++i) src[i] = pat(me + (int)len, i);
        shmem_putmem(dst, src, len, right);
        shmem_barrier_all();
        int left = (me + npes - 1) % npes;
        for (size_t i = 0; i < len; ++i) {
            if (dst[i] != pat(left + (int)len, i)) { EXPECT(0, "put %zu: byte %zu", len, i); break; }
        }
        memset(src, 0, len);
        shmem_getmem(src, dst, len, right);
        for (size_t i = 0; i < len; ++i) {
            if (src[i] != pat(me + (int)len, i)) { EXPECT(0, "get %zu: byte %zu", len, i); break; }
        }
        shmem_barrier_all();
    }

    /* atomics on PE 0 */
    counter = 0;
    swapped = -1;
    shmem_barrier_all();
    long old = shmem_long_atomic_fetch_add(&counter, me + 1, 0);
    EXPECT(old >= 0 && old < (long)npes * (npes + 1) / 2, "fetch_add old %ld", old);
    shmem_barrier_all();
    if (me == 0) EXPECT(counter == (long)npes * (npes + 1) / 2, "fetch_add sum %ld", counter);
    long prev = shmem_long_atomic_compare_swap(&swapped, -1, me, 0);
    shmem_barrier_all();
    long winner = shmem_long_g(&swapped, 0);
    EXPECT(winner >= 0 && winner < npes, "cswap winner %ld", winner);
    /* exactly the winner saw the initial value; the others saw the winner */
    EXPECT((me == winner) ? (prev == -1) : (prev == winner),
           "cswap: PE %d saw %ld, winner %ld", me, prev, winner);

    /* wait_until: each PE sets its right neighbour's flag */
    flag = 0;
    shmem_barrier_all();
    shmem_long_p(&flag, me + 100, right);
    shmem_long_wait_until(&flag, SHMEM_CMP_NE, 0);
    EXPECT(flag == (me + npes - 1) % npes + 100, "wait_until flag %ld", flag);
    shmem_barrier_all();

    /* broadcast from PE 0 */
    if (me == 0) for (int i = 0; i < 16; ++i) bval[i] = 1000 + i;
    shmem_barrier_all();
    shmem_broadcast64(bval, bval, 16, 0, 0, 0, npes, psync);
    shmem_barrier_all();
    for (int i = 0; i < 16; ++i) EXPECT(bval[i] == 1000 + i, "broadcast[%d] = %ld", i, bval[i]);

    /* reductions */
    for (int i = 0; i < 8; ++i) rin[i] = me * 8 + i;
    shmem_barrier_all();
    shmem_long_sum_to_all(rout, rin, 8, 0, 0, npes, pwrk, rsync);
    for (int i = 0; i < 8; ++i) {
        long expect = 8L * npes * (npes - 1) / 2 + (long)i * npes;
        EXPECT(rout[i] == expect, "sum_to_all[%d] = %ld, expected %ld", i, rout[i], expect);
    }
    shmem_barrier_all();
    shmem_long_max_to_all(rout, rin, 8, 0, 0, npes, pwrk, rsync);
    for (int i = 0; i < 8; ++i) EXPECT(rout[i] == (npes - 1) * 8 + i, "max_to_all[%d]", i);

    shmem_barrier_all();
    static long total;
    shmem_long_atomic_add(&total, errors, 0);
    shmem_barrier_all();
    if (me == 0) printf("%s: shmem_basic (%ld error(s))\n", total ? "FAIL" : "PASS", total);
    int rc = (me == 0 && total) ? 1 : 0;
    shmem_free(dst);
    free(src);
    shmem_finalize();
    return rc;
}
