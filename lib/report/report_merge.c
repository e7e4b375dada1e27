/*
 * Merging the per-node reports of a job: sums over the nodes, the nodes that
 * did not report, and the problems worth a look, in plain words.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

enum { WAY_STAGED, WAY_REQUESTED, WAYS };

static const char *const way_keys[WAYS] = { "delivered_staged", "delivered_on_request" };

struct count {
	uint64_t samples;
	uint64_t bytes;
};

/* What the merge takes from one node's report. */
struct node_figures {
	json_t *report;
	size_t input;
	uint32_t node;
	const char *job_id;
	const char *dataset;
	uint64_t samples, epochs, world_size, dataset_bytes;
	uint64_t start_epoch;  /* a resumed job's first epoch; 0 in older reports */
	uint64_t start_sample; /* and each rank's first index in it; 0 in older reports */
	uint64_t pfs_bytes, probe_bytes;
	struct count delivered[WAYS][REPORT_SOURCES];
	uint64_t stall_requests;
	double stall_seconds, stall_max_seconds;
	const json_t *fallbacks;
	uint64_t mismatched;
	uint64_t synced; /* ranks moved to where they read (stream.self_synced) */
	uint64_t synced_epoch, synced_rank, synced_index; /* the first move */
	const char *order_found; /* stream.order_found.order: read in another order */
	uint64_t order_rank, order_after;
	double order_seconds;
	const char *diagnosis; /* NULL: none */
	uint64_t peer_timeouts, peer_errors, peer_refused, peer_unauthenticated, watch_overflows;
	uint64_t pfs_failed, pfs_changed;
	uint64_t too_large, too_large_bytes, size_limit; /* samples over --max-sample-size */
	uint64_t bad_copies, bad_ram, bad_ssd, bad_peer; /* --verify: copies that differed */
	bool interim; /* written while the agent still ran ("final": false) */
	/* Later steps it planned for ("plan", "replans"; reports before them: 0). */
	uint64_t plan, replans;
	/* requests of tasks planned under an earlier step's plan than the one followed */
	uint64_t plan_followed, superseded, superseded_plan;
	/* Dataset metadata calls of its ranks ("metadata"; reports before it: none). */
	uint64_t meta_served, meta_passed, meta_unlisted, meta_changed, meta_passed_changed;
	uint64_t meta_passed_absent; /* passed with no metadata in the rank */
	bool meta_published;         /* the agent gave its tasks the metadata */
	const char *meta_not_served; /* the agent's reason, or NULL */
	const json_t *meta_per_rank; /* NULL: none */
	/* Its kept cache ("kept": --keep-dir; reports without it: none). */
	bool kept;
	struct count kept_counts[KEPT_COUNTS];
	const char *kept_why; /* why it keeps nothing, or "" */
	/* Its validation set ("val": --val-dataset; reports without it: none). */
	bool val;
	uint64_t val_samples, val_bytes, val_requests;
	struct count val_ram, val_pfs, val_filled;
};

/* "kept", when the node reports it. */
static void read_kept(struct report_keys *keys, struct node_figures *f)
{
	char path[64];

	f->kept = json_object_get(keys->report, "kept") != NULL;
	if (!f->kept)
		return;
	for (int k = 0; k < KEPT_COUNTS; k++) {
		snprintf(path, sizeof(path), "kept.%s.samples", kept_names[k]);
		report_uint(keys, path, &f->kept_counts[k].samples);
		snprintf(path, sizeof(path), "kept.%s.bytes", kept_names[k]);
		report_uint(keys, path, &f->kept_counts[k].bytes);
	}
	report_optional_string(keys, "kept.why", &f->kept_why);
}

/* "val", when the node reports it. */
static void read_val(struct report_keys *keys, struct node_figures *f)
{
	f->val = json_object_get(keys->report, "val") != NULL;
	if (!f->val)
		return;
	report_uint(keys, "val.samples", &f->val_samples);
	report_uint(keys, "val.bytes", &f->val_bytes);
	report_uint(keys, "val.requests", &f->val_requests);
	report_uint(keys, "val.delivered.ram.samples", &f->val_ram.samples);
	report_uint(keys, "val.delivered.ram.bytes", &f->val_ram.bytes);
	report_uint(keys, "val.delivered.pfs.samples", &f->val_pfs.samples);
	report_uint(keys, "val.delivered.pfs.bytes", &f->val_pfs.bytes);
	report_uint(keys, "val.filled.samples", &f->val_filled.samples);
	report_uint(keys, "val.filled.bytes", &f->val_filled.bytes);
}

