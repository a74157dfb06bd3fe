/* libFuzzer target: the input is an index registry file (JSON; untrusted:
 * any process with write access to the table may have written it): a
 * format-1 version, a format-2 root, or a format-2 segment.
 *
 * As a version or root: parse it; when it parses, index it by data file,
 * look entries up, serialize it (format 1) and parse the result again,
 * which must succeed and give the same counts.
 * As a segment: parse it; when it parses, compose it after itself (the
 * survivors are exactly its entries) and alone, serialize the composition
 * and parse it again with the same counts. */
#include "index/registry.h"

#include <stdlib.h>
#include <string.h>

static void as_registry(const uint8_t *data, size_t size)
{
    ix_registry r = {0};
    hs_error err = {0};
    if (ix_registry_parse("fuzz", (const char *)data, size, &r, &err) == HS_OK) {
        if (ix_registry_build_index(&r, &err) == HS_OK)
            for (int i = 0; i < r.n_entries; i++)
                if (!ix_registry_find_entry(&r, r.entries[i].data_file, r.entries[i].field_id,
                                            r.entries[i].kind))
                    abort(); /* every entry is found by its key */
        for (int i = 0; i < r.n_segments; i++)
            if (strncmp(r.segments[i].path, "index/registry/", 15) != 0 ||
                strstr(r.segments[i].path, ".."))
                abort(); /* a root never points outside index/registry/ */
        hs_buf out = {0};
        if (ix_registry_to_json(&r, &out, &err) == HS_OK) {
            ix_registry again = {0};
            if (ix_registry_parse("again", (const char *)out.data, out.len, &again, &err) !=
                    HS_OK ||
                again.n_entries != r.n_entries || again.n_decls != r.n_decls)
                abort(); /* what we write must read back */
            ix_registry_clear(&again);
        }
        hs_buf_free(&out);
    }
    ix_registry_clear(&r);
}

static void as_segment(const uint8_t *data, size_t size)
{
    ix_segdata s = {0};
    hs_error err = {0};
    if (ix_segment_parse("fuzz", (const char *)data, size, &s, &err) != HS_OK)
        return;
    ix_segdata two[2] = {s, s}, out = {0};
    if (ix_segments_compose(two, 2, false, &out, &err) == HS_OK) {
        /* the second copy's entries replace the first's by key or outlive
         * them (its tombstones drop the first's): exactly s's entries */
        if (out.n_entries != s.n_entries || out.n_removed > s.n_removed)
            abort();
        /* one segment: its tombstones act on earlier segments, not on it */
        ix_segdata one = {0};
        if (ix_segments_compose(&s, 1, true, &one, &err) == HS_OK &&
            (one.n_entries != s.n_entries || one.n_removed != 0))
            abort();
        ix_segdata_clear(&one);
        hs_buf txt = {0};
        if (ix_segment_to_json(&out, &txt, &err) == HS_OK) {
            ix_segdata again = {0};
            if (ix_segment_parse("again", (const char *)txt.data, txt.len, &again, &err) !=
                    HS_OK ||
                again.n_entries != out.n_entries || again.n_removed != out.n_removed)
                abort();
            ix_segdata_clear(&again);
        }
        hs_buf_free(&txt);
    }
    ix_segdata_clear(&out);
    ix_segdata_clear(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_registry(data, size);
    as_segment(data, size);
    return 0;
}
