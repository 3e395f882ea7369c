/* Just enough JSON to read a trace: a tree of values, parsed in one pass. */
#include "tracefile_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct weft__json_parser {
    const char *p, *start, *end;
    int depth;
} weft__json_parser;

#define WEFT__JSON_MAX_DEPTH 64

void weft__json_free(weft__json *j)
{
    for (size_t i = 0; i < j->n; i++) {
        weft__json_free(&j->items[i]);
        if (j->keys)
            weft__free(j->keys[i]);
    }
    weft__free(j->items);
    weft__free(j->keys);
    weft__free(j->string);
}

static int weft__json_fail(const weft__json_parser *ps, const char *what)
{
    int line = 1, col = 1;

    for (const char *c = ps->start; c < ps->p; c++, col++)
        if (*c == '\n')
            line++, col = 0;
    return weft__error(WEFT_EINVAL, "invalid JSON at line %d, column %d: %s",
                       line, col, what);
}

static void weft__json_space(weft__json_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
                               *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int weft__json_hex4(weft__json_parser *ps, uint32_t *out)
{
    uint32_t v = 0;

    if (ps->end - ps->p < 4)
        return weft__json_fail(ps, "short \\u escape");
    for (int i = 0; i < 4; i++) {
        char c = *ps->p++;

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            v |= (uint32_t)((c | 0x20) - 'a' + 10);
        else
            return weft__json_fail(ps, "bad \\u escape");
    }
    *out = v;
    return 0;
}

static size_t weft__utf8_put(char *d, uint32_t cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xc0 | cp >> 6);
        d[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xe0 | cp >> 12);
        d[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        d[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | cp >> 18);
    d[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    d[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    d[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string; ps->p is on the opening quote. Escapes never grow the text. */
static int weft__json_string_parse(weft__json_parser *ps, char **out)
{
    const char *q = ++ps->p;
    char *d, *buf;
    int rc;

    while (q < ps->end && *q != '"')
        q += (*q == '\\') ? 2 : 1;
    if (q >= ps->end)
        return weft__json_fail(ps, "unterminated string");
    if (!(buf = weft__malloc((size_t)(q - ps->p) + 1)))
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    d = buf;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        uint32_t cp = 0, lo = 0;

        if (c < 0x20) {
            ps->p--;
            weft__free(buf);
            return weft__json_fail(ps, "control character in string");
        }
        if (c != '\\') {
            *d++ = (char)c;
            continue;
        }
        switch (*ps->p++) {
        case '"':
            *d++ = '"';
            break;
        case '\\':
            *d++ = '\\';
            break;
        case '/':
            *d++ = '/';
            break;
        case 'b':
            *d++ = '\b';
            break;
        case 'f':
            *d++ = '\f';
            break;
        case 'n':
            *d++ = '\n';
            break;
        case 'r':
            *d++ = '\r';
            break;
        case 't':
            *d++ = '\t';
            break;
        case 'u':
            if ((rc = weft__json_hex4(ps, &cp)) < 0) {
                weft__free(buf);
                return rc;
            }
            /* a surrogate pair is one code point in 12 bytes of escape */
            if (cp >= 0xd800 && cp < 0xdc00 && ps->end - ps->p >= 6 &&
                ps->p[0] == '\\' && ps->p[1] == 'u') {
                ps->p += 2;
                if ((rc = weft__json_hex4(ps, &lo)) < 0) {
                    weft__free(buf);
                    return rc;
                }
                if (lo >= 0xdc00 && lo < 0xe000)
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else
                    cp = 0xfffd, ps->p -= 6;
            } else if (cp >= 0xd800 && cp < 0xe000) {
                cp = 0xfffd;
            }
            if (cp == 0)
                cp = 0xfffd; /* C strings end at NUL */
            d += weft__utf8_put(d, cp);
            break;
        default:
            ps->p--;
            weft__free(buf);
            return weft__json_fail(ps, "bad escape");
        }
    }
    ps->p++;
    *d = '\0';
    *out = buf;
    return 0;
}

static int weft__json_value(weft__json_parser *ps, weft__json *j);

static int weft__json_push(weft__json *j, weft__json **slot)
{
    int rc;

    if (j->n == j->cap) {
        size_t cap = j->cap;

        if ((rc = weft__grow(&j->items, &cap, j->n + 1, sizeof *j->items)) < 0)
            return rc;
        if (j->type == WEFT__JSON_OBJECT) {
            size_t kcap = j->cap;

            if ((rc = weft__grow(&j->keys, &kcap, j->n + 1, sizeof *j->keys)) <
                0)
                return rc;
        }
        j->cap = cap;
    }
    *slot = &j->items[j->n];
    memset(*slot, 0, sizeof **slot);
    return 0;
}

static int weft__json_container(weft__json_parser *ps, weft__json *j)
{
    char close = *ps->p == '[' ? ']' : '}';
    int rc;

    j->type = close == ']' ? WEFT__JSON_ARRAY : WEFT__JSON_OBJECT;
    if (++ps->depth > WEFT__JSON_MAX_DEPTH)
        return weft__json_fail(ps, "nested too deeply");
    ps->p++;
    weft__json_space(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        ps->depth--;
        return 0;
    }
    for (;;) {
        weft__json *item;
        char *key = NULL;

        weft__json_space(ps);
        if (j->type == WEFT__JSON_OBJECT) {
            if (ps->p >= ps->end || *ps->p != '"')
                return weft__json_fail(ps, "expected a key");
            if ((rc = weft__json_string_parse(ps, &key)) < 0)
                return rc;
            weft__json_space(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                weft__free(key);
                return weft__json_fail(ps, "expected ':'");
            }
            ps->p++;
        }
        if ((rc = weft__json_push(j, &item)) < 0) {
            weft__free(key);
            return rc;
        }
        if (j->keys)
            j->keys[j->n] = key;
        j->n++; /* counted now so that a failure below frees it */
        if ((rc = weft__json_value(ps, item)) < 0)
            return rc;
        weft__json_space(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            ps->depth--;
            return 0;
        }
        return weft__json_fail(ps, close == ']' ? "expected ',' or ']'"
                                                : "expected ',' or '}'");
    }
}

static int weft__json_number(weft__json_parser *ps, weft__json *j)
{
    const char *q = ps->p;
    char buf[64];
    char *endp;

    /* the JSON grammar, checked loosely; strtod does the conversion */
    if (q < ps->end && *q == '-')
        q++;
    if (q >= ps->end || *q < '0' || *q > '9')
        return weft__json_fail(ps, "unexpected character");
    while (q < ps->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' ||
                           *q == 'E' || *q == '+' || *q == '-'))
        q++;
    if ((size_t)(q - ps->p) >= sizeof buf)
        return weft__json_fail(ps, "number too long");
    memcpy(buf, ps->p, (size_t)(q - ps->p));
    buf[q - ps->p] = '\0';
    j->number = strtod(buf, &endp);
    if (*endp != '\0')
        return weft__json_fail(ps, "bad number");
    j->type = WEFT__JSON_NUMBER;
    ps->p = q;
    return 0;
}

static int weft__json_word(weft__json_parser *ps, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return weft__json_fail(ps, "unexpected word");
    ps->p += n;
    return 0;
}

static int weft__json_value(weft__json_parser *ps, weft__json *j)
{
    weft__json_space(ps);
    if (ps->p >= ps->end)
        return weft__json_fail(ps, "unexpected end of input");
    switch (*ps->p) {
    case '{':
    case '[':
        return weft__json_container(ps, j);
    case '"':
        j->type = WEFT__JSON_STRING;
        return weft__json_string_parse(ps, &j->string);
    case 't':
        j->type = WEFT__JSON_BOOL;
        j->number = 1;
        return weft__json_word(ps, "true");
    case 'f':
        j->type = WEFT__JSON_BOOL;
        return weft__json_word(ps, "false");
    case 'n':
        return weft__json_word(ps, "null");
    default:
        return weft__json_number(ps, j);
    }
}

int weft__json_parse(const char *text, size_t len, weft__json *root)
{
    weft__json_parser ps = {text, text, text + len, 0};
    int rc;

    if ((rc = weft__json_value(&ps, root)) < 0)
        return rc;
    weft__json_space(&ps);
    if (ps.p != ps.end)
        return weft__json_fail(&ps, "text after the JSON value");
    return 0;
}

const weft__json *weft__json_get(const weft__json *j, const char *key)
{
    if (!j || j->type != WEFT__JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < j->n; i++)
        if (strcmp(j->keys[i], key) == 0)
            return &j->items[i];
    return NULL;
}

const char *weft__json_str(const weft__json *j, const char *key)
{
    const weft__json *v = weft__json_get(j, key);

    return v && v->type == WEFT__JSON_STRING ? v->string : NULL;
}

double weft__json_num(const weft__json *j, const char *key, double dflt)
{
    const weft__json *v = weft__json_get(j, key);

    return v && v->type == WEFT__JSON_NUMBER ? v->number : dflt;
}
