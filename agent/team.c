/* Catalog sharing and the exchange of node records among the agents. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "notices.h"
#include "team.h"
#include "catalog/meta.h"
#include "task/runtime.h"
#include "common/cancel.h"
#include "common/atomic_file.h"
#include "common/log.h"
#include "common/private.h"
#include "peer/peer.h"
#include "common/readall.h"
#include "common/clock.h"

/* Deadline of one remote read: past it, the PFS. */
#define PEER_TIMEOUT_MS   1000
#define PEER_GRACE_MAX_MS 30000 /* waited for reads of a plan's RAM tier to end */

/* Publish @length bytes at @path for the other agents, atomically. */
static nopfs_status write_file(const char *path, const void *data, size_t length)
{
	nopfs_status status = nopfs_atomic_write(path, 0600, data, length);

	if (status != NOPFS_OK)
		nopfs_error("cannot share the catalog in '%s': %m", path);
	return status;
}

/* Read all of @path (malloc'd). */
static nopfs_status read_file(const char *path, void **data, size_t *length)
{
	/* the share directory may be anyone's: only a file of this user is believed */
	int fd = nopfs_private_file_open_for(AT_FDCWD, path, O_RDONLY, 0, geteuid());
	nopfs_status status = fd < 0 ? nopfs_status_from_errno(errno)
	                             : nopfs_read_all(fd, SIZE_MAX, data, length);

	if (status != NOPFS_OK)
		nopfs_error("cannot read the shared catalog '%s': %m", path);
	if (fd >= 0)
		close(fd);
	return status;
}

/*
 * Something kept the dataset's metadata from the ranks: a warning, and the
 * first such reason is the report's.
 */
static void __attribute__((format(printf, 2, 3)))
not_served(struct agent *agent, const char *format, ...)
{
	char text[sizeof(agent->meta_why)];
	va_list args;

	va_start(args, format);
	vsnprintf(text, sizeof(text), format, args);
	va_end(args);
	nopfs_warning("%s: ranks ask the PFS for it", text);
	if (!agent->meta_why[0])
		snprintf(agent->meta_why, sizeof(agent->meta_why), "%s", text);
}

/* Keep the metadata buffer @data of @length bytes, when it is valid. */
static void keep_metadata(struct agent *agent, void *data, size_t length, const char *origin)
{
	struct nopfs_meta_view view;
	const char *why;

	/* validated here only (its checksum covers the whole buffer): kept with it */
	if (nopfs_meta_view_init(&view, data, length, &why) != NOPFS_OK) {
		not_served(agent, "the dataset's metadata from %s %s", origin, why);
		free(data);
		return;
	}
	if (agent->meta != data)
		free(agent->meta); /* the listing, now with the files' stats */
	agent->meta = data;
	agent->meta_length = length;
	agent->meta_view = view;
	agent->meta_dirs = view.header->dir_count;
	agent->meta_entries = view.header->entry_count;
	agent->meta_unlisted = view.header->unlisted;
	if (view.header->unlisted)
		nopfs_warning("the dataset's metadata leaves out %" PRIu32
		              " directories (budget, unreadable or cycles): ranks ask the PFS for "
		              "those",
		              view.header->unlisted);
}

/*
 * Scan the dataset's listings (node 0, or a node alone): every directory and
 * entry, the stats of directories and links; the files' stats follow
 * (stat_files()), so the ranks can be given the listings at once.
 */
static void scan_listing(struct agent *agent)
{
	const char *root = agent->options.catalog.root;
	uint64_t start = nopfs_clock_now_ms();
	void *data;
	size_t length;

	if (!root || root[0] != '/' ||
	    nopfs_meta_scan_listing(root, AGENT_META_BUDGET, &data, &length) != NOPFS_OK) {
		if (!nopfs_stop_requested())
			not_served(agent, "the scan of the dataset's metadata failed (the log "
			                  "says why above)");
		return;
	}
	keep_metadata(agent, data, length, "the scan");
	agent->meta_scanned = agent->meta != NULL;
	nopfs_info("metadata: listings scanned in %.2f s, %.2f s after the agent started",
	           (double)(nopfs_clock_now_ms() - start) / 1000.0,
	           (double)(nopfs_clock_now_ns() - agent->started_ns) / 1e9);
}

/* Stat the files the listing left unknown, in place. */
static void stat_files(struct agent *agent)
{
	uint64_t start = nopfs_clock_now_ms(), made;
	unsigned int most;

	if (!agent->meta || !agent->meta_scanned ||
	    nopfs_meta_stat_files(agent->meta, agent->meta_length, AGENT_META_STAT_THREADS, &made,
	                          &most) != NOPFS_OK)
		return; /* stopped: the catalog gives up too */
	nopfs_info("metadata: %" PRIu64 " files stat'd in %.2f s, at most %u at once (paced to "
	           "the PFS's metadata server, up to %u)",
	           made, (double)(nopfs_clock_now_ms() - start) / 1000.0, most,
	           AGENT_META_STAT_THREADS);
}

/*
 * Stat the files, then open the catalog: built with the metadata's stats
 * (no metadata call per file), or from its cache.
 */
static nopfs_status stat_and_open(struct agent *agent, struct nopfs_catalog **catalog)
{
	stat_files(agent);
	if (nopfs_stop_requested())
		return NOPFS_ERR_CANCELED; /* the scan gave up: so does the catalog */
	if (agent->meta)
		return job_open_catalog_with(&agent->options, &agent->meta_view, catalog,
		                             &agent->job.catalog_from_cache);
	return job_open_catalog(&agent->options, catalog, &agent->job.catalog_from_cache);
}

/*
 * Node 0: share the metadata as SHARE_DIR/NAME.catalog.meta: first the
 * listing, then (replacing it) the whole, beside the catalog.
 */
