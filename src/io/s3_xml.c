/*
 * io/s3_xml.c - decoders of untrusted bytes for the S3 backend: S3's XML
 * answers (ListObjectsV2 pages, <Error> bodies, single elements) and the AWS
 * shared credentials/config files (INI).  Each takes (bytes, len), never
 * reads past len and needs no NUL terminator; tests/fuzz/fuzz_s3.c drives
 * them.
 */
#include "io/s3_int.h"
#include "base/mem.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- decoders ------------------------------------------------------------------ */

/* Finds the next element <name> (exactly: followed by '>' or whitespace or
 * '/') in [p, end); *content and *clen span its text up to the matching
 * </name>.  Elements we read are never nested in themselves.  Self-closing
 * <name/> gives an empty content. */
static bool xml_find(const char *p, const char *end, const char *name, const char **content,
                     size_t *clen, const char **after)
{
    size_t nl = strlen(name);
    while (p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt)
            return false;
        const char *q = lt + 1;
        if ((size_t)(end - q) > nl && memcmp(q, name, nl) == 0 &&
            (q[nl] == '>' || q[nl] == ' ' || q[nl] == '\t' || q[nl] == '\n' || q[nl] == '\r' ||
             q[nl] == '/')) {
            const char *gt = memchr(q + nl, '>', (size_t)(end - (q + nl)));
            if (!gt)
                return false;
            if (gt[-1] == '/') {
                *content = gt + 1;
                *clen = 0;
                *after = gt + 1;
                return true;
            }
            const char *c = gt + 1, *s = c;
            while (s < end) {
                const char *l2 = memchr(s, '<', (size_t)(end - s));
                if (!l2)
                    return false;
                if ((size_t)(end - l2) >= nl + 3 && l2[1] == '/' &&
                    memcmp(l2 + 2, name, nl) == 0 && l2[2 + nl] == '>') {
                    *content = c;
                    *clen = (size_t)(l2 - c);
                    *after = l2 + 3 + nl;
                    return true;
                }
                s = l2 + 1;
            }
            return false;
        }
        p = lt + 1;
    }
    return false;
}

/* Text with the five XML entities and numeric references decoded; invalid
 * references are kept as they are.  Caller frees with hs_free. */
static char *xml_decode(const char *s, size_t n)
{
    char *out = hs_malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '&') {
            out[o++] = s[i++];
            continue;
        }
        const char *semi = memchr(s + i, ';', n - i < 12 ? n - i : 12);
        size_t el = semi ? (size_t)(semi - (s + i)) + 1 : 0;
        static const struct { const char *e; char c; } ents[] = {
            { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' }
        };
        bool done = false;
        for (size_t k = 0; semi && k < 5 && !done; k++)
            if (el == strlen(ents[k].e) && memcmp(s + i, ents[k].e, el) == 0) {
                out[o++] = ents[k].c;
                i += el;
                done = true;
            }
        if (!done && semi && el > 3 && s[i + 1] == '#') {
            bool hex = s[i + 2] == 'x' || s[i + 2] == 'X';
            uint32_t cp = 0;
            bool ok = true;
            for (size_t k = i + 2 + hex; k < i + el - 1; k++) {
                int d = isdigit((unsigned char)s[k]) ? s[k] - '0'
                        : hex && isxdigit((unsigned char)s[k]) ? (tolower((unsigned char)s[k]) - 'a' + 10)
                        : -1;
                if (d < 0 || cp > 0x10FFFF) {
                    ok = false;
                    break;
                }
                cp = cp * (hex ? 16 : 10) + (uint32_t)d;
            }
            /* the UTF-8 form is never longer than the reference "&#N;" */
            if (ok && cp > 0 && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) &&
                el >= (cp < 0x80 ? 4u : cp < 0x800 ? 5u : cp < 0x10000 ? 6u : 7u)) {
                if (cp < 0x80)
                    out[o++] = (char)cp;
                else if (cp < 0x800) {
                    out[o++] = (char)(0xC0 | (cp >> 6));
                    out[o++] = (char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    out[o++] = (char)(0xE0 | (cp >> 12));
                    out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    out[o++] = (char)(0x80 | (cp & 0x3F));
                } else {
                    out[o++] = (char)(0xF0 | (cp >> 18));
                    out[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                    out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    out[o++] = (char)(0x80 | (cp & 0x3F));
                }
                i += el;
                done = true;
            }
        }
        if (!done)
            out[o++] = s[i++];
    }
    out[o] = 0;
    return out;
}

