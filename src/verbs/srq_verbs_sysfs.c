/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs layer: where an rdma-core device sits in the machine, read
 * from its sysfs directory (srq_verbs_sysfs_locality, srq_verbs.h).
 */
#define _GNU_SOURCE
#include "srq_verbs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srq_verbs_parse_cpumask(const char *text, srq_verbs_cpumask_t *mask)
{
    const char *end = text + strcspn(text, "\n");
    const char *word_end = end, *p;
    unsigned base = 0, k;
    unsigned long word;
    char *stop;

    memset(mask, 0, sizeof(*mask));
    if (end == text) {
        return EINVAL;
    }
    /* 32-bit hex words, the most significant first, separated by commas */
    for (;;) {
        for (p = word_end; (p > text) && (p[-1] != ','); --p) {
        }
        if ((word_end - p == 0) || (word_end - p > 8)) {
            return EINVAL;
        }
        word = strtoul(p, &stop, 16);
        if (stop != word_end) {
            return EINVAL;
        }
        for (k = 0; k < 32; ++k) {
            if ((word & (1ul << k)) && (base + k < SRQ_VERBS_MAX_CPUS)) {
                mask->bits[(base + k) / 64] |= 1ull << ((base + k) % 64);
            }
        }
        if (p == text) {
            return 0;
        }
        word_end = p - 1;
        base    += 32;
    }
}

/* A PCI function's name, "dddd:bb:ss.f" */
static int srq_verbs_is_pci_bdf(const char *name)
{
    unsigned d, b, s, f;
    int n = 0;

    return (sscanf(name, "%4x:%2x:%2x.%1x%n", &d, &b, &s, &f, &n) == 4) &&
           (name[n] == '\0');
}

int srq_verbs_sysfs_locality(const char *dev_dir, srq_verbs_locality_t *loc)
{
    char path[PATH_MAX], real[PATH_MAX], text[4096];
    const char *name;
    size_t len;
    FILE *f;

    memset(loc, 0, sizeof(*loc));
    /* <dev_dir>/device is the device's parent: a PCI function for an HCA */
    snprintf(path, sizeof(path), "%s/device", dev_dir);
    if (realpath(path, real) == NULL) {
        return errno;
    }
    name = strrchr(real, '/');
    name = (name == NULL) ? real : name + 1;
    if (srq_verbs_is_pci_bdf(name) && (strlen(name) < sizeof(loc->pci_bdf))) {
        memcpy(loc->pci_bdf, name, strlen(name) + 1);
    }

    snprintf(path, sizeof(path), "%s/device/local_cpus", dev_dir);
    f = fopen(path, "r");
    if (f != NULL) {
        len = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[len] = '\0';
        loc->cpus_known = (srq_verbs_parse_cpumask(text, &loc->cpus) == 0);
    }
    return 0;
}
