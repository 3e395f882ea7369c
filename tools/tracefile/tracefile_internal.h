/*
 * What the files of weft_tracefile share: a JSON tree (just enough JSON to
 * read a trace).
 */
#ifndef WEFT_TRACEFILE_INTERNAL_H
#define WEFT_TRACEFILE_INTERNAL_H

#include "tracefile.h"

typedef enum weft__json_type {
    WEFT__JSON_NULL,
    WEFT__JSON_BOOL,
    WEFT__JSON_NUMBER,
    WEFT__JSON_STRING,
    WEFT__JSON_ARRAY,
    WEFT__JSON_OBJECT
} weft__json_type;

typedef struct weft__json {
    weft__json_type type;
    double number; /* also the value of a bool */
    char *string;  /* STRING */
    size_t n, cap; /* ARRAY and OBJECT */
    struct weft__json *items;
    char **keys; /* OBJECT: keys[i] names items[i] */
} weft__json;

/*
 * Parse the len bytes at text, which hold one JSON value and nothing else,
 * into *root (zeroed by the caller). Errors give the line and column. On
 * failure *root holds what was parsed so far: free it either way.
 */
int weft__json_parse(const char *text, size_t len, weft__json *root);
void weft__json_free(weft__json *j);
/* The member key of object j; NULL if j is not an object or lacks it. */
const weft__json *weft__json_get(const weft__json *j, const char *key);
/* A string member, or NULL when absent or not a string. */
const char *weft__json_str(const weft__json *j, const char *key);
/* A number member, or dflt when absent or not a number. */
double weft__json_num(const weft__json *j, const char *key, double dflt);

#endif /* WEFT_TRACEFILE_INTERNAL_H */
