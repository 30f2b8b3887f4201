
/*
 * ngx_http_goblin_module: cache mode, a response the cache does not store
 * handed to the request that started its fill.
 *
 * A fill asks the origin before it knows whether the answer may be stored.
 * When it may not (a 404, private, no-store, Set-Cookie, ...) its waiters
 * go to the origin themselves; the request that started the fill would
 * then make the origin's second request for one client request.  Instead,
 * a body of at most NGX_HTTP_GOBLIN_HANDOFF_MAX is gathered in the fill
 * request's memory and, at its end, sent to that request as the origin
 * sent it (status, headers, Set-Cookie included: it answers that
 * client's own request); the other waiters go to the origin as before.
 * A larger body, or a starter that went away, ends the fill as before.
 */


#include "ngx_http_goblin_cache.h"


#define NGX_HTTP_GOBLIN_HANDOFF_MAX  (256 * 1024)


static ngx_http_goblin_cache_t *ngx_http_goblin_handoff_starter(
    ngx_http_goblin_fill_t *fill);
static ngx_int_t ngx_http_goblin_handoff_room(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill, size_t more);
static ngx_int_t ngx_http_goblin_handoff_headers(ngx_http_request_t *r,
    ngx_http_request_t *fr);


ngx_int_t
ngx_http_goblin_handoff_begin(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill)
{
    if (ngx_http_goblin_handoff_starter(fill) == NULL
        || r->headers_out.content_length_n > NGX_HTTP_GOBLIN_HANDOFF_MAX)
    {
        return NGX_DECLINED;
    }

    fill->handing = 1;
    fill->hand_len = 0;

    return ngx_http_goblin_handoff_room(r, fill,
                                        r->headers_out.content_length_n > 0
                                        ? (size_t)
                                          r->headers_out.content_length_n
                                        : 0);
}


ngx_int_t
ngx_http_goblin_handoff_body(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill, ngx_chain_t *in)
{
    size_t        size;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_uint_t    last;
    ngx_chain_t  *cl;

    last = 0;

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;
        last |= b->last_buf;

        if (ngx_buf_special(b) || !fill->handing) {
            b->pos = b->last;
            b->file_pos = b->file_last;
            continue;
        }

        size = (size_t) ngx_buf_size(b);

        if (fill->hand_len + size > NGX_HTTP_GOBLIN_HANDOFF_MAX
            || ngx_http_goblin_handoff_room(r, fill, size) != NGX_OK)
        {
            /* too large after all: the waiters go to the origin */
            fill->handing = 0;
            fill->fail(fill, NGX_HTTP_GOBLIN_FILL_PASS);
            return NGX_OK;
        }

        if (ngx_buf_in_memory(b)) {
            ngx_memcpy(fill->hand + fill->hand_len, b->pos, size);

        } else {
            n = ngx_read_file(b->file, fill->hand + fill->hand_len, size,
                              b->file_pos);
            if (n != (ssize_t) size) {
                fill->handing = 0;
                fill->fail(fill, NGX_HTTP_GOBLIN_FILL_FAILED);
                return NGX_ERROR;
            }
        }

        fill->hand_len += size;
        b->pos = b->last;
        b->file_pos = b->file_last;
    }

    if (last && fill->handing) {
        fill->handing = 0;
        fill->fail(fill, NGX_HTTP_GOBLIN_FILL_HANDOFF);
    }

    return NGX_OK;
}


