/* Compiled functions found again by their code, across processes.
 *
 * `korch optimize` builds the kernels it verifies and the plan it checks
 * from functions the tuner compiled (registry.c), so it never compiles the
 * one unit `korch run` would compile for the plan: the on-disk object cache
 * (compile.c) is keyed by a whole unit's source, and the tuner's units hold
 * other functions. The first `korch run` of a fresh plan then ran the
 * compiler for 2-9 s on code compiled minutes earlier.
 *
 * So korch_cgen_build leaves a link in the kernel cache for every function
 * it resolves: functions/<hash>.link names the cached object that holds the
 * function and its symbol, followed by the whole key text, which is the
 * prelude, the function's text, the compiler and every flag (the prelude
 * belongs to the key here: in one process it is fixed, on disk it may come
 * from another korch build). A lookup compares the whole key text, never
 * only the hash, before it loads the object, so it can only return a
 * function compiled from exactly the same code with exactly the same
 * command, in the same object the compiler wrote. A link that is missing,
 * damaged, or names an object no longer there is a miss, and a miss only
 * costs a compile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cgen/cgen.h"

korch_status cg_library_open(const char *path, cg_library **out); /* loader.c */

#define LINK_MAGIC "korch cgen function link 1\n"
/* a link's key text is a prelude and one function: far below this */
#define LINK_MAX_BYTES ((long)16 << 20)

/* The key text (prelude, function, compiler and flags); caller frees. */
static char *key_text(const char *fn, size_t len, const korch_profile_options *o, size_t *out_len) {
    cg_buf b = {0};
    cg_emit_prelude(&b);
    cg_buf_append(&b, fn, len);
    cg_buf_printf(&b, "\n/* %s %s */", cg_compiler(o), cg_compiler_flags(o));
    if (b.oom) {
        cg_buf_free(&b);
        return NULL;
    }
    *out_len = b.len;
    return b.data;
}

/* <cache>/functions/<hash of the key>.link, creating the folder when asked;
 * false when there is no usable cache directory. */
static bool link_path(const korch_profile_options *o, const char *key, size_t klen, bool create, char *dir,
                      size_t dir_size, char *path, size_t path_size) {
    if (cg_cache_dir(o ? o->cache_dir : NULL, dir, dir_size) != KORCH_OK) {
        korch_error_clear();
        return false;
    }
    char hash[33];
    cg_hash_hex(key, klen, hash);
    char sub[4200];
    if (snprintf(sub, sizeof sub, "%s/functions", dir) >= (int)sizeof sub) return false;
    if (create && mkdir(sub, 0755) != 0 && errno != EEXIST) return false;
    return snprintf(path, path_size, "%s/%s.link", sub, hash) < (int)path_size;
}

/* Reads a whole link file; caller frees. */
static char *read_link(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *data = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size > 0 && size <= LINK_MAX_BYTES && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)size + 1))) {
        if (fread(data, 1, (size_t)size, f) != (size_t)size) {
            free(data);
            data = NULL;
        } else {
            data[size] = '\0';
            *n = (size_t)size;
        }
    }
    fclose(f);
    return data;
}

/* One line of a link at *at (advanced past its newline) into buf. */
static bool next_line(const char *data, size_t n, size_t *at, char *buf, size_t size) {
    const char *nl = memchr(data + *at, '\n', n - *at);
    if (!nl) return false;
    size_t len = (size_t)(nl - (data + *at));
    if (len == 0 || len >= size) return false;
    memcpy(buf, data + *at, len);
    buf[len] = '\0';
    *at += len + 1;
    return true;
}

/* The object a link names when it is a link for exactly this key and
 * symbol: its file name inside dir, in object (size 4200). */
static bool link_matches(const char *data, size_t n, const char *key, size_t klen, const char *name,
                         const char *dir, char *object) {
    size_t at = strlen(LINK_MAGIC);
    char file[128], sym[128], count[32];
    if (n < at || memcmp(data, LINK_MAGIC, at) != 0) return false;
    if (!next_line(data, n, &at, file, sizeof file) || !next_line(data, n, &at, sym, sizeof sym) ||
        !next_line(data, n, &at, count, sizeof count))
        return false;
    /* an object of this cache directory, named as compile.c names them */
    size_t fl = strlen(file);
    if (strchr(file, '/') || file[0] == '.' || fl < 4 || strcmp(file + fl - 3, ".so") != 0) return false;
    char *end = NULL;
    unsigned long long len = strtoull(count, &end, 10);
    if (*end || len != klen || n - at != klen || memcmp(data + at, key, klen) != 0) return false;
    if (strcmp(sym, name) != 0) return false;
    return snprintf(object, 4200, "%s/%s", dir, file) < 4200;
}

cg_library *cg_link_find(const char *fn, size_t len, const korch_profile_options *o, const char *name) {
    if (!fn || !len || !name) return NULL;
    size_t klen = 0, n = 0;
    char *key = key_text(fn, len, o, &klen);
    char dir[4096], path[4400], object[4200];
    cg_library *lib = NULL;
    char *data = NULL;
    if (key && link_path(o, key, klen, false, dir, sizeof dir, path, sizeof path) && (data = read_link(path, &n)) &&
        link_matches(data, n, key, klen, name, dir, object) && access(object, R_OK) == 0) {
        if (cg_library_open(object, &lib) != KORCH_OK) {
            korch_error_clear();
            lib = NULL;
        } else if (!cg_library_symbol(lib, name)) {
            cg_library_release(lib);
            lib = NULL;
        }
    }
    free(data);
    free(key);
    return lib;
}

void cg_link_keep(const char *fn, size_t len, const korch_profile_options *o, const char *name, cg_library *lib) {
    const char *object = cg_library_path(lib);
    if (!fn || !len || !name || !object || strlen(name) >= 128) return;
    const char *file = strrchr(object, '/');
    file = file ? file + 1 : object;
    size_t klen = 0, n = 0;
    char *key = key_text(fn, len, o, &klen);
    char dir[4096], path[4400], existing[4200];
    if (!key || !link_path(o, key, klen, true, dir, sizeof dir, path, sizeof path)) {
        free(key);
        return;
    }
    /* only an object of this cache directory can be linked to */
    size_t dl = strlen(dir);
    bool here = strncmp(object, dir, dl) == 0 && object[dl] == '/' && strcmp(object + dl + 1, file) == 0;
    char *data = here ? read_link(path, &n) : NULL;
    bool kept = data && link_matches(data, n, key, klen, name, dir, existing) && access(existing, R_OK) == 0;
    free(data);
    if (here && !kept) {
        /* written whole under a temporary name, then renamed into place:
         * another process never reads half a link */
        char tmp[4500];
        static unsigned long calls;
        unsigned long call = __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
        snprintf(tmp, sizeof tmp, "%s.%d-%lu.tmp", path, (int)getpid(), call);
        FILE *f = fopen(tmp, "wb");
        bool ok = f && fprintf(f, "%s%s\n%s\n%zu\n", LINK_MAGIC, file, name, klen) > 0 &&
                  fwrite(key, 1, klen, f) == klen;
        if (f && fclose(f) != 0) ok = false;
        if (!ok || rename(tmp, path) != 0) unlink(tmp); /* only a cache */
    }
    free(key);
}
