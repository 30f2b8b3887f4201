
/*
 * ngx_http_goblin_module: goblin_metrics, the Prometheus text exposition
 * (format 0.0.4) of storaged's stats and every worker's totals: the
 * memcache-compatible subset under memcached_exporter's names
 * (memcached_*), the rest as goblin_*.
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_cache.h"
#include "version.h"


/* The text and what it is made of: ngx_slprintf() stops at last. */
typedef struct {
    u_char                        *pos;
    u_char                        *last;
    json_t                        *storaged;  /* NULL: it did not answer */
    ngx_http_goblin_totals_t      *totals;    /* NULL: no zone */
} ngx_http_goblin_text_t;


/* A metric that is one of storaged's stats. */
typedef struct {
    char                          *name;
    char                          *type;
    char                          *stat;
    char                          *help;
} ngx_http_goblin_metric_t;


/* memcached_commands_total{command,status}: a stat's sample */
typedef struct {
    char                          *command;
    char                          *status;
    char                          *stat;
} ngx_http_goblin_command_t;


static ngx_int_t ngx_http_goblin_send_metrics(ngx_http_request_t *r,
    json_t *storaged);
static void ngx_http_goblin_metrics_storaged(ngx_http_goblin_text_t *t);
static void ngx_http_goblin_metrics_commands(ngx_http_goblin_text_t *t);
static void ngx_http_goblin_metrics_tiers(ngx_http_goblin_text_t *t);
static void ngx_http_goblin_metrics_totals(ngx_http_goblin_text_t *t);
static void ngx_http_goblin_metrics_requests(ngx_http_goblin_text_t *t);
static void ngx_http_goblin_metrics_first_byte(ngx_http_goblin_text_t *t);
static void ngx_http_goblin_bucket(ngx_http_goblin_text_t *t, char *protocol,
    uint64_t le_us, uint64_t n);
static void ngx_http_goblin_sum(ngx_http_goblin_text_t *t, char *protocol,
    uint64_t us, uint64_t n);
static void ngx_http_goblin_family(ngx_http_goblin_text_t *t, char *name,
    char *type, char *help);
static uint64_t ngx_http_goblin_stat(json_t *storaged, char *stat);
static void ngx_http_goblin_label(ngx_http_goblin_text_t *t, const char *s);


#define NGX_HTTP_GOBLIN_METRICS_SIZE  (64 * 1024)