void
ngx_http_goblin_handoff_send(ngx_http_goblin_ctx_t *ctx,
    ngx_http_goblin_fill_t *fill)
{
    ngx_int_t            rc;
    ngx_buf_t           *b;
    ngx_chain_t          out;
    ngx_http_request_t  *r, *fr;

    r = ctx->request;
    fr = fill->ctx->request;

    r->headers_out.status = fr->headers_out.status;
    r->headers_out.content_length_n = fill->hand_len;

    if (ngx_http_goblin_handoff_headers(r, fr) != NGX_OK) {
        ngx_http_goblin_finalize(ctx, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    rc = ngx_http_send_header(r);
    ctx->header_sent = 1;

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        ngx_http_goblin_finalize(ctx, rc);
        return;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        ngx_http_goblin_finalize(ctx, NGX_ERROR);
        return;
    }

    if (fill->hand_len) {
        b->start = ngx_pnalloc(r->pool, fill->hand_len);
        if (b->start == NULL) {
            ngx_http_goblin_finalize(ctx, NGX_ERROR);
            return;
        }

        b->pos = b->start;
        b->last = ngx_cpymem(b->start, fill->hand, fill->hand_len);
        b->end = b->last;
        b->memory = 1;
    }

    b->last_buf = (r == r->main);
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    ngx_http_goblin_finalize(ctx, ngx_http_output_filter(r, &out));
}


/* The request that started <fill>, while it waits on it; NULL when it
 * went away. */
static ngx_http_goblin_cache_t *
ngx_http_goblin_handoff_starter(ngx_http_goblin_fill_t *fill)
{
    ngx_queue_t              *q;
    ngx_http_goblin_cache_t  *cache;

    for (q = ngx_queue_head(&fill->waiters);
         q != ngx_queue_sentinel(&fill->waiters);
         q = ngx_queue_next(q))
    {
        cache = ngx_queue_data(q, ngx_http_goblin_cache_t, wait);

        if (cache->started) {
            return cache;
        }
    }

    return NULL;
}


/* Room in fill->hand (from the fill request <r>'s pool) for <more>
 * bytes. */
static ngx_int_t
ngx_http_goblin_handoff_room(ngx_http_request_t *r,
    ngx_http_goblin_fill_t *fill, size_t more)
{
    u_char  *p;
    size_t   cap;

    if (fill->hand_len + more <= fill->hand_cap) {
        return NGX_OK;
    }

    cap = ngx_max(fill->hand_cap * 2, 16384);
    cap = ngx_max(cap, fill->hand_len + more);
    cap = ngx_min(cap, NGX_HTTP_GOBLIN_HANDOFF_MAX);

    p = ngx_pnalloc(r->pool, cap);
    if (p == NULL) {
        return NGX_ERROR;
    }

    if (fill->hand_len) {
        ngx_memcpy(p, fill->hand, fill->hand_len);
    }

    fill->hand = p;
    fill->hand_cap = cap;

    return NGX_OK;
}


/* The fill request <fr>'s response headers as <r>'s: its type, its
 * header list (copied into <r>'s pool), and the slots nginx's filters
 * read (ETag, Last-Modified). */
static ngx_int_t
ngx_http_goblin_handoff_headers(ngx_http_request_t *r, ngx_http_request_t *fr)
{
    ngx_table_elt_t            *h, *c;
    ngx_http_goblin_headers_t   it;

    r->headers_out.content_type_len = fr->headers_out.content_type_len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.last_modified_time = fr->headers_out.last_modified_time;

    if (fr->headers_out.content_type.len) {
        r->headers_out.content_type.len = fr->headers_out.content_type.len;
        r->headers_out.content_type.data =
            ngx_pstrdup(r->pool, &fr->headers_out.content_type);
        if (r->headers_out.content_type.data == NULL) {
            return NGX_ERROR;
        }
    }

    ngx_http_goblin_headers_init(&it, &fr->headers_out.headers);

    while ((h = ngx_http_goblin_headers_next(&it)) != NULL) {

        if (h->hash == 0) {
            continue;
        }

        c = ngx_list_push(&r->headers_out.headers);
        if (c == NULL) {
            return NGX_ERROR;
        }

        *c = *h;
        c->key.data = ngx_pnalloc(r->pool, 2 * h->key.len + h->value.len);
        if (c->key.data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(c->key.data, h->key.data, h->key.len);
        c->lowcase_key = c->key.data + h->key.len;
        ngx_strlow(c->lowcase_key, h->key.data, h->key.len);
        c->value.data = c->lowcase_key + h->key.len;
        ngx_memcpy(c->value.data, h->value.data, h->value.len);

        if (h == fr->headers_out.etag) {
            r->headers_out.etag = c;

        } else if (h == fr->headers_out.last_modified) {
            r->headers_out.last_modified = c;
        }
    }

    return NGX_OK;
}
