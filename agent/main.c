/*
 * nopfs-agent: one per node per job. Loads the catalog, measures the node,
 * plans, fills its tiers and stages each local rank's next samples while
 * serving the node's tasks; on SIGTERM it drains and writes its report.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "team.h"
#include "common/atomic_file.h"
#include "common/cancel.h"
#include "common/log.h"
#include "common/private.h"
#include "pfs.h"
#include "tier/limits.h"
#include "common/units.h"
#include "task/runtime.h"
#include "common/clock.h"

/* ------------------------------------------------------------------------
 * Signals: handlers only set flags; main() waits for them.
 */

static volatile sig_atomic_t report_requested;

/* nopfs_stop_signal: the libraries' long loops look at it too */
static void on_stop(int signal_number)
{
	nopfs_stop_signal = signal_number;
}

static void on_report(int signal_number)
{
	report_requested = 1;
}

static void on_step(int signal_number)
{
	/* only wakes the main loop: it looks for step descriptions at once */
}

/* Block the signals we wait for (threads inherit the mask) and install flags. */
static nopfs_status signals_setup(sigset_t *wait_mask)
{
	struct sigaction stop = { .sa_handler = on_stop, .sa_flags = SA_RESTART },
	                 report = { .sa_handler = on_report }, step = { .sa_handler = on_step },
	                 ignore = { .sa_handler = SIG_IGN };
	sigset_t blocked;

	sigemptyset(&blocked);
	sigaddset(&blocked, SIGTERM);
	sigaddset(&blocked, SIGINT);
	sigaddset(&blocked, SIGHUP);
	sigaddset(&blocked, SIGUSR1);
	sigaddset(&blocked, SIGUSR2);
	if (pthread_sigmask(SIG_BLOCK, &blocked, wait_mask) != 0 ||
	    sigaction(SIGTERM, &stop, NULL) != 0 || sigaction(SIGINT, &stop, NULL) != 0 ||
	    sigaction(SIGHUP, &stop, NULL) != 0 || sigaction(SIGUSR1, &report, NULL) != 0 ||
	    sigaction(SIGUSR2, &step, NULL) != 0 || sigaction(SIGPIPE, &ignore, NULL) != 0) {
		nopfs_error("cannot set up signal handling: %m");
		return NOPFS_ERR_INTERNAL;
	}
	return NOPFS_OK;
}

/*
 * The stop signals reach the main thread while it starts (the handler sets
 * nopfs_stop_signal, long loops look at it); it blocks them again to serve,
 * where it waits for them. Threads it starts meanwhile inherit the mask:
 * those are joined before serving (catalog, probe), and a stop signal one of
 * them takes is still seen, the serving loop looking at the flag each wake-up.
 */
static void stop_signals(int how)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(nopfs_stop_signals) / sizeof(nopfs_stop_signals[0]); i++)
		sigaddset(&set, nopfs_stop_signals[i]);
	pthread_sigmask(how, &set, NULL);
}

/* Whether a stop signal came by the end of @phase (logged once). */
static bool stopped_in(const char *phase)
{
	if (!nopfs_stop_requested())
		return false;
	nopfs_info("signal %d during the %s: stopping before serving", (int)nopfs_stop_signal,
	           phase);
	return true;
}

/* ------------------------------------------------------------------------
 * The log: a file when --log is given; errors also go to stderr, where the
 * agent step's srun collects them for the user.
 */

static FILE *log_file;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_to_file(nopfs_log_level level, const char *message, void *arg)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	struct timespec now;
	struct tm local;

	clock_gettime(CLOCK_REALTIME, &now);
	localtime_r(&now.tv_sec, &local);
	pthread_mutex_lock(&log_lock);
	fprintf(log_file, "%04d-%02d-%02d %02d:%02d:%02d.%03ld [%ld] %s: %s\n",
	        local.tm_year + 1900, local.tm_mon + 1, local.tm_mday, local.tm_hour, local.tm_min,
	        local.tm_sec, now.tv_nsec / 1000000, (long)getpid(), names[level], message);
	fflush(log_file);
	if (level == NOPFS_LOG_ERROR)
		fprintf(stderr, "nopfs-agent: %s\n", message);
	pthread_mutex_unlock(&log_lock);
}

