/* PMIx bootstrap of the agents: records, fences with timeouts. */
#include <errno.h>
#include <inttypes.h>
#include <pmix.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "common/cancel.h"
#include "common/log.h"
#include "common/clock.h"

/* The k-th exchange's key; a key put again would not replace what the others cached. */
#define RECORD_KEY_FORMAT "nopfs.agent.record.%u"

bool bootstrap_available(void)
{
	return getenv("PMIX_NAMESPACE") && getenv("PMIX_RANK");
}

static nopfs_status from_pmix(pmix_status_t rc)
{
	if (rc == PMIX_SUCCESS)
		return NOPFS_OK;
	if (rc == PMIX_ERR_TIMEOUT)
		return NOPFS_ERR_TIMEOUT;
	if (rc == PMIX_ERR_NOT_FOUND)
		return NOPFS_ERR_NOT_FOUND;
	return NOPFS_ERR_IO;
}

nopfs_status bootstrap_init(struct bootstrap *bootstrap)
{
	pmix_proc_t me, wildcard;
	pmix_value_t *value = NULL;
	pmix_status_t rc;

	memset(bootstrap, 0, sizeof(*bootstrap));
	rc = PMIx_Init(&me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		nopfs_error("PMIx: cannot initialize: %s", PMIx_Error_string(rc));
		return from_pmix(rc);
	}
	PMIX_LOAD_PROCID(&wildcard, me.nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, NULL, 0, &value);
	if (rc != PMIX_SUCCESS || value->type != PMIX_UINT32) {
		nopfs_error("PMIx: cannot get the job size: %s", PMIx_Error_string(rc));
		if (value)
			PMIX_VALUE_RELEASE(value);
		PMIx_Finalize(NULL, 0);
		return rc != PMIX_SUCCESS ? from_pmix(rc) : NOPFS_ERR_FORMAT;
	}
	bootstrap->active = true;
	bootstrap->node = me.rank;
	bootstrap->nodes = value->data.uint32;
	snprintf(bootstrap->nspace, sizeof(bootstrap->nspace), "%s", me.nspace);
	PMIX_VALUE_RELEASE(value);
	if (bootstrap->node >= bootstrap->nodes) {
		nopfs_error("PMIx: rank %" PRIu32 " is not below the job size %" PRIu32,
		            bootstrap->node, bootstrap->nodes);
		bootstrap_fini(bootstrap);
		return NOPFS_ERR_RANGE;
	}
	return NOPFS_OK;
}

/* A fence in flight: its callback may come after we gave up waiting. */
struct fence_wait {
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	bool done;
	bool abandoned; /* the waiter left: the callback frees this */
	pmix_status_t status;
};

static void fence_done(pmix_status_t status, void *cbdata)
{
	struct fence_wait *wait = cbdata;
	bool abandoned;

	pthread_mutex_lock(&wait->lock);
	wait->status = status;
	wait->done = true;
	abandoned = wait->abandoned;
	pthread_cond_signal(&wait->done_cond);
	pthread_mutex_unlock(&wait->lock);
	if (abandoned) {
		pthread_cond_destroy(&wait->done_cond);
		pthread_mutex_destroy(&wait->lock);
		free(wait);
	}
}

/*
 * A fence with a deadline of our own: Slurm's PMIx server does not honor
 * PMIX_TIMEOUT on fences (measured: a late rank holds everyone until it
 * comes), so the fence is started non-blocking and waited for with a timed
 * wait. Past the deadline the agent gives up; PMIx is then left alone (no
 * finalize, which could wait for the fence) and the agent exits. It always
 * collects data: Slurm's PMIx server completes a fence that collects none at
 * once on each node, without waiting for the others (measured), which is no
 * barrier. A stop signal ends the wait too (*stopped), within FENCE_SLICE_MS.
 */
#define FENCE_SLICE_MS 200

static pmix_status_t fence(struct bootstrap *bootstrap, int timeout_s, bool *stopped)
{
	struct fence_wait *wait = calloc(1, sizeof(*wait));
	pmix_proc_t wildcard;
	pmix_info_t info[2];
	bool collect_value = true;
	int timeout_value = timeout_s;
	struct timespec deadline;
	pmix_status_t rc;
	bool done;

	*stopped = false;
	if (!wait)
		return PMIX_ERR_NOMEM;
	pthread_mutex_init(&wait->lock, NULL);
	pthread_cond_init(&wait->done_cond, NULL);
	PMIX_LOAD_PROCID(&wildcard, bootstrap->nspace, PMIX_RANK_WILDCARD);
	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect_value, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout_value, PMIX_INT);
	rc = PMIx_Fence_nb(&wildcard, 1, info, 2, fence_done, wait);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	if (rc != PMIX_SUCCESS) {
		pthread_cond_destroy(&wait->done_cond);
		pthread_mutex_destroy(&wait->lock);
		free(wait);
		return rc;
	}
	deadline = nopfs_clock_wall_deadline_after(timeout_s);
	pthread_mutex_lock(&wait->lock);
	/* in slices: a stop signal ends the wait within one */
	while (!wait->done && !(*stopped = nopfs_stop_pending())) {
		struct timespec slice = nopfs_clock_wall_deadline_after(FENCE_SLICE_MS / 1000.0);
		bool last = slice.tv_sec > deadline.tv_sec ||
		            (slice.tv_sec == deadline.tv_sec && slice.tv_nsec >= deadline.tv_nsec);

		if (pthread_cond_timedwait(&wait->done_cond, &wait->lock,
		                           last ? &deadline : &slice) == ETIMEDOUT &&
		    last)
			break;
	}
	done = wait->done;
	rc = done ? wait->status : PMIX_ERR_TIMEOUT;
	wait->abandoned = !done;
	pthread_mutex_unlock(&wait->lock);
	if (done) {
		pthread_cond_destroy(&wait->done_cond);
		pthread_mutex_destroy(&wait->lock);
		free(wait);
	} else {
		bootstrap->broken = true;
	}
	return rc;
}