static void share_metadata(struct agent *agent)
{
	const struct agent_options *options = &agent->options;

	if (!agent->meta || options->share_dir[0] == '\0')
		return;
	if ((size_t)snprintf(agent->shared_meta, sizeof(agent->shared_meta), "%s/%s.catalog.meta",
	                     options->share_dir,
	                     options->private_name) >= sizeof(agent->shared_meta) ||
	    nopfs_atomic_write(agent->shared_meta, 0600, agent->meta, agent->meta_length) !=
	            NOPFS_OK) {
		nopfs_warning("cannot share the dataset's metadata in '%s/%s.catalog.meta': the "
		              "other nodes' ranks ask the PFS for it",
		              options->share_dir, options->private_name);
		agent->shared_meta[0] = '\0';
	}
}

/* Every other node: node 0's metadata at @path (its listing, or the whole). */
static void receive_metadata(struct agent *agent, const char *path)
{
	void *data;
	size_t length;
	int fd;

	/* the share directory may be anyone's: only a file of this user is believed */
	fd = nopfs_private_file_open_for(AT_FDCWD, path, O_RDONLY, 0, geteuid());
	if (fd < 0 || nopfs_read_all(fd, SIZE_MAX, &data, &length) != NOPFS_OK) {
		not_served(agent, "no dataset metadata from node 0 in '%s' (%m)", path);
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	keep_metadata(agent, data, length, path);
}

/*
 * STAGE/meta-changed: a zero byte per directory, mapped shared for the agent
 * to set. Reserved (fallocate): a hole read through a task's mapping when
 * /dev/shm is full would be SIGBUS in the task.
 */
static bool make_changed_map(struct agent *agent)
{
	char path[4200];
	void *map;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/" NOPFS_STAGE_META_CHANGED_NAME,
	                     agent->options.stage_dir) >= sizeof(path))
		return false;
	unlink(path); /* an earlier agent's */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, agent->meta_dirs) != 0 ||
	    fallocate(fd, 0, 0, (off_t)agent->meta_dirs) != 0) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	map = mmap(NULL, agent->meta_dirs, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return false;
	agent->meta_changed = map;
	agent->meta_changed_dirs = agent->meta_dirs;
	return true;
}

/*
 * Give the tasks the metadata as STAGE/meta (the listing first, then the
 * whole: a new file each time, which the tasks map anew); the changed map
 * is made once, for the same directories.
 */
static void publish_metadata(struct agent *agent, bool listing)
{
	const char *stage_dir = agent->options.stage_dir;

	if (!agent->meta)
		return;
	if (agent->meta_changed && agent->meta_changed_dirs != agent->meta_dirs) {
		/* not the listing's directories (cannot happen): a new map for them */
		munmap(agent->meta_changed, agent->meta_changed_dirs);
		agent->meta_changed = NULL;
	}
	if (!agent->meta_changed && !make_changed_map(agent)) {
		not_served(agent, "cannot make '%s/" NOPFS_STAGE_META_CHANGED_NAME "' (%m)",
		           stage_dir);
		return;
	}
	if ((size_t)snprintf(agent->stage_meta, sizeof(agent->stage_meta),
	                     "%s/" NOPFS_STAGE_META_NAME, stage_dir) >= sizeof(agent->stage_meta) ||
	    nopfs_atomic_write(agent->stage_meta, 0600, agent->meta, agent->meta_length) !=
	            NOPFS_OK) {
		not_served(agent, "cannot write the dataset's metadata in '%s' (%m)", stage_dir);
		agent->stage_meta[0] = '\0';
		return;
	}
	agent->meta_published = true;
	agent->meta_checked_ms = nopfs_clock_now_ms();
	nopfs_info("metadata: %" PRIu32 " directories, %" PRIu32 " entries served to the ranks%s",
	           agent->meta_dirs, agent->meta_entries,
	           listing ? " (their listings; the files' stats follow)" : "");
}

/* Mark directory @d changed; whether it was not yet. */
static bool mark_changed(struct agent *agent, uint32_t d)
{
	if (d >= agent->meta_dirs ||
	    __atomic_exchange_n(&agent->meta_changed[d], 1, __ATOMIC_RELAXED))
		return false;
	agent->meta_changed_count++;
	return true;
}

void team_check_metadata(struct agent *agent)
{
	const struct nopfs_meta_view *view = &agent->meta_view;
	char payload[256 * 11 + 1];
	uint32_t *newly, marked;
	uint64_t now = nopfs_clock_now_ms();

	/* A node without a data plane hears no notice: it looks itself. */
	if ((!agent->meta_scanned && agent->peers) || !agent->meta || !agent->meta_changed ||
	    now - agent->meta_checked_ms < AGENT_META_CHECK_MS)
		return;
	agent->meta_checked_ms = now;
	newly = malloc(sizeof(*newly) * agent->meta_dirs);
	if (!newly)
		return; /* looked at again at the next check */
	marked = nopfs_meta_check_dirs(view, agent->meta_changed, newly, agent->meta_dirs);
	agent->meta_changed_count += marked;
	if (marked)
		nopfs_warning("%" PRIu32 " directories of the dataset changed since the scan "
		              "(first: '%s'): ranks ask the PFS for them",
		              marked, nopfs_meta_name(view, view->dirs[newly[0]].realpath));
	/* The other agents mark them too: 256 a notice. */
	for (uint32_t first = 0; agent->peers && agent->shared_meta[0] && first < marked;
	     first += 256) {
		size_t length = 0;

		for (uint32_t i = first; i < marked && i < first + 256; i++)
			length += (size_t)snprintf(payload + length, sizeof(payload) - length,
			                           "%s%" PRIu32, i > first ? "," : "", newly[i]);
		peer_plane_notify(agent->peers, AGENT_NOTICE_META_CHANGED, agent->generation,
		                  payload, length + 1);
	}
	free(newly);
}