static nopfs_status log_open(const struct agent_options *options)
{
	nopfs_log_level level = options->verbose ? NOPFS_LOG_DEBUG : NOPFS_LOG_INFO;
	int fd;

	if (options->log_path[0] == '\0') {
		nopfs_log_set_sink(NULL, NULL, level);
		return NOPFS_OK;
	}
	/* never through a link, never another user's file: it may be in /tmp */
	fd = nopfs_private_file_open_for(AT_FDCWD, options->log_path, O_WRONLY | O_CREAT | O_APPEND,
	                                 0600, geteuid());
	log_file = fd >= 0 ? fdopen(fd, "a") : NULL;
	if (!log_file) {
		nopfs_error("--log: cannot open '%s': %s", options->log_path,
		            errno == EPERM ? "not a regular file of this user" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return NOPFS_ERR_IO;
	}
	nopfs_log_set_sink(log_to_file, NULL, level);
	return NOPFS_OK;
}

static void log_close(void)
{
	nopfs_log_set_sink(NULL, NULL, NOPFS_LOG_INFO);
	if (log_file)
		fclose(log_file);
	log_file = NULL;
}

/* ------------------------------------------------------------------------
 * Runtime directories: private to the job user.
 */

static nopfs_status make_private_dir(const char *path, const char *what, bool *made)
{
	nopfs_status status = nopfs_private_dir_make(path, made);

	if (status == NOPFS_ERR_PERMISSION)
		nopfs_error("%s '%s' exists but is not a private (0700) directory of uid %ld", what,
		            path, (long)geteuid());
	else if (status != NOPFS_OK)
		nopfs_error("%s '%s': cannot create: %m", what, path);
	return status;
}

/* Remove the files we put in the stage directory, then the directory. */
static void remove_stage_dir(const char *path)
{
	char entry_path[4200];
	DIR *dir = opendir(path);
	struct dirent *entry;

	if (!dir)
		return;
	while ((entry = readdir(dir))) {
		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		if (snprintf(entry_path, sizeof(entry_path), "%s/%s", path, entry->d_name) <
		    (int)sizeof(entry_path))
			unlink(entry_path);
	}
	closedir(dir);
	rmdir(path);
}

/* ------------------------------------------------------------------------
 * Phases.
 */

/* Tier capacities of this node: ram:N% is a share of its memory. */
/*
 * The node's tier capacities for the plan. ram:N% is a share of the memory
 * the job may use (its cgroup's limit when lower than the node's memory).
 * RAM tiers live in the stage directory's file system (/dev/shm): they are
 * shrunk to fit in 90% of its free room, the rest left to staged copies and
 * rings, rather than failing there later (they are reserved when created).
 * An SSD tier shrinks to 95% of its directory's free room likewise.
 */
static void resolve_tiers(struct agent *agent)
{
	const struct nopfs_tier_list *specs = &agent->options.tiers;
	uint64_t physical = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t free_bytes = tier_free_bytes(agent->options.stage_dir), room, ram = 0;
	char why[PATH_MAX + 32], a[32], b[32];
	uint64_t memory = tier_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup", physical, why,
	                                    sizeof(why));

	room = free_bytes == UINT64_MAX ? UINT64_MAX : free_bytes / 10 * 9;
	agent->node_tiers.count = specs->count;
	for (unsigned int t = 0; t < specs->count; t++) {
		uint64_t *capacity = &agent->node_tiers.capacity[t];

		*capacity = specs->tier[t].is_percent
		                    ? (uint64_t)((double)memory * specs->tier[t].percent / 100)
		                    : specs->tier[t].capacity;
		if (specs->tier[t].is_percent && memory < physical)
			nopfs_info("tier %u: %g%% of the job's memory limit (%s, %s), not of the "
			           "node's %s",
			           t, specs->tier[t].percent,
			           nopfs_format_size(memory, a, sizeof(a)), why,
			           nopfs_format_size(physical, b, sizeof(b)));
		if (specs->tier[t].kind == NOPFS_TIER_SSD) {
			/* the tier is reserved when created: it must fit, with 5% left */
			uint64_t ssd_free = tier_free_bytes(specs->tier[t].path);
			uint64_t fits = ssd_free == UINT64_MAX ? UINT64_MAX : ssd_free / 20 * 19;

			if (*capacity > fits) {
				nopfs_warning(
				        "ssd tier %u: '%s' has %s free; the tier shrinks from "
				        "%s to %s",
				        t, specs->tier[t].path,
				        nopfs_format_size(ssd_free, a, sizeof(a)),
				        nopfs_format_size(*capacity, b, sizeof(b)),
				        nopfs_format_size(fits, why, sizeof(why)));
				*capacity = fits;
			}
			continue;
		}
		if (specs->tier[t].kind != NOPFS_TIER_RAM)
			continue;
		if (ram + *capacity > room) {
			uint64_t fits = room > ram ? room - ram : 0;

			nopfs_warning("ram tier %u: the stage directory '%s' has %s free; the tier "
			              "shrinks from %s to %s",
			              t, agent->options.stage_dir,
			              nopfs_format_size(free_bytes, a, sizeof(a)),
			              nopfs_format_size(*capacity, b, sizeof(b)),
			              nopfs_format_size(fits, why, sizeof(why)));
			*capacity = fits;
		}
		ram += *capacity;
	}
}

