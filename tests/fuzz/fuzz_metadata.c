/* libFuzzer target: the input is an Iceberg table metadata JSON document
 * (untrusted: any engine or person may have written it). Parse it; when it
 * parses, serialize it and parse the result again, which must succeed. */
#include "iceberg/model.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ice_table_metadata m = {0};
    hs_error err = {0};
    if (ice_metadata_parse((const char *)data, size, &m, &err) == HS_OK) {
        hs_buf out = {0};
        if (ice_metadata_to_json(&m, &out, &err) == HS_OK) {
            ice_table_metadata again = {0};
            if (ice_metadata_parse((const char *)out.data, out.len, &again, &err) != HS_OK)
                abort(); /* what we write must read back */
            ice_metadata_free(&again);
        }
        hs_buf_free(&out);
    }
    ice_metadata_free(&m);
    return 0;
}
