/*
 * log.h -- logging to stderr for the shells: one line per message with a
 * UTC timestamp, the program tag and the level.  The level is process-wide
 * and set once at start-up, before threads exist.
 */
#ifndef AL_LOG_H
#define AL_LOG_H

typedef enum al_log_level {
    AL_LOG_DEBUG = 0,
    AL_LOG_INFO,
    AL_LOG_WARN,
    AL_LOG_ERROR,
    AL_LOG_QUIET
} al_log_level_t;

/* Sets the tag ("server", "agent") and the lowest level printed. */
void al_log_setup(const char *tag, al_log_level_t level);
/* Parses "debug", "info", "warn", "error" or "quiet"; -1 if unknown. */
int al_log_level_parse(const char *s);
void al_log(al_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define al_debug(...) al_log(AL_LOG_DEBUG, __VA_ARGS__)
#define al_info(...) al_log(AL_LOG_INFO, __VA_ARGS__)
#define al_warn(...) al_log(AL_LOG_WARN, __VA_ARGS__)
#define al_error(...) al_log(AL_LOG_ERROR, __VA_ARGS__)

#endif /* AL_LOG_H */