/*
 * The most the PFS test reads: 0.2% of the dataset (about 280 MB of
 * ImageNet's 140 GB), and no less than PROBE_PFS_MIN_BYTES, which a
 * measurement needs to mean anything (on a small dataset a few percent).
 */
#define PROBE_PFS_SHARE     500
#define PROBE_PFS_MIN_BYTES (UINT64_C(8) << 20)

/* Measure the tiers and the PFS on a spread of the dataset's files. */
static nopfs_status phase_probe(struct agent *agent)
{
	enum { PROBES = 64 };
	const struct job *job = &agent->job;
	uint64_t count = job->sampler.count < PROBES ? job->sampler.count : PROBES;
	struct probe_file files[PROBES];
	char paths[PROBES][4096];
	struct probe_config config = {
		.tiers = &agent->options.tiers,
		.files = files,
		.file_count = count,
		.mean_sample_size = job->dataset_bytes / job->sampler.count,
		.budget_seconds = agent->options.probe_budget,
		.max_threads = 8,
		.cache_dir = agent->options.probe_cache[0] ? agent->options.probe_cache : NULL,
		.max_age_seconds = agent->options.probe_max_age,
		.seed = 1,
		.dataset_root = agent->options.dataset_root,
		.pfs_bytes_max = job->dataset_bytes / PROBE_PFS_SHARE,
	};
	nopfs_status status;

	if (config.pfs_bytes_max < PROBE_PFS_MIN_BYTES)
		config.pfs_bytes_max = PROBE_PFS_MIN_BYTES;
	if (config.mean_sample_size == 0)
		config.mean_sample_size = 1;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t sample = i * job->sampler.count / count;

		status = pfs_sample_path(job->catalog, sample, paths[i], sizeof(paths[i]));
		if (status != NOPFS_OK)
			return status;
		files[i] = (struct probe_file){ .path = paths[i],
			                        .size = nopfs_catalog_size(job->catalog, sample) };
	}
	if (agent->options.probe_budget <= 0)
		return NOPFS_OK; /* measuring disabled: tiers keep one thread each */
	status = probe_run(&config, &agent->probe);
	if (status != NOPFS_OK)
		return status;
	agent_count(&agent->stats.pfs_read, agent->probe.pfs_bytes_read);
	agent->stats.probe_pfs_read.bytes = agent->probe.pfs_bytes_read;
	nopfs_info("probe: %s in %.2f s", agent->probe.from_cache ? "from cache" : "measured",
	           agent->probe.seconds);
	return NOPFS_OK;
}

/* Replace "%n" in @path (a buffer of @length bytes) by the node index. */
static void expand_node(char *path, size_t length, uint32_t node)
{
	char pattern[PATH_MAX];

	snprintf(pattern, sizeof(pattern), "%s", path);
	agent_node_path(pattern, node, path, length);
}

/*
 * Per-node files on a shared directory: "%n" in --report and --log is this
 * node's index, known once PMIx said it. The log reopens on the new path.
 */
static void node_paths(struct agent *agent)
{
	struct agent_options *options = &agent->options;

	expand_node(options->report_path, sizeof(options->report_path), agent->bootstrap.node);
	if (strstr(options->log_path, "%n")) {
		expand_node(options->log_path, sizeof(options->log_path), agent->bootstrap.node);
		log_close();
		log_open(options);
	}
}

/*
 * Learn every node's tiers and, with --keep-dir, what each kept from earlier
 * jobs, and compute the placement.
 */
static nopfs_status phase_plan(struct agent *agent)
{
	const struct agent_options *options = &agent->options;
	struct nopfs_node_tiers *tiers = NULL;
	uint8_t **held = NULL;
	nopfs_status status = team_exchange(agent, &tiers);

	/* the validation set's shares first: each is read every pass by its node */
	if (status == NOPFS_OK)
		val_reserve(&agent->val, tiers, agent->job.layout->nodes, agent->job.node,
		            options->tiers.count && options->tiers.tier[0].kind == NOPFS_TIER_RAM,
		            &agent->val_room);
	if (status == NOPFS_OK && options->keep_dir[0]) {
		keep_open(&agent->keep, options->keep_dir, &options->catalog, &agent->job,
		          agent->meta ? &agent->meta_view : NULL, options->private_name);
		status = team_exchange_held(agent, &held);
	}
	if (status == NOPFS_OK)
		status = job_plan(&agent->job, options, tiers, (const uint8_t *const *)held);
	for (uint32_t n = 0; held && n < agent->job.layout->nodes; n++)
		free(held[n]);
	free(held);
	free(tiers);
	return status;
}

