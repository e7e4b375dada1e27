/*
 * Another plan for the running agents: a later step of the job describes
 * itself in RUNTIME-DIR/step-GENERATION, which the agent looks for; it only
 * accepts it, re-plans (same dataset: new streams; another dataset: a new
 * catalog, placement and tiers on every node) or refuses it. See
 * docs/architecture.md (Re-planning for a later step).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "notices.h"
#include "team.h"
#include "common/log.h"
#include "common/private.h"
#include "peer/peer.h"
#include "common/readall.h"
#include "common/clock.h"

#define STEP_FILE_MAX 65536

/*
 * Read the step file @name of the runtime directory (malloc'd text), NULL on
 * error: a regular file of this user, never through a link.
 */
static char *read_step_file(struct agent *agent, const char *name)
{
	char path[PATH_MAX + 64];
	void *text = NULL;
	size_t length;
	nopfs_status status;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", agent->options.runtime_dir, name);
	fd = nopfs_private_file_open_for(AT_FDCWD, path, O_RDONLY, 0, geteuid());
	if (fd < 0) {
		nopfs_error("step description '%s': %s", path,
		            errno == EPERM ? "not a regular file of this user" : strerror(errno));
		return NULL;
	}
	status = nopfs_read_all(fd, STEP_FILE_MAX, &text, &length);
	close(fd);
	if (status != NOPFS_OK)
		nopfs_error("step description '%s': %s", path,
		            status == NOPFS_ERR_RANGE ? "too long" : "cannot read it");
	return text;
}

/* The generation of step file @name, or false if it is not one. */
static bool step_file_generation(const char *name, uint32_t *generation)
{
	unsigned int value;
	int consumed = 0;

	if (sscanf(name, "step-%u%n", &value, &consumed) != 1 || name[consumed] != '\0')
		return false;
	*generation = value;
	return true;
}

/*
 * Remove the step files up to generation @last, once taken on or refused:
 * the plugin reads a removed file with an older generation in the ready
 * file as a refusal.
 */
static void remove_step_files(struct agent *agent, uint32_t last)
{
	DIR *dir = opendir(agent->options.runtime_dir);
	struct dirent *entry;
	uint32_t value;

	if (!dir)
		return;
	while ((entry = readdir(dir)))
		if (step_file_generation(entry->d_name, &value) && value <= last)
			unlinkat(dirfd(dir), entry->d_name, 0);
	closedir(dir);
}

/*
 * The newest step description of the runtime directory newer than @after:
 * its text (malloc'd) and its generation in *@generation, or NULL.
 */
static char *newest_step_file(struct agent *agent, uint32_t after, uint32_t *generation)
{
	DIR *dir = opendir(agent->options.runtime_dir);
	struct dirent *entry;
	char newest[sizeof(entry->d_name)] = "";
	uint32_t value, best = 0;

	if (!dir) {
		nopfs_error("runtime directory '%s': %m", agent->options.runtime_dir);
		return NULL;
	}
	while ((entry = readdir(dir)))
		if (step_file_generation(entry->d_name, &value) && value >= best) {
			best = value;
			snprintf(newest, sizeof(newest), "%s", entry->d_name);
		}
	closedir(dir);
	*generation = best;
	if (newest[0] && best <= after)
		remove_step_files(agent, best); /* taken on or refused already */
	return newest[0] && best > after ? read_step_file(agent, newest) : NULL;
}

/* Every node's tier capacities for a layout of @nodes nodes (the ones published). */
static struct nopfs_node_tiers *plan_tiers(struct agent *agent, uint32_t nodes)
{
	struct nopfs_node_tiers *tiers = calloc(nodes, sizeof(*tiers));
	uint32_t known = agent->job.layout->nodes;

	if (!tiers) {
		nopfs_error("no memory for the tiers of %" PRIu32 " nodes", nodes);
		return NULL;
	}
	for (uint32_t n = 0; n < nodes && n < known; n++)
		tiers[n] = agent->job.node_tiers[n];
	return tiers;
}

static bool same_catalog(const struct agent_options *a, const struct agent_options *b)
{
	return strcmp(a->dataset_root, b->dataset_root) == 0 &&
	       strcmp(a->list_path, b->list_path) == 0 &&
	       strcmp(a->extensions, b->extensions) == 0 && a->catalog.format == b->catalog.format;
}

/*
 * Note a plan in the report's "replans": refused, or taken on (the current
 * one), with where its @catalog came from.
 */
