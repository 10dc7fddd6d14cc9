/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq fuzzers: the input as a sequence of choices, and the driver.
 *
 * A structure-aware fuzzer reads its input as decisions (which opcode,
 * which QP number, which length ...) and builds well-formed-but-adversarial
 * objects from them, so that most inputs get past the first checks. The
 * same entry point, LLVMFuzzerTestOneInput, serves libFuzzer (built with
 * clang -fsanitize=fuzzer -DSRQ_FUZZ_LIBFUZZER, contrib/fuzz) and the
 * driver below, which feeds it inputs from a seeded generator: the same
 * seed gives the same run.
 *
 *   prog [-seed N] [-runs N] [FILE...]
 *
 * FILEs are inputs to replay (regressions) before the generated ones.
 * Environment: SRQ_FUZZ_SEED, SRQ_FUZZ_RUNS (the defaults for -seed and
 * -runs).
 */
#ifndef SRQ_FUZZ_INPUT_H_
#define SRQ_FUZZ_INPUT_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuzz_in {
    const uint8_t *p;
    size_t         left;
} fuzz_in_t;

/* @bytes (<= 8) bytes of the input as a number; 0 once it is used up */
static inline uint64_t fuzz_bits(fuzz_in_t *in, unsigned bytes)
{
    uint64_t v = 0;

    while ((bytes-- > 0) && (in->left > 0)) {
        v = (v << 8) | *in->p++;
        --in->left;
    }
    return v;
}

static inline uint8_t  fuzz_u8(fuzz_in_t *in)  { return (uint8_t)fuzz_bits(in, 1); }
static inline uint16_t fuzz_u16(fuzz_in_t *in) { return (uint16_t)fuzz_bits(in, 2); }
static inline uint32_t fuzz_u32(fuzz_in_t *in) { return (uint32_t)fuzz_bits(in, 4); }
static inline uint64_t fuzz_u64(fuzz_in_t *in) { return fuzz_bits(in, 8); }

/* One of @n choices (n <= 256) */
static inline unsigned fuzz_pick(fuzz_in_t *in, unsigned n)
{
    return fuzz_u8(in) % n;
}

/* One of the values of an array */
#define FUZZ_ONE_OF(_in, _arr) \
    ((_arr)[fuzz_pick(_in, sizeof(_arr) / sizeof((_arr)[0]))])

static inline void fuzz_fill(fuzz_in_t *in, void *dst, size_t len)
{
    uint8_t *d = (uint8_t*)dst;
    size_t i;

    for (i = 0; i < len; ++i) {
        d[i] = fuzz_u8(in);
    }
}

#ifdef __cplusplus
extern "C"
#endif
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef SRQ_FUZZ_LIBFUZZER

#define FUZZ_MAX_INPUT  1024

static uint64_t fuzz_rng(uint64_t *s)
{
    /* xorshift64*: small, fast, the same everywhere */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static int fuzz_replay(const char *path)
{
    static uint8_t buf[1 << 16];
    FILE *f = fopen(path, "rb");
    size_t n;

    if (f == NULL) {
        perror(path);
        return -1;
    }
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

/* The driver: @name for the report, @runs the default number of inputs */
static int fuzz_main(int argc, char **argv, const char *name,
                     unsigned long runs)
{
    unsigned long seed = 1, i, k, n;
    uint8_t buf[FUZZ_MAX_INPUT];
    const char *env;
    uint64_t s;
    int a;

    if ((env = getenv("SRQ_FUZZ_SEED")) != NULL) {
        seed = strtoul(env, NULL, 0);
    }
    if ((env = getenv("SRQ_FUZZ_RUNS")) != NULL) {
        runs = strtoul(env, NULL, 0);
    }
    for (a = 1; a < argc; ++a) {
        if (!strcmp(argv[a], "-seed") && (a + 1 < argc)) {
            seed = strtoul(argv[++a], NULL, 0);
        } else if (!strcmp(argv[a], "-runs") && (a + 1 < argc)) {
            runs = strtoul(argv[++a], NULL, 0);
        } else if (fuzz_replay(argv[a]) != 0) {
            return 2;
        }
    }
    s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (i = 0; i < runs; ++i) {
        n = fuzz_rng(&s) % (FUZZ_MAX_INPUT + 1);
        for (k = 0; k < n; ++k) {
            buf[k] = (uint8_t)(fuzz_rng(&s) >> 56);
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("%s: %lu inputs, seed %lu: no failure\n", name, runs, seed);
    return 0;
}

#endif /* !SRQ_FUZZ_LIBFUZZER */

#endif
