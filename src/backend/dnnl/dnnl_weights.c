/* Constant weights reordered into oneDNN's layout, shared between kernels.
 *
 * A kernel whose constant weights oneDNN wants in another layout (blocked
 * convolution weights, a matmul's padded rows) copies them when it is
 * built. Several kernels can read one weight tensor: an unrolled
 * recurrence runs one product per time step, all with the same recurrent
 * weights. One copy per kernel turned the LSTM benchmark's 124 step
 * products, which shared 1 MB per direction hot in the cache, into 124
 * separate megabytes read from memory (12.3 -> 21.8 ms, same minutes,
 * bench/recurrent/RESULTS.md). So copies are shared: a kernel asks for
 * (source bytes, layout) and gets the existing copy when one is alive.
 *
 * The key is the source address and size, the target layout, and a
 * CRC-32C of the source bytes: an address alone could be reused by other
 * weights after the first ones were freed while a copy lives on. Copies are
 * reference-counted and freed with their last kernel. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dnnl/dnnl_internal.h"
#include "core/memory.h"
#include "core/crc32c.h"

struct dn_weights {
    struct dn_weights *next;
    const void *plain;
    size_t plain_bytes;
    uint32_t crc;
    dnnl_memory_desc_t md;
    void *buf;
    size_t bytes;
    int refs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dn_weights *live;

static korch_status fail(dnnl_status_t s, const char *what) {
    return korch_error(s == dnnl_out_of_memory ? KORCH_ERR_OUT_OF_MEMORY : KORCH_ERR_RUNTIME,
                       "oneDNN: %s failed (status %d) while reordering constant weights", what, (int)s);
}

/* plain -> buf (layout md), run now */
static korch_status reorder_now(dnnl_engine_t engine, dnnl_stream_t stream, const void *plain,
                                const dnnl_memory_desc_t *plain_md, void *buf, const dnnl_memory_desc_t *md) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t from = NULL, to = NULL;
    dnnl_status_t s = dnnl_memory_create(&from, plain_md, engine, (void *)plain);
    const char *what = "weights memory";
    if (s == dnnl_success) s = dnnl_memory_create(&to, md, engine, buf);
    if (s == dnnl_success && (what = "weights reorder descriptor") &&
        (s = dnnl_reorder_primitive_desc_create(&pd, plain_md, engine, md, engine, NULL)) == dnnl_success &&
        (what = "weights reorder") && (s = dnnl_primitive_create(&prim, pd)) == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        s = dnnl_primitive_execute(prim, stream, 2, args);
        if (s == dnnl_success) s = dnnl_stream_wait(stream);
    }
    if (prim) dnnl_primitive_destroy(prim);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (from) dnnl_memory_destroy(from);
    if (to) dnnl_memory_destroy(to);
    return s == dnnl_success ? KORCH_OK : fail(s, what);
}

/* the live copy of (plain, size, crc) in layout md, with one more
 * reference; NULL when there is none. Called with the lock held. */
static dn_weights *find_locked(const void *plain, size_t plain_bytes, uint32_t crc, const dnnl_memory_desc_t *md) {
    for (dn_weights *w = live; w; w = w->next)
        if (w->plain == plain && w->plain_bytes == plain_bytes && w->crc == crc && dnnl_memory_desc_equal(&w->md, md)) {
            w->refs++;
            return w;
        }
    return NULL;
}

korch_status dn_weights_get(dnnl_engine_t engine, dnnl_stream_t stream, const void *plain,
                            const dnnl_memory_desc_t *plain_md, const dnnl_memory_desc_t *md, dn_weights **out) {
    *out = NULL;
    size_t plain_bytes = dnnl_memory_desc_get_size(plain_md), bytes = dnnl_memory_desc_get_size(md);
    uint32_t crc = korch_crc32c(0, plain, plain_bytes);
    pthread_mutex_lock(&lock);
    *out = find_locked(plain, plain_bytes, crc, md);
    pthread_mutex_unlock(&lock);
    if (*out) return KORCH_OK;
    dn_weights *w = calloc(1, sizeof *w);
    void *buf = korch_buffer_alloc(bytes + 64);
    if (!w || !buf) {
        free(w);
        free(buf);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN kernel: out of memory for weights (%zu bytes)", bytes);
    }
    korch_status st = reorder_now(engine, stream, plain, plain_md, buf, md);
    if (st != KORCH_OK) {
        free(w);
        free(buf);
        return st;
    }
    *w = (dn_weights){.plain = plain, .plain_bytes = plain_bytes, .crc = crc, .md = *md, .buf = buf, .bytes = bytes,
                      .refs = 1};
    pthread_mutex_lock(&lock);
    /* another thread may have made the same copy meanwhile: keep one */
    dn_weights *other = find_locked(plain, plain_bytes, crc, md);
    if (!other) {
        w->next = live;
        live = w;
    }
    pthread_mutex_unlock(&lock);
    if (other) {
        free(buf);
        free(w);
    }
    *out = other ? other : w;
    return KORCH_OK;
}

void *dn_weights_data(const dn_weights *w) { return w ? w->buf : NULL; }
size_t dn_weights_bytes(const dn_weights *w) { return w ? w->bytes : 0; }

void dn_weights_release(dn_weights *w) {
    if (!w) return;
    pthread_mutex_lock(&lock);
    if (--w->refs > 0) {
        pthread_mutex_unlock(&lock);
        return;
    }
    for (dn_weights **p = &live; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    free(w->buf);
    free(w);
}

int dn_weights_live(void) {
    int n = 0;
    pthread_mutex_lock(&lock);
    for (dn_weights *w = live; w; w = w->next) n++;
    pthread_mutex_unlock(&lock);
    return n;
}