static void note_plan(struct agent *agent, uint32_t generation, nopfs_status refusal,
                      const char *catalog, uint64_t kept, uint64_t kept_bytes, double seconds)
{
	json_t *entry =
	        json_pack("{s:I, s:s, s:f}", "generation", (json_int_t)generation, "outcome",
	                  refusal == NOPFS_OK ? "planned" : "refused", "seconds", seconds);

	if (entry && refusal != NOPFS_OK)
		json_object_set_new(entry, "reason", json_string(nopfs_status_string(refusal)));
	else if (entry)
		json_object_update_new(
		        entry, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "dataset",
		                         agent->options.dataset_root, "catalog", catalog, "samples",
		                         (json_int_t)agent->job.sampler.count, "epochs",
		                         (json_int_t)agent->job.epochs, "world_size",
		                         (json_int_t)agent->job.sampler.world_size, "kept_samples",
		                         (json_int_t)kept, "kept_bytes", (json_int_t)kept_bytes));
	if (!agent->plans)
		agent->plans = json_array();
	if (entry && agent->plans)
		json_array_append(agent->plans, entry);
	json_decref(entry);
}

/*
 * The catalog of another dataset for plan @generation: built by node 0 and
 * shared with the others (a metadata scan of the PFS by every node is what
 * the shared catalog avoids), or built here when this agent is alone or has
 * nowhere to share it. *@source says which, for the report.
 */
static nopfs_status plan_catalog(struct agent *agent, const struct agent_options *options,
                                 uint32_t generation, struct nopfs_catalog **catalog,
                                 const char **source)
{
	bool from_cache = false;
	nopfs_status status;
	char *path;

	*source = "built here";
	if (!agent->peers || options->share_dir[0] == '\0')
		return job_open_catalog(options, catalog, &from_cache);
	if (agent->bootstrap.node == 0)
		return team_share_plan_catalog(agent, options, generation, catalog);
	*source = "from node 0";
	path = agent_notice_wait(agent, AGENT_NOTICE_CATALOG, generation, options->scan_timeout);
	if (!path) {
		nopfs_error("plan %" PRIu32 ": node 0 did not share its catalog within %d s "
		            "(--scan-timeout)",
		            generation, options->scan_timeout);
		return NOPFS_ERR_TIMEOUT;
	}
	if (path[0] == '\0') {
		nopfs_error("plan %" PRIu32 ": node 0 could not catalog the dataset", generation);
		status = NOPFS_ERR_NOT_FOUND;
	} else {
		status = team_load_catalog(path, catalog);
	}
	free(path);
	return status;
}

/*
 * The rest of @job (laid out already) for @options: the catalog and, for the
 * dataset the agent has (@same), its placement (every sample stays where it
 * is cached; the caller hands both over only once the plan is taken on);
 * for another one, a new catalog and a placement with the published
 * capacities.
 */
static nopfs_status new_job(struct agent *agent, struct agent_options *options, bool same,
                            uint32_t generation, struct job *job, const char **source)
{
	struct nopfs_catalog *catalog = same ? agent->job.catalog : NULL;
	struct nopfs_node_tiers *tiers;
	nopfs_status status = NOPFS_OK;

	*source = "kept";
	if (!same)
		status = plan_catalog(agent, options, generation, &catalog, source);
	if (status == NOPFS_OK)
		status = job_use_catalog(job, options, catalog);
	if (status != NOPFS_OK)
		return status;
	tiers = plan_tiers(agent, job->layout->nodes);
	if (!tiers)
		return NOPFS_ERR_NOMEM;
	if (same) {
		job->node_tiers = tiers;
		job->placement = agent->job.placement;
		return NOPFS_OK;
	}
	status = job_plan(job, options, tiers, NULL);
	free(tiers);
	return status;
}

/* Hide the old RAM tier from peers, wait for their reads, release it. */
static void retire_tiers(struct agent *agent)
{
	unsigned int grace = agent->peers ? team_peer_grace_ms(agent) : 0;
	struct timespec pause = { .tv_sec = grace / 1000, .tv_nsec = (grace % 1000) * 1000000L };

	tier_set_hide(&agent->tiers);
	while (grace && nanosleep(&pause, &pause) != 0 && errno == EINTR)
		;
	tier_set_retire(&agent->tiers, &agent->retired);
}