nopfs_status bootstrap_fence(struct bootstrap *bootstrap, int timeout_s)
{
	bool stopped;
	pmix_status_t rc = fence(bootstrap, timeout_s, &stopped);

	if (stopped) {
		nopfs_info("stopped while waiting for the other agents");
		return NOPFS_ERR_CANCELED;
	}
	if (rc != PMIX_SUCCESS)
		nopfs_error("PMIx: fence of %" PRIu32 " agents failed after at most %d s: %s",
		            bootstrap->nodes, timeout_s, PMIx_Error_string(rc));
	return from_pmix(rc);
}

static void free_records(void **records, size_t *lengths, uint32_t nodes)
{
	for (uint32_t n = 0; records && n < nodes; n++)
		free(records[n]);
	free(records);
	free(lengths);
}

/* Get node @n's record into records[n]. */
static nopfs_status get_record(struct bootstrap *bootstrap, const char *key, uint32_t n,
                               int timeout_s, void **record, size_t *length)
{
	pmix_proc_t peer;
	pmix_info_t info;
	pmix_value_t *value = NULL;
	int timeout_value = timeout_s;
	pmix_status_t rc;

	PMIX_LOAD_PROCID(&peer, bootstrap->nspace, n);
	PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &timeout_value, PMIX_INT);
	rc = PMIx_Get(&peer, key, &info, 1, &value);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS || value->type != PMIX_BYTE_OBJECT) {
		nopfs_error("PMIx: no record from node %" PRIu32 ": %s", n,
		            rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "not a byte object");
		if (value)
			PMIX_VALUE_RELEASE(value);
		return rc != PMIX_SUCCESS ? from_pmix(rc) : NOPFS_ERR_FORMAT;
	}
	*length = value->data.bo.size;
	*record = malloc(*length ? *length : 1);
	if (*record)
		memcpy(*record, value->data.bo.bytes, *length);
	PMIX_VALUE_RELEASE(value);
	if (!*record) {
		nopfs_error("PMIx: no memory for the record of node %" PRIu32, n);
		return NOPFS_ERR_NOMEM;
	}
	return NOPFS_OK;
}

nopfs_status bootstrap_exchange(struct bootstrap *bootstrap, const void *record, size_t length,
                                int timeout_s, void ***records_out, size_t **lengths_out)
{
	void **records = calloc(bootstrap->nodes, sizeof(*records));
	size_t *lengths = calloc(bootstrap->nodes, sizeof(*lengths));
	char key[PMIX_MAX_KEYLEN + 1];
	pmix_value_t value;
	pmix_status_t rc;
	nopfs_status status;
	bool stopped;

	snprintf(key, sizeof(key), RECORD_KEY_FORMAT, bootstrap->exchanges++);
	if (!records || !lengths) {
		free_records(records, lengths, 0);
		nopfs_error("PMIx: no memory for %" PRIu32 " records", bootstrap->nodes);
		return NOPFS_ERR_NOMEM;
	}
	PMIX_VALUE_CONSTRUCT(&value);
	value.type = PMIX_BYTE_OBJECT;
	value.data.bo.bytes = (char *)record;
	value.data.bo.size = length;
	rc = PMIx_Put(PMIX_GLOBAL, key, &value);
	if (rc == PMIX_SUCCESS)
		rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS) {
		nopfs_error("PMIx: cannot publish this node's record: %s", PMIx_Error_string(rc));
		free_records(records, lengths, 0);
		return from_pmix(rc);
	}
	rc = fence(bootstrap, timeout_s, &stopped);
	if (stopped) {
		nopfs_info("stopped while waiting for the other agents' records");
		free_records(records, lengths, 0);
		return NOPFS_ERR_CANCELED;
	}
	if (rc != PMIX_SUCCESS) {
		nopfs_error("PMIx: exchange of %" PRIu32 " agents' records failed after at most "
		            "%d s: %s",
		            bootstrap->nodes, timeout_s, PMIx_Error_string(rc));
		free_records(records, lengths, 0);
		return from_pmix(rc);
	}
	for (uint32_t n = 0; n < bootstrap->nodes; n++) {
		status = get_record(bootstrap, key, n, timeout_s, &records[n], &lengths[n]);
		if (status != NOPFS_OK) {
			free_records(records, lengths, bootstrap->nodes);
			return status;
		}
	}
	*records_out = records;
	*lengths_out = lengths;
	return NOPFS_OK;
}

void bootstrap_fini(struct bootstrap *bootstrap)
{
	/* After a fence timed out, finalizing could wait for that fence forever. */
	if (bootstrap->active && !bootstrap->broken)
		PMIx_Finalize(NULL, 0);
	bootstrap->active = false;
}