void team_metadata_notice(struct agent *agent, uint32_t sender, const char *payload)
{
	const char *at = payload;
	uint32_t marked = 0;

	if (!agent->meta_changed || agent->meta_scanned)
		return;
	while (*at) {
		char *end;
		unsigned long d = strtoul(at, &end, 10);

		if (end == at || (*end && *end != ',') || d >= agent->meta_dirs) {
			nopfs_warning("a notice of changed directories from node %" PRIu32
			              " is malformed: ignored from '%.20s'",
			              sender, at);
			break;
		}
		marked += mark_changed(agent, (uint32_t)d);
		at = *end ? end + 1 : end;
	}
	if (marked)
		nopfs_info("%" PRIu32 " directories of the dataset changed since node %" PRIu32
		           "'s scan: ranks ask the PFS for them",
		           marked, sender);
}

void team_withdraw_metadata(struct agent *agent)
{
	char path[4200];

	if (agent->stage_meta[0])
		unlink(agent->stage_meta);
	agent->stage_meta[0] = '\0';
	if (agent->meta_changed &&
	    (size_t)snprintf(path, sizeof(path), "%s/" NOPFS_STAGE_META_CHANGED_NAME,
	                     agent->options.stage_dir) < sizeof(path))
		unlink(path);
}

/*
 * Node 0 tells every node @announce (a path, or a word, as a string): the
 * exchange is the barrier after which what it names is complete. Node 0's
 * string into @heard (@length bytes), on every node; NOPFS_ERR_INVALID (the
 * exchange made, @what named in the error) when it is not one.
 */
static nopfs_status hear_node0(struct agent *agent, const char *announce, char *heard,
                               size_t length, const char *what)
{
	void **records;
	size_t *lengths;
	nopfs_status status = bootstrap_exchange(&agent->bootstrap, announce, strlen(announce) + 1,
	                                         agent->options.scan_timeout, &records, &lengths);

	if (status != NOPFS_OK)
		return status;
	if (lengths[0] == 0 || lengths[0] > length ||
	    ((char *)records[0])[lengths[0] - 1] != '\0') {
		nopfs_error("node 0's %s announcement is malformed", what);
		status = NOPFS_ERR_INVALID; /* apart from the exchange's own errors */
	} else {
		memcpy(heard, records[0], lengths[0]);
	}
	for (uint32_t n = 0; n < agent->bootstrap.nodes; n++)
		free(records[n]);
	free(records);
	free(lengths);
	return status;
}

/* Write @catalog, serialized, to @path for the other nodes. */
static nopfs_status share_catalog_file(const struct nopfs_catalog *catalog, const char *path)
{
	void *buffer;
	size_t size;
	nopfs_status status = nopfs_catalog_serialize(catalog, &buffer, &size);

	if (status != NOPFS_OK)
		return status;
	status = write_file(path, buffer, size);
	free(buffer);
	return status;
}

/* Node 0: build the catalog and, with a share directory, publish it there. */
static nopfs_status share_catalog(struct agent *agent, struct nopfs_catalog **catalog,
                                  char *announce, size_t length)
{
	const struct agent_options *options = &agent->options;
	nopfs_status status;

	announce[0] = '\0';
	status = stat_and_open(agent, catalog);
	if (status != NOPFS_OK || options->share_dir[0] == '\0')
		return status;
	if ((size_t)snprintf(agent->shared_catalog, sizeof(agent->shared_catalog), "%s/%s.catalog",
	                     options->share_dir,
	                     options->private_name) >= sizeof(agent->shared_catalog)) {
		nopfs_error("--share-dir '%s' is too long", options->share_dir);
		return NOPFS_ERR_RANGE;
	}
	status = share_catalog_file(*catalog, agent->shared_catalog);
	if (status == NOPFS_OK) {
		share_metadata(agent);
		snprintf(announce, length, "%s", agent->shared_catalog);
	} else {
		agent->shared_catalog[0] = '\0';
	}
	return status;
}

/* Every other node: load node 0's catalog, or build it when none was shared. */
static nopfs_status receive_catalog(struct agent *agent, const char *announced,
                                    struct nopfs_catalog **catalog)
{
	char path[PATH_MAX + 8];
	nopfs_status status;

	if (announced[0] == '\0')
		return stat_and_open(agent, catalog); /* its own listing (no --share-dir) */
	status = team_load_catalog(announced, catalog);
	if (status == NOPFS_OK &&
	    (size_t)snprintf(path, sizeof(path), "%s.meta", announced) < sizeof(path))
		receive_metadata(agent, path);
	return status;
}

/*
 * The listings first, for the ranks (which may start on them: --start=early):
 * node 0 scans them and shares them through the exchange, every node gives
 * them to its tasks. Without a share directory every node scans them; with
 * one, a node 0 that shared none (it logged why) leaves the others' ranks
 * to the PFS until the whole metadata comes with the catalog.
 */
static nopfs_status team_listing(struct agent *agent)
{
	char announce[PATH_MAX] = "", heard[PATH_MAX];
	nopfs_status status;

	if (agent->bootstrap.node == 0) {
		scan_listing(agent);
		if (nopfs_stop_requested())
			return NOPFS_ERR_CANCELED;
		share_metadata(agent);
		snprintf(announce, sizeof(announce), "%s", agent->shared_meta);
	}
	status = hear_node0(agent, announce, heard, sizeof(heard), "metadata");
	if (status != NOPFS_OK)
		return status;
	if (agent->bootstrap.node != 0) {
		if (heard[0] == '\0' && agent->options.share_dir[0] == '\0') {
			nopfs_warning("no --share-dir: this node scans the dataset itself");
			scan_listing(agent);
		} else if (heard[0] != '\0') {
			receive_metadata(agent, heard);
		}
	}
	if (status == NOPFS_OK)
		publish_metadata(agent, true);
	return nopfs_stop_requested() ? NOPFS_ERR_CANCELED : status;
}

