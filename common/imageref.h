/*
 * imageref.h - container image references as the distribution/reference
 * grammar reads them ("[domain/]path[:tag][@digest]"), with Docker's
 * default-registry rule. The one parser of image references: the JMESPath
 * image_normalize() function and the `images` variable (engine/), and the
 * registry client (kube/registry.c).
 */
#ifndef GV_COMMON_IMAGEREF_H
#define GV_COMMON_IMAGEREF_H

#include <stdbool.h>
#include <stddef.h>

#include "common/gv.h"

/* A parsed reference. Strings owned (gv_imageref_release). */
struct gv_imageref {
	char *domain; /* "docker.io", "ghcr.io", "127.0.0.1:5000", "[::1]:5000"; NULL when the
			 first component is not a valid domain (the whole name is the path) */
	char *path;   /* "nginx", "library/nginx", "org/app": lowercase components */
	char *tag;    /* "1.25"; NULL when none */
	char *digest; /* "sha256:<64 hex>" (also sha384, sha512); NULL when none */
};

/*
 * Parses s (n bytes). When the first '/'-separated component has no '.',
 * no ':', is not "localhost" and has no uppercase letter (or there is no
 * '/'), "docker.io/" is put in front (Docker's addDefaultRegistry; no
 * "library/" is added: see gv_imageref_docker_hub). Then "@digest" and the
 * ":tag" of the last component are split off and checked: a tag is
 * [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, a digest sha256/sha384/sha512 with
 * that many lowercase hex digits. The name must be at most 255 bytes; its
 * path components are [a-z0-9]+ joined by '.', '_', '__' or '-'s.
 *
 * Errors (GV_EINVAL, messages as Docker's): "repository name must have at
 * least one component" (empty or NUL inside), "invalid reference format",
 * "repository name must not be more than 255 characters", "repository name
 * must be lowercase". out is filled only on GV_OK.
 */
enum gv_code gv_imageref_parse(const char *s, size_t n, struct gv_imageref *out,
			       struct gv_err *err);

/*
 * The reading of the `images` variable (kyverno-semantics.md section 6.5):
 * a reference gv_imageref_parse accepts gives its result, exactly. One it
 * refuses (uppercase in the path, a bad tag or digest, a name longer than
 * 255 bytes, an empty tag after ':') is still split, the way gavel always
 * read the variable: the same default registry rule, digest after the
 * first '@', tag after the last ':' of the last component, domain up to
 * the first '/' (never NULL then), each field "" when the separator is
 * there with nothing after it. Kyverno fails to build the variable for
 * such a reference; gavel keeps its split until a case says how Kyverno's
 * rule then behaves. Never fails; release out.
 */
void gv_imageref_parse_lenient(const char *s, size_t n, struct gv_imageref *out);

/*
 * For a reference on Docker Hub (domain "docker.io" or "index.docker.io"):
 * rewrites domain to "index.docker.io" and a one-component path "x" to
 * "library/x", as go-containerregistry's name.ParseReference does (the
 * names Kyverno reports for registry and repository). Returns true when
 * it was a Docker Hub reference.
 */
bool gv_imageref_docker_hub(struct gv_imageref *r);

void gv_imageref_release(struct gv_imageref *r);

#endif
