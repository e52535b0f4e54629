/*
 * Unit tests for background/audit_queue.c: drop-oldest and reject when
 * full, draining with a timeout, closing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "background/audit_queue.h"

#include "common/banned.h"

static struct view_audit_item *item(const char *name)
{
	struct view_audit_item *it = gv_xcalloc(1, sizeof(*it));

	it->name = gv_xstrdup(name);
	return it;
}

static void test_queue(void **state)
{
	struct audit_queue *q = audit_queue_new(2, AUDIT_QUEUE_DROP_OLDEST);
	struct view_audit_item *out[4];
	struct audit_queue_stats st;
	size_t n;

	(void)state;
	assert_true(audit_queue_push(q, item("a")));
	assert_true(audit_queue_push(q, item("b")));
	assert_true(audit_queue_push(q, item("c"))); /* drops a */
	audit_queue_stats(q, &st);
	assert_int_equal(st.depth, 2);
	assert_int_equal(st.dropped, 1);
	n = audit_queue_drain(q, out, 4, 10);
	assert_int_equal(n, 2);
	assert_string_equal(out[0]->name, "b");
	assert_string_equal(out[1]->name, "c");
	view_audit_item_free(out[0]);
	view_audit_item_free(out[1]);
	assert_int_equal(audit_queue_drain(q, out, 4, 20), 0); /* times out */
	audit_queue_close(q);
	assert_false(audit_queue_push(q, item("d")));
	assert_int_equal(audit_queue_drain(q, out, 4, -1), 0); /* closed: no wait */
	audit_queue_free(q);

	q = audit_queue_new(1, AUDIT_QUEUE_REJECT);
	assert_true(audit_queue_push(q, item("a")));
	assert_false(audit_queue_push(q, item("b")));
	audit_queue_stats(q, &st);
	assert_int_equal(st.rejected, 1);
	assert_int_equal(st.depth, 1);
	audit_queue_free(q); /* frees what is left */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
