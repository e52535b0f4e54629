/*
 * images.c - the `images` variable (kyverno-semantics.md section 6.5):
 * container image references of an object, parsed as Kyverno parses them
 * (default registry docker.io, default tag latest) by common/imageref.h.
 */
#include "engine/engine_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/imageref.h"
#include "common/yaml.h"
#include "common/banned.h"

/* The parts of image as Kyverno reads them; *repo: registry/path (new string). */
static void image_parts(const char *image, struct gv_imageref *r, char **repo)
{
	const char *registry;

	gv_imageref_parse_lenient(image, strlen(image), r);
	registry = r->domain ? r->domain : "";
	if (!r->digest && !r->tag)
		r->tag = gv_xstrdup("latest");
	/* no registry (a first component that is no valid domain): the path alone */
	*repo = *registry ? gv_xasprintf("%s/%s", registry, r->path) : gv_xstrdup(r->path);
}

char *image_reference(const char *image)
{
	struct gv_imageref r;
	struct gv_buf b = {0};
	char *repo;

	image_parts(image, &r, &repo);
	gv_buf_adds(&b, repo);
	if (r.digest && *r.digest) {
		gv_buf_addc(&b, '@');
		gv_buf_adds(&b, r.digest);
	} else {
		gv_buf_addc(&b, ':');
		gv_buf_adds(&b, r.tag ? r.tag : "");
	}
	free(repo);
	gv_imageref_release(&r);
	return gv_buf_detach(&b);
}

json_t *image_parse(const char *image)
{
	struct gv_imageref r;
	json_t *o = json_object();
	const char *registry, *name;
	char *repo;

	image_parts(image, &r, &repo);
	registry = r.domain ? r.domain : "";
	name = strrchr(r.path, '/') ? strrchr(r.path, '/') + 1 : r.path;
	json_object_set_new(o, "registry", json_string(registry));
	json_object_set_new(o, "path", json_string(r.path));
	json_object_set_new(o, "name", json_string(name));
	if (r.tag && *r.tag)
		json_object_set_new(o, "tag", json_string(r.tag));
	if (r.digest && *r.digest) {
		json_object_set_new(o, "digest", json_string(r.digest));
		json_object_set_new(o, "reference", json_sprintf("%s@%s", repo, r.digest));
	} else {
		json_object_set_new(o, "reference",
				    json_sprintf("%s:%s", repo, r.tag ? r.tag : ""));
	}
	json_object_set_new(o, "referenceWithTag", json_sprintf("%s:%s", repo, r.tag ? r.tag : ""));
	free(repo);
	gv_imageref_release(&r);
	return o;
}

static void add_containers(json_t *images, const json_t *podspec, const char *base)
{
	static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};

	for (size_t l = 0; l < GV_ARRAY_LEN(lists); l++) {
		const json_t *arr = json_object_get(podspec, lists[l]);
		json_t *m;
		size_t i;
		json_t *c;

		if (!json_array_size(arr))
			continue;
		m = json_object();
		json_array_foreach(arr, i, c)
		{
			const char *name = json_string_value(json_object_get(c, "name"));
			const char *image = json_string_value(json_object_get(c, "image"));
			json_t *info;
			if (!name || !image)
				continue;
			info = image_parse(image);
			json_object_set_new(info, "jsonPointer",
					    json_sprintf("%s/%s/%zu/image", base, lists[l], i));
			json_object_set_new(m, name, info);
		}
		json_object_set_new(images, lists[l], m);
	}
}

json_t *images_extract(const json_t *object)
{
	const char *kind = json_string_value(json_object_get(object, "kind"));
	const json_t *spec = json_object_get(object, "spec");
	json_t *images = json_object();

	if (!kind || !spec) {
		json_decref(images);
		return NULL;
	}
	if (!strcmp(kind, "Pod"))
		add_containers(images, spec, "/spec");
	else if (!strcmp(kind, "CronJob"))
		add_containers(
		    images,
		    json_object_get(
			json_object_get(
			    json_object_get(json_object_get(spec, "jobTemplate"), "spec"),
			    "template"),
			"spec"),
		    "/spec/jobTemplate/spec/template/spec");
	else if (json_object_get(spec, "template"))
		add_containers(images, json_object_get(json_object_get(spec, "template"), "spec"),
			       "/spec/template/spec");
	if (!json_object_size(images)) {
		json_decref(images);
		return NULL;
	}
	return images;
}
