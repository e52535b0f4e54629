#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/banned.h"

static enum gv_log_level min_level = GV_LOG_INFO;
static int json_lines;

static const char *const names[] = {"debug", "info", "warn", "error"};

void gv_log_setup(enum gv_log_level min, int json)
{
	min_level = min;
	json_lines = json;
}

int gv_log_parse_level(const char *s)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(names); i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

void gv_log(enum gv_log_level lvl, const char *fmt, ...)
{
	struct gv_buf msg = {0}, line = {0};
	char ts[32];
	struct tm tm;
	time_t now;
	va_list ap;

	if (lvl < min_level)
		return;
	now = time(NULL);
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	va_start(ap, fmt);
	gv_buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	if (json_lines) {
		json_t *o = json_pack("{s:s,s:s,s:s}", "ts", ts, "level", names[lvl], "msg",
				      gv_buf_str(&msg));
		char *s = json_dumps(o, JSON_COMPACT);
		gv_buf_adds(&line, s);
		free(s);
		json_decref(o);
	} else {
		gv_buf_addf(&line, "%s %-5s %s", ts, names[lvl], gv_buf_str(&msg));
	}
	gv_buf_addc(&line, '\n');
	if (write(STDERR_FILENO, line.data, line.len) < 0) {
		/* nothing sensible to do when stderr is gone */
	}
	gv_buf_release(&msg);
	gv_buf_release(&line);
}
