/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq soft device: process identity. A process is (pid, start time):
 * a pid alone may have been reused by an unrelated process since it was
 * written into a segment or a lock word.
 */
#ifndef SRQ_SOFT_PROC_H_
#define SRQ_SOFT_PROC_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The start time of @pid (/proc/<pid>/stat); ESRCH for a zombie */
int  srq_soft_proc_start_time(pid_t pid, uint64_t *start_p);
/* @pid is alive and is the process that started at @start_time (or its
 * start time cannot be read for a limit of ours, and the pid exists) */
bool srq_soft_owner_alive(pid_t pid, uint64_t start_time);
/* A process in one word, as lock words and the LID registry hold it:
 * pid | low 32 bits of its start time << 32 */
uint64_t srq_soft_proc_id(pid_t pid, uint64_t start_time);
/* The process @id names is gone (or is a zombie, or its pid was reused);
 * never when we cannot tell for a limit of ours (no descriptor left) */
bool srq_soft_proc_id_dead(uint64_t id);
/* Processes with the same value can reach each other's instances: 0, or
 * the errno of a limit of ours that kept it from being known */
int srq_soft_domain_id(uint32_t *id_p);

#endif
