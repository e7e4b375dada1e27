/*
 * nopfs-pfs clients: a client is a network namespace. Their counters, the
 * pacing of their reads by the bandwidth curve, and the statistics file.
 */
#include "pfs.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/clock.h"

/* ------------------------------------------------------------------------ */
/* Time */

void pfs_sleep_until(double deadline)
{
	struct timespec ts;

	if (!(deadline > 0))
		return;
	ts.tv_sec = (time_t)deadline;
	ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ------------------------------------------------------------------------ */
/* Clients and pacing */

uint64_t pfs_caller_netns(void)
{
	struct fuse_context *context = fuse_get_context();
	char path[64];
	struct stat st;

	if (context == NULL || context->pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)context->pid);
	if (stat(path, &st) != 0)
		return 0;
	return (uint64_t)st.st_ino;
}

/* The client record of @netns, created on first use; call with pfs.lock held. */
static struct pfs_client *client_locked(uint64_t netns)
{
	struct pfs_client *c;

	for (c = pfs.clients; c != NULL; c = c->next)
		if (c->netns == netns)
			return c;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->netns = netns;
	c->last_read = -INFINITY;
	c->next = pfs.clients;
	pfs.clients = c;
	return c;
}

void pfs_clients_free(void)
{
	struct pfs_client *next;

	while (pfs.clients != NULL) {
		next = pfs.clients->next;
		free(pfs.clients);
		pfs.clients = next;
	}
}

/* Aggregate bandwidth at @gamma clients reading: the curve, interpolated. */
static double curve_rate(double gamma)
{
	int i;
	const struct pfs_curve_point *a, *b;

	if (gamma <= pfs.curve[0].clients)
		return pfs.curve[0].rate;
	for (i = 1; i < pfs.curve_points; i++) {
		if (gamma <= pfs.curve[i].clients) {
			a = &pfs.curve[i - 1];
			b = &pfs.curve[i];
			return a->rate + (b->rate - a->rate) * (gamma - a->clients) /
			                         (b->clients - a->clients);
		}
	}
	return pfs.curve[pfs.curve_points - 1].rate;
}