/*
 * Serve until a stop signal; SIGUSR1 writes the report on the way; a later
 * step's description in the runtime directory (looked for at every tick, or
 * at once on SIGUSR2) and peers' notices change the plan.
 */
static void wait_for_stop(struct agent *agent, const sigset_t *wait_mask)
{
	const struct timespec tick = { .tv_nsec = 200000000 };

	while (!nopfs_stop_requested()) {
		pselect(0, NULL, NULL, NULL, &tick, wait_mask);
		if (report_requested) {
			report_requested = 0;
			report_write(agent);
		}
		team_check_metadata(agent);
		if (!nopfs_stop_requested() && agent_replan_poll(agent) != NOPFS_OK) {
			nopfs_error("no plan to serve any more: stopping");
			break;
		}
	}
	nopfs_info("signal %d: draining", (int)nopfs_stop_signal);
}

static double phase_end(uint64_t *started)
{
	uint64_t now = nopfs_clock_now_ns();
	double seconds = (double)(now - *started) / 1e9;

	*started = now;
	return seconds;
}

static struct agent agent;

int main(int argc, char **argv)
{
	struct agent_options *options = &agent.options;
	char ssd_list[PATH_MAX + 16] = "";
	sigset_t wait_mask;
	uint64_t clock;
	nopfs_status status;
	int rc = 1;

	status = agent_options_parse(argc, argv, options);
	if (status != NOPFS_OK)
		return status == NOPFS_ERR_EMPTY ? 0 : 2;
	agent.started_ns = clock = nopfs_clock_now_ns();
	keep_init(&agent.keep);
	val_init(&agent.val);
	pthread_rwlock_init(&agent.plan_lock, NULL);
	pthread_mutex_init(&agent.events_lock, NULL);
	if (snprintf(agent.socket_path, sizeof(agent.socket_path), "%s/agent.sock",
	             options->runtime_dir) >= (int)sizeof(agent.socket_path) ||
	    snprintf(agent.ready_path, sizeof(agent.ready_path), "%s/ready",
	             options->runtime_dir) >= (int)sizeof(agent.ready_path)) {
		nopfs_error("--runtime-dir '%s' is too long", options->runtime_dir);
		goto out_options;
	}
	/* the private directories first: the log may be in the runtime directory */
	if (make_private_dir(options->runtime_dir, "--runtime-dir", &agent.made_runtime_dir) ||
	    make_private_dir(options->stage_dir, "--stage-dir", &agent.made_stage_dir))
		goto out_dirs;
	if (agent_lock(&agent.lock, options) != NOPFS_OK)
		goto out_dirs;
	if (log_open(options) != NOPFS_OK)
		goto out_lock;
	if (signals_setup(&wait_mask) != NOPFS_OK)
		goto out_log;

	if (options->bootstrap == AGENT_BOOTSTRAP_PMIX &&
	    bootstrap_init(&agent.bootstrap) != NOPFS_OK)
		goto out_log;
	/*
	 * Two barriers: the first may complete on some nodes only (Slurm's race
	 * below), which then proceed while the others give up; the second shows
	 * them that, so that the whole step ends soon and can be started again.
	 */
	if (agent.bootstrap.active && agent.bootstrap.nodes > 1) {
		status = bootstrap_fence(&agent.bootstrap, options->hello_timeout);
		if (status == NOPFS_OK)
			status = bootstrap_fence(&agent.bootstrap, options->hello_timeout);
	}
	if (status == NOPFS_ERR_CANCELED) {
		rc = 0; /* stopped before it began */
		goto out_job;
	}
	if (status != NOPFS_OK) {
		nopfs_error("the agents of this step cannot reach each other: exiting with "
		            "status %d (start the step again)",
		            NOPFS_AGENT_EXIT_RETRY);
		rc = NOPFS_AGENT_EXIT_RETRY;
		goto out_job;
	}
	if (agent.bootstrap.active)
		nopfs_info("bootstrap: %u agents in %.2f s", agent.bootstrap.nodes,
		           (double)(nopfs_clock_now_ns() - agent.started_ns) / 1e9);
	stop_signals(SIG_UNBLOCK);
	if (stopped_in("start-up"))
		goto out_stopped;
	node_paths(&agent);
	status = job_layout(&agent.job, options, agent.bootstrap.node,
	                    agent.bootstrap.active ? agent.bootstrap.nodes : 0);
	if (status == NOPFS_OK)
		status = team_catalog(&agent); /* NOPFS_ERR_CANCELED if stopped */
	if (status == NOPFS_OK)
		status = team_val_catalog(&agent);
	if (stopped_in("catalog") || status != NOPFS_OK)
		goto out_stopped;
	agent.phase_seconds[PHASE_CATALOG] = phase_end(&clock);
	status = phase_probe(&agent);
	if (stopped_in("probe") || status != NOPFS_OK)
		goto out_stopped;
	agent.phase_seconds[PHASE_PROBE] = phase_end(&clock);
	resolve_tiers(&agent);
	status = phase_plan(&agent);
	if (stopped_in("plan") || status != NOPFS_OK)
		goto out_stopped;
	agent.phase_seconds[PHASE_PLAN] = phase_end(&clock);
	keep_data_fd(&agent.keep, &options->tiers);
	if (tier_set_create(&agent.tiers, &agent.job, &options->tiers, options->stage_dir,
	                    options->private_name, 0, &agent.keep) != NOPFS_OK)
		goto out_stopped;
	keep_layout(&agent.keep, &agent.tiers);
	/* without its tier, the validation set is served from the PFS */
	if (agent.val.catalog)
		val_tier_create(&agent.val, options->stage_dir, agent.val_room, &agent.stats,
		                agent.job.size_limit, options->serve_timeout_ms);
	stop_signals(SIG_BLOCK);
	snprintf(ssd_list, sizeof(ssd_list), "%s/ssd-dirs", options->runtime_dir);
	tier_set_list_directories(&agent.tiers, ssd_list);
	source_init(&agent.source, &agent.job, &agent.tiers, &agent.stats);
	source_verify(&agent.source, options->verify);
	source_use_keep(&agent.source, &agent.keep);
	agent_choose_threads(&agent);
	agent.phase_seconds[PHASE_TIERS] = phase_end(&clock);

	if (team_connect_peers(&agent) != NOPFS_OK)
		goto out_tiers;
	if (agent_serve_start(&agent) != NOPFS_OK)
		goto out_report;
	val_start(&agent.val);
	if (agent_publish_ready(&agent) != NOPFS_OK)
		goto out_serve;
	nopfs_info("ready in %.2f s: serving %" PRIu32 " local ranks on %s",
	           (double)(nopfs_clock_now_ns() - agent.started_ns) / 1e9,
	           agent.job.local_rank_count, agent.socket_path);

	wait_for_stop(&agent, &wait_mask);
	agent.phase_seconds[PHASE_SERVE] = phase_end(&clock);
	rc = 0;

out_serve:
	team_withdraw_metadata(&agent);
	unlink(agent.ready_path);
	agent_serve_stop(&agent);
	val_stop(&agent.val);
	/* nothing fills the tiers any more: what they hold is kept */
	keep_commit(&agent.keep, &agent.job, &agent.tiers, agent.meta ? &agent.meta_view : NULL);
out_report:
	agent.phase_seconds[PHASE_DRAIN] = phase_end(&clock);
	agent.report_final = true;
	if (agent.job.catalog && report_write(&agent) != NOPFS_OK)
		rc = 1;
	if (agent.job.catalog && job_report_write(&agent) != NOPFS_OK)
		rc = 1;
out_tiers:
	team_disconnect_peers(&agent);
	tier_set_destroy(&agent.tiers);
	source_fini(&agent.source);
	unlink(ssd_list);
	goto out_job;
out_stopped:
	if (nopfs_stop_requested())
		rc = 0; /* asked to stop before serving: no failure of ours */
out_job:
	keep_fini(&agent.keep);
	val_fini(&agent.val);
	job_fini(&agent.job);
	team_fini(&agent);
	agent_replan_fini(&agent);
	bootstrap_fini(&agent.bootstrap);
out_log:
	log_close();
out_lock:
	unlink(agent.ready_path);
	agent_unlock(&agent.lock);
out_dirs:
	if (agent.made_stage_dir)
		remove_stage_dir(options->stage_dir);
	if (agent.made_runtime_dir) /* not while a log or report stays there */
		rmdir(options->runtime_dir);
out_options:
	agent_options_fini(options);
	return rc;
}
