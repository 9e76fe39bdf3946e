/*
 * zv_filter.c — which paths a walk leaves out: rsync-style patterns and a --files-from list.
 *
 * A filter is built once, then only read, so any number of walks (and their threads) may
 * share it.  The decision for a path depends on nothing but that path and whether it is a
 * directory, so the walker can prune an excluded directory without entering it and Python
 * can apply the very same decision to a manifest's entries (zverify.filters).
 *
 * Patterns follow rsync's rules: '*' and '?' and [classes] stop at '/', '**' crosses it, a
 * leading '/' anchors at the root, a trailing '/' matches directories only; a pattern with
 * no '/' (but a trailing one) and no '**' is matched against the last component only, any
 * other against the whole path or any of its tails that start after a '/'.  Matching is a
 * dynamic programme over (pattern token, path byte): linear memory and O(tokens x bytes)
 * time whatever the pattern, so no pattern can make the walk backtrack exponentially.
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
    int dir_only;
    int anchored;
    int whole_path;       /* matched against the path, not only its last component */
} rule;

struct zv_filter {
    rule *rules;
    size_t nrules, rules_cap;
    char **listed;        /* --files-from, sorted once zv_filter_seal() ran */
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
    free(f);
}

/* [...] at p (just after '['): fills set, returns the index after ']' or 0 if unterminated. */
static size_t parse_class(const char *p, size_t len, size_t i, unsigned char *set)
{
    int negate = 0;
    if (i < len && (p[i] == '!' || p[i] == '^')) {
        negate = 1;
        i++;
    }
    size_t first = i;
    while (i < len && (p[i] != ']' || i == first)) {
        unsigned char lo = (unsigned char)p[i];
        if (lo == '\\' && i + 1 < len)
            lo = (unsigned char)p[++i];
        unsigned char hi = lo;
        if (i + 2 < len && p[i + 1] == '-' && p[i + 2] != ']') {
            hi = (unsigned char)p[i + 2];
            if (hi == '\\' && i + 3 < len)
                hi = (unsigned char)p[++i + 2];
            i += 2;
        }
        for (unsigned c = lo; c <= hi; c++)
            set[c] = 1;
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

/* Tokens of p[0..len); ZV_EINVAL for a trailing '\' or an unterminated '['. */
static int tokenize(const char *p, size_t len, rule *r)
{
    r->tokens = calloc(len ? len : 1, sizeof *r->tokens);
    if (!r->tokens)
        return ZV_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        token *t = &r->tokens[n++];
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
            if (!(t->set = calloc(256, 1))) {
                r->ntokens = n;
                return ZV_ENOMEM;
            }
            size_t next = parse_class(p, len, i + 1, t->set);
            if (!next) {
                r->ntokens = n;
                return ZV_EINVAL;
            }
            i = next;
        } else if (c == '\\') {
            if (i + 1 == len) {
                r->ntokens = n;
                return ZV_EINVAL;
            }
            t->kind = TOK_BYTE;
            t->byte = (unsigned char)p[i + 1];
            i += 2;
        } else {
            t->kind = TOK_BYTE;
            t->byte = (unsigned char)c;
            i++;
        }
    }
    r->ntokens = n;
    return ZV_OK;
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
    if (pattern[0] == '/') {
        r.anchored = 1;
        pattern++;
        len--;
    }
    if (!len)
        return ZV_EINVAL; /* "/" alone names the root, which is never filtered */
    r.whole_path = r.anchored || memchr(pattern, '/', len) != NULL ||
                   memmem(pattern, len, "**", 2) != NULL;
    int rc = tokenize(pattern, len, &r);
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

void zv_filter_seal(zv_filter *f)
{
    if (f->nlisted > 1)
        qsort(f->listed, f->nlisted, sizeof *f->listed, cmp_str);
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

static int is_listed(const zv_filter *f, const char *path, size_t len)
{
    size_t i = lower_bound(f, path, len, '\0');
    return i < f->nlisted && cmp_key(f->listed[i], path, len, '\0') == 0;
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
    return tokens_match(r, (const unsigned char *)s, n, r->whole_path && !r->anchored);
}

int zv_filter_excludes(const zv_filter *f, const char *path, size_t len, int is_dir)
{
    if (!len)
        return 0; /* the root is always compared */
    if (f->has_list && !kept_by_list(f, path, len))
        return 1;
    for (int pass = 1; pass >= 0; pass--) { /* every include before any exclude */
        for (size_t i = 0; i < f->nrules; i++) {
            if (f->rules[i].include != pass)
                continue;
            int hit = rule_matches(&f->rules[i], path, len, is_dir);
            if (hit < 0)
                return -1;
            if (hit)
                return !pass;
        }
    }
    return 0;
}
