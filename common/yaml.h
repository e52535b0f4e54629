/*
 * yaml.h - YAML (and JSON) documents to jansson values, keeping source
 * positions for error messages.
 *
 * Scalars are resolved as Kubernetes tooling resolves them (YAML 1.1 core as
 * in sigs.k8s.io/yaml): unquoted null/~/empty -> null; true/false/yes/no/on/off
 * (and y/n) -> bool; decimal, 0x hex, 0o/leading-0 octal integers -> integer;
 * decimal/exponent floats -> real, an integral real becoming an integer (the
 * YAML -> JSON -> Kubernetes round trip does the same); quoted and block
 * scalars -> string. Anchors and aliases are expanded; merge keys are not.
 */
#ifndef GV_YAML_H
#define GV_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"

/*
 * Source map of one document: for each node, its JSON pointer and the
 * line:column (1-based) where it starts in the file.
 */
struct gv_srcmap;

/* A loaded document: the value (owned) and its source map (owned, may be NULL). */
struct gv_doc {
	json_t *value;
	struct gv_srcmap *map;
	int line; /* line where the document starts */
};

struct gv_docs {
	struct gv_doc *v; /* owned array */
	size_t n;
	char *file; /* owned copy of the file name used in errors */
	bool reals; /* every number in the values is a json_real (gv_yaml_load_reals) */
};

/*
 * Parses every document of buf (len bytes) into docs. Empty documents
 * (null) are left out. `file` names the source in errors ("<stdin>" etc.).
 * Returns GV_OK, or GV_EINVAL with err holding "file:line:col" and the
 * parser's reason; docs then holds the documents that came before the error.
 * Release with gv_docs_release().
 */
enum gv_code gv_yaml_load(const char *buf, size_t len, const char *file, struct gv_docs *docs,
			  struct gv_err *err);

/*
 * gv_yaml_load with a bound on the source map: only nodes at most
 * map_depth levels below a document root get a position (0 = the root
 * only; -1 = every node, as gv_yaml_load). Large resource files need only
 * the document and list-item positions, and skipping the rest makes
 * loading several times cheaper.
 */
enum gv_code gv_yaml_load_ex(const char *buf, size_t len, const char *file, int map_depth,
			     struct gv_docs *docs, struct gv_err *err);

/*
 * gv_yaml_load_ex with every number a json_real: where gv_yaml_load_ex
 * gives the integer i, the real (double)i (mapping keys keep their text).
 * Resources are evaluated that way (Kyverno reads manifests through JSON
 * into float64); building the reals while loading spares a second pass
 * over every document. docs->reals is set.
 */
enum gv_code gv_yaml_load_reals(const char *buf, size_t len, const char *file, int map_depth,
				struct gv_docs *docs, struct gv_err *err);

/* Reads a file ("-" = stdin) and loads it with gv_yaml_load. */
enum gv_code gv_yaml_load_file(const char *path, struct gv_docs *docs, struct gv_err *err);

void gv_docs_release(struct gv_docs *docs);

/*
 * Finds the position of a JSON pointer in a document: exact match or the
 * nearest enclosing node. Returns 0 and leaves line and col alone when the map
 * is NULL or empty.
 */
int gv_srcmap_find(const struct gv_srcmap *map, const char *pointer, int *line, int *col);

/* Fills err->file/line/col from the document's position of err->pointer. */
void gv_err_locate(struct gv_err *err, const char *file, const struct gv_srcmap *map);

/* Appends a JSON pointer segment to buf, escaping '~' and '/' (RFC 6901). */
void gv_pointer_add(struct gv_buf *buf, const char *segment);

/* Writes v as YAML (block style, 2-space indent, keys in order) to out. */
void gv_yaml_dump(const json_t *v, struct gv_buf *out);

/*
 * Appends the n bytes of s as gv_yaml_dump() writes a string scalar (plain,
 * single- or double-quoted), without a line break: for output written piece
 * by piece that must equal gv_yaml_dump()'s.
 */
void gv_yaml_dump_string(const char *s, size_t n, struct gv_buf *out);

#endif