/* "metadata", when the node reports it: totals and per rank. */
static bool read_metadata(struct report_keys *keys, struct node_figures *f)
{
	const char *name;
	const json_t *rank;
	uint64_t value;
	char path[128];

	if (!json_object_get(keys->report, "metadata"))
		return true;
	report_uint(keys, "metadata.served", &f->meta_served);
	report_uint(keys, "metadata.passed", &f->meta_passed);
	report_uint(keys, "metadata.unlisted", &f->meta_unlisted);
	report_optional_uint(keys, "metadata.changed_directories", &f->meta_changed);
	report_optional_uint(keys, "metadata.passed_changed", &f->meta_passed_changed);
	report_optional_uint(keys, "metadata.passed_absent", &f->meta_passed_absent);
	report_optional_string(keys, "metadata.not_served", &f->meta_not_served);
	f->meta_published = json_is_true(report_get(keys->report, "metadata.published"));
	if (!report_object(keys, "metadata.per_rank", &f->meta_per_rank))
		return false;
	json_object_foreach((json_t *)f->meta_per_rank, name, rank)
	{
		if (strlen(name) > 11 || strchr(name, '.')) {
			report_fail(keys->name, "%skey 'metadata.per_rank' has a bad rank '%s'",
			            keys->who, name);
			return false;
		}
		snprintf(path, sizeof(path), "metadata.per_rank.%s.served", name);
		report_uint(keys, path, &value);
		snprintf(path, sizeof(path), "metadata.per_rank.%s.passed", name);
		report_uint(keys, path, &value);
	}
	return keys->ok;
}

static bool read_delivered(struct report_keys *keys, struct node_figures *f)
{
	char path[96];

	for (int way = 0; way < WAYS; way++) {
		for (int s = 0; s < REPORT_SOURCES; s++) {
			struct count *c = &f->delivered[way][s];

			snprintf(path, sizeof(path), "%s.%s.samples", way_keys[way],
			         report_source_names[s]);
			report_uint(keys, path, &c->samples);
			snprintf(path, sizeof(path), "%s.%s.bytes", way_keys[way],
			         report_source_names[s]);
			report_uint(keys, path, &c->bytes);
		}
	}
	return keys->ok;
}

/* "plan" and the re-plans taken on, when the report has them. */
static bool read_plans(struct report_keys *keys, struct node_figures *f)
{
	const json_t *replans = json_object_get(keys->report, "replans"), *entry;
	size_t i;

	f->plan = f->replans = 0;
	if (json_object_get(keys->report, "plan"))
		report_uint(keys, "plan", &f->plan);
	if (replans && !json_is_array(replans)) {
		report_fail(keys->name, "%skey 'replans' is not an array", keys->who);
		return false;
	}
	json_array_foreach(replans, i, entry)
	{
		const json_t *outcome = json_object_get(entry, "outcome");

		f->replans += json_is_string(outcome) &&
		              strcmp(json_string_value(outcome), "planned") == 0;
	}
	report_optional_uint(keys, "plan_followed", &f->plan_followed);
	report_optional_uint(keys, "superseded.requests", &f->superseded);
	if (f->superseded)
		report_uint(keys, "superseded.newest_plan", &f->superseded_plan);
	return keys->ok;
}

static bool read_fallbacks(struct report_keys *keys, struct node_figures *f)
{
	const char *kind;
	json_t *value;

	if (!report_object(keys, "fallbacks", &f->fallbacks))
		return false;
	json_object_foreach((json_t *)f->fallbacks, kind, value)
	{
		if (!json_is_integer(value) || json_integer_value(value) < 0) {
			report_fail(keys->name,
			            "%skey 'fallbacks.%s' is not a non-negative integer", keys->who,
			            kind);
			return keys->ok = false;
		}
	}
	return true;
}

/* The optional parts: the stream diagnosis, the data plane, the watch. */
static bool read_health(struct report_keys *keys, struct node_figures *f)
{
	const json_t *diagnosis = report_get(keys->report, "stream.diagnosis");

	report_optional_uint(keys, "stream.mismatched_requests", &f->mismatched);
	report_optional_uint(keys, "peers.timeouts", &f->peer_timeouts);
	report_optional_uint(keys, "peers.errors", &f->peer_errors);
	report_optional_uint(keys, "peers.refused", &f->peer_refused);
	report_optional_uint(keys, "peers.unauthenticated", &f->peer_unauthenticated);
	report_optional_uint(keys, "connections.watch_overflows", &f->watch_overflows);
	report_optional_uint(keys, "pfs.failed_samples", &f->pfs_failed);
	report_optional_uint(keys, "pfs.changed_samples", &f->pfs_changed);
	report_optional_uint(keys, "job.too_large.samples", &f->too_large);
	report_optional_uint(keys, "job.too_large.bytes", &f->too_large_bytes);
	report_optional_uint(keys, "job.max_sample_size", &f->size_limit);
	f->diagnosis = json_is_string(diagnosis) ? json_string_value(diagnosis) : NULL;
	report_optional_uint(keys, "verify.mismatched_copies", &f->bad_copies);
	report_optional_uint(keys, "verify.mismatched.ram.samples", &f->bad_ram);
	report_optional_uint(keys, "verify.mismatched.ssd.samples", &f->bad_ssd);
	report_optional_uint(keys, "verify.mismatched.peer.samples", &f->bad_peer);
	report_optional_uint(keys, "stream.self_synced", &f->synced);
	if (f->synced) {
		const json_t *first =
		        json_array_get(report_get(keys->report, "stream.self_sync"), 0);

		f->synced_epoch = (uint64_t)json_integer_value(json_object_get(first, "epoch"));
		f->synced_rank = (uint64_t)json_integer_value(json_object_get(first, "rank"));
		f->synced_index = (uint64_t)json_integer_value(json_object_get(first, "index"));
	}
	report_optional_string(keys, "stream.order_found.order", &f->order_found);
	if (f->order_found) {
		const json_t *order = report_get(keys->report, "stream.order_found");

		f->order_rank = (uint64_t)json_integer_value(json_object_get(order, "rank"));
		f->order_after =
		        (uint64_t)json_integer_value(json_object_get(order, "after_requests"));
		f->order_seconds = json_number_value(json_object_get(order, "seconds"));
	}
	f->interim = json_is_false(report_get(keys->report, "final"));
	return keys->ok;
}

