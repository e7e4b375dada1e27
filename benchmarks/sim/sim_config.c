/* What-if configurations in JSON (jansson); see sim_config.h for the format. */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "sim_config.h"

#define MAX_RATE_MBPS 1e9 /* 1 PB/s */
#define MAX_SIZE_GB   1e9
#define MAX_SAMPLE_MB 1e9

struct parse {
	const char *origin;
	char where[64]; /* the object being read: "staging", "tiers[1]" */
};

static const char *const top_keys[] = { "name",
	                                "nodes",
	                                "compute_MBps",
	                                "preprocess_MBps",
	                                "network_MBps",
	                                "pfs_MBps",
	                                "pfs_client_limit_MBps",
	                                "staging",
	                                "tiers",
	                                "dataset",
	                                "epochs",
	                                "batch",
	                                "seed",
	                                "drop_last",
	                                "policies",
	                                NULL };
static const char *const top_required[] = { "nodes",   "compute_MBps", "network_MBps", "pfs_MBps",
	                                    "staging", "dataset",      "epochs",       NULL };
static const char *const tier_keys[] = { "name",      "capacity_GB", "threads",
	                                 "read_MBps", "write_MBps",  NULL };
static const char *const tier_required[] = { "capacity_GB", "threads", "read_MBps", NULL };
static const char *const dataset_keys[] = { "name",      "samples",   "mean_MB",
	                                    "stddev_MB", "size_seed", NULL };
static const char *const dataset_required[] = { "samples", "mean_MB", NULL };

static bool listed(const char *const *keys, const char *key)
{
	for (; *keys; keys++)
		if (strcmp(*keys, key) == 0)
			return true;
	return false;
}

/* Unknown keys and missing required keys, each named. */
static nopfs_status check_keys(const struct parse *p, json_t *object, const char *const *keys,
                               const char *const *required)
{
	const char *key;
	json_t *value;

	if (!json_is_object(object)) {
		nopfs_error("config %s: %s must be an object", p->origin, p->where);
		return NOPFS_ERR_FORMAT;
	}
	json_object_foreach(object, key, value)
	{
		char expected[512] = "";

		if (listed(keys, key))
			continue;
		for (const char *const *k = keys; *k; k++) {
			strcat(expected, k == keys ? "" : ", ");
			strcat(expected, *k);
		}
		nopfs_error("config %s: %s: unknown key '%s' (expected: %s)", p->origin, p->where,
		            key, expected);
		return NOPFS_ERR_INVALID;
	}
	for (; *required; required++) {
		if (!json_object_get(object, *required)) {
			nopfs_error("config %s: %s: missing key '%s'", p->origin, p->where,
			            *required);
			return NOPFS_ERR_INVALID;
		}
	}
	return NOPFS_OK;
}

/* A number in [min, max]; absent keys leave *out as it is. */
static nopfs_status get_number(const struct parse *p, json_t *object, const char *key, double min,
                               double max, double *out)
{
	json_t *value = json_object_get(object, key);
	double number;

	if (!value)
		return NOPFS_OK;
	if (!json_is_number(value)) {
		nopfs_error("config %s: %s: '%s' must be a number", p->origin, p->where, key);
		return NOPFS_ERR_INVALID;
	}
	number = json_number_value(value);
	if (!(number >= min && number <= max)) {
		nopfs_error("config %s: %s: '%s' is %g, expected %g .. %g", p->origin, p->where,
		            key, number, min, max);
		return NOPFS_ERR_RANGE;
	}
	*out = number;
	return NOPFS_OK;
}

static nopfs_status get_uint(const struct parse *p, json_t *object, const char *key, uint64_t min,
                             uint64_t max, uint64_t *out)
{
	json_t *value = json_object_get(object, key);
	json_int_t number;

	if (!value)
		return NOPFS_OK;
	if (!json_is_integer(value)) {
		nopfs_error("config %s: %s: '%s' must be an integer", p->origin, p->where, key);
		return NOPFS_ERR_INVALID;
	}
	number = json_integer_value(value);
	if (number < 0 || (uint64_t)number < min || (uint64_t)number > max) {
		nopfs_error("config %s: %s: '%s' is %lld, expected %llu .. %llu", p->origin,
		            p->where, key, (long long)number, (unsigned long long)min,
		            (unsigned long long)max);
		return NOPFS_ERR_RANGE;
	}
	*out = (uint64_t)number;
	return NOPFS_OK;
}