nopfs_status team_catalog(struct agent *agent)
{
	struct nopfs_catalog *catalog = NULL;
	char announce[PATH_MAX] = "", heard[PATH_MAX];
	nopfs_status status;

	if (!agent->bootstrap.active) {
		scan_listing(agent);
		if (nopfs_stop_requested())
			return NOPFS_ERR_CANCELED;
		publish_metadata(agent, true);
		status = stat_and_open(agent, &catalog);
		if (status != NOPFS_OK)
			return status;
		publish_metadata(agent, false);
		return job_use_catalog(&agent->job, &agent->options, catalog);
	}
	status = team_listing(agent);
	if (status != NOPFS_OK)
		return status;
	if (agent->bootstrap.node == 0) {
		status = share_catalog(agent, &catalog, announce, sizeof(announce));
		if (status != NOPFS_OK) {
			nopfs_catalog_destroy(catalog);
			return status;
		}
	}
	status = hear_node0(agent, announce, heard, sizeof(heard), "catalog");
	if (status == NOPFS_OK && agent->bootstrap.node != 0)
		status = receive_catalog(agent, heard, &catalog);
	if (status != NOPFS_OK) {
		nopfs_catalog_destroy(catalog);
		return status;
	}
	publish_metadata(agent, false);
	return job_use_catalog(&agent->job, &agent->options, catalog);
}

/* An exchange of one flag: NOPFS_OK when every node's is set. */
static nopfs_status every_node_has(struct agent *agent, bool mine)
{
	uint8_t flag = mine;
	void **records = NULL;
	size_t *lengths = NULL;
	nopfs_status status = bootstrap_exchange(&agent->bootstrap, &flag, 1,
	                                         agent->options.fence_timeout, &records, &lengths);

	for (uint32_t n = 0; status == NOPFS_OK && n < agent->bootstrap.nodes; n++) {
		if (lengths[n] != 1 || !((uint8_t *)records[n])[0]) {
			nopfs_warning("node %" PRIu32 " has no catalog of the validation set", n);
			status = NOPFS_ERR_NOT_FOUND;
		}
	}
	if (records) {
		for (uint32_t n = 0; n < agent->bootstrap.nodes; n++)
			free(records[n]);
		free(records);
		free(lengths);
	}
	return status;
}

nopfs_status team_val_catalog(struct agent *agent)
{
	const struct agent_options *options = &agent->options;
	struct nopfs_catalog_options dataset = options->catalog;
	struct nopfs_catalog *catalog = NULL;
	char announce[PATH_MAX] = "", heard[PATH_MAX];
	nopfs_status status = NOPFS_OK;

	if (!options->val_dataset[0])
		return NOPFS_OK;
	dataset.format = NOPFS_INDEX_IMAGEFOLDER;
	dataset.root = options->val_dataset;
	dataset.list_path = NULL;
	dataset.meta = NULL;
	if (agent->bootstrap.node == 0 || !agent->bootstrap.active) {
		status = nopfs_catalog_open(&dataset, &catalog, NULL);
		if (status != NOPFS_OK)
			snprintf(announce, sizeof(announce), "-"); /* none for anyone */
		if (status == NOPFS_OK && agent->bootstrap.active && options->share_dir[0]) {
			if ((size_t)snprintf(announce, sizeof(announce), "%s/%s.val.catalog",
			                     options->share_dir,
			                     options->private_name) >= sizeof(announce))
				status = NOPFS_ERR_RANGE;
			if (status == NOPFS_OK)
				status = share_catalog_file(catalog, announce);
			if (status == NOPFS_OK)
				snprintf(agent->shared_val_catalog,
				         sizeof(agent->shared_val_catalog), "%s", announce);
			else
				announce[0] = '\0';
		}
	}
	if (agent->bootstrap.active) {
		nopfs_status heard_status =
		        hear_node0(agent, announce, heard, sizeof(heard), "validation catalog");

		if (heard_status == NOPFS_ERR_INVALID)
			status = heard_status; /* the exchange was made: on to the next one */
		else if (heard_status != NOPFS_OK) {
			nopfs_catalog_destroy(catalog);
			return heard_status;
		} else if (agent->bootstrap.node != 0) {
			if (strcmp(heard, "-") == 0)
				status = NOPFS_ERR_FORMAT;
			else if (heard[0])
				status = team_load_catalog(heard, &catalog);
			else /* node 0 shared none (no --share-dir, or it failed) */
				status = nopfs_catalog_open(&dataset, &catalog, NULL);
		}
		/* every node must plan with the set or none (the placement is computed everywhere)
		 */
		if (every_node_has(agent, status == NOPFS_OK) != NOPFS_OK)
			status = NOPFS_ERR_UNSUPPORTED;
	}
	if (status != NOPFS_OK) {
		/* the job goes on: the validation set is read from the PFS, unplanned */
		nopfs_warning("validation set '%s': no catalog (above): its reads go to the PFS",
		              options->val_dataset);
		nopfs_catalog_destroy(catalog);
		return NOPFS_OK;
	}
	return val_use_catalog(&agent->val, catalog, options->val_dataset, options->val_all,
	                       agent->job.layout, agent->job.node);
}

