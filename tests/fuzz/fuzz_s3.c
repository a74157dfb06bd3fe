/* libFuzzer target: the S3 backend's decoders of untrusted bytes (io/s3.h).
 * The input is an S3 response body (or an AWS shared credentials/config
 * file): a server, a proxy or a local file may hold anything.  The first byte
 * picks nothing: every decoder runs on every input.  A ListObjectsV2 page that
 * parses must be self-consistent (keys and prefixes are strings, a truncated
 * page has a token). */
#include "base/mem.h"
#include "io/s3.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    s3_list_page pg;
    hs_error err = { 0 };
    if (s3_parse_list(s, size, &pg, &err) == HS_OK) {
        for (size_t i = 0; i < pg.n_keys; i++)
            if (!pg.keys[i] || strlen(pg.keys[i]) > size || pg.mtimes_ms[i] < -1)
                abort();
        for (size_t i = 0; i < pg.n_prefixes; i++)
            if (!pg.prefixes[i] || strlen(pg.prefixes[i]) > size)
                abort();
        if (pg.truncated && (!pg.next_token || !pg.next_token[0]))
            abort();
        s3_list_page_free(&pg);
    }
    char code[32], msg[64];
    if (s3_parse_error(s, size, code, sizeof code, msg, sizeof msg) &&
        (strlen(code) >= sizeof code || strlen(msg) >= sizeof msg))
        abort();
    char *t = s3_xml_text(s, size, "UploadId");
    if (t && strlen(t) > size)
        abort();
    hs_free(t);
    char date[64];
    size_t dn = size < sizeof date - 1 ? size : sizeof date - 1;
    memcpy(date, s, dn);
    date[dn] = 0;
    if (s3_parse_iso8601_ms(date) < -1)
        abort();
    static const char *profiles[] = { "default", "dev" };
    for (int i = 0; i < 2; i++)
        for (int cfg = 0; cfg < 2; cfg++) {
            char *v = s3_ini_get(s, size, profiles[i], cfg, "aws_access_key_id");
            if (v && strlen(v) > size)
                abort();
            hs_free(v);
        }
    return 0;
}
