/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: device memory, where the device has it (max_dm_size):
 * refused allocations, copies and registrations, each the contract's
 * failure, and one whole life - allocate, copy in and back at an offset,
 * a zero-based region on it that keeps it from being freed, free. Each
 * op frees what it allocated: the scene holds no device memory.
 */
#include "fz.h"

#include <errno.h>
#include <string.h>

#define FZ_DM_WORD     4u
#define FZ_DM_MAX_COPY 256u

static struct ibv_dm *fz_dm_alloc(fz_t *fz, size_t len, uint32_t log_align,
                                  uint32_t comp_mask)
{
    struct ibv_alloc_dm_attr attr = { len, log_align, comp_mask };

    errno = 0;
    return FZ_BE(fz, alloc_dm, &attr);
}

static void fz_dm_free(fz_t *fz, struct ibv_dm *dm)
{
    fz_ok(fz, "ibv_free_dm", FZ_BE(fz, free_dm, dm));
}

/* A refused allocation: over max_dm_size, an unknown comp_mask, or more
 * than is left once all of it is held */
static void fz_dm_alloc_bad(fz_t *fz, uint64_t max)
{
    struct ibv_dm *all, *dm;

    switch (fz_range(&fz->rnd, 0, 2)) {
    case 0:
        dm = fz_dm_alloc(fz, max + fz_range(&fz->rnd, 1, 4096), 0, 0);
        fz_create_fails(fz, FZ_F(ibv_alloc_dm, length_over_max), dm, errno);
        break;
    case 1:
        dm = fz_dm_alloc(fz, FZ_DM_WORD, 0, 1u << fz_range(&fz->rnd, 0, 31));
        fz_create_fails(fz, FZ_F(ibv_alloc_dm, comp_mask_invalid), dm, errno);
        break;
    default:
        all = fz_dm_alloc(fz, max, 0, 0);
        if (!fz_ok(fz, "ibv_alloc_dm", (all != NULL) ? 0 : errno)) {
            return;
        }
        dm = fz_dm_alloc(fz, FZ_DM_WORD, 0, 0);
        fz_create_fails(fz, FZ_F(ibv_alloc_dm, capacity_exhausted), dm,
                        errno);
        fz_dm_free(fz, all);
        break;
    }
}

/* A copy out of range or not in words: refused, the memory unchanged */
static void fz_dm_copy_bad(fz_t *fz, struct ibv_dm *dm, size_t len)
{
    uint8_t host[FZ_DM_MAX_COPY] = { 0 };
    uint64_t off;

    if (fz_chance(&fz->rnd, 50)) {
        off = len - FZ_DM_WORD + FZ_DM_WORD * fz_range(&fz->rnd, 0, 4);
        fz->calls++;
        fz_fails(fz, FZ_F(ibv_memcpy_to_dm, out_of_range),
                 ibv_memcpy_to_dm(dm, off, host, 2 * FZ_DM_WORD));
    } else {
        fz->calls++;
        fz_fails(fz, FZ_F(ibv_memcpy_from_dm, unaligned),
                 ibv_memcpy_from_dm(host, dm, fz_range(&fz->rnd, 1, 3),
                                    FZ_DM_WORD));
    }
}

/* Copy a pattern in at a random word and back: the same bytes */
static void fz_dm_copy(fz_t *fz, struct ibv_dm *dm, size_t len)
{
    uint8_t in[FZ_DM_MAX_COPY], out[FZ_DM_MAX_COPY];
    size_t n   = FZ_DM_WORD * fz_range(&fz->rnd, 1, FZ_DM_MAX_COPY /
                                                    FZ_DM_WORD);
    uint64_t off;
    size_t i;

    n   = (n > len) ? len : n;
    off = FZ_DM_WORD * fz_range(&fz->rnd, 0, (len - n) / FZ_DM_WORD);
    for (i = 0; i < n; ++i) {
        in[i] = (uint8_t)fz_range(&fz->rnd, 0, 255);
    }
    fz->calls += 2;
    if (!fz_ok(fz, "ibv_memcpy_to_dm", ibv_memcpy_to_dm(dm, off, in, n)) ||
        !fz_ok(fz, "ibv_memcpy_from_dm",
               ibv_memcpy_from_dm(out, dm, off, n))) {
        return;
    }
    fz_post(fz, FZ_P(ibv_memcpy_from_dm, copied), memcmp(in, out, n) == 0,
            "%zu bytes at offset %llu came back changed", n,
            (unsigned long long)off);
}

/* Regions on it: not zero-based refused; a zero-based one keeps it from
 * being freed until it is deregistered */
static void fz_dm_region(fz_t *fz, struct ibv_dm *dm, size_t len)
{
    const unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    struct ibv_mr *mr;

    errno = 0;
    mr    = FZ_BE(fz, reg_dm_mr, fz->pd, dm, 0, len, access);
    fz_create_fails(fz, FZ_F(ibv_reg_dm_mr, not_zero_based), mr, errno);
    errno = 0;
    mr    = FZ_BE(fz, reg_dm_mr, fz->pd, dm, FZ_DM_WORD, len,
                  access | IBV_ACCESS_ZERO_BASED);
    fz_create_fails(fz, FZ_F(ibv_reg_dm_mr, out_of_range), mr, errno);
    errno = 0;
    mr    = FZ_BE(fz, reg_dm_mr, fz->pd, dm, 0, len,
                  access | IBV_ACCESS_ZERO_BASED);
    if (!fz_ok(fz, "ibv_reg_dm_mr", (mr != NULL) ? 0 : errno)) {
        return;
    }
    fz_fails(fz, FZ_F(ibv_free_dm, in_use), FZ_BE(fz, free_dm, dm));
    fz_ok(fz, "ibv_dereg_mr", FZ_BE(fz, dereg_mr, mr));
}

void fz_dm(fz_t *fz)
{
    uint64_t max = fz->dev.be->max_dm(&fz->dev);
    struct ibv_dm *dm;
    size_t len;

    if (max < FZ_DM_WORD) {
        return; /* the device has none */
    }
    if (fz_chance(&fz->rnd, 25)) {
        fz_dm_alloc_bad(fz, max);
        return;
    }
    len = FZ_DM_WORD * fz_range(&fz->rnd, 1, (max / 4) / FZ_DM_WORD);
    dm  = fz_dm_alloc(fz, len, fz_range(&fz->rnd, 0, 6), 0);
    if (!fz_ok(fz, "ibv_alloc_dm", (dm != NULL) ? 0 : errno)) {
        return;
    }
    fz_dm_copy(fz, dm, len);
    switch (fz_range(&fz->rnd, 0, 1)) {
    case 0:
        fz_dm_copy_bad(fz, dm, len);
        break;
    default:
        fz_dm_region(fz, dm, len);
        break;
    }
    fz_dm_free(fz, dm);
}