static ngx_http_goblin_metric_t  ngx_http_goblin_storaged_metrics[] = {

    /* memcached_exporter's names and help */
    { "memcached_uptime_seconds", "gauge", "uptime",
      "Number of seconds since the server started." },
    { "memcached_time_seconds", "gauge", "time",
      "current UNIX time according to the server." },
    { "memcached_process_user_cpu_seconds_total", "counter", "rusage_user",
      "Accumulated user time for this process." },
    { "memcached_process_system_cpu_seconds_total", "counter",
      "rusage_system", "Accumulated system time for this process." },
    { "memcached_read_bytes_total", "counter", "bytes_read",
      "Total number of bytes read by this server from network." },
    { "memcached_written_bytes_total", "counter", "bytes_written",
      "Total number of bytes sent by this server to network." },
    { "memcached_current_connections", "gauge", "curr_connections",
      "Current number of open connections." },
    { "memcached_max_connections", "gauge", "max_connections",
      "Maximum number of clients allowed." },
    { "memcached_connections_total", "counter", "total_connections",
      "Total number of connections opened since the server started "
      "running." },
    { "memcached_connections_rejected_total", "counter",
      "rejected_connections",
      "Total number of connections rejected for the --max-conns limit." },
    { "memcached_connections_listener_disabled_total", "counter",
      "listen_disabled_num",
      "Number of times that the server has hit its connections limit and "
      "disabled its listener." },
    { "memcached_current_bytes", "gauge", "bytes",
      "Current number of bytes used to store items." },
    { "memcached_limit_bytes", "gauge", "limit_maxbytes",
      "Number of bytes this server is allowed to use for storage." },
    { "memcached_current_items", "gauge", "curr_items",
      "Current number of items stored by this instance." },
    { "memcached_items_total", "counter", "total_items",
      "Total number of items stored during the life of this instance." },
    { "memcached_items_evicted_total", "counter", "evictions",
      "Total number of valid items removed from cache to free memory for "
      "new items." },
    { "memcached_item_too_large_total", "counter", "store_too_large",
      "The number of times an item exceeded the max-item-size when being "
      "stored." },
    { "memcached_item_no_memory_total", "counter", "store_no_memory",
      "The number of times an item could not be stored due to no more "
      "memory." },

    /* the engine's */
    { "goblin_head_hits_total", "counter", "head_hits",
      "Lookups of an on-disk object whose head was in RAM." },
    { "goblin_head_misses_total", "counter", "head_misses",
      "Lookups of an on-disk object whose head was not in RAM." },
    { "goblin_disk_evictions_total", "counter", "disk_evictions",
      "Objects evicted for disk room." },
    { "goblin_checksum_errors_total", "counter", "checksum_errors",
      "Chunks whose checksum did not match." },
    { "goblin_io_errors_total", "counter", "io_errors",
      "Disk reads or writes that failed." },
    { "goblin_disk_read_bytes_total", "counter", "disk_read_bytes",
      "Bytes read from the disk pools." },
    { "goblin_disk_written_bytes_total", "counter", "disk_write_bytes",
      "Bytes written to the disk pools." },
    { "goblin_admission_waits_total", "counter", "admission_waits",
      "Times a writer waited for admission." },
    { "goblin_admission_bytes", "gauge", "admission_bytes",
      "Bytes accepted but not yet on disk." },
    { "goblin_index_bytes", "gauge", "index_bytes",
      "Bytes the index holds in memory." },
    { "goblin_index_bytes_per_object", "gauge", "index_bytes_per_object",
      "Index bytes per stored object." },
    { "goblin_journal_bytes", "gauge", "journal_bytes",
      "Bytes in the index journal now." },
    { "goblin_journal_records", "gauge", "journal_records",
      "Records in the index journal now." },
    { "goblin_journal_checkpoints_total", "counter", "checkpoints",
      "Index checkpoints written." },
    { "goblin_journal_syncs_total", "counter", "syncs",
      "Group-committed fdatasyncs." },
    { "goblin_journal_no_room_total", "counter", "journal_no_room",
      "Times the journal's file system had no room for a record." },

    /* the nginx link's */
    { "goblin_ring_workers", "gauge", "ring_connections",
      "nginx workers attached now." },
    { "goblin_ring_connections_total", "counter", "ring_total_connections",
      "nginx workers attached since start." },
    { "goblin_ring_lookups_total", "counter", "ring_lookups",
      "Ring LOOKUPs." },
    { "goblin_ring_lookup_hits_total", "counter", "ring_lookup_hits",
      "Ring LOOKUPs that found the object." },
    { "goblin_ring_pins", "gauge", "ring_pins",
      "Objects pinned by nginx workers now." },
    { "goblin_ring_busy_total", "counter", "ring_busy",
      "LOOKUPs and WOPENs refused: a worker's pins or writers at most." },
    { "goblin_ring_reads_total", "counter", "ring_reads",
      "Ring READs: disk parts streamed to nginx." },
    { "goblin_ring_read_bytes_total", "counter", "ring_read_bytes",
      "Bytes staged in rx buffers." },
    { "goblin_ring_buffer_waits_total", "counter", "ring_buffer_waits",
      "Times a READ waited for an rx buffer." },
    { "goblin_ring_stores_total", "counter", "ring_stores",
      "PUTs stored through the ring." },
    { "goblin_ring_store_bytes_total", "counter", "ring_store_bytes",
      "PUT bytes taken from tx buffers." },
    { "goblin_ring_store_errors_total", "counter", "ring_store_errors",
      "PUTs that failed or were aborted." },
    { "goblin_ring_deletes_total", "counter", "ring_deletes",
      "DELETEs through the ring that removed an object." },
    { "goblin_ring_cq_overflows_total", "counter", "ring_cq_overflows",
      "Completions held back by a full CQ." },
    { "goblin_ring_protocol_errors_total", "counter", "ring_protocol_errors",
      "Workers dropped for a bad submission." },

    { NULL, NULL, NULL, NULL }
};


static ngx_http_goblin_command_t  ngx_http_goblin_commands_stats[] = {
    { "get", "hit", "get_hits" },
    { "get", "miss", "get_misses" },
    { "delete", "hit", "delete_hits" },
    { "delete", "miss", "delete_misses" },
    { "incr", "hit", "incr_hits" },
    { "incr", "miss", "incr_misses" },
    { "decr", "hit", "decr_hits" },
    { "decr", "miss", "decr_misses" },
    { "cas", "hit", "cas_hits" },
    { "cas", "miss", "cas_misses" },
    { "cas", "badval", "cas_badval" },
    { "touch", "hit", "touch_hits" },
    { "touch", "miss", "touch_misses" },
    { "flush", "hit", "cmd_flush" },
    { NULL, NULL, NULL }
};


