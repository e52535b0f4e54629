/*
 * images.c - the `images` variable (kyverno-semantics.md section 6.5):
 * container image references of an object, parsed as Kyverno parses them
 * (default registry docker.io, default tag latest).
 */
#include "engine/engine_int.h"

#include <ctype.h>
#include <string.h>

#include "common/yaml.h"
#include "common/banned.h"

json_t *image_parse(const char *image)
{
	const char *slash = strchr(image, '/');
	char *full, *at, *colon, *lastslash, *path;
	const char *registry, *name, *rest;
	char *tag = NULL, *digest = NULL;
	json_t *o = json_object();
	bool lower = true;

	if (slash)
		for (const char *p = image; p < slash; p++)
			if (isupper((unsigned char)*p))
				lower = false;
	if (!slash || (!memchr(image, '.', (size_t)(slash - image)) &&
		       !memchr(image, ':', (size_t)(slash - image)) &&
		       strncmp(image, "localhost/", 10) != 0 && lower))
		full = gv_xasprintf("docker.io/%s", image);
	else
		full = gv_xstrdup(image);
	at = strchr(full, '@');
	if (at) {
		digest = gv_xstrdup(at + 1);
		*at = '\0';
	}
	lastslash = strrchr(full, '/');
	colon = strrchr(lastslash ? lastslash : full, ':');
	if (colon) {
		tag = gv_xstrdup(colon + 1);
		*colon = '\0';
	}
	slash = strchr(full, '/');
	registry = full;
	rest = slash ? slash + 1 : "";
	if (slash)
		full[slash - full] = '\0';
	path = gv_xstrdup(rest);
	name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (!digest && !tag)
		tag = gv_xstrdup("latest");
	json_object_set_new(o, "registry", json_string(registry));
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "name", json_string(name));
	if (tag && *tag)
		json_object_set_new(o, "tag", json_string(tag));
	if (digest && *digest)
		json_object_set_new(o, "digest", json_string(digest));
	if (digest && *digest)
		json_object_set_new(o, "reference",
				    json_sprintf("%s/%s@%s", registry, path, digest));
	else
		json_object_set_new(o, "reference",
				    json_sprintf("%s/%s:%s", registry, path, tag ? tag : ""));
	json_object_set_new(o, "referenceWithTag",
			    json_sprintf("%s/%s:%s", registry, path, tag ? tag : ""));
	free(full);
	free(path);
	free(tag);
	free(digest);
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
