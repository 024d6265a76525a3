/*
 * fuzz_units.c -- libFuzzer harness for the CLI's size and duration
 * parsers (al_cli_parse_mem for --mem and quota sizes, al_cli_parse_duration
 * for --time, al_cli_parse_when for --since/--until; src/cli/cli_client.c).
 * Each input is one argument, up to its first NUL.  Checks: a size is 0..2^62
 * bytes, a duration 0..10^9 days in seconds, a point in time 0..9999-12-31 (a
 * day of slack for local time); a refusal leaves the result alone; no
 * conversion overflows (UBSan's float-cast-overflow, in the fuzz build).
 * Corpus: tests/fuzz/corpus/units.
 */
#include "cli_client.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    int64_t bytes = -7;
    if (al_cli_parse_mem(s, &bytes) == 0)
        CHECK(bytes >= 0 && bytes <= INT64_C(1) << 62);
    else
        CHECK(bytes == -7);
    int64_t secs = -7;
    if (al_cli_parse_duration(s, &secs) == 0)
        CHECK(secs >= 0 && secs <= INT64_C(86400000000000) + 1);
    else
        CHECK(secs == -7);
    int64_t when = -7;
    if (al_cli_parse_when(s, INT64_C(1795600000), &when) == 0)
        CHECK(when >= 0 && when <= INT64_C(253402300799) + 86400);
    else
        CHECK(when == -7);
    free(s);
    return 0;
}
