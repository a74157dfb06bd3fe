/* libFuzzer target: the input is an index registry version (JSON; untrusted:
 * any process with write access to the table may have written it). Parse
 * it; when it parses, index it by data file, look entries up, serialize it
 * and parse the result again, which must succeed and give the same counts. */
#include "index/registry.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ix_registry r = {0};
    hs_error err = {0};
    if (ix_registry_parse("fuzz", (const char *)data, size, &r, &err) == HS_OK) {
        if (ix_registry_build_index(&r, &err) == HS_OK)
            for (int i = 0; i < r.n_entries; i++)
                if (!ix_registry_find_entry(&r, r.entries[i].data_file, r.entries[i].field_id,
                                            r.entries[i].kind))
                    abort(); /* every entry is found by its key */
        hs_buf out = {0};
        if (ix_registry_to_json(&r, &out, &err) == HS_OK) {
            ix_registry again = {0};
            if (ix_registry_parse("again", (const char *)out.data, out.len, &again, &err) != HS_OK ||
                again.n_entries != r.n_entries || again.n_decls != r.n_decls)
                abort(); /* what we write must read back */
            ix_registry_clear(&again);
        }
        hs_buf_free(&out);
    }
    ix_registry_clear(&r);
    return 0;
}
