/* goblin-bench reports: the human table on stdout and the --json file. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "goblin-bench.h"

void gb_sizes_compute(const struct gb_opts *o, const struct gb_sizer *z,
		      struct gb_sizes *s)
{
	uint64_t hot = 0;

	s->min = UINT64_MAX;
	s->max = s->total = 0;
	for (uint64_t k = 0; k < o->keys; k++) {
		uint64_t n = gb_size_of(z, k);

		s->total += n;
		if (n < s->min)
			s->min = n;
		if (n > s->max)
			s->max = n;
		if (k >= o->hot_start && k < o->hot_start + o->hot_keys)
			hot += n;
	}
	s->mean = (double)s->total / (double)o->keys;
	s->mean_hot = (double)hot / (double)o->hot_keys;
	s->target = gb_sizer_mean(z);
}

bool gb_result_ok(const struct gb_result *res)
{
	const struct gb_stats *p = &res->populate, *r = &res->run;

	return !res->connect_failed && !p->conn_failures && !r->conn_failures &&
	       !r->verify_errors && gb_gets(r) == r->hits + r->misses;
}

static const char *human_bytes(char *buf, size_t cap, double n)
{
	if (n >= 1 << 30)
		snprintf(buf, cap, "%.2f GiB", n / (1 << 30));
	else if (n >= 1 << 20)
		snprintf(buf, cap, "%.2f MiB", n / (1 << 20));
	else if (n >= 1 << 10)
		snprintf(buf, cap, "%.1f KiB", n / (1 << 10));
	else
		snprintf(buf, cap, "%.0f B", n);
	return buf;
}

static double per_s(uint64_t n, double secs)
{
	return secs > 0 ? (double)n / secs : 0;
}

static const char *proto_name(enum gb_proto p)
{
	return p == GB_PROTO_HTTP ? "http" : p == GB_PROTO_RDMA ? "rdma" :
	       "memcache";
}

/* --proto rdma: serial (one queue pair, --requests) or closed loop. */
static const char *rdma_mode(const struct gb_opts *o)
{
	return o->rdma.qps == 1 && o->rdma.requests ? "serial" : "closed-loop";
}

/* Payload (object bytes read) in Gbit/s. */
static double gbit(uint64_t bytes, double secs)
{
	return secs > 0 ? (double)bytes * 8 / secs / 1e9 : 0;
}

static const double pcts[] = { 50, 90, 99, 99.9 };

static void table_row(FILE *f, const char *name, const struct gb_hist *h)
{
	if (!h->count)
		return;
	fprintf(f, "  %-20s %10" PRIu64, name, h->count);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
		fprintf(f, " %10.1f", gb_hist_percentile(h, pcts[i]) / 1e3);
	fprintf(f, " %10.1f\n", h->max / 1e3);
}

