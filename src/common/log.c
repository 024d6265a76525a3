/* log.c -- one-line log messages on stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *log_tag = "allot";
static al_log_level_t log_min = AL_LOG_INFO;

static const char *const level_names[] = {
    [AL_LOG_DEBUG] = "debug", [AL_LOG_INFO] = "info",   [AL_LOG_WARN] = "warn",
    [AL_LOG_ERROR] = "error", [AL_LOG_QUIET] = "quiet",
};

void
al_log_setup(const char *tag, al_log_level_t level)
{
    log_tag = tag;
    log_min = level;
}

int
al_log_level_parse(const char *s)
{
    for (int i = 0; i <= AL_LOG_QUIET; i++)
        if (strcmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

void
al_log(al_log_level_t level, const char *fmt, ...)
{
    if (level < log_min || level >= AL_LOG_QUIET)
        return;
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char line[1024];
    int n = snprintf(
        line, sizeof line,
        "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ", tm.tm_year + 1900,
        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
        ts.tv_nsec / 1000000, log_tag, level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        /* The va_list is initialised (va_start/va_copy above); clang 14's
         * analyzer reports it when clang-tidy checks several files in one
         * run. */
        /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per line so that lines from threads do not interleave. */
    size_t len = strlen(line);
    if (len + 1 < sizeof line) {
        line[len] = '\n';
        line[len + 1] = '\0';
    }
    fputs(line, stderr);
}
