/*
 * cli/cmd_demo.c - `hyperstream demo generate N OUT` (hidden): a deterministic
 * sample table as JSON Lines, for `make run` (scripts/demo.sh).
 *
 *   column     type (schema given to convert)      values
 *   ---------  ----------------------------------  ------------------------------
 *   id         int64 not null                      0 .. N-1
 *   category   string                              one of 8 names (skewed)
 *   price      double                              cents, 0.50 .. 999.99; 1% null
 *   ts         timestamp[us, tz=UTC]               2024-01-01 + id * 37.5 s
 *   tags       list<string>                        0-3 of 6 tags
 *   embedding  fixed_size_list<float not null>[8]  unit-ish random float32 vector
 *
 * Values come from a fixed xorshift64* stream, so every run writes the same
 * bytes; numbers and timestamps are printed with the JSON Lines encoder's
 * formatters, so `parquet cat` of the converted file reproduces the file.
 */
#include "cli.h"

#include "columnar/jsonl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

int cmd_demo(int argc, char **argv)
{
    static const char *categories[] = {"books", "electronics", "garden", "toys",
                                       "grocery", "music", "sports", "beauty"};
    static const char *tags[] = {"new", "sale", "popular", "limited", "eco", "gift"};
    if (argc != 4 || strcmp(argv[1], "generate") != 0)
        return cli_usage_error(NULL, "usage: hyperstream demo generate N OUT.jsonl");
    char *end;
    errno = 0;
    long long n = strtoll(argv[2], &end, 10);
    if (errno || *end || n < 0)
        return cli_usage_error(NULL, "demo generate: N must be a non-negative integer, got '%s'", argv[2]);
    FILE *f = fopen(argv[3], "w");
    if (!f)
        return cli_fail("%s: cannot create: %s", argv[3], strerror(errno));
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    hs_buf line = {0};
    int64_t ts0 = 1704067200LL * 1000000; /* 2024-01-01T00:00:00Z in us */
    int rc = 0;
    for (long long i = 0; i < n && rc == 0; i++) {
        uint64_t r = rng_next(&s);
        /* skewed category: low indexes more likely */
        unsigned cat = (unsigned)((r & 7) & ((r >> 3) & 7));
        hs_buf_reset(&line);
        hs_status st = hs_buf_printf(&line, "{\"id\":%lld,\"category\":\"%s\",\"price\":", i, categories[cat]);
        if (st == HS_OK) {
            if (rng_next(&s) % 100 == 0)
                st = hs_buf_puts(&line, "null");
            else {
                /* printed as `cat` prints a double, so cat output == this file */
                char num[32];
                uint64_t cents = 50 + rng_next(&s) % 99950;
                hs_fmt_double((double)cents / 100.0, num);
                st = hs_buf_puts(&line, num);
            }
        }
        if (st == HS_OK) {
            int64_t us = ts0 + i * 37500000LL;
            hs_field tsf;
            memset(&tsf, 0, sizeof tsf);
            tsf.type = HS_TYPE_TIMESTAMP;
            tsf.unit = HS_UNIT_MICRO;
            tsf.tz = (char *)"UTC";
            st = hs_buf_puts(&line, ",\"ts\":");
            if (st == HS_OK)
                st = hs_json_append_scalar(&tsf, &us, 8, &line);
        }
        if (st == HS_OK)
            st = hs_buf_puts(&line, ",\"tags\":[");
        unsigned nt = (unsigned)(rng_next(&s) % 4), mask = 0;
        for (unsigned k = 0; st == HS_OK && k < nt; k++) {
            unsigned t = (unsigned)(rng_next(&s) % 6);
            if (mask & (1u << t))
                continue;
            st = hs_buf_printf(&line, "%s\"%s\"", mask ? "," : "", tags[t]);
            mask |= 1u << t;
        }
        if (st == HS_OK)
            st = hs_buf_puts(&line, "],\"embedding\":[");
        for (int k = 0; st == HS_OK && k < 8; k++) {
            char num[32];
            float v = (float)((double)(rng_next(&s) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
            hs_fmt_float(v, num);
            st = hs_buf_printf(&line, "%s%s", k ? "," : "", num);
        }
        if (st == HS_OK)
            st = hs_buf_puts(&line, "]}\n");
        if (st != HS_OK)
            rc = cli_fail("out of memory");
        else if (fwrite(line.data, 1, line.len, f) != line.len)
            rc = cli_fail("%s: write failed: %s", argv[3], strerror(errno));
    }
    hs_buf_free(&line);
    if (fclose(f) != 0 && rc == 0)
        rc = cli_fail("%s: write failed: %s", argv[3], strerror(errno));
    return rc;
}
