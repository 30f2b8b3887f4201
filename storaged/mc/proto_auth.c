/*
 * memcached's ASCII authentication (--auth-file, memcached's -Y): the file
 * holds "user:password" lines; a connection's first command must be
 *
 *   set <any key> <any flags> <any exptime> <bytes>\r\n<user> <password>\r\n
 *
 * answered STORED (then the connection is served as any other) or
 * CLIENT_ERROR authentication failure.  Until then every other line gets
 * CLIENT_ERROR unauthenticated (quit too, as memcached 1.6.18's).  The
 * nginx link never asks.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "proto_text.h"

#define AUTH_USERS_MAX	64
#define AUTH_REQ_MAX	16384	/* memcached's MAX_AUTH_REQ_LEN */

struct mc_auth {
	unsigned n;
	struct {
		char *user, *pass;
		size_t ulen, plen;
	} v[AUTH_USERS_MAX];
	char *text;			/* the file; users point into it */
};

void auth_free(struct mc_auth **ap)
{
	if (!*ap)
		return;
	free((*ap)->text);
	free(*ap);
	*ap = NULL;
}

/* Splits <a>->text into its users: 0, or -EINVAL with the reason. */
static int auth_parse(struct mc_auth *a, const char *path, char *err,
		      size_t errlen)
{
	char *line = a->text, *next;
	unsigned no = 0;

	for (; *line; line = next) {
		char *colon, *end = strchr(line, '\n');

		next = end ? end + 1 : line + strlen(line);
		no++;
		if (!end)
			end = next;
		if (end > line && end[-1] == '\r')
			end--;
		*end = '\0';
		if (!*line)
			continue;
		colon = strchr(line, ':');
		if (!colon || colon == line || end - line >= AUTH_MAX_ENTRY) {
			snprintf(err, errlen, "--auth-file %s: line %u is not user:password (%d bytes at most)",
				 path, no, AUTH_MAX_ENTRY - 1);
			return -EINVAL;
		}
		if (a->n == AUTH_USERS_MAX) {
			snprintf(err, errlen, "--auth-file %s: more than %d users",
				 path, AUTH_USERS_MAX);
			return -EINVAL;
		}
		a->v[a->n].user = line;
		a->v[a->n].ulen = colon - line;
		a->v[a->n].pass = colon + 1;
		a->v[a->n].plen = end - colon - 1;
		a->n++;
	}
	if (!a->n) {
		snprintf(err, errlen, "--auth-file %s: no user:password line in it",
			 path);
		return -EINVAL;
	}
	return 0;
}

int auth_load(struct mc_auth **ap, const char *path, char *err, size_t errlen)
{
	struct mc_auth *a;
	struct stat st;
	FILE *f;
	size_t got;
	int ret;

	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "--auth-file %s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > 1 << 20) {
		snprintf(err, errlen, "--auth-file %s: not a regular file of at most 1 MiB",
			 path);
		ret = -EINVAL;
		goto out_close;
	}
	if (st.st_mode & S_IROTH)
		log_warn("--auth-file %s is world-readable: anyone on this host can read its passwords (chmod o-r)",
			 path);
	a = calloc(1, sizeof(*a));
	if (!a || !(a->text = malloc(st.st_size + 1))) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out_free;
	}
	got = fread(a->text, 1, st.st_size, f);
	a->text[got] = '\0';
	if (ferror(f) || strlen(a->text) != got) {
		snprintf(err, errlen, "--auth-file %s: %s", path, ferror(f) ?
			 "read error" : "a NUL byte in it");
		ret = -EINVAL;
		goto out_free;
	}
	ret = auth_parse(a, path, err, errlen);
	if (ret < 0)
		goto out_free;
	fclose(f);
	*ap = a;
	return 0;

out_free:
	auth_free(&a);
out_close:
	fclose(f);
	return ret;
}

/* Equal bytes, in a time that does not tell where they differ. */
static bool same(const char *a, const char *b, size_t n)
{
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)b[i];
	return d == 0;
}

static bool auth_check(const struct mc_auth *a, const char *user, size_t ulen,
		       const char *pass, size_t plen)
{
	bool ok = false;

	for (unsigned i = 0; i < a->n; i++)
		ok |= ulen == a->v[i].ulen && plen == a->v[i].plen &&
		      same(user, a->v[i].user, ulen) &
		      same(pass, a->v[i].pass, plen);
	return ok;
}

/* The <i>th space-separated word of <line> (<len> bytes): its length, 0
 * when there is none. */
static size_t word(const char *line, size_t len, unsigned i, const char **w)
{
	size_t p = 0, n;

	for (;;) {
		while (p < len && line[p] == ' ')
			p++;
		for (n = 0; p + n < len && line[p + n] != ' '; n++)
			;
		if (!n || !i--)
			break;
		p += n;
	}
	*w = line + p;
	return n;
}

/* Whether <line> is "set <key> <flags> <exptime> <bytes> ...", <bytes> a
 * 32-bit number put in *<size>: the only line an unauthenticated
 * connection may send. */
static bool auth_set_size(const char *line, size_t len, unsigned long *size)
{
	const char *w;
	char num[12], *end;
	size_t n = word(line, len, 0, &w);

	if (n != 3 || memcmp(w, "set", 3))
		return false;
	n = word(line, len, 4, &w);
	if (!n || n >= sizeof(num) || !isdigit((unsigned char)*w))
		return false;
	memcpy(num, w, n);
	num[n] = '\0';
	errno = 0;
	*size = strtoul(num, &end, 10);
	return !*end && !errno && *size <= UINT32_MAX;
}

void proto_auth_line(struct conn *c, const char *line, size_t len)
{
	unsigned long size;

	if (!auth_set_size(line, len, &size)) {
		REPLY(c, "CLIENT_ERROR unauthenticated\r\n");
		return;
	}
	if (size > AUTH_REQ_MAX) {
		REPLY(c, "CLIENT_ERROR auth token too long\r\n");
		return;
	}
	if (size + 2 > sizeof(c->mc.auth_buf)) {
		/* longer than any user:password line: read and dropped */
		SRV_ADD(c->srv, auth_cmds, 1);
		SRV_ADD(c->srv, auth_errors, 1);
		REPLY(c, "CLIENT_ERROR authentication failure\r\n");
		c->mc.swallow = size + 2;
		c->mc.state = CONN_SWALLOW;
		return;
	}
	c->mc.auth_len = size + 2;
	c->mc.auth_got = 0;
	c->mc.state = CONN_AUTH;
}

void proto_auth_token(struct conn *c)
{
	const char *t = c->mc.auth_buf, *sp;
	size_t len = c->mc.auth_len - 2;

	c->mc.state = CONN_CMD;
	if (memcmp(t + len, "\r\n", 2)) {
		REPLY(c, "CLIENT_ERROR bad command line termination\r\n");
		return;
	}
	sp = memchr(t, ' ', len);
	if (!sp) {
		REPLY(c, "CLIENT_ERROR bad authentication token format\r\n");
		return;
	}
	SRV_ADD(c->srv, auth_cmds, 1);
	if (!auth_check(c->srv->auth, t, sp - t, sp + 1, len - (sp + 1 - t))) {
		SRV_ADD(c->srv, auth_errors, 1);
		REPLY(c, "CLIENT_ERROR authentication failure\r\n");
		return;
	}
	c->mc.authenticated = true;
	REPLY(c, "STORED\r\n");
}