/* Read and check one node report (@input among the inputs, called @name) into @f. */
static bool read_node(json_t *report, size_t input, const char *name, struct node_figures *f)
{
	struct report_keys keys = { .report = report, .name = name, .who = "", .ok = true };
	char who[32];
	uint64_t node;

	*f = (struct node_figures){ .report = report, .input = input };
	if (!json_is_object(report)) {
		report_fail(name, "not a JSON object");
		return false;
	}
	if (!report_uint(&keys, "node", &node))
		return false;
	if (node >= REPORT_MAX_NODE) {
		report_fail(name, "key 'node' (%" PRIu64 ") is not below %u", node,
		            REPORT_MAX_NODE);
		return false;
	}
	f->node = (uint32_t)node;
	snprintf(who, sizeof(who), "node %" PRIu32 ": ", f->node);
	keys.who = who;
	report_string(&keys, "job_id", &f->job_id);
	report_string(&keys, "job.dataset", &f->dataset);
	report_uint(&keys, "job.samples", &f->samples);
	report_uint(&keys, "job.epochs", &f->epochs);
	report_optional_uint(&keys, "job.start_epoch", &f->start_epoch);
	report_optional_uint(&keys, "job.start_sample", &f->start_sample);
	report_uint(&keys, "job.world_size", &f->world_size);
	report_uint(&keys, "pfs.dataset_bytes", &f->dataset_bytes);
	report_uint(&keys, "pfs.bytes", &f->pfs_bytes);
	report_uint(&keys, "pfs.probe_bytes", &f->probe_bytes);
	report_uint(&keys, "stall.requests", &f->stall_requests);
	report_real(&keys, "stall.seconds", &f->stall_seconds);
	report_real(&keys, "stall.max_seconds", &f->stall_max_seconds);
	read_kept(&keys, f);
	read_val(&keys, f);
	if (!keys.ok || !read_delivered(&keys, f) || !read_fallbacks(&keys, f) ||
	    !read_health(&keys, f) || !read_plans(&keys, f) || !read_metadata(&keys, f))
		return false;
	if (f->probe_bytes > f->pfs_bytes) {
		report_fail(name,
		            "%skey 'pfs.probe_bytes' (%" PRIu64 ") exceeds 'pfs.bytes' (%" PRIu64
		            ")",
		            who, f->probe_bytes, f->pfs_bytes);
		return false;
	}
	return true;
}

nopfs_status nopfs_report_check_node(const json_t *report, const char *name)
{
	struct node_figures figures;

	return read_node((json_t *)report, 0, name, &figures) ? NOPFS_OK : NOPFS_ERR_FORMAT;
}

static int compare_nodes(const void *a, const void *b)
{
	const struct node_figures *x = a, *y = b;

	return (x->node > y->node) - (x->node < y->node);
}

/* ------------------------------------------------------------------------
 * Problems: short sentences, one per finding.
 */

static void add_problem(json_t *problems, const char *format, ...)
        __attribute__((format(printf, 2, 3)));

static void add_problem(json_t *problems, const char *format, ...)
{
	char text[512];
	va_list args;

	va_start(args, format);
	vsnprintf(text, sizeof(text), format, args);
	va_end(args);
	json_array_append_new(problems, json_string(text));
}

/* "0, 2, 5" with at most a few nodes named, then "...". */
struct node_list {
	char text[160];
	unsigned int count;
};

static void node_list_add(struct node_list *list, uint32_t node)
{
	size_t used = strlen(list->text);

	if (list->count++ == 12) {
		snprintf(list->text + used, sizeof(list->text) - used, ", ...");
		return;
	}
	if (list->count > 12)
		return;
	snprintf(list->text + used, sizeof(list->text) - used, "%s%" PRIu32,
	         list->count > 1 ? ", " : "", node);
}

static void missing_problem(json_t *problems, const json_t *missing)
{
	struct node_list list = { .count = 0 };
	size_t i;
	json_t *node;

	json_array_foreach(missing, i, node)
	        node_list_add(&list, (uint32_t)json_integer_value(node));
	if (list.count == 1)
		add_problem(problems, "no report from node %s", list.text);
	else if (list.count > 1)
		add_problem(problems, "no report from %u nodes: %s", list.count, list.text);
}

