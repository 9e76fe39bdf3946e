/*
 * zv_filter.c — which paths a walk leaves out: rsync's include/exclude rules and a
 * --files-from list.
 *
 * A filter is built once, then only read, so any number of walks (and their threads) may
 * share it.  The decision for a path depends on nothing but that path and whether it is a
 * directory, so the walker can prune an excluded directory without entering it and Python
 * can apply the very same decision to a manifest's entries (zverify.filters).
 *
 * The rules are rsync's (man rsync, PATTERN MATCHING RULES), checked against rsync itself by
 * tests/compare/test_filters_rsync.py: the first rule that matches decides.  A pattern with
 * none of '*', '?', '[' is a literal string (a backslash in it is a backslash).  Otherwise
 * '*' and '?' and [classes] stop at '/', '**' crosses it, '\' quotes the next byte.  A
 * pattern with no '/' (but a trailing one) and no '**' is matched against the last
 * component; any other against the whole path: from its start when anchored by a leading
 * '/' or when it starts with '**' (then as if the path began with '/'), else from its start
 * or after any '/'.  A trailing '/' matches directories only; a trailing '***' also matches
 * the directory itself (as if the directory's path ended in '/').  Matching is a dynamic
 * programme over (pattern token, path byte): O(tokens x bytes) whatever the pattern, so no
 * pattern can make the walk backtrack exponentially.
 */
#define _GNU_SOURCE
#include "zvcore.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum tok_kind { TOK_BYTE, TOK_ONE, TOK_STAR, TOK_DSTAR, TOK_CLASS };

typedef struct token {
    int kind;
    unsigned char byte;   /* TOK_BYTE */
    unsigned char *set;   /* TOK_CLASS: 256 flags */
} token;

typedef struct rule {
    token *tokens;
    size_t ntokens;
    int include;
    int dir_only;         /* a trailing '/' */
    int anchored;         /* a leading '/' */
    int whole_path;       /* a '/' inside or a '**': the path, not its last component */
    int any_start;        /* may start after any '/' of the path, not only at its start */
    int slash_before;     /* starts with '**': match as if the path began with '/' */
    int dir_slash_after;  /* ends with '***': a directory's path is matched as "path/" */
} rule;

struct zv_filter {
    rule *rules;
    size_t nrules, rules_cap;
    char **listed;        /* --files-from, sorted and unique once zv_filter_seal() ran */
    unsigned char *seen;  /* per listed path: a lookup met it (set by readers, atomically) */
    size_t nlisted, listed_cap;
    int has_list;         /* a --files-from was given, even an empty one: keep only its paths */
};

int zv_filter_new(zv_filter **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? ZV_OK : ZV_ENOMEM;
}

static void free_rule(rule *r)
{
    for (size_t t = 0; t < r->ntokens; t++)
        free(r->tokens[t].set);
    free(r->tokens);
}

void zv_filter_free(zv_filter *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nrules; i++)
        free_rule(&f->rules[i]);
    for (size_t i = 0; i < f->nlisted; i++)
        free(f->listed[i]);
    free(f->rules);
    free(f->listed);
    free(f->seen);
    free(f);
}