/* tier, the stat of its bytes used, of its limit */
static char  *ngx_http_goblin_tiers[][3] = {
    { "ram", "ram_used_bytes", "ram_region_bytes" },
    { "ssd", "ssd_used_bytes", "ssd_pool_bytes" },
    { "hdd", "hdd_used_bytes", "hdd_pool_bytes" }
};


static char  *ngx_http_goblin_methods[NGX_HTTP_GOBLIN_METHODS] = {
    "GET", "HEAD", "PUT", "DELETE", "other"
};

static char  *ngx_http_goblin_classes[NGX_HTTP_GOBLIN_CLASSES] = {
    "1xx", "2xx", "3xx", "4xx", "5xx", "none"
};


ngx_int_t
ngx_http_goblin_metrics_handler(ngx_http_request_t *r)
{
    return ngx_http_goblin_stats_request(r, ngx_http_goblin_send_metrics);
}


/* Always 200: memcached_up says whether storaged answered.  Takes
 * <storaged>. */
static ngx_int_t
ngx_http_goblin_send_metrics(ngx_http_request_t *r, json_t *storaged)
{
    ngx_buf_t               *b;
    ngx_http_goblin_text_t   t;

    static ngx_str_t  type = ngx_string("text/plain; version=0.0.4");

    b = ngx_create_temp_buf(r->pool, NGX_HTTP_GOBLIN_METRICS_SIZE);
    if (b == NULL) {
        json_decref(storaged);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    t.pos = b->pos;
    t.last = b->end;
    t.storaged = storaged;
    t.totals = ngx_http_goblin_totals;

    ngx_http_goblin_family(&t, "memcached_up", "gauge",
                           "Could the memcached server be reached.");
    t.pos = ngx_slprintf(t.pos, t.last, "memcached_up %d\n",
                         storaged ? 1 : 0);

    ngx_http_goblin_family(&t, "goblin_build_info", "gauge",
                           "The version of the nginx module.");
    t.pos = ngx_slprintf(t.pos, t.last,
                         "goblin_build_info{version=\"%s\"} 1\n",
                         GOBLIN_VERSION);

    if (storaged) {
        ngx_http_goblin_metrics_storaged(&t);
    }

    if (t.totals) {
        ngx_http_goblin_metrics_totals(&t);
    }

    ngx_http_goblin_metrics_first_byte(&t);

    if (storaged) {
        json_decref(storaged);
    }

    if (t.pos == t.last) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "goblin_metrics: the text exceeds %uz bytes",
                      (size_t) NGX_HTTP_GOBLIN_METRICS_SIZE);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = t.pos;

    return ngx_http_goblin_send_body(r, NGX_HTTP_OK, &type, b);
}


/* storaged's stats: the table's, the commands, the tiers. */
static void
ngx_http_goblin_metrics_storaged(ngx_http_goblin_text_t *t)
{
    json_t  *storaged = t->storaged;

    json_t                    *v;
    ngx_http_goblin_metric_t  *m;

    v = json_object_get(storaged, "version");

    if (json_is_string(v)) {
        ngx_http_goblin_family(t, "memcached_version", "gauge",
                               "The version of this memcached server.");
        t->pos = ngx_slprintf(t->pos, t->last, "memcached_version{version=\"");
        ngx_http_goblin_label(t, json_string_value(v));
        t->pos = ngx_slprintf(t->pos, t->last, "\"} 1\n");
    }

    for (m = ngx_http_goblin_storaged_metrics; m->name; m++) {
        v = json_object_get(storaged, m->stat);

        if (v == NULL) {
            continue;       /* an older goblin-store */
        }

        ngx_http_goblin_family(t, m->name, m->type, m->help);

        if (json_is_string(v)) {
            /* rusage: seconds.microseconds as the daemon writes them */
            t->pos = ngx_slprintf(t->pos, t->last, "%s %s\n", m->name,
                                  json_string_value(v));

        } else {
            t->pos = ngx_slprintf(t->pos, t->last, "%s %uL\n", m->name,
                                  (uint64_t) json_integer_value(v));
        }
    }

    ngx_http_goblin_metrics_commands(t);
    ngx_http_goblin_metrics_tiers(t);
}


/* memcached_commands_total as memcached_exporter makes it: set is cmd_set
 * without the cas commands it counts too. */