/* Whether @job is the plan the agent follows already (same stream, same layout). */
static bool same_plan(const struct agent *agent, const struct agent_options *options,
                      const struct job *job)
{
	const struct nopfs_sampler *a = &agent->options.sampler, *b = &options->sampler;
	const struct nopfs_layout *x = agent->job.layout, *y = job->layout;

	return same_catalog(&agent->options, options) && a->seed == b->seed &&
	       a->seed_negative == b->seed_negative && a->shuffle == b->shuffle &&
	       a->same_order == b->same_order && a->drop_last == b->drop_last &&
	       a->first_epoch == b->first_epoch && a->first_index == b->first_index &&
	       agent->options.epochs == options->epochs && x->nodes == y->nodes &&
	       x->world_size == y->world_size &&
	       memcmp(x->node_of_rank, y->node_of_rank, x->world_size * sizeof(*x->node_of_rank)) ==
	               0;
}

/* The agent follows @job and @next from now on (both taken over). */
static void take_job(struct agent *agent, struct agent_options *next, struct job *job, bool same)
{
	if (same) { /* the new job has them */
		agent->job.catalog = NULL;
		agent->job.placement = NULL;
	}
	job_fini(&agent->job);
	agent->job = *job;
	memset(job, 0, sizeof(*job));
	agent_options_move(&agent->options, next);
}

/*
 * Change the plan to @job and @next (taken over on success) with the tiers
 * the agent has: the same samples in the same places, in the order the new
 * stream needs them. *@kept counts those already there.
 */
static nopfs_status change_stream(struct agent *agent, struct agent_options *next, struct job *job,
                                  uint64_t *kept, uint64_t *kept_bytes)
{
	nopfs_status status;

	pthread_rwlock_wrlock(&agent->plan_lock);
	status = tier_set_reorder(&agent->tiers, job, kept, kept_bytes);
	if (status == NOPFS_OK)
		take_job(agent, next, job, true);
	pthread_rwlock_unlock(&agent->plan_lock);
	return status;
}

/*
 * Change the plan to @job and @next (another dataset; taken over on
 * success) with new tiers; the old ones go, and the other agents learn that
 * this node follows plan @generation from now on.
 */
static nopfs_status change_dataset(struct agent *agent, uint32_t generation,
                                   struct agent_options *next, struct job *job)
{
	struct tier_set tiers;
	nopfs_status status;

	if (agent->peers)
		peer_plane_set_generation(agent->peers, PEER_NO_GENERATION);
	pthread_rwlock_wrlock(&agent->plan_lock);
	/* what is kept is for the first dataset: the bytes of another are not */
	keep_drop(&agent->keep, "the job moved to another dataset: nothing is kept");
	status = tier_set_create(&tiers, job, &next->tiers, next->stage_dir, next->private_name,
	                         generation, NULL);
	if (status != NOPFS_OK) {
		pthread_rwlock_unlock(&agent->plan_lock);
		if (agent->peers)
			peer_plane_set_generation(agent->peers, agent->generation);
		return status;
	}
	retire_tiers(agent);
	tier_set_move(&agent->tiers, &tiers);
	take_job(agent, next, job, false);
	/* other samples: the checksums recorded for the old ones go */
	source_verify(&agent->source, agent->source.sums != NULL);
	agent->generation = generation;
	pthread_rwlock_unlock(&agent->plan_lock);
	team_expose_plan(agent);
	agent_choose_threads(agent);
	return NOPFS_OK;
}

/*
 * Take plan @generation on, described by @text (modified), told by the
 * plugin on this node (@local) or by another agent. The same dataset keeps
 * its placement: only this node's streams change, nothing is read again.
 * Another dataset changes the job's placement: the other agents are told
 * (when @local) and change too. NOPFS_OK also when the plan is refused (the
 * old one goes on) or is the current one (only accepted); an error only when
 * the agent has nothing left to serve with.
 */