static nopfs_status get_string(const struct parse *p, json_t *object, const char *key, char *out,
                               size_t length)
{
	json_t *value = json_object_get(object, key);

	if (!value)
		return NOPFS_OK;
	if (!json_is_string(value) || json_string_length(value) == 0 ||
	    json_string_length(value) >= length) {
		nopfs_error("config %s: %s: '%s' must be a string of 1 .. %zu characters",
		            p->origin, p->where, key, length - 1);
		return NOPFS_ERR_INVALID;
	}
	memcpy(out, json_string_value(value), json_string_length(value) + 1);
	return NOPFS_OK;
}

/* A rate: one number at @threads, or {"count": MBps, ...}. */
static nopfs_status get_curve(const struct parse *p, json_t *object, const char *key,
                              double threads, struct nopfs_curve *curve)
{
	json_t *value = json_object_get(object, key), *rate;
	const char *count;

	memset(curve, 0, sizeof(*curve));
	if (json_is_number(value) && json_number_value(value) > 0 &&
	    json_number_value(value) <= MAX_RATE_MBPS)
		return nopfs_curve_set(curve, threads, json_number_value(value) * SIM_MB);
	if (!json_is_object(value) || json_object_size(value) == 0 ||
	    json_object_size(value) > NOPFS_CURVE_POINTS)
		goto out_invalid;
	json_object_foreach(value, count, rate)
	{
		char *end;
		double x = strtod(count, &end);

		if (*end != '\0' || !(x > 0) || !json_is_number(rate) ||
		    !(json_number_value(rate) > 0) || json_number_value(rate) > MAX_RATE_MBPS)
			goto out_invalid;
		if (nopfs_curve_set(curve, x, json_number_value(rate) * SIM_MB) != NOPFS_OK)
			goto out_invalid;
	}
	return NOPFS_OK;

out_invalid:
	nopfs_error("config %s: %s: '%s' must be a rate in MB/s above 0, or an object of up to %d "
	            "\"count\": MB/s pairs",
	            p->origin, p->where, key, NOPFS_CURVE_POINTS);
	return NOPFS_ERR_INVALID;
}

/* staging and tiers share the shape {capacity_GB, threads, read_MBps, write_MBps}. */
static nopfs_status get_tier(struct parse *p, json_t *object, struct nopfs_tier_model *tier,
                             char *name, size_t name_length)
{
	double capacity = 0;
	uint64_t threads = 0;
	nopfs_status status;

	status = check_keys(p, object, tier_keys, tier_required);
	if (status == NOPFS_OK && name)
		status = get_string(p, object, "name", name, name_length);
	else if (status == NOPFS_OK && json_object_get(object, "name")) {
		nopfs_error("config %s: %s: unknown key 'name'", p->origin, p->where);
		status = NOPFS_ERR_INVALID;
	}
	if (status == NOPFS_OK)
		status = get_number(p, object, "capacity_GB", 0, MAX_SIZE_GB, &capacity);
	if (status == NOPFS_OK)
		status = get_uint(p, object, "threads", 1, SIM_THREADS_MAX, &threads);
	if (status != NOPFS_OK)
		return status;
	tier->capacity = (uint64_t)llround(capacity * SIM_GB);
	tier->threads = (unsigned int)threads;
	status = get_curve(p, object, "read_MBps", (double)threads, &tier->read);
	if (status == NOPFS_OK)
		status = get_curve(p, object,
		                   json_object_get(object, "write_MBps") ? "write_MBps"
		                                                         : "read_MBps",
		                   (double)threads, &tier->write);
	return status;
}