static void disagreement_problems(json_t *problems, const struct node_figures *f, size_t count)
{
	const struct node_figures *ref = &f[0];

	for (size_t i = 1; i < count; i++) {
		const struct node_figures *n = &f[i];

		if (strcmp(n->job_id, ref->job_id) != 0)
			add_problem(problems,
			            "node %" PRIu32 " disagrees on job_id: '%s' (node %" PRIu32
			            ": '%s')",
			            n->node, n->job_id, ref->node, ref->job_id);
		if (n->plan != ref->plan)
			continue; /* planned for different steps (one ran on some nodes only) */
		if (strcmp(n->dataset, ref->dataset) != 0)
			add_problem(problems,
			            "node %" PRIu32 " disagrees on dataset: '%s' (node %" PRIu32
			            ": '%s')",
			            n->node, n->dataset, ref->node, ref->dataset);
		if (n->epochs != ref->epochs)
			add_problem(problems,
			            "node %" PRIu32 " disagrees on epochs: %" PRIu64
			            " (node %" PRIu32 ": %" PRIu64 ")",
			            n->node, n->epochs, ref->node, ref->epochs);
		if (n->world_size != ref->world_size)
			add_problem(problems,
			            "node %" PRIu32 " disagrees on world_size: %" PRIu64
			            " (node %" PRIu32 ": %" PRIu64 ")",
			            n->node, n->world_size, ref->node, ref->world_size);
		if (n->samples != ref->samples || n->dataset_bytes != ref->dataset_bytes)
			add_problem(problems,
			            "node %" PRIu32 " sees another dataset: %" PRIu64
			            " samples, %" PRIu64 " bytes (node %" PRIu32 ": %" PRIu64
			            ", %" PRIu64 ")",
			            n->node, n->samples, n->dataset_bytes, ref->node, ref->samples,
			            ref->dataset_bytes);
	}
}

/* Fallbacks summed per kind into @sums, with one problem per kind that happened. */
static void fallback_problems(json_t *problems, json_t *sums, const struct node_figures *f,
                              size_t count)
{
	const char *kind;
	json_t *value;

	for (size_t i = 0; i < count; i++) {
		json_object_foreach((json_t *)f[i].fallbacks, kind, value)
		{
			json_int_t sum = json_integer_value(json_object_get(sums, kind));

			json_object_set_new(sums, kind,
			                    json_integer(sum + json_integer_value(value)));
		}
	}
	json_object_foreach(sums, kind, value)
	{
		struct node_list list = { .count = 0 };

		if (json_integer_value(value) == 0)
			continue;
		for (size_t i = 0; i < count; i++)
			if (json_integer_value(json_object_get(f[i].fallbacks, kind)) > 0)
				node_list_add(&list, f[i].node);
		add_problem(problems,
		            "%" JSON_INTEGER_FORMAT " reads fell back to the PFS (%s) on %s %s",
		            json_integer_value(value), kind, list.count > 1 ? "nodes" : "node",
		            list.text);
	}
}

static void node_problems(json_t *problems, const struct node_figures *f, size_t count)
{
	/* samples over --max-sample-size: every node has the same catalog, said once */
	for (size_t i = 0; i < count; i++) {
		if (f[i].too_large) {
			add_problem(
			        problems,
			        "%" PRIu64 " samples (%" PRIu64
			        " bytes) are larger than the agents' --max-sample-size (%" PRIu64
			        " bytes): not kept, the ranks read them from the PFS themselves",
			        f[i].too_large, f[i].too_large_bytes, f[i].size_limit);
			break;
		}
	}
	for (size_t i = 0; i < count; i++) {
		const struct node_figures *n = &f[i];

		if (n->mismatched)
			add_problem(problems,
			            "node %" PRIu32 ": %" PRIu64
			            " requests followed no local rank's stream%s%s",
			            n->node, n->mismatched, n->diagnosis ? ": " : "",
			            n->diagnosis ? n->diagnosis : "");
		if (n->bad_copies)
			add_problem(
			        problems,
			        "node %" PRIu32 ": %" PRIu64
			        " copies of samples did not have the CRC32C of their first read "
			        "(RAM %" PRIu64 ", SSD %" PRIu64 ", other nodes %" PRIu64
			        "): not served, the PFS was read again",
			        n->node, n->bad_copies, n->bad_ram, n->bad_ssd, n->bad_peer);
		if (n->superseded)
			add_problem(
			        problems,
			        "node %" PRIu32 ": %" PRIu64
			        " requests came from tasks of a step planned earlier (plan %" PRIu64
			        " or before) while the agents followed plan %" PRIu64
			        " (a step started later): served without their plan; steps running "
			        "at the same time share the plan of the one started last",
			        n->node, n->superseded, n->superseded_plan, n->plan_followed);
		if (n->order_found)
			add_problem(problems,
			            "node %" PRIu32
			            ": the ranks read another order than planned (%s: "
			            "seen in rank %" PRIu64 "'s requests after %" PRIu64
			            " off the plan, %.1f s in); staged in that order from then on",
			            n->node, n->order_found, n->order_rank, n->order_after,
			            n->order_seconds);
		if (n->synced)
			add_problem(
			        problems,
			        "node %" PRIu32 ": %" PRIu64
			        " times a rank read elsewhere than planned and its staging moved "
			        "there (first: rank %" PRIu64 " at the script's epoch %" PRIu64
			        ", index %" PRIu64
			        "); a resumed job says where it starts with --nopfs-start-epoch "
			        "and --nopfs-start-sample",
			        n->node, n->synced, n->synced_rank, n->synced_epoch,
			        n->synced_index);
		if (n->peer_timeouts || n->peer_errors)
			add_problem(problems,
			            "node %" PRIu32 ": reads from other nodes: %" PRIu64
			            " timeouts, %" PRIu64 " errors",
			            n->node, n->peer_timeouts, n->peer_errors);
		if (n->peer_refused || n->peer_unauthenticated)
			add_problem(
			        problems,
			        "node %" PRIu32 ": data-plane messages dropped: %" PRIu64
			        " that did not authenticate with the job's key (another job, or "
			        "someone else on the network), %" PRIu64
			        " authenticated but refused (malformed or out of bounds)",
			        n->node, n->peer_unauthenticated, n->peer_refused);
		if (n->interim)
			add_problem(problems,
			            "node %" PRIu32 ": only an interim report (its agent did not "
			            "finish): its figures stop there",
			            n->node);
		if (n->pfs_failed || n->pfs_changed)
			add_problem(problems,
			            "node %" PRIu32 ": the PFS did not give %" PRIu64
			            " reads of samples (open or read failed) and %" PRIu64
			            " samples no longer had the catalog's size: ranks read those "
			            "from the PFS themselves",
			            n->node, n->pfs_failed, n->pfs_changed);
		if (n->meta_passed_absent)
			add_problem(
			        problems,
			        "node %" PRIu32 ": %" PRIu64
			        " dataset metadata calls of its ranks reached the PFS with no "
			        "metadata from the agent to answer them: %s",
			        n->node, n->meta_passed_absent,
			        n->meta_not_served ? n->meta_not_served
			        : n->meta_published
			                ? "the agent gave them the metadata, but they found none "
			                  "usable when they asked (their standard error says why)"
			                : "the agent gave them none (its log says why)");
		else if (n->meta_not_served)
			add_problem(problems, "node %" PRIu32 ": dataset metadata not served: %s",
			            n->node, n->meta_not_served);
		if (n->kept && n->kept_why && n->kept_why[0])
			add_problem(problems, "node %" PRIu32 ": kept cache: %s", n->node,
			            n->kept_why);
		if (n->watch_overflows)
			add_problem(problems,
			            "node %" PRIu32
			            ": the stage directory watch overflowed %" PRIu64
			            " times (opens of staged copies went uncounted)",
			            n->node, n->watch_overflows);
	}
}