static void
ngx_http_goblin_metrics_commands(ngx_http_goblin_text_t *t)
{
    json_t  *storaged = t->storaged;

    uint64_t                    set, cas;
    ngx_http_goblin_command_t  *c;

    ngx_http_goblin_family(t, "memcached_commands_total", "counter",
                           "Total number of all requests broken down by "
                           "command (get, set, etc.) and status.");

    for (c = ngx_http_goblin_commands_stats; c->command; c++) {
        t->pos = ngx_slprintf(t->pos, t->last,
                              "memcached_commands_total{command=\"%s\","
                              "status=\"%s\"} %uL\n", c->command, c->status,
                              ngx_http_goblin_stat(storaged, c->stat));
    }

    set = ngx_http_goblin_stat(storaged, "cmd_set");
    cas = ngx_http_goblin_stat(storaged, "cas_hits")
          + ngx_http_goblin_stat(storaged, "cas_misses")
          + ngx_http_goblin_stat(storaged, "cas_badval");

    t->pos = ngx_slprintf(t->pos, t->last,
                          "memcached_commands_total{command=\"set\","
                          "status=\"hit\"} %uL\n", set > cas ? set - cas : 0);
}


static void
ngx_http_goblin_metrics_tiers(ngx_http_goblin_text_t *t)
{
    json_t  *storaged = t->storaged;

    ngx_uint_t  i, k;

    static char  *name[] = { "goblin_tier_bytes", "goblin_tier_limit_bytes" };
    static char  *help[] = {
        "Bytes of a tier allocated to objects.",
        "Bytes a tier has: the RAM region's size, a disk pool's capacity."
    };

    for (k = 0; k < 2; k++) {
        ngx_http_goblin_family(t, name[k], "gauge", help[k]);

        for (i = 0; i < 3; i++) {
            t->pos = ngx_slprintf(t->pos, t->last, "%s{tier=\"%s\"} %uL\n",
                                  name[k], ngx_http_goblin_tiers[i][0],
                                  ngx_http_goblin_stat(storaged,
                                      ngx_http_goblin_tiers[i][k + 1]));
        }
    }
}