nopfs_status team_share_plan_catalog(struct agent *agent, const struct agent_options *options,
                                     uint32_t generation, struct nopfs_catalog **catalog)
{
	char path[sizeof(agent->shared_catalog)] = "";
	bool from_cache = false;
	nopfs_status status;

	*catalog = NULL;
	status = job_open_catalog(options, catalog, &from_cache);
	if (status == NOPFS_OK &&
	    (size_t)snprintf(path, sizeof(path), "%s/%s.%" PRIu32 ".catalog", options->share_dir,
	                     options->private_name, generation) >= sizeof(path)) {
		nopfs_error("--share-dir '%s' is too long", options->share_dir);
		status = NOPFS_ERR_RANGE;
	}
	if (status == NOPFS_OK)
		status = share_catalog_file(*catalog, path);
	if (status != NOPFS_OK) {
		nopfs_catalog_destroy(*catalog);
		*catalog = NULL;
		path[0] = '\0'; /* the others give up on this plan at once */
	} else {
		if (agent->shared_catalog[0])
			unlink(agent->shared_catalog); /* the previous plan's, read long ago */
		memcpy(agent->shared_catalog, path, sizeof(path));
	}
	peer_plane_notify(agent->peers, AGENT_NOTICE_CATALOG, generation, path, strlen(path) + 1);
	return status;
}

nopfs_status team_load_catalog(const char *path, struct nopfs_catalog **catalog)
{
	void *buffer;
	size_t size;
	nopfs_status status = read_file(path, &buffer, &size);

	if (status != NOPFS_OK)
		return status;
	status = nopfs_catalog_deserialize(buffer, size, catalog);
	free(buffer);
	if (status != NOPFS_OK)
		nopfs_error("the catalog node 0 shared in '%s' is not valid", path);
	return status;
}

/* This node's record: host and tier capacities, as JSON text. */
static char *node_record(struct agent *agent)
{
	json_t *tiers = json_array(), *record;
	char host[256] = "", *text;

	gethostname(host, sizeof(host) - 1);
	for (unsigned int t = 0; t < agent->node_tiers.count; t++)
		json_array_append_new(tiers,
		                      json_integer((json_int_t)agent->node_tiers.capacity[t]));
	record = json_pack("{s:s, s:I, s:o}", "host", host, "node",
	                   (json_int_t)agent->bootstrap.node, "tiers", tiers);
	text = record ? json_dumps(record, JSON_COMPACT) : NULL;
	json_decref(record);
	return text;
}

/* Parse node @n's record into @tiers and @host. */
static nopfs_status parse_record(const char *text, size_t length, uint32_t n,
                                 struct nopfs_node_tiers *tiers, char *host, size_t host_length)
{
	json_error_t error;
	json_t *record = json_loadb(text, length ? length - 1 : 0, 0, &error), *list, *value;
	const char *name = NULL;
	json_int_t node = -1;
	size_t index;

	if (!record ||
	    json_unpack(record, "{s:s, s:I, s:o}", "host", &name, "node", &node, "tiers", &list) !=
	            0 ||
	    node != (json_int_t)n || !json_is_array(list) ||
	    json_array_size(list) > NOPFS_TIERS_MAX) {
		nopfs_error("the record of node %" PRIu32 " is malformed", n);
		json_decref(record);
		return NOPFS_ERR_FORMAT;
	}
	memset(tiers, 0, sizeof(*tiers));
	json_array_foreach(list, index, value)
	{
		if (!json_is_integer(value) || json_integer_value(value) < 0) {
			nopfs_error("the record of node %" PRIu32 " has a bad tier capacity", n);
			json_decref(record);
			return NOPFS_ERR_FORMAT;
		}
		tiers->capacity[tiers->count++] = (uint64_t)json_integer_value(value);
	}
	snprintf(host, host_length, "%s", name);
	json_decref(record);
	return NOPFS_OK;
}

nopfs_status team_exchange(struct agent *agent, struct nopfs_node_tiers **tiers_out)
{
	uint32_t nodes = agent->job.layout->nodes;
	struct nopfs_node_tiers *tiers = calloc(nodes, sizeof(*tiers));
	void **records = NULL;
	size_t *lengths = NULL;
	char *mine = NULL, host[256];
	nopfs_status status = NOPFS_OK;

	if (!tiers) {
		nopfs_error("no memory for the tiers of %" PRIu32 " nodes", nodes);
		return NOPFS_ERR_NOMEM;
	}
	if (!agent->bootstrap.active) {
		tiers[agent->job.node] = agent->node_tiers; /* the other node, if any, has none */
		*tiers_out = tiers;
		return NOPFS_OK;
	}
	mine = node_record(agent);
	status = mine ? bootstrap_exchange(&agent->bootstrap, mine, strlen(mine) + 1,
	                                   agent->options.fence_timeout, &records, &lengths)
	              : NOPFS_ERR_NOMEM;
	for (uint32_t n = 0; status == NOPFS_OK && n < nodes; n++) {
		status = parse_record(records[n], lengths[n], n, &tiers[n], host, sizeof(host));
		if (status == NOPFS_OK)
			nopfs_info("node %" PRIu32 " is %s", n, host);
	}
	for (uint32_t n = 0; records && n < nodes; n++)
		free(records[n]);
	free(records);
	free(lengths);
	free(mine);
	if (status != NOPFS_OK) {
		free(tiers);
		return status;
	}
	*tiers_out = tiers;
	return NOPFS_OK;
}