/* ------------------------------------------------------------------------
 * The merged report.
 */

static json_t *count_json(const struct count *c)
{
	return json_pack("{s:I, s:I}", "samples", (json_int_t)c->samples, "bytes",
	                 (json_int_t)c->bytes);
}

/* Delivered per source (both ways), in total, and opened as staged copies. */
static int add_delivered(json_t *merged, const struct node_figures *f, size_t count)
{
	struct count source[REPORT_SOURCES] = { { 0 } }, total = { 0 }, staged = { 0 };
	json_t *delivered = json_object();

	for (size_t i = 0; i < count; i++) {
		for (int way = 0; way < WAYS; way++) {
			for (int s = 0; s < REPORT_SOURCES; s++) {
				const struct count *c = &f[i].delivered[way][s];

				source[s].samples += c->samples;
				source[s].bytes += c->bytes;
				total.samples += c->samples;
				total.bytes += c->bytes;
				if (way == WAY_STAGED) {
					staged.samples += c->samples;
					staged.bytes += c->bytes;
				}
			}
		}
	}
	for (int s = 0; s < REPORT_SOURCES; s++)
		json_object_set_new(delivered, report_source_names[s], count_json(&source[s]));
	return json_object_set_new(merged, "delivered", delivered) |
	       json_object_set_new(merged, "delivered_total", count_json(&total)) |
	       json_object_set_new(merged, "delivered_staged", count_json(&staged));
}

static int add_pfs_and_stall(json_t *merged, const struct node_figures *f, size_t count)
{
	uint64_t bytes = 0, probe = 0, requests = 0;
	double seconds = 0, max_seconds = 0;
	double dataset = (double)f[0].dataset_bytes, naive = dataset * (double)f[0].epochs;

	for (size_t i = 0; i < count; i++) {
		bytes += f[i].pfs_bytes - f[i].probe_bytes;
		probe += f[i].probe_bytes;
		requests += f[i].stall_requests;
		seconds += f[i].stall_seconds;
		if (f[i].stall_max_seconds > max_seconds)
			max_seconds = f[i].stall_max_seconds;
	}
	return json_object_set_new(merged, "pfs_bytes", json_integer((json_int_t)bytes)) |
	       json_object_set_new(merged, "probe_bytes", json_integer((json_int_t)probe)) |
	       json_object_set_new(merged, "vs_dataset",
	                           json_real(dataset > 0 ? (double)bytes / dataset : 0)) |
	       json_object_set_new(merged, "vs_naive",
	                           json_real(naive > 0 ? (double)bytes / naive : 0)) |
	       json_object_set_new(merged, "stall",
	                           json_pack("{s:I, s:f, s:f}", "requests", (json_int_t)requests,
	                                     "seconds", seconds, "max_seconds", max_seconds));
}

/* Add @from's served and passed counts to @into's. */
static void add_rank_counts(json_t *into, const json_t *from)
{
	static const char *const keys[] = { "served", "passed" };

	for (int k = 0; k < 2; k++)
		json_object_set_new(
		        into, keys[k],
		        json_integer(json_integer_value(json_object_get(into, keys[k])) +
		                     json_integer_value(json_object_get(from, keys[k]))));
}