static nopfs_status replan(struct agent *agent, uint32_t generation, char *text, bool local)
{
	uint64_t started = nopfs_clock_now_ns(), kept = 0, kept_bytes = 0;
	char *description = strdup(text);
	struct agent_options next = { 0 };
	struct job job = { 0 };
	const char *catalog_source = "";
	nopfs_status status;
	bool same = false;

	agent->considered = generation; /* accepted or refused, once */
	status = description ? agent_options_step(&agent->options, text, &next) : NOPFS_ERR_NOMEM;
	if (status != NOPFS_OK)
		goto refused;
	status = job_layout(&job, &next, agent->job.node,
	                    agent->bootstrap.active ? agent->bootstrap.nodes : 0);
	if (status != NOPFS_OK)
		goto refused;
	if (same_plan(agent, &next, &job)) {
		nopfs_info("plan %" PRIu32 ": the same as the current one", generation);
		agent->accepted = generation;
		status = agent_publish_ready(agent);
		goto out;
	}
	same = same_catalog(&agent->options, &next);
	nopfs_info("plan %" PRIu32 ": a later step asks for another %s", generation,
	           same ? "stream" : "dataset");
	if (local && !same)
		team_plan_notify(agent, generation, description);
	status = new_job(agent, &next, same, generation, &job, &catalog_source);
	if (status != NOPFS_OK)
		goto refused;
	agent_serve_stop(agent);
	status = same ? change_stream(agent, &next, &job, &kept, &kept_bytes)
	              : change_dataset(agent, generation, &next, &job);
	if (status != NOPFS_OK) {
		if (agent_serve_start(agent) != NOPFS_OK) {
			status = NOPFS_ERR_INTERNAL;
			goto out;
		}
		goto refused;
	}
	agent->accepted = generation;
	agent->followed = generation;
	status = agent_serve_start(agent);
	if (status == NOPFS_OK)
		status = agent_publish_ready(agent);
	note_plan(agent, generation, NOPFS_OK, catalog_source, kept, kept_bytes,
	          (double)(nopfs_clock_now_ns() - started) / 1e9);
	nopfs_info("plan %" PRIu32 ": %" PRIu64 " samples, %" PRIu32 " epochs, %" PRIu32
	           " ranks (%" PRIu32 " here); %" PRIu64 " samples (%" PRIu64
	           " bytes) already cached here; %.2f s",
	           generation, agent->job.sampler.count, agent->job.epochs,
	           agent->job.sampler.world_size, agent->job.local_rank_count, kept, kept_bytes,
	           (double)(nopfs_clock_now_ns() - started) / 1e9);
	goto out;

refused:
	nopfs_error("plan %" PRIu32 " refused (%s): this agent keeps its plan; the step's reads "
	            "are served, not planned",
	            generation, nopfs_status_string(status));
	note_plan(agent, generation, status, NULL, 0, 0,
	          (double)(nopfs_clock_now_ns() - started) / 1e9);
	status = NOPFS_OK;
out:
	if (same && job.catalog == agent->job.catalog) { /* still the agent's */
		job.catalog = NULL;
		job.placement = NULL;
	}
	job_fini(&job);
	agent_options_fini(&next);
	free(description);
	return status;
}

/* Take the queued notices off; records are applied at once, the newest plan returned. */
static char *take_events(struct agent *agent, uint32_t *plan_generation)
{
	struct agent_event *events;
	char *plan = NULL;

	pthread_mutex_lock(&agent->events_lock);
	events = agent->events;
	agent->events = NULL;
	pthread_mutex_unlock(&agent->events_lock);
	while (events) {
		struct agent_event *event = events;

		events = event->next;
		if (event->kind == AGENT_NOTICE_RECORD) {
			team_apply_record(agent, event->sender, event->generation, event->payload,
			                  event->length);
		} else if (event->kind == AGENT_NOTICE_PLAN &&
		           event->generation > agent->considered &&
		           (!plan || event->generation > *plan_generation)) {
			free(plan);
			plan = strdup(event->payload);
			*plan_generation = event->generation;
		} else if (event->kind == AGENT_NOTICE_META_CHANGED) {
			team_metadata_notice(agent, event->sender, event->payload);
		} else if (event->kind == AGENT_NOTICE_CATALOG &&
		           event->generation > agent->considered) {
			agent_event_queue(agent, event); /* for that plan, which comes later */
			continue;
		} else if (event->kind != AGENT_NOTICE_PLAN &&
		           event->kind != AGENT_NOTICE_CATALOG) {
			nopfs_warning("dropped a notice of unknown kind %" PRIu32
			              " from node %" PRIu32,
			              event->kind, event->sender);
		}
		free(event);
	}
	return plan;
}

nopfs_status agent_replan_poll(struct agent *agent)
{
	uint32_t local = 0, remote = 0;
	char *mine = newest_step_file(agent, agent->considered, &local);
	char *theirs = take_events(agent, &remote);
	nopfs_status status = NOPFS_OK;

	if (mine && local >= remote)
		status = replan(agent, local, mine, true);
	else if (theirs)
		status = replan(agent, remote, theirs, false);
	if (mine)
		remove_step_files(agent, local);
	free(mine);
	free(theirs);
	return status;
}

void agent_replan_fini(struct agent *agent)
{
	if (agent->options.runtime_dir[0])
		remove_step_files(agent, UINT32_MAX); /* described too late to be planned for */
	while (agent->events) {
		struct agent_event *event = agent->events;

		agent->events = event->next;
		free(event);
	}
	tier_retired_free(agent->retired);
	agent->retired = NULL;
	json_decref(agent->plans);
	agent->plans = NULL;
}