nopfs_status team_exchange_held(struct agent *agent, uint8_t ***held_out)
{
	uint32_t nodes = agent->job.layout->nodes;
	uint64_t count = agent->job.sampler.count;
	uint8_t **held = calloc(nodes, sizeof(*held)), *mine, none = 0;
	void **records = NULL;
	size_t *lengths = NULL;
	nopfs_status status;

	if (!held) {
		nopfs_error("no memory for what %" PRIu32 " nodes kept", nodes);
		return NOPFS_ERR_NOMEM;
	}
	mine = keep_held(&agent->keep, count);
	if (!agent->bootstrap.active) {
		held[agent->job.node] = mine;
		*held_out = held;
		return NOPFS_OK;
	}
	/* every node takes part, with what it holds or a byte for nothing */
	status = bootstrap_exchange(&agent->bootstrap, mine ? (void *)mine : &none,
	                            mine ? count / 8 + 1 : 1, agent->options.fence_timeout,
	                            &records, &lengths);
	free(mine);
	for (uint32_t n = 0; status == NOPFS_OK && n < nodes; n++) {
		if (lengths[n] == count / 8 + 1) {
			held[n] = records[n];
			records[n] = NULL;
		} else if (lengths[n] != 1) {
			nopfs_warning("node %" PRIu32
			              " told %zu bytes of what it kept, not %" PRIu64
			              ": planned as keeping nothing",
			              n, lengths[n], count / 8 + 1);
		}
	}
	for (uint32_t n = 0; records && n < nodes; n++)
		free(records[n]);
	free(records);
	free(lengths);
	if (status != NOPFS_OK) {
		for (uint32_t n = 0; n < nodes; n++)
			free(held[n]);
		free(held);
		return status;
	}
	*held_out = held;
	return NOPFS_OK;
}

void team_fini(struct agent *agent)
{
	if (agent->shared_catalog[0])
		unlink(agent->shared_catalog);
	agent->shared_catalog[0] = '\0';
	if (agent->shared_meta[0])
		unlink(agent->shared_meta);
	agent->shared_meta[0] = '\0';
	if (agent->shared_val_catalog[0])
		unlink(agent->shared_val_catalog);
	agent->shared_val_catalog[0] = '\0';
	team_withdraw_metadata(agent);
	if (agent->meta_changed)
		munmap(agent->meta_changed, agent->meta_changed_dirs);
	agent->meta_changed = NULL;
	free(agent->meta);
	agent->meta = NULL;
}

/*
 * A peer asks for @length bytes at @offset of @sample (@size bytes): answer
 * from a local tier if it is there, copied into @buffer, or, with @take,
 * handed to @take where they are in a RAM tier, under the plan's lock
 * (@take does not block; NOPFS_ERR_UNSUPPORTED when the present copy is on
 * an SSD). Within one plan a present copy does not change (*@plan: the
 * plan's generation).
 */
static nopfs_status serve_peer_part(struct agent *agent, nopfs_sample_id sample, uint64_t size,
                                    uint64_t offset, uint64_t length, uint64_t *plan, void *buffer,
                                    peer_take_fn take, void *take_arg)
{
	nopfs_status status = NOPFS_ERR_NOT_FOUND;

	if (pthread_rwlock_tryrdlock(&agent->plan_lock) != 0)
		return NOPFS_ERR_NOT_FOUND; /* changing plans */
	*plan = agent->generation;
	if (sample >= agent->job.sampler.count ||
	    nopfs_catalog_size(agent->job.catalog, sample) != size || offset > size ||
	    length > size - offset)
		goto out;
	for (unsigned int t = 0; t < agent->tiers.count; t++) {
		struct tier *tier = &agent->tiers.tier[t];
		int64_t position = tier_position(tier, sample);
		const void *bytes;

		if (position < 0)
			continue;
		if (atomic_load(&tier->state[position]) == TIER_PRESENT) {
			if (!take) {
				status = tier_read_range(tier, (uint64_t)position, offset, buffer,
				                         length);
				break;
			}
			bytes = tier_view(tier, (uint64_t)position, offset);
			status = bytes ? take(take_arg, bytes, length) : NOPFS_ERR_UNSUPPORTED;
			break;
		}
		if ((uint64_t)position < tier->primary_count) {
			status = NOPFS_ERR_AGAIN; /* ours to fetch: fill_for_peer() */
			break;
		}
	}
out:
	pthread_rwlock_unlock(&agent->plan_lock);
	return status;
}

static nopfs_status serve_peer_range(void *arg, nopfs_sample_id sample, uint64_t size,
                                     uint64_t offset, void *buffer, uint64_t length, uint64_t *plan)
{
	return serve_peer_part(arg, sample, size, offset, length, plan, buffer, NULL, NULL);
}

static nopfs_status serve_peer_view(void *arg, nopfs_sample_id sample, uint64_t size,
                                    uint64_t offset, uint64_t length, uint64_t *plan,
                                    peer_take_fn take, void *take_arg)
{
	return serve_peer_part(arg, sample, size, offset, length, plan, NULL, take, take_arg);
}

static nopfs_status serve_peer(void *arg, nopfs_sample_id sample, void *buffer, uint64_t size)
{
	uint64_t plan;

	return serve_peer_range(arg, sample, size, 0, buffer, size, &plan);
}

/*
 * A peer asked for a sample this node keeps the primary copy of but has not
 * fetched yet: fetch it now (from the PFS, into its tier, as this node would
 * anyway) rather than have the peer read the PFS too. Answering thread.
 */
static nopfs_status fill_for_peer(void *arg, nopfs_sample_id sample, void *buffer, uint64_t size,
                                  uint64_t deadline_ns)
{
	struct agent *agent = arg;
	struct timespec deadline = nopfs_clock_deadline_at_ns(deadline_ns);
	nopfs_status status;

	if (pthread_rwlock_tryrdlock(&agent->plan_lock) != 0)
		return NOPFS_ERR_NOT_FOUND; /* changing plans */
	status = source_fill_for_peer(&agent->source, sample, buffer, size, &deadline);
	pthread_rwlock_unlock(&agent->plan_lock);
	return status;
}

/*
 * The slowest rate a sample for a peer is expected to move at: read from the
 * PFS while every node reads it and, on its holder, beside the holder's
 * other reads (its stagers, a prefetcher and a rank's request): this node's
 * best PFS rate shared by all the nodes and by those (0 when the PFS was not
 * measured: the fixed deadline alone). A 16 MB sample a holder first reads
 * from a contended PFS is then waited for, not fetched a second time.
 */