/*
 * metadata: the dataset metadata calls of the ranks answered from the
 * catalog (served) or by the PFS (passed), in all and per rank.
 */
static int add_metadata(json_t *merged, const struct node_figures *f, size_t count)
{
	json_t *per_rank = json_object();
	uint64_t served = 0, passed = 0, unlisted = 0, changed = 0, passed_changed = 0;
	uint64_t passed_absent = 0;
	const char *name;
	const json_t *rank;

	for (size_t i = 0; i < count; i++) {
		served += f[i].meta_served;
		passed += f[i].meta_passed;
		if (f[i].meta_unlisted > unlisted)
			unlisted = f[i].meta_unlisted;
		if (f[i].meta_changed > changed)
			changed = f[i].meta_changed;
		passed_changed += f[i].meta_passed_changed;
		passed_absent += f[i].meta_passed_absent;
		if (!f[i].meta_per_rank)
			continue;
		json_object_foreach((json_t *)f[i].meta_per_rank, name, rank)
		{
			json_t *sum = json_object_get(per_rank, name);

			if (!sum) {
				sum = json_pack("{s:I, s:I}", "served", (json_int_t)0, "passed",
				                (json_int_t)0);
				json_object_set_new(per_rank, name, sum);
			}
			add_rank_counts(sum, rank);
		}
	}
	return json_object_set_new(
	        merged, "metadata",
	        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "served", (json_int_t)served,
	                  "passed", (json_int_t)passed, "unlisted", (json_int_t)unlisted,
	                  "changed_directories", (json_int_t)changed, "passed_changed",
	                  (json_int_t)passed_changed, "passed_absent", (json_int_t)passed_absent,
	                  "per_rank", per_rank));
}

/* kept: the nodes' kept caches summed, when any node has one (--keep-dir). */
static int add_kept(json_t *merged, const struct node_figures *f, size_t count)
{
	struct count sums[KEPT_COUNTS] = { { 0 } };
	json_t *kept = json_object();
	uint64_t nodes = 0;

	for (size_t i = 0; i < count; i++) {
		if (!f[i].kept)
			continue;
		nodes++;
		for (int k = 0; k < KEPT_COUNTS; k++) {
			sums[k].samples += f[i].kept_counts[k].samples;
			sums[k].bytes += f[i].kept_counts[k].bytes;
		}
	}
	if (!nodes) {
		json_decref(kept);
		return 0;
	}
	for (int k = 0; k < KEPT_COUNTS; k++)
		json_object_set_new(kept, kept_names[k], count_json(&sums[k]));
	json_object_set_new(kept, "nodes", json_integer((json_int_t)nodes));
	return json_object_set_new(merged, "kept", kept);
}

/*
 * val: the validation set's reads over the nodes (requests, delivered from
 * RAM and the PFS) and its PFS reads (pass reads plus fills), when any node
 * has one; pfs_vs_union: the job's PFS bytes against S + S_val.
 */
static int add_val(json_t *merged, const struct node_figures *f, size_t count)
{
	struct count ram = { 0 }, pfs = { 0 }, filled = { 0 };
	uint64_t requests = 0, bytes = 0, samples = 0, job_pfs = 0;
	const char *dataset = NULL;
	bool any = false;

	for (size_t i = 0; i < count; i++) {
		job_pfs += f[i].pfs_bytes - f[i].probe_bytes;
		if (!f[i].val)
			continue;
		any = true;
		samples = f[i].val_samples;
		bytes = f[i].val_bytes;
		requests += f[i].val_requests;
		ram.samples += f[i].val_ram.samples;
		ram.bytes += f[i].val_ram.bytes;
		pfs.samples += f[i].val_pfs.samples;
		pfs.bytes += f[i].val_pfs.bytes;
		filled.samples += f[i].val_filled.samples;
		filled.bytes += f[i].val_filled.bytes;
		if (!dataset)
			dataset = json_string_value(report_get(f[i].report, "val.dataset"));
	}
	if (!any)
		return 0;
	return json_object_set_new(
	        merged, "val",
	        json_pack("{s:s?, s:I, s:I, s:I, s:{s:o, s:o}, s:o, s:o, s:f}", "dataset", dataset,
	                  "samples", (json_int_t)samples, "bytes", (json_int_t)bytes, "requests",
	                  (json_int_t)requests, "delivered", "ram", count_json(&ram), "pfs",
	                  count_json(&pfs), "filled", count_json(&filled), "pfs_bytes",
	                  json_pack("{s:I, s:I}", "samples",
	                            (json_int_t)(pfs.samples + filled.samples), "bytes",
	                            (json_int_t)(pfs.bytes + filled.bytes)),
	                  "pfs_vs_union",
	                  f[0].dataset_bytes + bytes
	                          ? (double)job_pfs / (double)(f[0].dataset_bytes + bytes)
	                          : 0.0));
}

/*
 * nodes_expected, nodes_reported, nodes_missing, per_node, and replans: the
 * most later steps any node planned for.
 */
