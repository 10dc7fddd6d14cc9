/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq-verbs-fuzz: the registered buffer: the slots receive WRs take (each
 * filled with a canary when taken), and the payload pattern of a message,
 * which the sender writes and the receiver checks.
 */
#include "fz.h"

#include <string.h>

int fz_slot_get(fz_t *fz)
{
    static unsigned next;
    unsigned i, s;

    for (i = 0; i < FZ_NUM_SLOTS; ++i) {
        s = (next + i) % FZ_NUM_SLOTS;
        if (!fz->slot_busy[s]) {
            fz->slot_busy[s] = true;
            next = s + 1;
            memset(fz_slot_addr(fz, s), FZ_CANARY, FZ_SLOT_SIZE);
            return (int)s;
        }
    }
    return -1;
}

void fz_slot_put(fz_t *fz, int slot)
{
    fz->slot_busy[slot] = false;
}

uint8_t *fz_slot_addr(fz_t *fz, int slot)
{
    return fz->buf + (size_t)slot * FZ_SLOT_SIZE;
}

void fz_fill_payload(uint8_t *p, uint32_t len, uint32_t seq)
{
    uint32_t i;

    for (i = 0; i < len; ++i) {
        p[i] = (uint8_t)(seq * 31 + i * 7 + 1);
    }
    if (len >= sizeof(seq)) {
        memcpy(p, &seq, sizeof(seq));
    }
}