/* splitmix64; call with pfs.lock held. */
static uint64_t random_locked(void)
{
	uint64_t z = (pfs.rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

bool pfs_path_fails(const char *path)
{
	const char *relative = path[0] == '/' && path[1] != '\0' ? path + 1 : path;
	int i;

	for (i = 0; i < pfs.fail_count; i++)
		if (fnmatch(pfs.fail_patterns[i], relative, 0) == 0)
			return true;
	return false;
}

void pfs_count_open(uint64_t netns, bool failed)
{
	struct pfs_client *c;

	pthread_mutex_lock(&pfs.lock);
	c = client_locked(netns);
	if (c != NULL) {
		c->opens++;
		if (failed)
			c->errors++;
	}
	pthread_mutex_unlock(&pfs.lock);
}

/*
 * The client's share of the bandwidth paces its reads back to back, plus
 * the latency and maybe the noise. The share is a token bucket PFS_READ_BURST
 * seconds deep: a reader with one read in flight (direct_io: no readahead)
 * would otherwise lose every gap between its reads, which on a loaded
 * machine (the request's way through the kernel and to a FUSE thread) can
 * take half its time.
 */
double pfs_admit_read(uint64_t netns, size_t bytes, double now)
{
	struct pfs_client *c, *other;
	double done = now, gamma, rate;

	pthread_mutex_lock(&pfs.lock);
	c = client_locked(netns);
	if (c != NULL) {
		c->reads++;
		c->bytes += bytes;
		c->last_read = now;
		if (pfs.curve_points > 0 && bytes > 0) {
			gamma = 0;
			for (other = pfs.clients; other != NULL; other = other->next)
				if (other->last_read >= now - PFS_ACTIVE_WINDOW)
					gamma++;
			rate = curve_rate(gamma) / gamma;
			if (c->busy_until < now - PFS_READ_BURST)
				c->busy_until = now - PFS_READ_BURST;
			c->busy_until += (double)bytes / rate;
			if (c->busy_until > now)
				done = c->busy_until;
		}
	}
	done += pfs.latency;
	if (pfs.noise_fraction > 0 &&
	    (double)(random_locked() >> 11) / 9007199254740992.0 < pfs.noise_fraction)
		done += pfs.noise;
	pthread_mutex_unlock(&pfs.lock);
	return done;
}

void pfs_metadata(enum pfs_metadata_op op)
{
	uint64_t netns = pfs_caller_netns();
	double now = nopfs_clock_seconds(), done = now;
	struct pfs_client *c;

	pthread_mutex_lock(&pfs.lock);
	c = client_locked(netns);
	if (c != NULL) {
		uint64_t *counters[] = { &c->getattrs, &c->opendirs, &c->readdirs, &c->readlinks,
			                 &c->accesses };

		(*counters[op])++;
	}
	if (pfs.metadata_rate > 0) {
		if (pfs.metadata_busy_until < now)
			pfs.metadata_busy_until = now;
		pfs.metadata_busy_until += 1.0 / pfs.metadata_rate;
		done = pfs.metadata_busy_until;
	}
	pthread_mutex_unlock(&pfs.lock);
	if (pfs.metadata_rate > 0 || pfs.metadata_latency > 0)
		pfs_sleep_until(done + pfs.metadata_latency);
}

/* Writes are counted and delayed by the latency; the curve is for reads. */
double pfs_admit_write(uint64_t netns, size_t bytes, double now)
{
	struct pfs_client *c;

	pthread_mutex_lock(&pfs.lock);
	c = client_locked(netns);
	if (c != NULL) {
		c->writes++;
		c->bytes_written += bytes;
	}
	pthread_mutex_unlock(&pfs.lock);
	return now + pfs.latency;
}

/* ------------------------------------------------------------------------ */
/* Statistics */

static void write_counters(FILE *out, const struct pfs_client *c)
{
	fprintf(out,
	        "{\"opens\": %" PRIu64 ", \"reads\": %" PRIu64 ", \"bytes\": %" PRIu64
	        ", \"writes\": %" PRIu64 ", \"bytes_written\": %" PRIu64 ", \"errors\": %" PRIu64
	        ", \"metadata\": {\"getattr\": %" PRIu64 ", \"opendir\": %" PRIu64
	        ", \"readdir\": %" PRIu64 ", \"readlink\": %" PRIu64 ", \"access\": %" PRIu64
	        ", \"total\": %" PRIu64 "}}",
	        c->opens, c->reads, c->bytes, c->writes, c->bytes_written, c->errors, c->getattrs,
	        c->opendirs, c->readdirs, c->readlinks, c->accesses,
	        c->getattrs + c->opendirs + c->readdirs + c->readlinks + c->accesses);
}

static void write_clients_locked(FILE *out)
{
	struct pfs_client total = { 0 };
	const struct pfs_client *c;

	fputs("{\"clients\": {", out);
	for (c = pfs.clients; c != NULL; c = c->next) {
		fprintf(out, "%s\"%" PRIu64 "\": ", c == pfs.clients ? "" : ", ", c->netns);
		write_counters(out, c);
		total.opens += c->opens;
		total.reads += c->reads;
		total.bytes += c->bytes;
		total.writes += c->writes;
		total.bytes_written += c->bytes_written;
		total.errors += c->errors;
		total.getattrs += c->getattrs;
		total.opendirs += c->opendirs;
		total.readdirs += c->readdirs;
		total.readlinks += c->readlinks;
		total.accesses += c->accesses;
	}
	fputs("}, \"total\": ", out);
	write_counters(out, &total);
	fputs("}\n", out);
}

/* The clients' counters, as JSON, on @fd. */
static int dump_stats(int fd, void *unused)
{
	int copy = dup(fd);
	FILE *out = copy < 0 ? NULL : fdopen(copy, "w");
	bool ok;

	if (out == NULL) {
		if (copy >= 0)
			close(copy);
		return -1;
	}
	pthread_mutex_lock(&pfs.lock);
	write_clients_locked(out);
	pthread_mutex_unlock(&pfs.lock);
	ok = fflush(out) == 0 && !ferror(out);
	if (fclose(out) != 0)
		ok = false;
	return ok ? 0 : -1;
}

/* The daemon runs with umask 0 (callers' modes are kept): 0644 is said here. */
static void write_stats(void)
{
	if (pfs.stats_path == NULL)
		return;
	if (nopfs_atomic_write_with(pfs.stats_path, 0644, dump_stats, NULL) != NOPFS_OK)
		fprintf(stderr, PROGRAM ": --stats: cannot write '%s': %s\n", pfs.stats_path,
		        strerror(errno));
}

static void *stats_main(void *unused)
{
	struct timespec deadline;

	pthread_mutex_lock(&pfs.stats_lock);
	while (!pfs.stats_stop) {
		pthread_mutex_unlock(&pfs.stats_lock);
		write_stats();
		pthread_mutex_lock(&pfs.stats_lock);
		deadline = nopfs_clock_wall_deadline_after(1);
		while (!pfs.stats_stop &&
		       pthread_cond_timedwait(&pfs.stats_cond, &pfs.stats_lock, &deadline) == 0)
			;
	}
	pthread_mutex_unlock(&pfs.stats_lock);
	return NULL;
}

void pfs_stats_start(void)
{
	sigset_t all, saved;

	if (pfs.stats_path == NULL)
		return;
	/*
	 * The writer takes no signals: libfuse's SIGTERM handler only flags
	 * the session, which a FUSE thread must notice.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	pfs.stats_stop = false;
	if (pthread_create(&pfs.stats_thread, NULL, stats_main, NULL) == 0)
		pfs.stats_running = true;
	else
		fprintf(stderr, PROGRAM ": --stats: cannot start the writer thread\n");
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

void pfs_stats_stop(void)
{
	if (pfs.stats_running) {
		pthread_mutex_lock(&pfs.stats_lock);
		pfs.stats_stop = true;
		pthread_cond_signal(&pfs.stats_cond);
		pthread_mutex_unlock(&pfs.stats_lock);
		pthread_join(pfs.stats_thread, NULL);
		pfs.stats_running = false;
	}
	write_stats();
}