static int add_nodes(json_t *merged, const struct node_figures *f, size_t count, uint32_t expected)
{
	json_t *reported = json_array(), *missing = json_array(), *per_node = json_array();
	size_t next = 0;

	for (uint32_t node = 0; node < expected; node++) {
		if (next < count && f[next].node == node) {
			json_array_append_new(reported, json_integer(node));
			json_array_append(per_node, f[next].report);
			next++;
		} else {
			json_array_append_new(missing, json_integer(node));
		}
	}
	uint64_t replans = 0;

	for (size_t i = 0; i < count; i++)
		if (f[i].replans > replans)
			replans = f[i].replans;
	return json_object_set_new(merged, "replans", json_integer((json_int_t)replans)) |
	       json_object_set_new(merged, "nodes_expected", json_integer(expected)) |
	       json_object_set_new(merged, "nodes_reported", reported) |
	       json_object_set_new(merged, "nodes_missing", missing) |
	       json_object_set_new(merged, "per_node", per_node);
}

#define STALL_BUCKETS 32 /* the agent's: bucket b counts waits below 2^b microseconds */

/* Add @node's "per_epoch" (absent: nothing) into @sums; false if malformed. */
static bool sum_epochs(const struct node_figures *node, const char *name, struct count **sums,
                       size_t *epochs)
{
	const json_t *per_epoch = json_object_get(node->report, "per_epoch"), *epoch;
	size_t e;

	if (!per_epoch)
		return true;
	if (!json_is_array(per_epoch)) {
		report_fail(name, "node %" PRIu32 ": key 'per_epoch' is not an array", node->node);
		return false;
	}
	if (json_array_size(per_epoch) > *epochs) {
		struct count *grown = realloc(*sums, json_array_size(per_epoch) * REPORT_SOURCES *
		                                             sizeof(**sums));

		if (!grown)
			return false;
		memset(grown + *epochs * REPORT_SOURCES, 0,
		       (json_array_size(per_epoch) - *epochs) * REPORT_SOURCES * sizeof(*grown));
		*sums = grown;
		*epochs = json_array_size(per_epoch);
	}
	json_array_foreach(per_epoch, e, epoch)
	{
		for (int s = 0; s < REPORT_SOURCES; s++) {
			const json_t *c = json_object_get(epoch, report_source_names[s]);
			const json_t *samples = json_object_get(c, "samples");
			const json_t *bytes = json_object_get(c, "bytes");

			if (!json_is_integer(samples) || !json_is_integer(bytes) ||
			    json_integer_value(samples) < 0 || json_integer_value(bytes) < 0) {
				report_fail(name,
				            "node %" PRIu32 ": key 'per_epoch[%zu].%s' is not a "
				            "count of samples and bytes",
				            node->node, e, report_source_names[s]);
				return false;
			}
			(*sums)[e * REPORT_SOURCES + s].samples +=
			        (uint64_t)json_integer_value(samples);
			(*sums)[e * REPORT_SOURCES + s].bytes +=
			        (uint64_t)json_integer_value(bytes);
		}
	}
	return true;
}

/* Add @node's stall histogram (absent: nothing) into @buckets; false if malformed. */
static bool sum_stalls(const struct node_figures *node, const char *name, uint64_t *buckets,
                       bool *seen)
{
	const json_t *histogram = report_get(node->report, "stall.histogram_us_log2"), *value;
	size_t b;

	if (!histogram)
		return true;
	if (!json_is_array(histogram) || json_array_size(histogram) != STALL_BUCKETS) {
		report_fail(name,
		            "node %" PRIu32 ": key 'stall.histogram_us_log2' is not an array of %d "
		            "counts",
		            node->node, STALL_BUCKETS);
		return false;
	}
	json_array_foreach(histogram, b, value)
	{
		if (!json_is_integer(value) || json_integer_value(value) < 0) {
			report_fail(name,
			            "node %" PRIu32
			            ": key 'stall.histogram_us_log2[%zu]' is not a count",
			            node->node, b);
			return false;
		}
		buckets[b] += (uint64_t)json_integer_value(value);
	}
	*seen = true;
	return true;
}

double nopfs_report_stall_percentile(const json_t *histogram, double share)
{
	uint64_t total = 0, seen = 0;
	const json_t *value;
	size_t b;

	json_array_foreach(histogram, b, value) total += (uint64_t)json_integer_value(value);
	if (total == 0)
		return 0;
	json_array_foreach(histogram, b, value)
	{
		seen += (uint64_t)json_integer_value(value);
		if ((double)seen >= share * (double)total)
			return (double)(UINT64_C(1) << b) / 1e6;
	}
	return 0;
}

/*
 * per_epoch (deliveries by epoch and source, over the nodes) and the stall
 * histogram with its p50 and p99, when the node reports have them.
 */