/* rsync's (and POSIX's) [:name:] classes, ASCII only as in the C locale. */
static int in_named_class(const char *name, size_t len, unsigned c)
{
    static const char *const names[] = {"alnum", "alpha", "blank", "cntrl", "digit", "graph",
                                        "lower", "print", "punct", "space", "upper", "xdigit"};
    int lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z', digit = c >= '0' && c <= '9';
    int print = c >= 0x20 && c < 0x7f;
    int hits[] = {lower || upper || digit, lower || upper, c == ' ' || c == '\t',
                  c < 0x20 || c == 0x7f, digit, print && c != ' ', lower, print,
                  print && c != ' ' && !(lower || upper || digit),
                  c == ' ' || (c >= '\t' && c <= '\r'), upper,
                  digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
            return hits[i];
    return -1;
}

/*
 * [...] at p[i] (just after '['), read as rsync's wildmatch reads it: the first member may
 * be ']', "a-z" is a range, "\x" quotes x, "[:alpha:]" a named class.  Fills set and
 * returns the index after ']', or 0 when unterminated, a class name is unknown, or a '/'
 * is written inside: rsync counts every '/' of a pattern as a path separator (`[!/]` must
 * then match two components, and never matches), which this matcher cannot follow, so
 * such a pattern is refused rather than read another way.
 */
static size_t parse_class(const char *p, size_t len, size_t i, unsigned char *set)
{
    int negate = 0;
    if (i < len && (p[i] == '!' || p[i] == '^')) {
        negate = 1;
        i++;
    }
    int prev = -1; /* the member just read, which a '-' may extend to a range */
    size_t first = i;
    while (i < len && (p[i] != ']' || i == first)) {
        unsigned char c = (unsigned char)p[i];
        if (c == '/')
            return 0;
        if (c == '\\') {
            if (++i >= len || p[i] == '/')
                return 0;
            c = (unsigned char)p[i];
            set[c] = 1;
            prev = c;
        } else if (c == '-' && prev >= 0 && i + 1 < len && p[i + 1] != ']') {
            unsigned char hi = (unsigned char)p[++i];
            if (hi == '\\') {
                if (++i >= len)
                    return 0;
                hi = (unsigned char)p[i];
            }
            if (hi == '/')
                return 0;
            for (unsigned x = (unsigned)prev; x <= hi; x++)
                set[x] = 1;
            prev = -1;
        } else if (c == '[' && i + 1 < len && p[i + 1] == ':') {
            const char *close = memchr(p + i + 2, ']', len - (i + 2));
            if (!close)
                return 0;
            size_t name = i + 2, end = (size_t)(close - p);
            if (end < name + 1 || p[end - 1] != ':') {
                set['['] = 1; /* no ":]": a plain '[' member */
                prev = '[';
            } else {
                for (unsigned x = 0; x < 256; x++) {
                    int hit = in_named_class(p + name, end - 1 - name, x);
                    if (hit < 0)
                        return 0;
                    set[x] |= (unsigned char)hit;
                }
                prev = -1;
                i = end;
            }
        } else {
            set[c] = 1;
            prev = c;
        }
        i++;
    }
    if (i >= len)
        return 0;
    if (negate)
        for (unsigned c = 0; c < 256; c++)
            set[c] = !set[c];
    set['/'] = 0; /* a class, like '?', never matches the separator */
    return i + 1;
}

/* Tokens of a wildcard pattern p[0..len); ZV_EINVAL for a trailing '\' or a bad class. */
static int tokenize(const char *p, size_t len, rule *r)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        token *t = &r->tokens[n++];
        r->ntokens = n;
        char c = p[i];
        if (c == '*' && i + 1 < len && p[i + 1] == '*') {
            t->kind = TOK_DSTAR;
            while (i < len && p[i] == '*')
                i++;
        } else if (c == '*') {
            t->kind = TOK_STAR;
            i++;
        } else if (c == '?') {
            t->kind = TOK_ONE;
            i++;
        } else if (c == '[') {
            t->kind = TOK_CLASS;
            if (!(t->set = calloc(256, 1)))
                return ZV_ENOMEM;
            if (!(i = parse_class(p, len, i + 1, t->set)))
                return ZV_EINVAL;
        } else if (c == '\\') {
            if (i + 1 == len)
                return ZV_EINVAL;
            t->kind = TOK_BYTE;
            t->byte = (unsigned char)p[i + 1];
            i += 2;
        } else {
            t->kind = TOK_BYTE;
            t->byte = (unsigned char)c;
            i++;
        }
    }
    return ZV_OK;
}

/* A pattern with no wildcard is a string, backslashes and all (rsync only unescapes a
 * pattern that has a wildcard). */
static void literal_tokens(const char *p, size_t len, rule *r)
{
    for (size_t i = 0; i < len; i++)
        r->tokens[i] = (token){.kind = TOK_BYTE, .byte = (unsigned char)p[i]};
    r->ntokens = len;
}

static int ends_with_3_stars(const char *p, size_t len)
{
    return len >= 3 && memcmp(p + len - 3, "***", 3) == 0;
}

