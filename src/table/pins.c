/*
 * table/pins.c - the snapshots that readers in this process are on, so that
 * expiry (maint.c) never deletes files a handle or a scan of this process
 * still reads, however short the expiry age.
 *
 *   holder          pins                                   from .. to
 *   --------------  -------------------------------------  ---------------------------
 *   a table handle  the current snapshot of its metadata   each load (open, refresh,
 *                                                          commit) .. the next, close
 *   a scan          the snapshot it planned                plan .. hs_scan_free
 *   a loading       (a mark: its snapshot is not known     just before a metadata load
 *   handle          yet)                                   .. its pin replaces it
 *
 * A handle's pin is set after its metadata is loaded; a snapshot could stop
 * being current and be expired between the read and the pin.  So expiry
 * (tbl_pins_of) first waits until every load that began before it asked
 * has become a pin, then takes the pins, and commits on exactly the base it
 * loaded before asking (maint.c): a load that begins later reads that base
 * or a newer one, whose current snapshot the expiry keeps.  Loads of any
 * table count (the location is not known before the first load); they take
 * milliseconds.  Readers in other processes are not known here:
 * for them the expiry age (hyperstream.wal.expire-age-ms,
 * history.expire.max-snapshot-age-ms) is the grace period.
 */
#define _GNU_SOURCE 1
#include "table/table_int.h"

#include "base/fork.h"
#include "base/mem.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct pin {
    const void *holder;            /* a handle or a scan */
    char *location;                /* local table directory (owned); NULL while loading */
    int64_t snapshot_id;           /* -1: none */
    int64_t loading_since;         /* wall ms; 0 = not loading */
} pin;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_mu, HS_FORK_RANK_LEAF)
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;   /* a loading mark ended */
static pin *g_pins;
static size_t g_n, g_cap;

static int64_t wall_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* g_mu held; NULL when the holder has no entry and one cannot be made. */
static pin *find(const void *holder, bool make)
{
    for (size_t i = 0; i < g_n; i++)
        if (g_pins[i].holder == holder)
            return &g_pins[i];
    if (!make)
        return NULL;
    if (g_n == g_cap) {
        size_t cap = g_cap ? g_cap * 2 : 16;
        pin *p = hs_realloc(g_pins, cap * sizeof *p);
        if (!p)
            return NULL;
        g_pins = p;
        g_cap = cap;
    }
    pin *p = &g_pins[g_n++];
    memset(p, 0, sizeof *p);
    p->holder = holder;
    p->snapshot_id = -1;
    return p;
}

static void drop_at(size_t i)
{
    hs_free(g_pins[i].location);
    g_pins[i] = g_pins[--g_n];
    if (g_n == 0) {   /* nothing held: no allocation either (leak checks) */
        hs_free(g_pins);
        g_pins = NULL;
        g_cap = 0;
    }
}

void tbl_pin_loading(const void *holder)
{
    pthread_mutex_lock(&g_mu);
    pin *p = find(holder, true);
    if (p)
        p->loading_since = wall_now_ms();
    pthread_mutex_unlock(&g_mu);
}

/* Out of memory leaves the holder without a pin (or with its old one):
 * readers then rely on the expiry age alone, as before pins existed. */
void tbl_pin_set(const void *holder, const ice_table_metadata *m, int64_t snapshot_id)
{
    const char *loc = m && m->location ? tbl_local(m->location) : NULL;
    pthread_mutex_lock(&g_mu);
    pin *p = loc ? find(holder, true) : NULL;
    if (p) {
        if (!p->location || strcmp(p->location, loc) != 0) {
            char *d = hs_strdup(loc);
            if (d) {
                hs_free(p->location);
                p->location = d;
            }
        }
        p->snapshot_id = snapshot_id;
        p->loading_since = 0;
    } else {
        for (size_t i = 0; i < g_n; i++)
            if (g_pins[i].holder == holder)
                g_pins[i].loading_since = 0;
    }
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

void tbl_pin_drop(const void *holder)
{
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_n; i++)
        if (g_pins[i].holder == holder) {
            drop_at(i);
            break;
        }
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

hs_status tbl_pins_of(const char *location, int64_t timeout_ms, int64_t **ids, int *n,
                      hs_error *err)
{
    *ids = NULL;
    *n = 0;
    const char *loc = tbl_local(location);
    size_t ll = strlen(loc);
    while (ll > 1 && loc[ll - 1] == '/')
        ll--;
    int64_t now = wall_now_ms(), until = now + timeout_ms;
    pthread_mutex_lock(&g_mu);
    /* loads that began by now may come back with any snapshot current
     * since they began: wait until they are pins */
    for (;;) {
        bool loading = false;
        for (size_t i = 0; !loading && i < g_n; i++)
            loading = g_pins[i].loading_since && g_pins[i].loading_since <= now;
        if (!loading)
            break;
        int64_t left = until - wall_now_ms();
        if (left <= 0) {
            pthread_mutex_unlock(&g_mu);
            return hs_err_set(err, HS_BUSY, "%s: a reader of this process has been loading the "
                              "table metadata for over %lld ms; expiry waits for it to know which "
                              "snapshot it reads", location, (long long)timeout_ms);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (left > 50 ? 50 : left) / 1000;
        ts.tv_nsec += ((left > 50 ? 50 : left) % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&g_cv, &g_mu, &ts);
    }
    int64_t *v = g_n ? hs_calloc(g_n, sizeof *v) : NULL;
    if (g_n && !v) {
        pthread_mutex_unlock(&g_mu);
        return hs_err_nomem(err, g_n * sizeof *v);
    }
    int k = 0;
    for (size_t i = 0; i < g_n; i++) {
        const pin *p = &g_pins[i];
        if (!p->location || p->snapshot_id < 0)
            continue;
        size_t pl = strlen(p->location);
        while (pl > 1 && p->location[pl - 1] == '/')
            pl--;
        if (pl == ll && memcmp(p->location, loc, ll) == 0)
            v[k++] = p->snapshot_id;
    }
    pthread_mutex_unlock(&g_mu);
    *ids = v;
    *n = k;
    return HS_OK;
}