static bool add_distributions(json_t *merged, const struct node_figures *f, size_t count,
                              const char *const *names)
{
	uint64_t buckets[STALL_BUCKETS] = { 0 };
	struct count *sums = NULL;
	size_t epochs = 0;
	bool ok = true, histogram_seen = false, epochs_seen = false;

	for (size_t i = 0; ok && i < count; i++) {
		const char *name = names ? names[f[i].input] : NULL;

		epochs_seen |= json_object_get(f[i].report, "per_epoch") != NULL;
		ok = sum_epochs(&f[i], name, &sums, &epochs) &&
		     sum_stalls(&f[i], name, buckets, &histogram_seen);
	}
	if (ok && epochs_seen) {
		json_t *per_epoch = json_array();

		for (size_t e = 0; e < epochs; e++) {
			json_t *epoch = json_object();

			for (int s = 0; s < REPORT_SOURCES; s++)
				json_object_set_new(epoch, report_source_names[s],
				                    count_json(&sums[e * REPORT_SOURCES + s]));
			json_array_append_new(per_epoch, epoch);
		}
		json_object_set_new(merged, "per_epoch", per_epoch);
	}
	if (ok && histogram_seen) {
		json_t *stall = json_object_get(merged, "stall"), *histogram = json_array();

		for (int b = 0; b < STALL_BUCKETS; b++)
			json_array_append_new(histogram, json_integer((json_int_t)buckets[b]));
		json_object_set_new(stall, "p50_seconds",
		                    json_real(nopfs_report_stall_percentile(histogram, 0.5)));
		json_object_set_new(stall, "p99_seconds",
		                    json_real(nopfs_report_stall_percentile(histogram, 0.99)));
		json_object_set_new(stall, "histogram_us_log2", histogram);
	}
	free(sums);
	return ok;
}

static json_t *build(const struct node_figures *f, size_t count, uint32_t expected)
{
	json_t *merged, *problems = json_array(), *fallbacks = json_object();
	int failed;

	merged = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "job_id", f[0].job_id, "dataset",
	                   f[0].dataset, "dataset_bytes", (json_int_t)f[0].dataset_bytes, "samples",
	                   (json_int_t)f[0].samples, "epochs", (json_int_t)f[0].epochs,
	                   "world_size", (json_int_t)f[0].world_size);
	if (merged) {
		json_object_set_new(merged, "start_epoch",
		                    json_integer((json_int_t)f[0].start_epoch));
		json_object_set_new(merged, "start_sample",
		                    json_integer((json_int_t)f[0].start_sample));
	}
	if (!merged || !problems || !fallbacks) {
		json_decref(problems);
		json_decref(fallbacks);
		json_decref(merged);
		return NULL;
	}
	failed = add_nodes(merged, f, count, expected) | add_pfs_and_stall(merged, f, count) |
	         add_delivered(merged, f, count) | add_metadata(merged, f, count) |
	         add_kept(merged, f, count) | add_val(merged, f, count);
	missing_problem(problems, json_object_get(merged, "nodes_missing"));
	disagreement_problems(problems, f, count);
	fallback_problems(problems, fallbacks, f, count);
	node_problems(problems, f, count);
	failed |= json_object_set_new(merged, "fallbacks", fallbacks) |
	          json_object_set_new(merged, "problems", problems);
	if (failed) {
		json_decref(merged);
		return NULL;
	}
	return merged;
}

/* The name of input @input in messages. */
static const char *input_name(const char *const *names, size_t input)
{
	return names ? names[input] : NULL;
}

/* Read and check every report into @figures, sorted by node; a status. */
static nopfs_status read_nodes(json_t *const *nodes, const char *const *names, size_t count,
                               uint32_t *expected_nodes, struct node_figures *figures)
{
	const struct node_figures *last = &figures[count - 1];

	for (size_t i = 0; i < count; i++)
		if (!read_node(nodes[i], i, input_name(names, i), &figures[i]))
			return NOPFS_ERR_FORMAT;
	qsort(figures, count, sizeof(*figures), compare_nodes);
	for (size_t i = 1; i < count; i++) {
		if (figures[i].node == figures[i - 1].node) {
			report_fail(input_name(names, figures[i].input),
			            "node %" PRIu32 " is reported twice", figures[i].node);
			return NOPFS_ERR_DUPLICATE;
		}
	}
	if (*expected_nodes == 0)
		*expected_nodes = last->node + 1;
	if (last->node >= *expected_nodes) {
		report_fail(input_name(names, last->input),
		            "node %" PRIu32 " is not one of the job's %" PRIu32 " nodes",
		            last->node, *expected_nodes);
		return NOPFS_ERR_RANGE;
	}
	return NOPFS_OK;
}

nopfs_status nopfs_report_merge(json_t *const *nodes, const char *const *names, size_t count,
                                uint32_t expected_nodes, json_t **merged)
{
	struct node_figures *figures;
	nopfs_status status;

	if (count == 0) {
		report_fail(NULL, "no node reports to merge");
		return NOPFS_ERR_EMPTY;
	}
	if (expected_nodes > REPORT_MAX_NODE) {
		report_fail(NULL, "%" PRIu32 " nodes: at most %u", expected_nodes, REPORT_MAX_NODE);
		return NOPFS_ERR_RANGE;
	}
	figures = calloc(count, sizeof(*figures));
	if (!figures) {
		report_fail(NULL, "out of memory");
		return NOPFS_ERR_NOMEM;
	}
	status = read_nodes(nodes, names, count, &expected_nodes, figures);
	if (status == NOPFS_OK) {
		*merged = build(figures, count, expected_nodes);
		if (!*merged) {
			report_fail(NULL, "out of memory");
			status = NOPFS_ERR_NOMEM;
		} else if (!add_distributions(*merged, figures, count, names)) {
			json_decref(*merged);
			*merged = NULL;
			status = NOPFS_ERR_FORMAT;
		}
	}
	free(figures);
	return status;
}
