/*
 * fuzz.h - helpers shared by gavel's libFuzzer targets (<module>/fuzz/fuzz_*.c).
 *
 * Each target is one file defining LLVMFuzzerTestOneInput(); `make fuzz`
 * builds them with clang -fsanitize=fuzzer,address,undefined against the
 * library sources compiled again with -fsanitize=fuzzer-no-link (build/fuzz/)
 * and runs each for FUZZ_SECONDS (common/fuzz/run.sh). Seed corpora are made
 * at run time by build/fuzz/seeds (common/fuzz/seeds.c) from the golden cases,
 * the samples and ../shared/conformance; nothing third-party is copied into
 * the tree.
 *
 * Input conventions, so that seeds and reproducers stay readable:
 *   - a target that needs two inputs (pattern + resource, expression +
 *     document) splits its input at the first NUL byte (fuzz_split());
 *   - strings are NUL-terminated copies of the input (fuzz_str()), cut at
 *     the first NUL.
 *
 * A target must not leak, must not keep state that changes the outcome of a
 * later input (libFuzzer replays a crash from a single input), and must not
 * touch the network or write files.
 */
#ifndef GV_COMMON_FUZZ_H
#define GV_COMMON_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/gv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Process-wide set-up, once (jansson allocator and hash seed). */
static inline void fuzz_init(void)
{
	static int done;

	if (!done) {
		gv_init();
		done = 1;
	}
}

/* A NUL-terminated copy of data[0..size), cut at the first NUL. Caller frees. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	return gv_xstrndup((const char *)data, size);
}

/*
 * Splits data at the first NUL byte into a (before) and b (after; empty when
 * there is no NUL). Pointers borrow data.
 */
static inline void fuzz_split(const uint8_t *data, size_t size, const char **a, size_t *alen,
			      const char **b, size_t *blen)
{
	const uint8_t *z = size ? memchr(data, 0, size) : NULL;

	*a = (const char *)data;
	if (!z) {
		*alen = size;
		*b = "";
		*blen = 0;
		return;
	}
	*alen = (size_t)(z - data);
	*b = (const char *)z + 1;
	*blen = size - *alen - 1;
}

#endif