int zv_filter_add_rule(zv_filter *f, int include, const char *pattern, size_t len)
{
    if (!len)
        return ZV_EINVAL;
    if (f->nrules == f->rules_cap) {
        size_t cap = f->rules_cap ? f->rules_cap * 2 : 8;
        rule *grown = realloc(f->rules, cap * sizeof *grown);
        if (!grown)
            return ZV_ENOMEM;
        f->rules = grown;
        f->rules_cap = cap;
    }
    rule r = {.include = include};
    if (len > 1 && pattern[len - 1] == '/') {
        r.dir_only = 1;
        len--;
    }
    if (len == 1 && pattern[0] == '/')
        return ZV_EINVAL; /* "/" alone names the root, which is never filtered */
    int wild = memchr(pattern, '*', len) || memchr(pattern, '?', len) || memchr(pattern, '[', len);
    int wild2 = wild && memmem(pattern, len, "**", 2) != NULL;
    r.anchored = pattern[0] == '/';
    r.slash_before = wild2 && len >= 2 && pattern[0] == '*' && pattern[1] == '*';
    r.dir_slash_after = wild2 && ends_with_3_stars(pattern, len);
    r.whole_path = wild2 || memchr(pattern, '/', len) != NULL;
    r.any_start = r.whole_path && !r.anchored && !r.slash_before;
    if (r.anchored) {
        pattern++;
        len--;
    }
    if (!(r.tokens = calloc(len ? len : 1, sizeof *r.tokens)))
        return ZV_ENOMEM;
    int rc = ZV_OK;
    if (wild)
        rc = tokenize(pattern, len, &r);
    else
        literal_tokens(pattern, len, &r);
    if (rc != ZV_OK) {
        free_rule(&r);
        return rc;
    }
    f->rules[f->nrules++] = r;
    return ZV_OK;
}

int zv_filter_add_listed(zv_filter *f, const char *path, size_t len)
{
    if (!len || memchr(path, '\0', len))
        return ZV_EINVAL;
    if (f->nlisted == f->listed_cap) {
        size_t cap = f->listed_cap ? f->listed_cap * 2 : 64;
        char **grown = realloc(f->listed, cap * sizeof *grown);
        if (!grown)
            return ZV_ENOMEM;
        f->listed = grown;
        f->listed_cap = cap;
    }
    char *copy = strndup(path, len);
    if (!copy)
        return ZV_ENOMEM;
    f->listed[f->nlisted++] = copy;
    return ZV_OK;
}