static double slow_rate(struct agent *agent)
{
	struct nopfs_model model = { .tiers = agent->options.tiers.count };
	unsigned int readers = agent->options.stage_threads + 2;

	probe_fill_model(&agent->probe, &agent->options.tiers, &model);
	return model.pfs_client_limit / (agent->bootstrap.nodes ? agent->bootstrap.nodes : 1) /
	       readers;
}

/* What a node without a data plane publishes instead of its record. */
static const char no_plane_record = 0;

/*
 * The job's secret for the data plane: node 0 makes it and publishes it
 * through PMIx (the job's own exchange, which no other job reads); every
 * node takes node 0's. The exchange is collective, so every node takes part
 * even when node 0 has none to give: NOPFS_ERR_FORMAT then (no plane), any
 * other error is a failed exchange. Copies are wiped after use.
 */
static nopfs_status share_secret(struct agent *agent, unsigned char secret[PEER_SECRET_BYTES])
{
	unsigned char mine[PEER_SECRET_BYTES];
	bool made = agent->bootstrap.node == 0 && peer_secret_generate(mine) == NOPFS_OK;
	void **records;
	size_t *lengths;
	nopfs_status status;

	status = bootstrap_exchange(&agent->bootstrap, made ? (void *)mine : &no_plane_record,
	                            made ? sizeof(mine) : sizeof(no_plane_record),
	                            agent->options.fence_timeout, &records, &lengths);
	explicit_bzero(mine, sizeof(mine));
	if (status != NOPFS_OK)
		return status;
	if (lengths[0] == PEER_SECRET_BYTES) {
		memcpy(secret, records[0], PEER_SECRET_BYTES);
	} else {
		nopfs_error("data plane: node 0 shared no secret for it");
		status = NOPFS_ERR_FORMAT;
	}
	explicit_bzero(records[0], lengths[0]);
	for (uint32_t n = 0; n < agent->bootstrap.nodes; n++)
		free(records[n]);
	free(records);
	free(lengths);
	return status;
}

/*
 * Connect every agent's data plane to every other's. The exchange is
 * collective, so a node whose plane cannot start still takes part (with an
 * empty record) and the others read what it keeps from the PFS; a node that
 * cannot be reached is likewise left to the PFS. Only a failed exchange, where
 * PMIx itself is broken, is an error.
 */
/*
 * The tier peers read this node's primary copies from: tier 0 when it is
 * RAM and keeps some (every node runs the same tier list), else NULL.
 */
static struct tier *exposed_ram(struct agent *agent)
{
	struct tier *ram = agent->tiers.count ? &agent->tiers.tier[0] : NULL;

	return ram && ram->kind == NOPFS_TIER_RAM && ram->primary_count ? ram : NULL;
}

/* Compute every primary's place once, before the stagers ask concurrently. */
static void place_primaries(struct agent *agent)
{
	uint32_t node_unused;
	unsigned int tier_unused;
	uint64_t offset_unused, index_unused;

	nopfs_placement_primary_place(agent->job.placement, 0, &node_unused, &tier_unused,
	                              &offset_unused, &index_unused);
}

nopfs_status team_connect_peers(struct agent *agent)
{
	struct tier *ram = exposed_ram(agent);
	struct peer_config config = {
		.node = agent->bootstrap.node,
		.ram_base = ram ? ram->base : NULL,
		.ram_bytes = ram ? ram->bytes : 0,
		.state_base = ram ? (void *)ram->state : NULL,
		.state_bytes = ram ? ram->primary_count : 0,
		.present_value = TIER_PRESENT,
		.serve = serve_peer,
		.serve_range = serve_peer_range,
		.serve_view = serve_peer_view,
		.fill = fill_for_peer,
		.notice = agent_notice,
		.origin_kind = AGENT_NOTICE_CATALOG,
		.origin_max = PATH_MAX,
		.max_samples = agent->job.sampler.count,
		.max_sample_size = agent->job.max_sample_size,
		.serve_arg = agent,
		.timeout_ms = PEER_TIMEOUT_MS,
		.slow_bytes_per_s = slow_rate(agent),
	};
	uint32_t nodes = agent->bootstrap.nodes, connected = 0;
	void *packed = NULL, **records = NULL;
	size_t packed_length = 0, *lengths = NULL;
	nopfs_status status;

	if (!agent->bootstrap.active || nodes < 2)
		return NOPFS_OK;
	agent->peer_generation = calloc(nodes, sizeof(*agent->peer_generation));
	if (!agent->peer_generation) {
		nopfs_error("no memory for the plans of %" PRIu32 " nodes", nodes);
		return NOPFS_ERR_NOMEM;
	}
	place_primaries(agent);
	status = share_secret(agent, config.secret);
	if (status != NOPFS_OK && status != NOPFS_ERR_FORMAT) {
		team_disconnect_peers(agent);
		return status;
	}
	if (status != NOPFS_OK || peer_plane_create(&config, &agent->peers) != NOPFS_OK ||
	    peer_record_pack(peer_plane_local_record(agent->peers), &packed, &packed_length) !=
	            NOPFS_OK) {
		nopfs_warning("data plane: off on node %" PRIu32
		              ": its tasks read what other nodes keep from the PFS",
		              agent->bootstrap.node);
		team_disconnect_peers(agent);
		free(packed);
		packed = NULL;
	}
	explicit_bzero(config.secret, sizeof(config.secret));
	status = bootstrap_exchange(&agent->bootstrap, packed ? packed : &no_plane_record,
	                            packed ? packed_length : sizeof(no_plane_record),
	                            agent->options.fence_timeout, &records, &lengths);
	free(packed);
	if (status != NOPFS_OK) {
		team_disconnect_peers(agent);
		return status;
	}
	for (uint32_t n = 0; agent->peers && n < nodes; n++) {
		struct peer_record record;

		if (n == agent->bootstrap.node)
			continue;
		if (lengths[n] == sizeof(no_plane_record))
			nopfs_warning("data plane: node %" PRIu32 " has none: what it keeps comes "
			              "from the PFS",
			              n);
		else if (peer_record_unpack(records[n], lengths[n], &record) != NOPFS_OK)
			nopfs_warning("data plane: node %" PRIu32 " published a malformed record: "
			              "what it keeps comes from the PFS",
			              n);
		else if (peer_plane_connect(agent->peers, n, &record) != NOPFS_OK)
			nopfs_warning("data plane: cannot reach the agent of node %" PRIu32
			              ": what it keeps comes from the PFS",
			              n);
		else
			connected++;
	}
	for (uint32_t n = 0; n < nodes; n++)
		free(records[n]);
	free(records);
	free(lengths);
	if (agent->peers)
		nopfs_info("data plane: connected to %" PRIu32 " of %" PRIu32 " other agents",
		           connected, nodes - 1);
	return NOPFS_OK;
}

