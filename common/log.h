/*
 * log.h - leveled logging to stderr, as text or as one JSON object a line.
 *
 * Text:  "2026-11-20T10:00:00Z info  message key=value"
 * JSON:  {"ts":"2026-11-20T10:00:00Z","level":"info","msg":"message"}
 * Thread-safe: each line is written with one write(2).
 */
#ifndef GV_LOG_H
#define GV_LOG_H

enum gv_log_level { GV_LOG_DEBUG, GV_LOG_INFO, GV_LOG_WARN, GV_LOG_ERROR };

/* Sets the minimum level and the format (json != 0: JSON lines). */
void gv_log_setup(enum gv_log_level min, int json);

/* Parses "debug|info|warn|error"; returns -1 when unknown. */
int gv_log_parse_level(const char *s);

void gv_log(enum gv_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define gv_debug(...) gv_log(GV_LOG_DEBUG, __VA_ARGS__)
#define gv_info(...)  gv_log(GV_LOG_INFO, __VA_ARGS__)
#define gv_warn(...)  gv_log(GV_LOG_WARN, __VA_ARGS__)
#define gv_error(...) gv_log(GV_LOG_ERROR, __VA_ARGS__)

#endif