void zv_filter_keep_listed_only(zv_filter *f)
{
    f->has_list = 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int zv_filter_seal(zv_filter *f)
{
    if (f->nlisted > 1)
        qsort(f->listed, f->nlisted, sizeof *f->listed, cmp_str);
    size_t kept = 0; /* a path listed twice is one path, found or not */
    for (size_t i = 0; i < f->nlisted; i++) {
        if (kept && strcmp(f->listed[kept - 1], f->listed[i]) == 0)
            free(f->listed[i]);
        else
            f->listed[kept++] = f->listed[i];
    }
    f->nlisted = kept;
    if (kept && !(f->seen = calloc(kept, 1)))
        return ZV_ENOMEM;
    return ZV_OK;
}

/* strcmp order of s against key[0..len) followed by tail ('\0': key alone). */
static int cmp_key(const char *s, const char *key, size_t len, char tail)
{
    int c = strncmp(s, key, len);
    if (c != 0)
        return c;
    return (int)(unsigned char)s[len] - (int)(unsigned char)tail;
}

/* Index of the first listed path not below key+tail in strcmp order. */
static size_t lower_bound(const zv_filter *f, const char *key, size_t len, char tail)
{
    size_t lo = 0, hi = f->nlisted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_key(f->listed[mid], key, len, tail) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The index of path among the listed paths, or nlisted. */
static size_t listed_index(const zv_filter *f, const char *path, size_t len)
{
    size_t i = lower_bound(f, path, len, '\0');
    return i < f->nlisted && cmp_key(f->listed[i], path, len, '\0') == 0 ? i : f->nlisted;
}

static int is_listed(const zv_filter *f, const char *path, size_t len)
{
    return listed_index(f, path, len) < f->nlisted;
}

/* Kept by the list: listed itself, below a listed path, or on the way to one. */
static int kept_by_list(const zv_filter *f, const char *path, size_t len)
{
    for (size_t k = 1; k <= len; k++)
        if ((k == len || path[k] == '/') && is_listed(f, path, k))
            return 1;
    /* an ancestor of a listed path: the paths starting with "path/" sort together */
    size_t i = lower_bound(f, path, len, '/');
    return i < f->nlisted && strncmp(f->listed[i], path, len) == 0 && f->listed[i][len] == '/';
}

void zv_filter_note_seen(const zv_filter *f, const char *path, size_t len)
{
    size_t i = listed_index(f, path, len);
    if (i < f->nlisted)
        __atomic_store_n(&f->seen[i], 1, __ATOMIC_RELAXED); /* walks share f: any order */
}

size_t zv_filter_nlisted(const zv_filter *f)
{
    return f->nlisted;
}

const char *zv_filter_listed(const zv_filter *f, size_t i, int *seen)
{
    *seen = __atomic_load_n(&f->seen[i], __ATOMIC_RELAXED);
    return f->listed[i];
}

/*
 * Does r's pattern match s[0..n)?  One row of booleans per token: row[j] is true when the
 * tokens so far match s[0..j).  start_anywhere lets the match begin after any '/'.
 */
static int tokens_match(const rule *r, const unsigned char *s, size_t n, int start_anywhere)
{
    unsigned char local[2 * 512];
    unsigned char *heap = n < 512 ? NULL : malloc(2 * (n + 1));
    unsigned char *row = n < 512 ? local : heap;
    if (!row)
        return -1;
    unsigned char *next = row + n + 1;
    for (size_t j = 0; j <= n; j++)
        row[j] = j == 0 || (start_anywhere && s[j - 1] == '/');
    for (size_t t = 0; t < r->ntokens; t++) {
        const token *tk = &r->tokens[t];
        next[0] = (tk->kind == TOK_STAR || tk->kind == TOK_DSTAR) && row[0];
        for (size_t j = 1; j <= n; j++) {
            unsigned char c = s[j - 1];
            switch (tk->kind) {
            case TOK_BYTE: next[j] = row[j - 1] && c == tk->byte; break;
            case TOK_ONE: next[j] = row[j - 1] && c != '/'; break;
            case TOK_CLASS: next[j] = row[j - 1] && tk->set[c]; break;
            case TOK_STAR: next[j] = row[j] || (next[j - 1] && c != '/'); break;
            default: next[j] = row[j] || next[j - 1]; break; /* TOK_DSTAR */
            }
        }
        unsigned char *swap = row;
        row = next;
        next = swap;
    }
    int hit = row[n];
    free(heap);
    return hit;
}

/*
 * Does r match path?  Its subject is the last component or the whole path, with a '/'
 * before it for a pattern starting with '**' and after it for a directory and a pattern
 * ending with '***', as rsync builds it.
 */
static int rule_matches(const rule *r, const char *path, size_t len, int is_dir)
{
    if (r->dir_only && !is_dir)
        return 0;
    const char *s = path;
    size_t n = len;
    if (!r->whole_path) {
        const char *slash = memrchr(path, '/', len);
        if (slash) {
            s = slash + 1;
            n = len - (size_t)(s - path);
        }
    }
    int before = r->slash_before, after = r->dir_slash_after && is_dir;
    if (!before && !after)
        return tokens_match(r, (const unsigned char *)s, n, r->any_start);
    unsigned char local[512];
    size_t total = n + (size_t)before + (size_t)after;
    unsigned char *subject = total <= sizeof local ? local : malloc(total);
    if (!subject)
        return -1;
    subject[0] = '/';
    memcpy(subject + before, s, n);
    subject[total - 1] = after ? '/' : subject[total - 1];
    int hit = tokens_match(r, subject, total, r->any_start);
    if (subject != local)
        free(subject);
    return hit;
}

int zv_filter_excludes(const zv_filter *f, const char *path, size_t len, int is_dir)
{
    if (!len)
        return 0; /* the root is always compared */
    if (f->has_list) {
        zv_filter_note_seen(f, path, len);
        if (!kept_by_list(f, path, len))
            return 1;
    }
    for (size_t i = 0; i < f->nrules; i++) { /* the first rule that matches decides */
        int hit = rule_matches(&f->rules[i], path, len, is_dir);
        if (hit)
            return hit < 0 ? -1 : !f->rules[i].include;
    }
    return 0;
}