static nopfs_status get_tiers(struct parse *p, json_t *root, struct sim_system *system)
{
	json_t *tiers = json_object_get(root, "tiers"), *tier;
	unsigned int order[NOPFS_MODEL_TIERS];
	char names[NOPFS_MODEL_TIERS][SIM_TIER_NAME_MAX];
	size_t index;

	if (!tiers)
		return NOPFS_OK;
	if (!json_is_array(tiers) || json_array_size(tiers) > NOPFS_MODEL_TIERS) {
		nopfs_error("config %s: 'tiers' must be an array of up to %d tiers", p->origin,
		            NOPFS_MODEL_TIERS);
		return NOPFS_ERR_INVALID;
	}
	json_array_foreach(tiers, index, tier)
	{
		nopfs_status status;

		snprintf(p->where, sizeof(p->where), "tiers[%zu]", index);
		snprintf(system->tier_name[index], SIM_TIER_NAME_MAX, "tier%u",
		         (unsigned int)index + 1);
		status = get_tier(p, tier, &system->model.tier[index], system->tier_name[index],
		                  SIM_TIER_NAME_MAX);
		if (status != NOPFS_OK)
			return status;
		system->model.tiers++;
	}
	/* Fastest first, as placement expects; names follow their tiers. */
	memcpy(names, system->tier_name, sizeof(names));
	nopfs_model_sort_tiers(&system->model, order);
	for (unsigned int t = 0; t < system->model.tiers; t++)
		memcpy(system->tier_name[t], names[order[t]], SIM_TIER_NAME_MAX);
	return NOPFS_OK;
}

static nopfs_status get_dataset(struct parse *p, json_t *object, struct sim_workload *w)
{
	uint64_t samples = 0, seed = SIM_DEFAULT_SIZESEED;
	double mean = 0, stddev = 0;
	nopfs_status status;

	snprintf(p->where, sizeof(p->where), "dataset");
	status = check_keys(p, object, dataset_keys, dataset_required);
	if (status == NOPFS_OK)
		status = get_string(p, object, "name", w->name, sizeof(w->name));
	if (status == NOPFS_OK)
		status = get_uint(p, object, "samples", 1, UINT32_MAX - 1, &samples);
	if (status == NOPFS_OK)
		status = get_number(p, object, "mean_MB", 1e-6, MAX_SAMPLE_MB, &mean);
	if (status == NOPFS_OK)
		status = get_number(p, object, "stddev_MB", 0, MAX_SAMPLE_MB, &stddev);
	if (status == NOPFS_OK)
		status = get_uint(p, object, "size_seed", 0, UINT32_MAX, &seed);
	w->samples = samples;
	w->mean = mean * SIM_MB;
	w->stddev = stddev * SIM_MB;
	w->size_seed = (uint32_t)seed;
	return status;
}

static nopfs_status get_policies(struct parse *p, json_t *root, uint32_t *mask)
{
	json_t *list = json_object_get(root, "policies"), *item;
	size_t index;

	if (!list)
		return NOPFS_OK;
	if (!json_is_array(list) || json_array_size(list) == 0) {
		nopfs_error("config %s: 'policies' must be a non-empty array of names (%s)",
		            p->origin, sim_policy_keys());
		return NOPFS_ERR_INVALID;
	}
	*mask = 0;
	json_array_foreach(list, index, item)
	{
		uint32_t one;

		if (!json_is_string(item) || !sim_policy_lookup(json_string_value(item), &one)) {
			nopfs_error(
			        "config %s: policies[%zu]: unknown policy %s%s%s (expected one of: "
			        "%s)",
			        p->origin, index, json_is_string(item) ? "'" : "",
			        json_is_string(item) ? json_string_value(item) : "(not a string)",
			        json_is_string(item) ? "'" : "", sim_policy_keys());
			return NOPFS_ERR_INVALID;
		}
		*mask |= one;
	}
	return NOPFS_OK;
}