char *s3_xml_text(const char *xml, size_t len, const char *name)
{
    const char *c, *after;
    size_t cl;
    if (!xml || !xml_find(xml, xml + len, name, &c, &cl, &after))
        return NULL;
    return xml_decode(c, cl);
}

bool s3_parse_error(const char *xml, size_t len, char *code, size_t code_cap, char *msg,
                    size_t msg_cap)
{
    if (code_cap)
        code[0] = 0;
    if (msg_cap)
        msg[0] = 0;
    const char *c, *after;
    size_t cl;
    if (!xml || !xml_find(xml, xml + len, "Error", &c, &cl, &after))
        return false;
    char *cs = s3_xml_text(c, cl, "Code");
    char *ms = s3_xml_text(c, cl, "Message");
    if (cs && code_cap)
        s3_copy_str(code, code_cap, cs);
    if (ms && msg_cap)
        s3_copy_str(msg, msg_cap, ms);
    hs_free(cs);
    hs_free(ms);
    return true;
}

void s3_list_page_free(s3_list_page *p)
{
    for (size_t i = 0; i < p->n_keys; i++)
        hs_free(p->keys[i]);
    for (size_t i = 0; i < p->n_prefixes; i++)
        hs_free(p->prefixes[i]);
    hs_free(p->keys);
    hs_free(p->sizes);
    hs_free(p->mtimes_ms);
    hs_free(p->prefixes);
    hs_free(p->next_token);
    memset(p, 0, sizeof *p);
}

int64_t s3_parse_iso8601_ms(const char *s)
{
    /* "2026-12-06T06:22:28.123Z": digits where digits belong, then an
     * optional fraction (milliseconds kept), then Z (S3 always answers UTC) */
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    if (!s || strlen(s) < sizeof shape - 1)
        return -1;
    for (size_t i = 0; i < sizeof shape - 1; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
            return -1;
    int v[6];
    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
    if (v[0] < 1970 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 ||
        v[4] > 59 || v[5] > 60)
        return -1;
    const char *p = s + sizeof shape - 1;
    int64_t ms = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            if (digits < 3)
                ms = ms * 10 + (*p - '0');
        if (digits == 0)
            return -1;
        for (; digits < 3; digits++)
            ms *= 10;
    }
    if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0)
        return -1;
    /* days from the civil date (Howard Hinnant's algorithm): no timegm, no TZ */
    int64_t y = v[0] - (v[1] <= 2), m = v[1];
    int64_t era = y / 400, yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + v[2] - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    return ((days * 24 + v[3]) * 60 + v[4]) * 60000 + (int64_t)v[5] * 1000 + ms;
}

