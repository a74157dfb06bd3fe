/*
 * tests/c/expr_oom.h - the out-of-memory loop of the expression tests
 * (SQLite's do_faultsim_test, one allocation at a time): binds the scalar
 * expression `sql` over batch b's schema and evaluates it on b with the
 * nth allocation failing, for n = 1, 2, ... until a run succeeds.  Every
 * failing run must end in HS_OK or HS_NOMEM (never another error, a crash
 * or, under ASan / LEAK_START, a leak).  Returns true when some run got
 * through within max_steps allocations (callers CHECK it: a loop that never
 * succeeds tests nothing).
 */
#ifndef HS_TEST_EXPR_OOM_H
#define HS_TEST_EXPR_OOM_H

#include "base/mem.h"
#include "columnar/column.h"
#include "expr/expr.h"
#include "harness.h"

#include <stdbool.h>
#include <stdint.h>

static inline bool expr_oom_loop(const char *sql, hs_batch *b, int64_t max_steps)
{
    for (int64_t nth = 1; nth < max_steps; nth++) {
        ex_expr *e = NULL;
        hs_column *out = NULL;
        hs_error err = {0};
        bool ok = false;
        hs_mem_fail_after(nth);
        hs_status st = ex_parse_scalar(sql, &b->schema, &e, &err);
        if (st == HS_OK) {
            st = ex_eval(e, b, &out, &err);
            if (st == HS_OK) {
                ok = true;
                hs_col_free(out);
            }
            ex_free(e);
        }
        hs_mem_fail_after(0);
        CHECK(st == HS_OK || st == HS_NOMEM);
        if (st != HS_OK && st != HS_NOMEM)
            fprintf(stderr, "  %s (allocation %lld failing): %s\n", sql, (long long)nth, err.msg);
        if (ok)
            return true;
    }
    return false;
}

#endif