void gb_report_table(FILE *f, const struct gb_opts *o,
		     const struct gb_sizes *s, const struct gb_result *res)
{
	const struct gb_stats *p = &res->populate, *r = &res->run;
	char b1[32], b2[32], b3[32], b4[32];
	uint64_t gets = gb_gets(r);

	fprintf(f, "goblin-bench %s: %s %s:%u, %u conns, seed %" PRIu64 "\n",
		GB_VERSION, proto_name(o->proto), o->host, o->port, o->conns,
		o->seed);
	if (o->proto == GB_PROTO_RDMA)
		fprintf(f, "rdma      %s:%u over %s%s, %s, %u queue pairs, "
			"window %s\n", o->rdma.host, o->rdma.port,
			gb_rdma_tp_names[o->rdma.transport],
			o->rdma.transport == GB_RDMA_TCP ?
			" (emulated: libfabric tcp, no RDMA hardware)" : "",
			rdma_mode(o), o->rdma.qps,
			human_bytes(b1, sizeof(b1), (double)o->rdma.window));
	fprintf(f, "sizes     %s: mean %s over %" PRIu64 " keys (min %s, max %s; "
		"distribution mean %s)\n", gb_dist_name(o->dist),
		human_bytes(b1, sizeof(b1), s->mean), o->keys,
		human_bytes(b2, sizeof(b2), (double)s->min),
		human_bytes(b3, sizeof(b3), (double)s->max),
		human_bytes(b4, sizeof(b4), s->target));
	if (res->populated)
		fprintf(f, "populate  %" PRIu64 " keys stored, %s in %.2f s: "
			"%.0f keys/s, %.1f MB/s; %" PRIu64 " errors, %" PRIu64
			" lost\n", p->sets,
			human_bytes(b1, sizeof(b1), (double)p->set_bytes),
			p->seconds, per_s(p->sets, p->seconds),
			gb_mbps(p->set_bytes, p->seconds), p->set_errors,
			p->set_failed);
	if (res->measured) {
		fprintf(f, "run       %.2f s on keys [%" PRIu64 ", %" PRIu64
			") %s (mean %s), set ratio %g\n", r->seconds,
			o->hot_start, o->hot_start + o->hot_keys,
			gb_key_dist_names[o->key_dist],
			human_bytes(b1, sizeof(b1), s->mean_hot), o->set_ratio);
		fprintf(f, "          %.0f req/s, payload %.1f MB/s (get %.1f MB/s, "
			"set %.1f MB/s)\n", per_s(gets + r->sets, r->seconds),
			gb_mbps(r->get_bytes + r->set_bytes, r->seconds),
			gb_mbps(r->get_bytes, r->seconds),
			gb_mbps(r->set_bytes, r->seconds));
		if (o->proto == GB_PROTO_RDMA)
			fprintf(f, "          payload %.3f Gbit/s\n",
				gbit(r->get_bytes, r->seconds));
		fprintf(f, "          gets %" PRIu64 ": hits %" PRIu64 ", misses %"
			PRIu64 "; sets %" PRIu64 "; errors %" PRIu64
			" (get %" PRIu64 ", set %" PRIu64 "); lost %" PRIu64 "\n",
			gets, r->hits, r->misses, r->sets,
			r->get_errors + r->set_errors, r->get_errors,
			r->set_errors, r->get_failed + r->set_failed);
		fprintf(f, "          verify errors %" PRIu64 "%s\n",
			r->verify_errors, o->verify ? "" : " (--no-verify)");
		if (o->arrivals != GB_ARRIVALS_NONE)
			fprintf(f, "open loop %s arrivals at %g/s: %" PRIu64
				" offered, %" PRIu64 " never issued; %" PRIu64
				" waited for a connection (at most %" PRIu64
				" at once); latency from intended start\n",
				gb_arrivals_names[o->arrivals], o->rate,
				r->scheduled, r->unissued, r->queued,
				r->backlog_max);
	}
	fprintf(f, "          connection failures %" PRIu64 ", reconnects %"
		PRIu64 "\n", p->conn_failures + r->conn_failures,
		p->reconnects + r->reconnects);
	fprintf(f, "latency (us)           %10s %10s %10s %10s %10s %10s\n",
		"count", "p50", "p90", "p99", "p99.9", "max");
	if (res->populated)
		table_row(f, "populate set", &p->set_complete);
	if (res->measured && o->proto == GB_PROTO_RDMA) {
		table_row(f, "get header (VALUE)", &r->ttfb);
		table_row(f, "get bulk ready", &r->payload);
		table_row(f, "get complete (END)", &r->complete);
	} else if (res->measured) {
		table_row(f, "get first byte", &r->ttfb);
		table_row(f, "get first payload", &r->payload);
		table_row(f, "get complete", &r->complete);
		table_row(f, "set complete", &r->set_complete);
		table_row(f, "send lag", &r->send_lag);
	}
	if (res->measured) {
		fprintf(f, "check     gets = hits + misses: %" PRIu64 " = %" PRIu64
			" + %" PRIu64 ": %s\n", gets, r->hits, r->misses,
			gets == r->hits + r->misses ? "ok" : "FAILED");
	}
	fprintf(f, "result    %s\n", gb_result_ok(res) ? "ok" : "FAILED");
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* Percentiles at which "cdf" samples the histogram: [percentile, us]. */
static const double cdf_pcts[] = {
	0.1, 1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75,
	80, 85, 90, 92, 94, 95, 96, 97, 98, 99, 99.5, 99.9, 99.95, 99.99, 100,
};

/* <buckets>: also every non-empty bucket as [highest ns, count], so runs
 * can be merged exactly (within the histogram's 0.79%) afterwards. */
static void json_hist(FILE *f, const char *name, const struct gb_hist *h,
		      bool last, bool buckets)
{
	bool first = true;

	fprintf(f, "      \"%s\": {\"count\": %" PRIu64 ", \"mean\": %.3f, "
		"\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"p99_9\": %.3f, "
		"\"max\": %.3f,\n        \"cdf\": [", name, h->count,
		gb_hist_mean(h) / 1e3, gb_hist_percentile(h, 50) / 1e3,
		gb_hist_percentile(h, 90) / 1e3, gb_hist_percentile(h, 99) / 1e3,
		gb_hist_percentile(h, 99.9) / 1e3, h->max / 1e3);
	for (size_t i = 0; h->count && i < sizeof(cdf_pcts) / sizeof(cdf_pcts[0]);
	     i++)
		fprintf(f, "%s[%g, %.3f]", i ? ", " : "", cdf_pcts[i],
			gb_hist_percentile(h, cdf_pcts[i]) / 1e3);
	fprintf(f, "]");
	if (buckets) {
		fprintf(f, ",\n        \"buckets_ns\": [");
		for (unsigned i = 0; i < GB_HIST_BUCKETS; i++) {
			if (!h->bucket[i])
				continue;
			fprintf(f, "%s[%" PRIu64 ", %" PRIu64 "]",
				first ? "" : ", ", gb_hist_bucket_high(i),
				h->bucket[i]);
			first = false;
		}
		fprintf(f, "]");
	}
	fprintf(f, "}%s\n", last ? "" : ",");
}

/* <o>: the options when <st> is the measured phase, else NULL. */
static void json_counters(FILE *f, const struct gb_stats *st,
			  const struct gb_opts *o)
{
	uint64_t gets = gb_gets(st);

	fprintf(f, "    \"seconds\": %.6f,\n", st->seconds);
	fprintf(f, "    \"requests\": %" PRIu64 ",\n", gets + st->sets);
	fprintf(f, "    \"qps\": %.3f,\n", per_s(gets + st->sets, st->seconds));
	fprintf(f, "    \"gets\": %" PRIu64 ",\n", gets);
	fprintf(f, "    \"hits\": %" PRIu64 ",\n", st->hits);
	fprintf(f, "    \"misses\": %" PRIu64 ",\n", st->misses);
	fprintf(f, "    \"sets\": %" PRIu64 ",\n", st->sets);
	fprintf(f, "    \"errors\": %" PRIu64 ",\n",
		st->get_errors + st->set_errors);
	fprintf(f, "    \"get_errors\": %" PRIu64 ",\n", st->get_errors);
	fprintf(f, "    \"set_errors\": %" PRIu64 ",\n", st->set_errors);
	fprintf(f, "    \"lost\": %" PRIu64 ",\n",
		st->get_failed + st->set_failed);
	fprintf(f, "    \"verify_errors\": %" PRIu64 ",\n", st->verify_errors);
	fprintf(f, "    \"conn_failures\": %" PRIu64 ",\n", st->conn_failures);
	fprintf(f, "    \"reconnects\": %" PRIu64 ",\n", st->reconnects);
	fprintf(f, "    \"get_bytes\": %" PRIu64 ",\n", st->get_bytes);
	fprintf(f, "    \"set_bytes\": %" PRIu64 ",\n", st->set_bytes);
	fprintf(f, "    \"payload_mb_per_s\": %.3f,\n",
		gb_mbps(st->get_bytes + st->set_bytes, st->seconds));
	fprintf(f, "    \"get_mb_per_s\": %.3f,\n",
		gb_mbps(st->get_bytes, st->seconds));
	fprintf(f, "    \"payload_gbit_per_s\": %.6f,\n",
		gbit(st->get_bytes + st->set_bytes, st->seconds));
	fprintf(f, "    \"gets_eq_hits_plus_misses\": %s,\n",
		gets == st->hits + st->misses ? "true" : "false");
	if (o && o->arrivals != GB_ARRIVALS_NONE) {
		fprintf(f, "    \"open_loop\": {\"arrivals\": \"%s\", "
			"\"rate\": %g, \"scheduled\": %" PRIu64 ", "
			"\"issued\": %" PRIu64 ", \"unissued\": %" PRIu64 ", "
			"\"queued\": %" PRIu64 ", \"backlog_max\": %" PRIu64
			", \"offered_per_s\": %.3f,\n",
			gb_arrivals_names[o->arrivals], o->rate, st->scheduled,
			st->scheduled - st->unissued, st->unissued, st->queued,
			st->backlog_max, o->duration > 0 ?
			(double)st->scheduled / o->duration : 0);
		json_hist(f, "send_lag_us", &st->send_lag, true, false);
		fprintf(f, "    },\n");
	} else {
		fprintf(f, "    \"open_loop\": null,\n");
	}
	fprintf(f, "    \"latency_us\": {\n");
	if (o && o->proto == GB_PROTO_RDMA) {
		json_hist(f, "header", &st->ttfb, false, true);
		json_hist(f, "bulk_ready", &st->payload, false, true);
		json_hist(f, "complete", &st->complete, true, true);
	} else {
		json_hist(f, "ttfb", &st->ttfb, false, false);
		json_hist(f, "first_payload", &st->payload, false, false);
		json_hist(f, "complete", &st->complete, false, false);
		json_hist(f, "set_complete", &st->set_complete, true, false);
	}
	fprintf(f, "    }\n");
}

static void json_rdma(FILE *f, const struct gb_opts *o)
{
	const struct gb_rdma_opts *r = &o->rdma;

	if (o->proto != GB_PROTO_RDMA) {
		fprintf(f, "    \"rdma\": null,\n");
		return;
	}
	fprintf(f, "    \"rdma\": {\"host\": ");
	json_str(f, r->host);
	fprintf(f, ", \"port\": %u, \"transport\": \"%s\", "
		"\"emulated\": %s, \"window\": %" PRIu64 ", \"qps\": %u, "
		"\"requests\": %" PRIu64 ", \"mode\": \"%s\",\n"
		"      \"timestamps\": \"run.latency_us from each get's "
		"send: header: the VALUE line; bulk_ready: the last "
		"BULK_READY, sent after the object's RDMA writes completed "
		"(every byte in the window); complete: the END line\"},\n",
		r->port, gb_rdma_tp_names[r->transport],
		r->transport == GB_RDMA_TCP ? "true" : "false", r->window,
		r->qps, r->requests, rdma_mode(o));
}

static void json_params(FILE *f, const struct gb_opts *o)
{
	fprintf(f, "  \"params\": {\n    \"host\": ");
	json_str(f, o->host);
	fprintf(f, ",\n    \"port\": %u,\n", o->port);
	fprintf(f, "    \"proto\": \"%s\",\n", proto_name(o->proto));
	json_rdma(f, o);
	fprintf(f, "    \"http_prefix\": ");
	json_str(f, o->http_prefix);
	fprintf(f, ",\n    \"dist\": \"%s\",\n", gb_dist_name(o->dist));
	fprintf(f, "    \"size\": %" PRIu64 ",\n", o->size);
	fprintf(f, "    \"keys\": %" PRIu64 ",\n", o->keys);
	fprintf(f, "    \"hot_start\": %" PRIu64 ",\n", o->hot_start);
	fprintf(f, "    \"hot_keys\": %" PRIu64 ",\n", o->hot_keys);
	fprintf(f, "    \"key_dist\": \"%s\",\n",
		gb_key_dist_names[o->key_dist]);
	fprintf(f, "    \"zipf_theta\": %g,\n", o->zipf_theta);
	fprintf(f, "    \"seed\": %" PRIu64 ",\n", o->seed);
	fprintf(f, "    \"set_ratio\": %g,\n", o->set_ratio);
	fprintf(f, "    \"conns\": %u,\n", o->conns);
	fprintf(f, "    \"duration_s\": %g,\n", o->duration);
	fprintf(f, "    \"timeout_s\": %g,\n", o->timeout);
	fprintf(f, "    \"rate\": %g,\n", o->rate);
	fprintf(f, "    \"open_loop\": \"%s\",\n",
		gb_arrivals_names[o->arrivals]);
	fprintf(f, "    \"populate_only\": %s,\n", o->populate_only ? "true" : "false");
	fprintf(f, "    \"no_store\": %s,\n", o->no_store ? "true" : "false");
	fprintf(f, "    \"verify\": %s\n  },\n", o->verify ? "true" : "false");
}

int gb_report_json(const char *path, const struct gb_opts *o,
		   const struct gb_sizes *s, const struct gb_result *res)
{
	FILE *f = fopen(path, "w");
	int bad;

	if (!f)
		return -errno;
	fprintf(f, "{\n  \"version\": \"%s\",\n", GB_VERSION);
	json_params(f, o);
	fprintf(f, "  \"sizes\": {\"mean_bytes\": %.3f, \"mean_bytes_measured\": "
		"%.3f, \"dist_mean_bytes\": %.3f, \"min_bytes\": %" PRIu64
		", \"max_bytes\": %" PRIu64 ", \"total_bytes\": %" PRIu64 "},\n",
		s->mean, s->mean_hot, s->target, s->min, s->max, s->total);
	fprintf(f, "  \"populate\": ");
	if (res->populated) {
		fprintf(f, "{\n    \"keys\": %" PRIu64 ",\n", o->keys);
		json_counters(f, &res->populate, NULL);
		fprintf(f, "  },\n");
	} else {
		fprintf(f, "null,\n");
	}
	fprintf(f, "  \"run\": ");
	if (res->measured) {
		fprintf(f, "{\n");
		json_counters(f, &res->run, o);
		fprintf(f, "  },\n");
	} else {
		fprintf(f, "null,\n");
	}
	fprintf(f, "  \"ok\": %s\n}\n", gb_result_ok(res) ? "true" : "false");
	bad = ferror(f);
	if (fclose(f) || bad)
		return -EIO;
	return 0;
}
