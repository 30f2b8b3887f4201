
/*
 * ngx_http_goblin_module: directives, configuration, worker init.
 */


#include "ngx_http_goblin_module.h"
#include "ngx_http_goblin_cache.h"


static char *ngx_http_goblin_storaged(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_goblin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_goblin_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_goblin_metrics(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_goblin_set_handler(ngx_conf_t *cf,
    ngx_http_handler_pt handler);
static char *ngx_http_goblin_origin_set(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_goblin_off_sec(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_goblin_abandon(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_goblin_restart(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_goblin_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_goblin_postconfiguration(ngx_conf_t *cf);
static char *ngx_http_goblin_check_ring_entries(ngx_conf_t *cf, void *post,
    void *data);
static void *ngx_http_goblin_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_goblin_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_goblin_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_goblin_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_goblin_init_process(ngx_cycle_t *cycle);
static void ngx_http_goblin_exit_process(ngx_cycle_t *cycle);


ngx_conf_bitmask_t  ngx_http_goblin_methods_mask[] = {
    { ngx_string("GET"), NGX_HTTP_GET },
    { ngx_string("HEAD"), NGX_HTTP_HEAD },
    { ngx_string("PUT"), NGX_HTTP_PUT },
    { ngx_string("DELETE"), NGX_HTTP_DELETE },
    { ngx_null_string, 0 }
};


/* goblin_max_object's default is storaged's --max-object default */
static ngx_str_t  ngx_http_goblin_max_object =
    ngx_string(RING_MAX_OBJECT_DEFAULT);


static ngx_conf_post_t  ngx_http_goblin_ring_entries_post = {
    ngx_http_goblin_check_ring_entries
};


static ngx_command_t  ngx_http_goblin_commands[] = {

    { ngx_string("goblin_storaged"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_goblin_storaged,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("goblin_ring_entries"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_goblin_main_conf_t, ring_entries),
      &ngx_http_goblin_ring_entries_post },

    { ngx_string("goblin_connect_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_goblin_main_conf_t, connect_timeout),
      NULL },

    { ngx_string("goblin"),
      NGX_HTTP_LOC_CONF|NGX_HTTP_LIF_CONF|NGX_CONF_NOARGS,
      ngx_http_goblin,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("goblin_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_goblin_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("goblin_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_goblin_metrics,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("goblin_key"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_set_complex_value_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, key),
      NULL },

    { ngx_string("goblin_methods"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_conf_set_bitmask_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, methods),
      &ngx_http_goblin_methods_mask },

    { ngx_string("goblin_max_object"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_off_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, max_object),
      NULL },

    { ngx_string("goblin_read_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, read_timeout),
      NULL },

    { ngx_string("goblin_put_wait"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, put_wait),
      NULL },

    { ngx_string("goblin_put_queue"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, put_queue),
      NULL },

    { ngx_string("goblin_body_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, body_timeout),
      NULL },

    { ngx_string("goblin_cache"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, cache),
      NULL },

    { ngx_string("goblin_origin"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_goblin_origin_set,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, origin),
      NULL },

    { ngx_string("goblin_cache_abandon"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_goblin_abandon,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, abandon),
      NULL },

    { ngx_string("goblin_cache_pass"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_goblin_off_sec,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, pass),
      NULL },

    { ngx_string("goblin_cache_purge"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, purge),
      NULL },

    { ngx_string("goblin_cache_revalidate"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_goblin_off_sec,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, revalidate),
      NULL },

    { ngx_string("goblin_cache_restart"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_goblin_restart,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, restart),
      NULL },

    { ngx_string("goblin_cache_valid"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_goblin_loc_conf_t, valid),
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_goblin_module_ctx = {
    ngx_http_goblin_preconfiguration,      /* preconfiguration */
    ngx_http_goblin_postconfiguration,     /* postconfiguration */

    ngx_http_goblin_create_main_conf,      /* create main configuration */
    ngx_http_goblin_init_main_conf,        /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_goblin_create_loc_conf,       /* create location configuration */
    ngx_http_goblin_merge_loc_conf         /* merge location configuration */
};


ngx_module_t  ngx_http_goblin_module = {
    NGX_MODULE_V1,
    &ngx_http_goblin_module_ctx,           /* module context */
    ngx_http_goblin_commands,              /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_goblin_init_process,          /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_goblin_exit_process,          /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static char *
ngx_http_goblin_storaged(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_goblin_main_conf_t *gmcf = conf;

    ngx_str_t  *value;
    ngx_url_t  *u;

    if (gmcf->storaged) {
        return "is duplicate";
    }

    value = cf->args->elts;

    u = ngx_pcalloc(cf->pool, sizeof(ngx_url_t));
    if (u == NULL) {
        return NGX_CONF_ERROR;
    }

    u->url = value[1];
    u->no_resolve = 1;

    if (ngx_parse_url(cf->pool, u) != NGX_OK) {
        if (u->err) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "%s in \"%V\" of the \"goblin_storaged\" "
                               "directive", u->err, &u->url);
        }

        return NGX_CONF_ERROR;
    }

    if (u->family != AF_UNIX || u->naddrs != 1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"goblin_storaged\" takes a unix socket, "
                           "\"unix:/path\", not \"%V\"", &u->url);
        return NGX_CONF_ERROR;
    }

    gmcf->storaged = u;

    return NGX_CONF_OK;
}


static char *
ngx_http_goblin(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_goblin_set_handler(cf, ngx_http_goblin_handler);
}


static char *
ngx_http_goblin_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_goblin_set_handler(cf, ngx_http_goblin_status_handler);
}


static char *
ngx_http_goblin_metrics(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_goblin_set_handler(cf, ngx_http_goblin_metrics_handler);
}


/* "goblin", "goblin_status" and "goblin_metrics" make the location's
 * content handler. */
static char *
ngx_http_goblin_set_handler(ngx_conf_t *cf, ngx_http_handler_pt handler)
{
    ngx_http_core_loc_conf_t     *clcf;
    ngx_http_goblin_loc_conf_t   *glcf;
    ngx_http_goblin_main_conf_t  *gmcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->handler) {
        return "is duplicate, or the location has another content handler";
    }

    clcf->handler = handler;

    /* limit_except's location takes it too (merge_loc_conf) */
    glcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_goblin_module);
    glcf->handler = handler;

    gmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_goblin_module);
    gmcf->used = 1;

    return NGX_CONF_OK;
}


/* goblin_origin @name: the named location a cache fills from. */
static char *
ngx_http_goblin_origin_set(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_goblin_loc_conf_t *glcf = conf;

    ngx_str_t  *value;

    if (glcf->origin.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len < 2 || value[1].data[0] != '@') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"goblin_origin\" takes a named location, "
                           "\"@name\", not \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    glcf->origin = value[1];

    return NGX_CONF_OK;
}


/* off | <time> (goblin_cache_revalidate, goblin_cache_pass): "off" is 0 */
static char *
ngx_http_goblin_off_sec(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    time_t     *t;
    ngx_str_t  *value;

    t = (time_t *) ((char *) conf + cmd->offset);

    if (*t != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        *t = 0;
        return NGX_CONF_OK;
    }

    return ngx_conf_set_sec_slot(cf, cmd, conf);
}


/* goblin_cache_restart revalidate | keep */
static char *
ngx_http_goblin_restart(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_goblin_loc_conf_t *glcf = conf;

    ngx_str_t  *value;

    if (glcf->restart != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 10
        && ngx_strncmp(value[1].data, "revalidate", 10) == 0)
    {
        glcf->restart = NGX_HTTP_GOBLIN_RESTART_REVALIDATE;

    } else if (value[1].len == 4
               && ngx_strncmp(value[1].data, "keep", 4) == 0)
    {
        glcf->restart = NGX_HTTP_GOBLIN_RESTART_KEEP;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"goblin_cache_restart\" takes \"revalidate\" or "
                           "\"keep\", not \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* goblin_cache_abandon off | <percent>[%] */
static char *
ngx_http_goblin_abandon(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_goblin_loc_conf_t *glcf = conf;

    size_t      len;
    ngx_int_t   n;
    ngx_str_t  *value;

    if (glcf->abandon != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 3 && ngx_strncmp(value[1].data, "off", 3) == 0) {
        glcf->abandon = 0;
        return NGX_CONF_OK;
    }

    len = value[1].len;

    if (len && value[1].data[len - 1] == '%') {
        len--;
    }

    n = ngx_atoi(value[1].data, len);

    if (n == NGX_ERROR || n > 100) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"goblin_cache_abandon\" takes \"off\" or a "
                           "percentage from 0 to 100, not \"%V\"",
                           &value[1]);
        return NGX_CONF_ERROR;
    }

    glcf->abandon = (ngx_uint_t) n;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_goblin_preconfiguration(ngx_conf_t *cf)
{
    return ngx_http_goblin_cache_add_variables(cf);
}


static ngx_int_t
ngx_http_goblin_postconfiguration(ngx_conf_t *cf)
{
    if (ngx_http_goblin_totals_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_goblin_fill_init(cf);
}


static char *
ngx_http_goblin_check_ring_entries(ngx_conf_t *cf, void *post, void *data)
{
    ngx_uint_t  *np = data;

    if (*np < RING_SQ_MIN || *np > RING_SQ_MAX || (*np & (*np - 1))) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"goblin_ring_entries\" must be a power of two "
                           "from %ui to %ui", (ngx_uint_t) RING_SQ_MIN,
                           (ngx_uint_t) RING_SQ_MAX);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_goblin_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_goblin_main_conf_t  *gmcf;

    gmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_goblin_main_conf_t));
    if (gmcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     gmcf->storaged = NULL;
     *     gmcf->used = 0;
     */

    gmcf->ring_entries = NGX_CONF_UNSET_UINT;
    gmcf->connect_timeout = NGX_CONF_UNSET_MSEC;

    return gmcf;
}


static char *
ngx_http_goblin_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_goblin_main_conf_t *gmcf = conf;

    ngx_conf_init_uint_value(gmcf->ring_entries, RING_SQ_DEFAULT);
    ngx_conf_init_msec_value(gmcf->connect_timeout, 5000);

    if (gmcf->used && gmcf->storaged == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"goblin\", \"goblin_status\" and "
                           "\"goblin_metrics\" need "
                           "\"goblin_storaged unix:/path;\" in http{}");
        return NGX_CONF_ERROR;
    }

    if (gmcf->storaged && ngx_http_goblin_totals_zone(cf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_goblin_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_goblin_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_goblin_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->key = NULL;
     *     conf->methods = 0;
     *     conf->origin = { 0, NULL };
     */

    conf->max_object = NGX_CONF_UNSET;
    conf->read_timeout = NGX_CONF_UNSET_MSEC;
    conf->put_wait = NGX_CONF_UNSET_MSEC;
    conf->put_queue = NGX_CONF_UNSET_UINT;
    conf->body_timeout = NGX_CONF_UNSET_MSEC;
    conf->cache = NGX_CONF_UNSET;
    conf->abandon = NGX_CONF_UNSET_UINT;
    conf->valid = NGX_CONF_UNSET;
    conf->purge = NGX_CONF_UNSET;
    conf->revalidate = NGX_CONF_UNSET;
    conf->restart = NGX_CONF_UNSET_UINT;
    conf->pass = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_http_goblin_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_goblin_loc_conf_t *prev = parent;
    ngx_http_goblin_loc_conf_t *conf = child;

    ngx_http_core_loc_conf_t  *clcf;

    /* the methods a limit_except block lets through are served as its
     * location's are (proxy_pass does the same) */
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->lmt_excpt && clcf->handler == NULL && prev->handler) {
        clcf->handler = prev->handler;
        conf->handler = prev->handler;
    }

    if (conf->key == NULL) {
        conf->key = prev->key;
    }

    ngx_conf_merge_bitmask_value(conf->methods, prev->methods,
                                 (NGX_CONF_BITMASK_SET
                                  |NGX_HTTP_GET|NGX_HTTP_HEAD));

    /* as with limit_except, GET allows HEAD */
    if (conf->methods & NGX_HTTP_GET) {
        conf->methods |= NGX_HTTP_HEAD;
    }

    ngx_conf_merge_off_value(conf->max_object, prev->max_object,
                             ngx_parse_offset(&ngx_http_goblin_max_object));

    ngx_conf_merge_msec_value(conf->read_timeout, prev->read_timeout, 60000);

    ngx_conf_merge_msec_value(conf->put_wait, prev->put_wait, 5000);
    ngx_conf_merge_uint_value(conf->put_queue, prev->put_queue, 64);
    ngx_conf_merge_msec_value(conf->body_timeout, prev->body_timeout, 10000);

    ngx_conf_merge_value(conf->cache, prev->cache, 0);
    ngx_conf_merge_str_value(conf->origin, prev->origin, "");
    ngx_conf_merge_uint_value(conf->abandon, prev->abandon, 10);
    ngx_conf_merge_sec_value(conf->valid, prev->valid, 600);
    ngx_conf_merge_value(conf->purge, prev->purge, 0);
    ngx_conf_merge_sec_value(conf->revalidate, prev->revalidate, 0);
    ngx_conf_merge_sec_value(conf->pass, prev->pass, 120);
    ngx_conf_merge_uint_value(conf->restart, prev->restart,
                              NGX_HTTP_GOBLIN_RESTART_REVALIDATE);

    if (conf->cache && conf->origin.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"goblin_cache on\" needs \"goblin_origin "
                           "@name;\", the location it fills from");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_goblin_init_process(ngx_cycle_t *cycle)
{
    ngx_http_goblin_main_conf_t  *gmcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    gmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_goblin_module);

    if (gmcf == NULL || gmcf->storaged == NULL) {
        return NGX_OK;
    }

    return ngx_http_goblin_link_init(cycle, gmcf);
}


static void
ngx_http_goblin_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_goblin_link_exit(cycle);
}
