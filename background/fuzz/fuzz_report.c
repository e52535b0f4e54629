/*
 * fuzz_report.c - PolicyReport merging (background/report.h) with objects
 * as read from the cluster: report_merge() and report_plan() of a model
 * holding a few results against fuzzed `current` objects, in both layouts
 * and with small chunks; report_load() and report_flush() against a fake
 * API server that answers lists with the same objects and a 409 on the
 * first write (so the conflict path re-reads and merges); report names
 * (report_parse_name / report_chunk_name / report_group_label).
 *
 * Checks: report_parse_name() inverts report_chunk_name(); every object
 * report_merge() and report_render_all() produce has a summary counting its
 * results, and at most chunk_results of them.
 *
 * Input: one flags byte (bit 0: split layout; bits 1-2: chunk size 1..4;
 * bit 3: also upsert admission results) then the JSON of the current
 * objects: an array of (Cluster)PolicyReports, or a list {"items": [...]}.
 * Seeds: reports rendered by build/fuzz/seeds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "background/report.h"
#include "common/fuzz/fuzz.h"
#include "kube/tests/transport.h"

#include "common/banned.h"

struct fake_server {
	const json_t *items; /* borrowed */
	int writes;
};

static void check_objects(const json_t *objs, size_t chunk_results)
{
	const json_t *o;
	size_t i;

	json_array_foreach(objs, i, o)
	{
		const json_t *sum = json_object_get(o, "summary");
		size_t n = json_array_size(json_object_get(o, "results")), total = 0;
		const char *keys[] = {"pass", "fail", "warn", "error", "skip"};
		const char *name =
		    json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
		char *base = NULL;
		size_t idx;

		for (size_t k = 0; k < GV_ARRAY_LEN(keys); k++)
			total += (size_t)json_integer_value(json_object_get(sum, keys[k]));
		if (total != n || n > chunk_results || !name ||
		    !report_parse_name(name, &base, &idx)) {
			char *dump = json_dumps(o, JSON_COMPACT);

			fprintf(stderr, "bad report object (%zu results, summary %zu): %s\n", n,
				total, dump);
			abort();
		}
		free(base);
	}
}

static enum gv_code fake_request(void *ud, const char *method, const char *path, const json_t *body,
				 json_t **out, struct kube_status *st, struct gv_err *err)
{
	struct fake_server *api = ud;

	if (!strcmp(method, "GET")) {
		if (!strchr(path, '?')) {
			st->http = 404;
			return gv_err_set(err, GV_ENET, "not found");
		}
		*out = json_pack("{s:O}", "items", api->items);
		if (!strstr(path, "&continue="))
			json_object_set_new(*out, "metadata", json_pack("{s:s}", "continue", "c"));
		st->http = 200;
		return GV_OK;
	}
	if (api->writes++ == 0) {
		st->http = 409;
		return gv_err_set(err, GV_ENET, "conflict");
	}
	st->http = 200;
	if (body && out && strcmp(method, "DELETE")) {
		*out = json_deep_copy(body);
		json_object_set_new(json_object_get(*out, "metadata"), "resourceVersion",
				    json_string("2"));
	}
	return GV_OK;
}

static void fill(struct report_set *rs, bool admission)
{
	struct report_resource pods[] = {{"v1", "Pod", "ns1", "a", "uid-a"},
					 {"v1", "Pod", "ns1", "b", "uid-b"},
					 {"v1", "Namespace", NULL, "ns1", "uid-ns"}};
	struct report_entry e[2] = {{.rule = "r1",
				     .result = ENGINE_FAIL,
				     .message = "m",
				     .severity = "high",
				     .category = "c",
				     .scored = true,
				     .seconds = 100,
				     .process = REPORT_BACKGROUND_SCAN},
				    {.rule = "r2",
				     .result = ENGINE_PASS,
				     .scored = true,
				     .seconds = 100,
				     .process = REPORT_BACKGROUND_SCAN}};

	for (size_t i = 0; i < GV_ARRAY_LEN(pods); i++) {
		report_replace(rs, &pods[i], "p", e, 2, NULL);
		report_replace(rs, &pods[i], "ns1/q", e + 1, 1, NULL);
	}
	if (admission) {
		e[0].policy = "p";
		e[0].process = REPORT_ADMISSION_REVIEW;
		e[0].seconds = 200;
		report_upsert(rs, &pods[0], e, 1, NULL);
	}
}

static void merge_group(struct report_set *rs, const char *ns, const char *policy, bool split,
			const json_t *items, size_t chunk_results)
{
	char *base = report_base_name(split, ns, policy);
	json_t *desired = NULL;
	struct report_op *ops = NULL;
	size_t n = 0;

	if (report_merge(rs, ns, base, items, &desired, NULL) == GV_OK)
		check_objects(desired, chunk_results);
	json_decref(desired);
	if (report_plan(rs, ns, base, &ops, &n, NULL) == GV_OK)
		report_ops_free(ops, n);
	free(base);
}

static void check_names(const json_t *items)
{
	const json_t *o;
	size_t i;

	json_array_foreach(items, i, o)
	{
		const char *name =
		    json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
		char *base = NULL, *again, *label;
		size_t idx;

		if (!name || !report_parse_name(name, &base, &idx))
			continue;
		again = report_chunk_name(base, idx);
		if (strcmp(again, name)) {
			fprintf(stderr, "report_parse_name(%s) = (%s, %zu) -> %s\n", name, base,
				idx, again);
			abort();
		}
		label = report_group_label(base);
		free(label);
		free(again);
		free(base);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report_options opt = {0};
	struct report_set *rs;
	struct fake_server fake = {0};
	struct report_api api = {0};
	struct fake_api fa;
	json_t *doc, *items, *all;
	bool split, admission;

	fuzz_init();
	if (size < 1)
		return 0;
	split = data[0] & 1;
	admission = data[0] & 8;
	opt.split = split;
	opt.chunk_results = (size_t)((data[0] >> 1) & 3) + 1;
	doc = json_loadb((const char *)data + 1, size - 1, 0, NULL);
	if (!doc)
		return 0;
	items = json_is_array(doc) ? json_incref(doc) : json_incref(json_object_get(doc, "items"));
	if (!json_is_array(items)) {
		json_decref(items);
		items = json_array();
	}
	check_names(items);

	rs = report_set_new(&opt);
	fill(rs, admission);
	merge_group(rs, "ns1", "p", split, items, opt.chunk_results);
	merge_group(rs, "", "p", split, items, opt.chunk_results);
	merge_group(rs, "ns1", "ns1/q", split, items, opt.chunk_results);
	report_delete_object(rs, "ns1", "uid-b");
	report_delete_rule(rs, "p", "r2");
	merge_group(rs, "ns1", "p", split, items, opt.chunk_results);
	all = report_render_all(rs);
	check_objects(all, opt.chunk_results);
	json_decref(all);
	report_set_free(rs);

	/* The same objects read at start-up and while flushing. */
	rs = report_set_new(&opt);
	fake.items = items;
	fa = (struct fake_api){.request = fake_request, .ud = &fake};
	api.client = fake_api_client(&fa);
	report_load(rs, &api, NULL, NULL);
	fill(rs, admission);
	report_flush(rs, &api, NULL, NULL);
	report_flush(rs, &api, NULL, NULL);
	kube_client_free(api.client);
	all = report_render_all(rs);
	check_objects(all, opt.chunk_results);
	json_decref(all);
	report_set_free(rs);

	json_decref(items);
	json_decref(doc);
	return 0;
}
