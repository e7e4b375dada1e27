/* Fork-join of a few independent jobs on threads. */
#ifndef NOPFS_PARALLEL_H
#define NOPFS_PARALLEL_H

#include <stddef.h>

/*
 * Run @work on each of @count jobs (an array of @job_size-byte elements),
 * job 0 on the calling thread and the others on new threads; a job whose
 * thread cannot be created runs on the calling thread afterwards, so every
 * job runs exactly once whatever the system allows. Returns when all are done.
 */
void nopfs_parallel_run(void (*work)(void *job), void *jobs, size_t job_size, unsigned int count);

#endif
