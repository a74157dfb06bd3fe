#!/bin/sh
# scripts/demo.sh <build dir> - the `make run` demo of the hyperstream CLI.
#
# Generates a 200k-row sample table as JSON Lines (with the CLI's hidden
# `demo generate`), converts it to Parquet with an explicit schema, then shows
# `parquet schema`, `parquet meta` and the first rows through `parquet cat`.
# Needs only the built binary: no Python, no network.  Work files live in a
# temporary directory that is removed on exit (HS_DEMO_KEEP=1 keeps it).
set -eu

BUILD=${1:-build}
HS="$BUILD/hyperstream"
ROWS=${HS_DEMO_ROWS:-200000}
if [ ! -x "$HS" ]; then
    echo "demo: $HS not found; run 'make build' first" >&2
    exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hyperstream-demo.XXXXXX")
if [ "${HS_DEMO_KEEP:-0}" = 1 ]; then
    echo "demo: keeping $WORK"
else
    trap 'rm -rf "$WORK"' EXIT INT TERM
fi

cat > "$WORK/schema.json" <<'JSON'
{"fields": [
  {"name": "id",        "type": "int64", "nullable": false, "field_id": 1},
  {"name": "category",  "type": "string",                   "field_id": 2},
  {"name": "price",     "type": "double",                   "field_id": 3},
  {"name": "ts",        "type": "timestamp[us, tz=UTC]",    "field_id": 4},
  {"name": "tags",      "type": "list<string>",             "field_id": 5},
  {"name": "embedding", "type": "fixed_size_list<float not null>[8]", "field_id": 6}
]}
JSON

step() { printf '\n== %s\n' "$*"; }

step "generate $ROWS rows of JSON Lines"
"$HS" demo generate "$ROWS" "$WORK/sample.jsonl"
head -n 2 "$WORK/sample.jsonl"
echo "... ($(wc -c < "$WORK/sample.jsonl") bytes)"

step "hyperstream parquet convert sample.jsonl sample.parquet --schema schema.json"
"$HS" parquet convert "$WORK/sample.jsonl" "$WORK/sample.parquet" --schema "$WORK/schema.json" \
    --codec zstd --row-group-size 100000

step "hyperstream parquet schema sample.parquet"
"$HS" parquet schema "$WORK/sample.parquet"

step "hyperstream parquet meta sample.parquet"
"$HS" parquet meta "$WORK/sample.parquet"

step "hyperstream parquet cat sample.parquet --limit 5"
"$HS" parquet cat "$WORK/sample.parquet" --limit 5

step "hyperstream parquet cat sample.parquet --columns id,price --limit 3"
"$HS" parquet cat "$WORK/sample.parquet" --columns id,price --limit 3

step "round trip: parquet cat of the whole file reproduces sample.jsonl"
if "$HS" parquet cat "$WORK/sample.parquet" | cmp -s - "$WORK/sample.jsonl"; then
    echo "identical ($ROWS rows)"
else
    echo "demo: cat output differs from the input" >&2
    exit 1
fi

TABLE="$WORK/warehouse/sales"
step "hyperstream table create warehouse/sales --like sample.parquet --partition \"day(ts), category\""
"$HS" table create "$TABLE" --like "$WORK/sample.parquet" --partition "day(ts), category"

step "hyperstream table append warehouse/sales sample.parquet  (an Iceberg v2 table)"
"$HS" table append "$TABLE" "$WORK/sample.parquet"
ls "$TABLE/metadata" | sed 's/^/  metadata\//'
echo "  data/: $(find "$TABLE/data" -name '*.parquet' | wc -l) Parquet files"

step "hyperstream table scan warehouse/sales --filter \"category = 'books' AND price > 990\" --columns id,category,price --limit 5"
"$HS" table scan "$TABLE" --filter "category = 'books' AND price > 990" --columns id,category,price --limit 5

step "hyperstream table index add warehouse/sales price --kind range  (a sidecar per data file)"
"$HS" table index add "$TABLE" price --kind range

step "hyperstream table scan warehouse/sales --filter \"price BETWEEN 500 AND 500.5\" --columns id,price --limit 5 --stats"
"$HS" table scan "$TABLE" --filter "price BETWEEN 500 AND 500.5" --columns id,price --limit 5 --stats

step "hyperstream table index add warehouse/sales embedding --kind hnsw_tq8"
"$HS" table index add "$TABLE" embedding --kind hnsw_tq8

step "hyperstream table search warehouse/sales --column embedding --query '[0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]' --k 3 --filter \"category = 'books'\" --columns id,category"
"$HS" table search "$TABLE" --column embedding --query '[0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]' --k 3 \
    --filter "category = 'books'" --columns id,category

step "hyperstream table delete warehouse/sales --filter \"category = 'books'\""
"$HS" table delete "$TABLE" --filter "category = 'books'"

step "hyperstream table snapshots warehouse/sales"
"$HS" table snapshots "$TABLE"
