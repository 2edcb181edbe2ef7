/* Compiled functions found again by their code, within one process.
 *
 * The tuner compiles every schedule it times; minutes later kernel
 * verification and the plan check build the chosen kernels again
 * (korch_cgen_build), and the compiler ran for seconds on code it had
 * already compiled (2-9 s of a cold `korch optimize` on the zoo;
 * bench/verify/RESULTS.md). The on-disk object cache cannot help: it is keyed
 * by a whole unit's source, and the tuner's units hold other functions.
 *
 * So every function compiled in a unit is recorded with its library. The
 * key is the function's full text (cg_emit_kernel writes it self-contained:
 * it uses nothing of its unit but the prelude, which is fixed per korch
 * build) together with the compiler and every flag; a lookup compares the
 * whole text, never only a hash, so it can only return a function compiled
 * from exactly the same code with exactly the same command. The text's hash
 * only selects the candidates.
 *
 * Bounded: at most REGISTRY_CAP functions and REGISTRY_BYTES of text; the
 * oldest entries are dropped first (releasing their library). A miss only
 * costs a compile. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/cgen.h"

enum { REGISTRY_CAP = 8192 };
#define REGISTRY_BYTES ((size_t)64 << 20)

typedef struct entry {
    char hash[33];
    char name[64];
    char *text; /* function text + compiler and flags; NULL: free slot */
    size_t len;
    cg_library *lib; /* one reference held */
} entry;

static entry table[REGISTRY_CAP];
static int next_slot; /* ring: the oldest entry is overwritten first */
static size_t total_bytes;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The key text: the function, then the compiler and its flags (as compile.c
 * appends them to a unit's object-cache key). Caller frees. */
static char *key_text(const char *fn, size_t len, const korch_profile_options *o, size_t *out_len) {
    char tail[1024];
    int extra = snprintf(tail, sizeof tail, "\n/* %s %s */", cg_compiler(o), cg_compiler_flags(o));
    if (extra < 0 || (size_t)extra >= sizeof tail) return NULL;
    char *t = malloc(len + (size_t)extra + 1);
    if (!t) return NULL;
    memcpy(t, fn, len);
    memcpy(t + len, tail, (size_t)extra + 1);
    *out_len = len + (size_t)extra;
    return t;
}

static void drop(entry *e) {
    if (!e->text) return;
    total_bytes -= e->len;
    free(e->text);
    cg_library_release(e->lib);
    memset(e, 0, sizeof *e);
}

void cg_registry_add(const char *fn, size_t len, const korch_profile_options *o, const char *name, cg_library *lib) {
    if (!fn || !len || !lib || !name || strlen(name) >= sizeof table[0].name) return;
    size_t klen = 0;
    char *text = key_text(fn, len, o, &klen);
    if (!text) return; /* only a cache */
    char hash[33];
    cg_hash_hex(text, klen, hash);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < REGISTRY_CAP; i++) /* already known: keep the first */
        if (table[i].text && strcmp(table[i].hash, hash) == 0 && table[i].len == klen &&
            memcmp(table[i].text, text, klen) == 0 && strcmp(table[i].name, name) == 0) {
            pthread_mutex_unlock(&lock);
            free(text);
            return;
        }
    while (total_bytes + klen > REGISTRY_BYTES && total_bytes > 0) { /* the oldest first */
        drop(&table[next_slot]);
        next_slot = (next_slot + 1) % REGISTRY_CAP;
    }
    entry *e = &table[next_slot];
    drop(e);
    next_slot = (next_slot + 1) % REGISTRY_CAP;
    memcpy(e->hash, hash, sizeof hash);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->text = text;
    e->len = klen;
    e->lib = lib;
    cg_library_retain(lib);
    total_bytes += klen;
    pthread_mutex_unlock(&lock);
}

cg_library *cg_registry_find(const char *fn, size_t len, const korch_profile_options *o, const char *name) {
    if (!fn || !len || !name) return NULL;
    size_t klen = 0;
    char *text = key_text(fn, len, o, &klen);
    if (!text) return NULL;
    char hash[33];
    cg_hash_hex(text, klen, hash);
    cg_library *found = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < REGISTRY_CAP && !found; i++) {
        const entry *e = &table[i];
        if (e->text && strcmp(e->hash, hash) == 0 && e->len == klen && memcmp(e->text, text, klen) == 0 &&
            strcmp(e->name, name) == 0 && cg_library_symbol(e->lib, name)) {
            found = e->lib;
            cg_library_retain(found);
        }
    }
    pthread_mutex_unlock(&lock);
    free(text);
    return found;
}

void cg_registry_clear(void) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < REGISTRY_CAP; i++) drop(&table[i]);
    next_slot = 0;
    pthread_mutex_unlock(&lock);
}