hs_status s3_parse_list(const char *xml, size_t len, s3_list_page *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const char *end = xml + len, *c, *after;
    size_t cl;
    if (!xml || !xml_find(xml, end, "ListBucketResult", &c, &cl, &after))
        return HS_CORRUPT_AT(err, "ListObjectsV2: the answer has no <ListBucketResult>");
    const char *body_end = c + cl;
    size_t kcap = 0, pcap = 0;
    hs_status st = HS_OK;
    /* <Contents> and <CommonPrefixes> elements, in document order */
    for (const char *p = c; st == HS_OK;) {
        const char *ec, *ea;
        size_t ecl;
        if (!xml_find(p, body_end, "Contents", &ec, &ecl, &ea))
            break;
        char *key = s3_xml_text(ec, ecl, "Key");
        char *size = s3_xml_text(ec, ecl, "Size");
        char *lm = s3_xml_text(ec, ecl, "LastModified");
        int64_t mt = s3_parse_iso8601_ms(lm);
        hs_free(lm);
        if (!key) {
            hs_free(size);
            st = HS_CORRUPT_AT(err, "ListObjectsV2: <Contents> without <Key>");
            break;
        }
        if (out->n_keys == kcap) {
            size_t nc = kcap ? kcap * 2 : 16;
            char **nk = hs_realloc(out->keys, nc * sizeof *nk);
            uint64_t *ns = nk ? hs_realloc(out->sizes, nc * sizeof *ns) : NULL;
            int64_t *nm = ns ? hs_realloc(out->mtimes_ms, nc * sizeof *nm) : NULL;
            if (nk)
                out->keys = nk;
            if (ns)
                out->sizes = ns;
            if (nm)
                out->mtimes_ms = nm;
            if (!nk || !ns || !nm) {
                hs_free(key);
                hs_free(size);
                st = hs_err_nomem(err, nc * 8);
                break;
            }
            kcap = nc;
        }
        uint64_t sz = 0;
        if (size) {
            char *e;
            errno = 0;
            unsigned long long x = strtoull(size, &e, 10);
            if (errno || *e || !isdigit((unsigned char)size[0])) {
                hs_free(key);
                hs_free(size);
                st = HS_CORRUPT_AT(err, "ListObjectsV2: bad <Size>");
                break;
            }
            sz = x;
        }
        hs_free(size);
        out->keys[out->n_keys] = key;
        out->sizes[out->n_keys] = sz;
        out->mtimes_ms[out->n_keys] = mt;
        out->n_keys++;
        p = ea;
    }
    for (const char *p = c; st == HS_OK;) {
        const char *ec, *ea;
        size_t ecl;
        if (!xml_find(p, body_end, "CommonPrefixes", &ec, &ecl, &ea))
            break;
        char *pre = s3_xml_text(ec, ecl, "Prefix");
        if (!pre) {
            st = HS_CORRUPT_AT(err, "ListObjectsV2: <CommonPrefixes> without <Prefix>");
            break;
        }
        if (out->n_prefixes == pcap) {
            size_t nc = pcap ? pcap * 2 : 16;
            char **np = hs_realloc(out->prefixes, nc * sizeof *np);
            if (!np) {
                hs_free(pre);
                st = hs_err_nomem(err, nc * 8);
                break;
            }
            out->prefixes = np;
            pcap = nc;
        }
        out->prefixes[out->n_prefixes++] = pre;
        p = ea;
    }
    if (st == HS_OK) {
        char *tr = s3_xml_text(c, cl, "IsTruncated");
        out->truncated = tr && strcmp(tr, "true") == 0;
        hs_free(tr);
        out->next_token = s3_xml_text(c, cl, "NextContinuationToken");
        if (out->truncated && (!out->next_token || !out->next_token[0]))
            st = HS_CORRUPT_AT(err, "ListObjectsV2: truncated page without a "
                               "NextContinuationToken");
    }
    if (st != HS_OK)
        s3_list_page_free(out);
    return st;
}

/* One line of an INI file, trimmed: [begin, end). */
static void trim(const char **b, const char **e)
{
    while (*b < *e && isspace((unsigned char)**b))
        (*b)++;
    while (*e > *b && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

char *s3_ini_get(const char *text, size_t len, const char *profile, bool config_style,
                 const char *key)
{
    if (!text || !profile || !key)
        return NULL;
    const char *p = text, *end = text + len;
    bool in = false;
    char *found = NULL;
    size_t pl = strlen(profile), kl = strlen(key);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *b = p, *e = le;
        p = nl ? nl + 1 : end;
        trim(&b, &e);
        if (b == e || *b == '#' || *b == ';')
            continue;
        if (*b == '[') {
            if (e[-1] != ']' || e - b < 2) {
                in = false;
                continue;
            }
            const char *sb = b + 1, *se = e - 1;
            trim(&sb, &se);
            if (config_style && strcmp(profile, "default") != 0) {
                if (se - sb > 8 && memcmp(sb, "profile", 7) == 0 &&
                    isspace((unsigned char)sb[7])) {
                    sb += 8;
                    trim(&sb, &se);
                } else {
                    in = false;
                    continue;
                }
            }
            in = (size_t)(se - sb) == pl && memcmp(sb, profile, pl) == 0;
            continue;
        }
        if (!in)
            continue;
        const char *eq = memchr(b, '=', (size_t)(e - b));
        if (!eq)
            continue;
        const char *kb = b, *ke = eq, *vb = eq + 1, *ve = e;
        trim(&kb, &ke);
        trim(&vb, &ve);
        if ((size_t)(ke - kb) == kl && strncasecmp(kb, key, kl) == 0) {
            hs_free(found);   /* the last one wins, as in botocore */
            found = hs_strndup(vb, (size_t)(ve - vb));
        }
    }
    return found;
}
