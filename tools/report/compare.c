/* nopfs-report --compare: two job reports side by side. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/units.h"
#include "report/report.h"
#include "tool.h"

static const char *const sources[] = { "staging", "ram", "ssd", "peer", "pfs" };
static const char *const source_titles[] = { "share from staging", "share from node RAM",
	                                     "share from node SSD", "share from other nodes",
	                                     "share from the PFS" };

/* A figure of one side; NAN when that side does not have it. */
static double number(const json_t *report, const char *path)
{
	const json_t *value = report;
	char key[64];

	while (value && *path) {
		size_t length = strcspn(path, ".");

		if (length >= sizeof(key))
			return NAN;
		memcpy(key, path, length);
		key[length] = '\0';
		value = json_object_get(value, key);
		path += length + (path[length] == '.');
	}
	return json_is_number(value) ? json_number_value(value) : NAN;
}

/* The figures compared, for one side. */
struct side {
	double nodes, samples, epochs, dataset_bytes, pfs_bytes, vs_dataset, vs_naive;
	double delivered, delivered_bytes, share[5];
	double stall_requests, stall_seconds, stall_p50, stall_p99, stall_max, problems;
};

static void read_side(const json_t *r, struct side *s)
{
	const json_t *problems = json_object_get(r, "problems");

	s->nodes = number(r, "nodes_expected");
	s->samples = number(r, "samples");
	s->epochs = number(r, "epochs");
	s->dataset_bytes = number(r, "dataset_bytes");
	s->pfs_bytes = number(r, "pfs_bytes");
	s->vs_dataset = number(r, "vs_dataset");
	s->vs_naive = number(r, "vs_naive");
	s->delivered = number(r, "delivered_total.samples");
	s->delivered_bytes = number(r, "delivered_total.bytes");
	for (int i = 0; i < 5; i++) {
		char path[64];

		snprintf(path, sizeof(path), "delivered.%s.samples", sources[i]);
		s->share[i] = s->delivered > 0 ? 100.0 * number(r, path) / s->delivered : NAN;
	}
	s->stall_requests = number(r, "stall.requests");
	s->stall_seconds = number(r, "stall.seconds");
	s->stall_p50 = number(r, "stall.p50_seconds");
	s->stall_p99 = number(r, "stall.p99_seconds");
	s->stall_max = number(r, "stall.max_seconds");
	s->problems = json_is_array(problems) ? (double)json_array_size(problems) : NAN;
}

/* The same job by a plain loader: the dataset from the PFS every epoch. */
static void naive_side(const struct side *a, struct side *s)
{
	*s = (struct side){ .nodes = a->nodes,
		            .samples = a->samples,
		            .epochs = a->epochs,
		            .dataset_bytes = a->dataset_bytes,
		            .pfs_bytes = a->epochs * a->dataset_bytes,
		            .vs_dataset = a->epochs,
		            .vs_naive = 1,
		            .delivered = a->delivered,
		            .delivered_bytes = a->delivered_bytes,
		            .stall_requests = NAN,
		            .stall_seconds = NAN,
		            .stall_p50 = NAN,
		            .stall_p99 = NAN,
		            .stall_max = NAN,
		            .problems = NAN };
	for (int i = 0; i < 5; i++)
		s->share[i] = i == 4 ? 100 : 0;
}

enum unit { PLAIN, BYTES, RATIO, PERCENT, SECONDS };

static void cell(char *text, size_t size, double value, enum unit unit)
{
	if (isnan(value)) {
		snprintf(text, size, "-");
		return;
	}
	switch (unit) {
	case BYTES:
		nopfs_format_size((uint64_t)value, text, size);
		break;
	case RATIO:
		snprintf(text, size, "%.2f x", value);
		break;
	case PERCENT:
		snprintf(text, size, "%.1f%%", value);
		break;
	case SECONDS:
		snprintf(text, size, "%.3f s", value);
		break;
	default:
		snprintf(text, size, "%.0f", value);
	}
}

static void row(FILE *out, const char *title, double a, double b, enum unit unit)
{
	char left[32], right[32], ratio[32];

	cell(left, sizeof(left), a, unit);
	cell(right, sizeof(right), b, unit);
	if (isnan(a) || isnan(b) || unit == PERCENT)
		snprintf(ratio, sizeof(ratio), isnan(a) || isnan(b) ? "-" : "%+.1f pt", b - a);
	else if (a == 0)
		snprintf(ratio, sizeof(ratio), b == 0 ? "1.00" : "-");
	else
		snprintf(ratio, sizeof(ratio), "%.2f", b / a);
	fprintf(out, "%-26s %16s %16s %10s\n", title, left, right, ratio);
}

int report_compare(const json_t *a, const char *a_name, const json_t *b, const char *b_name,
                   FILE *out)
{
	struct side x, y;

	read_side(a, &x);
	if (b)
		read_side(b, &y);
	else
		naive_side(&x, &y);
	if (isnan(x.pfs_bytes) || isnan(y.pfs_bytes) || isnan(x.delivered) || isnan(y.delivered)) {
		fprintf(stderr, "nopfs-report: --compare: %s: not a job report\n",
		        isnan(x.pfs_bytes) || isnan(x.delivered) ? a_name : b_name);
		return 1;
	}
	fprintf(out, "A: %s (job %s)\nB: %s", a_name,
	        json_string_value(json_object_get(a, "job_id")) ?: "?", b_name);
	if (b)
		fprintf(out, " (job %s)\n", json_string_value(json_object_get(b, "job_id")) ?: "?");
	else
		fprintf(out, " (computed from A: a plain loader reads the dataset every epoch)\n");
	if (b && (x.samples != y.samples || x.dataset_bytes != y.dataset_bytes))
		fprintf(out, "note: the two jobs read different datasets\n");
	fprintf(out, "%-26s %16s %16s %10s\n", "", "A", "B", "B / A");
	row(out, "nodes", x.nodes, y.nodes, PLAIN);
	row(out, "samples", x.samples, y.samples, PLAIN);
	row(out, "epochs", x.epochs, y.epochs, PLAIN);
	row(out, "dataset", x.dataset_bytes, y.dataset_bytes, BYTES);
	row(out, "PFS read", x.pfs_bytes, y.pfs_bytes, BYTES);
	row(out, "PFS read / dataset", x.vs_dataset, y.vs_dataset, RATIO);
	row(out, "PFS read / naive loader", x.vs_naive, y.vs_naive, RATIO);
	row(out, "samples delivered", x.delivered, y.delivered, PLAIN);
	row(out, "bytes delivered", x.delivered_bytes, y.delivered_bytes, BYTES);
	for (int i = 0; i < 5; i++)
		row(out, source_titles[i], x.share[i], y.share[i], PERCENT);
	row(out, "requests that waited", x.stall_requests, y.stall_requests, PLAIN);
	row(out, "stall, in all", x.stall_seconds, y.stall_seconds, SECONDS);
	row(out, "stall p50", x.stall_p50, y.stall_p50, SECONDS);
	row(out, "stall p99", x.stall_p99, y.stall_p99, SECONDS);
	row(out, "stall, longest", x.stall_max, y.stall_max, SECONDS);
	row(out, "problems", x.problems, y.problems, PLAIN);
	return ferror(out) ? 1 : 0;
}