static nopfs_status get_job(struct parse *p, json_t *root, struct sim_config *c)
{
	struct nopfs_model *m = &c->system.model;
	uint64_t nodes = 0, epochs = 0, batch = 32, seed = 0;
	double compute = 0, preprocess = 0, network = 0, limit = 0;
	json_t *drop_last = json_object_get(root, "drop_last");
	nopfs_status status;

	snprintf(p->where, sizeof(p->where), "top level");
	status = get_string(p, root, "name", c->name, sizeof(c->name));
	if (status == NOPFS_OK)
		status = get_uint(p, root, "nodes", 1, UINT16_MAX - 1, &nodes);
	if (status == NOPFS_OK)
		status = get_uint(p, root, "epochs", 1, UINT16_MAX - 1, &epochs);
	if (status == NOPFS_OK)
		status = get_uint(p, root, "batch", 1, UINT32_MAX, &batch);
	if (status == NOPFS_OK)
		status = get_uint(p, root, "seed", 0, INT64_MAX, &seed);
	if (status == NOPFS_OK)
		status = get_number(p, root, "compute_MBps", 1e-6, MAX_RATE_MBPS, &compute);
	if (status == NOPFS_OK)
		status = get_number(p, root, "preprocess_MBps", 0, MAX_RATE_MBPS, &preprocess);
	if (status == NOPFS_OK)
		status = get_number(p, root, "network_MBps", 1e-6, MAX_RATE_MBPS, &network);
	if (status == NOPFS_OK)
		status = get_number(p, root, "pfs_client_limit_MBps", 0, MAX_RATE_MBPS, &limit);
	if (status == NOPFS_OK && drop_last && !json_is_boolean(drop_last)) {
		nopfs_error("config %s: top level: 'drop_last' must be true or false", p->origin);
		status = NOPFS_ERR_INVALID;
	}
	if (status == NOPFS_OK)
		status = get_curve(p, root, "pfs_MBps", 1, &m->pfs);
	if (status != NOPFS_OK)
		return status;
	c->workload.nodes = (uint32_t)nodes;
	c->workload.epochs = (uint32_t)epochs;
	c->workload.batch = (uint32_t)batch;
	c->workload.seed = seed;
	c->workload.drop_last = drop_last && json_is_true(drop_last);
	m->compute = compute * SIM_MB;
	m->preprocess = preprocess * SIM_MB;
	m->network = network * SIM_MB;
	m->pfs_client_limit = limit * SIM_MB;
	return NOPFS_OK;
}

static nopfs_status parse_root(json_t *root, const char *origin, struct sim_config *out)
{
	struct parse p = { .origin = origin, .where = "top level" };
	struct sim_config c;
	nopfs_status status;

	memset(&c, 0, sizeof(c));
	c.policies = SIM_ALL_POLICIES;
	snprintf(c.name, sizeof(c.name), "%s", origin);
	snprintf(c.workload.name, sizeof(c.workload.name), "dataset");
	c.workload.size_seed = SIM_DEFAULT_SIZESEED;
	status = check_keys(&p, root, top_keys, top_required);
	if (status == NOPFS_OK)
		status = get_job(&p, root, &c);
	if (status == NOPFS_OK) {
		snprintf(p.where, sizeof(p.where), "staging");
		status = get_tier(&p, json_object_get(root, "staging"), &c.system.model.staging,
		                  NULL, 0);
	}
	if (status == NOPFS_OK)
		status = get_tiers(&p, root, &c.system);
	if (status == NOPFS_OK)
		status = get_dataset(&p, json_object_get(root, "dataset"), &c.workload);
	if (status == NOPFS_OK)
		status = get_policies(&p, root, &c.policies);
	if (status == NOPFS_OK)
		status = sim_system_validate(&c.system);
	if (status != NOPFS_OK)
		return status;
	c.policies |= 1u << SIM_PERFECT; /* the lower bound is always shown */
	*out = c;
	return NOPFS_OK;
}

nopfs_status sim_config_parse(const char *text, const char *origin, struct sim_config *config)
{
	json_error_t error;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &error);
	nopfs_status status;

	if (!root) {
		nopfs_error("config %s:%d:%d: %s", origin, error.line, error.column, error.text);
		return NOPFS_ERR_FORMAT;
	}
	status = parse_root(root, origin, config);
	json_decref(root);
	return status;
}

nopfs_status sim_config_load(const char *path, struct sim_config *config)
{
	json_error_t error;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &error);
	nopfs_status status;

	if (!root) {
		nopfs_error("config %s:%d:%d: %s", path, error.line, error.column, error.text);
		return NOPFS_ERR_FORMAT;
	}
	status = parse_root(root, path, config);
	json_decref(root);
	return status;
}
