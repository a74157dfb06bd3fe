/*
 * table/rtfilter.h - runtime filters handed to a running scan (the probe
 * side of a hash join, exec/join.c): "rows whose column `col` is NULL or
 * not in this key set may be dropped".  A scan applies them while reading
 * files, on the columns read first: before its exact filter while a filter
 * has dropped at least half of the rows it checked (the exact filter then
 * runs on the rows it keeps only, so its errors, as a division by zero, can
 * only come from those rows, as with files a filter prunes), else right
 * after it.  So a scan with a runtime filter reads the key column first
 * and the other output columns only for the rows that pass: the late
 * materialization of table/scan.c.  Dropping is optional: files already read (or being read)
 * when a filter arrives keep their rows, so a filter must only ever remove
 * rows the consumer would drop anyway.
 *
 * A filter that removes under a tenth of the rows it has seen after
 * TBL_RTF_PROBE rows turns itself off (it would only cost time).  Filters
 * are added by the thread driving the scan while the scan's read-ahead
 * jobs run: a slot is filled, then the count published (release); a job
 * takes the count once when it starts (acquire).
 */
#ifndef HS_TABLE_RTFILTER_H
#define HS_TABLE_RTFILTER_H

#include "base/keyfilter.h"
#include "hyperstream/table.h"

#include <stdatomic.h>

#define TBL_MAX_RTF 8
#define TBL_RTF_PROBE ((int64_t)1 << 20)

typedef struct tbl_rtfilter {
    hs_keyfilter *kf;          /* owned by the scan */
    int col;                   /* output column (INT32 or INT64) */
    _Atomic int64_t rows_in;   /* rows it was applied to */
    _Atomic int64_t rows_out;  /* ... and kept */
    atomic_bool off;
} tbl_rtfilter;

/* Adds a filter on output column col (kf taken, also when it is not used:
 * a column that is not INT32/INT64, or TBL_MAX_RTF filters already).
 * Returns whether the scan took it into use. */
bool tbl_scan_add_rtfilter(hs_scan *s, int col, hs_keyfilter *kf);
/* The filters added so far (*out borrowed from the scan). */
int tbl_scan_rtfilters(const hs_scan *s, const tbl_rtfilter **out);
/* The rows the scan will return when that is known before reading (no
 * filter, no delete files, no append-stream tail: the planned files'
 * record counts), else -1. */
int64_t tbl_scan_exact_rows(const hs_scan *s);
/* count(*) of the scan's rows from the index bitmaps' cardinalities less
 * the position-deleted rows, without reading data pages, before the scan
 * is read: every file's index decides the whole filter exactly; *n = -1
 * otherwise (nothing read; the scan then runs as usual). */
HS_MUST_USE hs_status tbl_scan_index_count(hs_scan *s, int64_t *n, hs_error *err);
/* At most the rows the scan will return (the planned files' record
 * counts; -1 with an append-stream tail). */
int64_t tbl_scan_max_rows(const hs_scan *s);

#endif
