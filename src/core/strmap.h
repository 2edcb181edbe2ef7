/* A string -> int map (open addressing). Keys are borrowed, not copied: they
 * must outlive the map (graph value names do). */
#ifndef KORCH_CORE_STRMAP_H
#define KORCH_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct korch_strmap {
    const char **keys;
    int *values;
    size_t capacity; /* power of two */
    size_t count;
} korch_strmap;

void korch_strmap_init(korch_strmap *m);
void korch_strmap_free(korch_strmap *m);
/* Returns false on allocation failure. Overwrites an existing key. */
bool korch_strmap_put(korch_strmap *m, const char *key, int value);
/* Returns the value, or -1 when absent. */
int korch_strmap_get(const korch_strmap *m, const char *key);

#endif