bool team_read_from_peer(void *arg, nopfs_sample_id sample, void *buffer)
{
	struct agent *agent = arg;
	const struct job *job = &agent->job;
	uint64_t size = nopfs_catalog_size(job->catalog, sample), offset, index;
	unsigned int tier;
	uint32_t node;

	if (!agent->peers ||
	    !nopfs_placement_primary_place(job->placement, sample, &node, &tier, &offset, &index) ||
	    node == job->node || !peer_plane_connected(agent->peers, node) ||
	    atomic_load(&agent->peer_generation[node]) != agent->generation)
		return false; /* (a node with another plan keeps other samples) */
	/* Every node runs the same tier list: tier 0 of a RAM-first list is RAM everywhere. */
	if (tier == 0 && agent->tiers.count && agent->tiers.tier[0].kind == NOPFS_TIER_RAM) {
		nopfs_status status =
		        peer_plane_get(agent->peers, node, index, offset, buffer, size);

		/* Not there yet: ask; its node fetches it for both of us. No keys: ask. */
		if (status != NOPFS_ERR_NOT_FOUND && status != NOPFS_ERR_UNSUPPORTED)
			return status == NOPFS_OK;
	}
	return peer_plane_fetch(agent->peers, node, sample, buffer, size) == NOPFS_OK;
}

void team_disconnect_peers(struct agent *agent)
{
	if (agent->peers)
		peer_plane_destroy(agent->peers);
	agent->peers = NULL;
	free((void *)agent->peer_generation);
	agent->peer_generation = NULL;
}

/* ------------------------------------------------------------------------
 * Another plan (replan.c).
 */

unsigned int team_peer_grace_ms(struct agent *agent)
{
	double rate = slow_rate(agent);
	double ms =
	        PEER_TIMEOUT_MS + (rate > 0 ? (double)agent->job.max_sample_size / rate * 1e3 : 0);

	return ms > PEER_GRACE_MAX_MS ? PEER_GRACE_MAX_MS : (unsigned int)ms;
}

void team_plan_notify(struct agent *agent, uint32_t generation, const char *description)
{
	uint32_t sent;

	if (!agent->peers)
		return;
	sent = peer_plane_notify(agent->peers, AGENT_NOTICE_PLAN, generation, description,
	                         strlen(description) + 1);
	nopfs_info("plan %" PRIu32 ": told %" PRIu32 " of %" PRIu32 " other agents", generation,
	           sent, agent->bootstrap.nodes - 1);
}

void team_expose_plan(struct agent *agent)
{
	struct tier *ram = exposed_ram(agent);
	void *packed = NULL;
	size_t length = 0;

	if (!agent->peers)
		return;
	place_primaries(agent);
	if (peer_plane_expose(agent->peers, ram ? ram->base : NULL, ram ? ram->bytes : 0,
	                      ram ? (void *)ram->state : NULL,
	                      ram ? ram->primary_count : 0) != NOPFS_OK)
		nopfs_warning("data plane: plan %" PRIu32 ": the RAM tier is not exposed: other "
		              "nodes read what it keeps from the PFS",
		              agent->generation);
	peer_plane_set_bounds(agent->peers, agent->job.sampler.count, agent->job.max_sample_size);
	peer_plane_set_generation(agent->peers, agent->generation);
	atomic_store(&agent->peer_generation[agent->bootstrap.node], agent->generation);
	if (peer_record_pack(peer_plane_local_record(agent->peers), &packed, &length) != NOPFS_OK)
		return;
	peer_plane_notify(agent->peers, AGENT_NOTICE_RECORD, agent->generation, packed, length);
	free(packed);
}

void team_apply_record(struct agent *agent, uint32_t node, uint32_t generation, const void *packed,
                       size_t length)
{
	struct peer_record record;

	if (!agent->peers || node >= agent->bootstrap.nodes || node == agent->bootstrap.node)
		return;
	if (peer_record_unpack(packed, length, &record) != NOPFS_OK) {
		nopfs_warning("data plane: node %" PRIu32 " published a malformed record for plan "
		              "%" PRIu32 ": what it keeps comes from the PFS",
		              node, generation);
		atomic_store(&agent->peer_generation[node], PEER_NO_GENERATION);
		return;
	}
	if (peer_plane_connect(agent->peers, node, &record) != NOPFS_OK) {
		nopfs_warning("data plane: cannot reach the agent of node %" PRIu32
		              " for plan %" PRIu32 ": what it keeps comes from the PFS",
		              node, generation);
		atomic_store(&agent->peer_generation[node], PEER_NO_GENERATION);
		return;
	}
	atomic_store(&agent->peer_generation[node], generation);
	nopfs_info("data plane: node %" PRIu32 " is ready for plan %" PRIu32, node, generation);
}