/* Every worker's counters, as goblin_status's "totals" has them. */
static void
ngx_http_goblin_metrics_totals(ngx_http_goblin_text_t *t)
{
    ngx_http_goblin_totals_t  *totals = t->totals;

    ngx_http_goblin_family(t, "goblin_nginx_uptime_seconds", "gauge",
                           "Seconds since nginx made the goblin zone.");
    t->pos = ngx_slprintf(t->pos, t->last, "goblin_nginx_uptime_seconds %T\n",
                          ngx_time() - totals->started);

#define NGX_HTTP_GOBLIN_TOTAL_METRIC(name)                                    \
    ngx_http_goblin_family(t, "goblin_nginx_" #name "_total", "counter",      \
                           "goblin_status's " #name ", all workers.");        \
    t->pos = ngx_slprintf(t->pos, t->last, "goblin_nginx_" #name "_total %uA\n", \
                          totals->name);
    NGX_HTTP_GOBLIN_STATS(NGX_HTTP_GOBLIN_TOTAL_METRIC)
#undef NGX_HTTP_GOBLIN_TOTAL_METRIC

    ngx_http_goblin_metrics_requests(t);
}


/* goblin requests by method and status class; by $goblin_cache_status */
static void
ngx_http_goblin_metrics_requests(ngx_http_goblin_text_t *t)
{
    ngx_http_goblin_totals_t  *totals = t->totals;

    ngx_uint_t  m, c, i;

    ngx_http_goblin_family(t, "goblin_http_requests_total", "counter",
                           "goblin requests ended, by method and status "
                           "class (none: closed before a status).");

    for (m = 0; m < NGX_HTTP_GOBLIN_METHODS; m++) {
        for (c = 0; c < NGX_HTTP_GOBLIN_CLASSES; c++) {
            t->pos = ngx_slprintf(t->pos, t->last,
                                  "goblin_http_requests_total{method=\"%s\","
                                  "code=\"%s\"} %uA\n",
                                  ngx_http_goblin_methods[m],
                                  ngx_http_goblin_classes[c],
                                  totals->http[m][c]);
        }
    }

    ngx_http_goblin_family(t, "goblin_cache_requests_total", "counter",
                           "Cache-mode requests ended, by "
                           "$goblin_cache_status.");

    for (i = 1; i < NGX_HTTP_GOBLIN_CACHE_STATUSES; i++) {
        t->pos = ngx_slprintf(t->pos, t->last,
                              "goblin_cache_requests_total{status=\"%V\"} "
                              "%uA\n", &ngx_http_goblin_cache_statuses[i],
                              totals->cache[i]);
    }
}


/*
 * The first-byte histograms: nginx's (its clock counts milliseconds) from
 * the totals, the memcache port's (microseconds) from storaged's stats.
 */
static void
ngx_http_goblin_metrics_first_byte(ngx_http_goblin_text_t *t)
{
    ngx_http_goblin_totals_t  *totals = t->totals;

    u_char      name[32];
    uint64_t    n;
    ngx_uint_t  i;

    static uint64_t  bounds_us[] = {
        100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
        250000, 500000, 1000000, 2500000, 5000000, 10000000
    };

    if (totals == NULL && t->storaged == NULL) {
        return;
    }

    ngx_http_goblin_family(t, "goblin_first_byte_seconds", "histogram",
                           "Time from a request's start to its first "
                           "byte, by protocol (http: the request line to "
                           "the response header; memcache: a retrieval "
                           "command run to its reply's first byte "
                           "written).");

    if (totals) {
        n = 0;

        for (i = 0; i < NGX_HTTP_GOBLIN_BUCKETS - 1; i++) {
            n += totals->first_byte[i];
            ngx_http_goblin_bucket(t, "http",
                                   (uint64_t) ngx_http_goblin_buckets[i]
                                   * 1000, n);
        }

        n += totals->first_byte[i];
        ngx_http_goblin_bucket(t, "http", 0, n);
        ngx_http_goblin_sum(t, "http", (uint64_t) totals->first_byte_ms
                                       * 1000, n);
    }

    if (t->storaged == NULL) {
        return;
    }

    for (i = 0; i < sizeof(bounds_us) / sizeof(bounds_us[0]); i++) {
        ngx_sprintf(name, "first_byte_us_le_%uL%Z", bounds_us[i]);
        ngx_http_goblin_bucket(t, "memcache", bounds_us[i],
                               ngx_http_goblin_stat(t->storaged,
                                                    (char *) name));
    }

    n = ngx_http_goblin_stat(t->storaged, "first_byte_count");
    ngx_http_goblin_bucket(t, "memcache", 0, n);
    ngx_http_goblin_sum(t, "memcache",
                        ngx_http_goblin_stat(t->storaged, "first_byte_us_sum"),
                        n);
}


/* A histogram bucket of <protocol>'s, <le_us> microseconds (0: +Inf). */
static void
ngx_http_goblin_bucket(ngx_http_goblin_text_t *t, char *protocol,
    uint64_t le_us, uint64_t n)
{
    u_char  le[32], *p;

    if (le_us == 0) {
        p = ngx_cpymem(le, "+Inf", 4);

    } else {
        p = ngx_sprintf(le, "%uL.%06uL", le_us / 1000000, le_us % 1000000);

        while (p[-1] == '0') {
            p--;
        }

        if (p[-1] == '.') {
            p--;
        }
    }

    t->pos = ngx_slprintf(t->pos, t->last,
                          "goblin_first_byte_seconds_bucket"
                          "{protocol=\"%s\",le=\"%*s\"} %uL\n",
                          protocol, (size_t) (p - le), le, n);
}


/* The _sum (<us> microseconds) and _count of <protocol>'s histogram. */
static void
ngx_http_goblin_sum(ngx_http_goblin_text_t *t, char *protocol, uint64_t us,
    uint64_t n)
{
    t->pos = ngx_slprintf(t->pos, t->last,
                          "goblin_first_byte_seconds_sum{protocol=\"%s\"} "
                          "%uL.%06uL\n"
                          "goblin_first_byte_seconds_count{protocol=\"%s\"} "
                          "%uL\n", protocol, us / 1000000, us % 1000000,
                          protocol, n);
}


static void
ngx_http_goblin_family(ngx_http_goblin_text_t *t, char *name, char *type,
    char *help)
{
    t->pos = ngx_slprintf(t->pos, t->last, "# HELP %s %s\n# TYPE %s %s\n",
                          name, help, name, type);
}


/* A number of storaged's, 0 when it has none. */
static uint64_t
ngx_http_goblin_stat(json_t *storaged, char *stat)
{
    json_t  *v;

    v = json_object_get(storaged, stat);

    return json_is_integer(v) ? (uint64_t) json_integer_value(v) : 0;
}


/* <s> as a label value: \, " and newline escaped. */
static void
ngx_http_goblin_label(ngx_http_goblin_text_t *t, const char *s)
{
    for ( /* void */ ; *s && t->pos + 2 < t->last; s++) {
        if (*s == '\\' || *s == '"') {
            *t->pos++ = '\\';
            *t->pos++ = *s;

        } else if (*s == '\n') {
            *t->pos++ = '\\';
            *t->pos++ = 'n';

        } else {
            *t->pos++ = *s;
        }
    }
}
