#include "core/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_string(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void korch_strmap_init(korch_strmap *m) { memset(m, 0, sizeof *m); }

void korch_strmap_free(korch_strmap *m) {
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

static bool grow(korch_strmap *m) {
    size_t cap = m->capacity ? m->capacity * 2 : 64;
    const char **keys = calloc(cap, sizeof *keys);
    int *values = calloc(cap, sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return false;
    }
    for (size_t i = 0; i < m->capacity; i++) {
        if (!m->keys[i]) continue;
        size_t j = hash_string(m->keys[i]) & (cap - 1);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->capacity = cap;
    return true;
}

bool korch_strmap_put(korch_strmap *m, const char *key, int value) {
    if ((m->count + 1) * 2 > m->capacity && !grow(m)) return false;
    size_t j = hash_string(key) & (m->capacity - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) {
            m->values[j] = value;
            return true;
        }
        j = (j + 1) & (m->capacity - 1);
    }
    m->keys[j] = key;
    m->values[j] = value;
    m->count++;
    return true;
}

int korch_strmap_get(const korch_strmap *m, const char *key) {
    if (!m->capacity) return -1;
    size_t j = hash_string(key) & (m->capacity - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) return m->values[j];
        j = (j + 1) & (m->capacity - 1);
    }
    return -1;
}
