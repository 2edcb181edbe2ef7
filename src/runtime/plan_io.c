/* Plan files: a versioned, line-based text format (docs/plan-format.md).
 * Every line is a keyword followed by key=value fields; values are
 * percent-encoded so names with spaces, '=' or control characters survive.
 * The reader trusts nothing: every number is range-checked, every index is
 * checked again against the rebuilt graph by korch_plan_validate. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "frontend/onnx_load.h"
#include "runtime/plan.h"

#define MAX_PLAN_BYTES ((size_t)256 << 20)
#define MAX_LIST 1024

static bool needs_escape(unsigned char c) { return c <= ' ' || c >= 0x7f || c == '%' || c == '=' || c == ','; }

static void put_escaped(FILE *f, const char *s) {
    if (!s || !*s) {
        fputc('-', f); /* '-' alone is the empty string; a real '-' is written escaped */
        return;
    }
    if (strcmp(s, "-") == 0) {
        fputs("%2D", f);
        return;
    }
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (needs_escape(*p)) fprintf(f, "%%%02X", *p);
        else fputc(*p, f);
    }
}

static void put_list(FILE *f, const int *items, int n) {
    if (n == 0) fputc('-', f);
    for (int i = 0; i < n; i++) fprintf(f, i ? ",%d" : "%d", items[i]);
}

/* What the embedded line says about the sections after the text. */
typedef struct sections_info {
    size_t graph_size, weights_offset, weights_size;
    uint32_t graph_crc, weights_crc;
} sections_info;

/* The lines every plan file opens with: magic, model, sections, machine
 * (in a bucketed plan, shared by its buckets). */
static void write_header(FILE *f, const korch_plan *plan, const sections_info *embedded) {
    if (plan->n_buckets > 0) {
        fprintf(f, "%s %d\n", KORCH_PLAN_MAGIC, KORCH_PLAN_VERSION_BUCKETS);
        fprintf(f, "# korch execution plan, one per input shape (bucket); format: docs/plan-format.md\n");
    } else {
        fprintf(f, "%s %d\n", KORCH_PLAN_MAGIC, KORCH_PLAN_VERSION);
        fprintf(f, "# korch execution plan; format: docs/plan-format.md\n");
    }
    fprintf(f, "model path=");
    put_escaped(f, plan->model_path);
    fprintf(f, " sha256=%s\n", plan->model_sha256);
    if (embedded)
        fprintf(f,
                "embedded graph-bytes=%zu graph-crc32c=%08" PRIx32 " weights-offset=%zu weights-bytes=%zu "
                "weights-crc32c=%08" PRIx32 "\n",
                embedded->graph_size, embedded->graph_crc, embedded->weights_offset, embedded->weights_size,
                embedded->weights_crc);
    if (plan->machine_cpu[0] || plan->machine_isa[0]) {
        fprintf(f, "machine cpu=");
        put_escaped(f, plan->machine_cpu);
        fprintf(f, " isa=");
        put_escaped(f, plan->machine_isa);
        fputc('\n', f);
    }
}

/* One plan's own lines: inputs, guards, fission, strategy, verification,
 * kernels (a bucket's, after its bucket line). */
static void write_plan_lines(FILE *f, const korch_plan *plan) {
    for (int i = 0; i < plan->n_input_shapes; i++) {
        char dims[160];
        fprintf(f, "input name=");
        put_escaped(f, plan->input_shapes[i].name);
        korch_shape_format(&plan->input_shapes[i].shape, dims, sizeof dims);
        fprintf(f, " shape=%s\n", dims);
    }
    /* guards: separate lines, so a reader that does not know them refuses
     * the plan (unknown keyword) instead of running it for every value */
    for (int i = 0; i < plan->n_input_shapes; i++) {
        const korch_tensor *t = plan->input_shapes[i].specialized;
        if (!t) continue;
        char dims[160];
        fprintf(f, "specialize name=");
        put_escaped(f, plan->input_shapes[i].name);
        korch_shape_format(&t->shape, dims, sizeof dims);
        fprintf(f, " dtype=%s shape=%s value=", korch_dtype_name(t->dtype), dims);
        size_t bytes = korch_tensor_bytes(t);
        for (size_t b = 0; b < bytes; b++) fprintf(f, "%02x", ((const unsigned char *)t->data)[b]);
        if (bytes == 0) fputc('-', f);
        fputc('\n', f);
    }
    fprintf(f, "fission version=");
    put_escaped(f, plan->fission_version);
    fprintf(f, " pgraph-hash=%016" PRIx64 " pgraph-nodes=%d", plan->pgraph_hash, plan->pgraph_nodes);
    if (plan->layout_recorded) fprintf(f, " layout=%s", korch_layout_strategy_token(plan->layout));
    /* only when not float32: plans of the model's own precision stay as before */
    if (plan->precision != KORCH_PRECISION_FP32) fprintf(f, " precision=%s", korch_precision_token(plan->precision));
    for (int i = 0; i < plan->n_fp32_linear; i++)
        fprintf(f, "%s%d", i ? "," : " fp32-linear=", plan->fp32_linear[i]);
    fprintf(f, "\n");
    fprintf(f, "strategy name=");
    put_escaped(f, plan->strategy);
    fprintf(f, " threads=%d predicted-ms=%.9g", plan->threads, plan->predicted_ms);
    if (plan->measured_ms > 0) fprintf(f, " measured-ms=%.9g", plan->measured_ms);
    fputc('\n', f);
    if (plan->verified) {
        fprintf(f, "verification seed=%" PRIu64 " given=%d excluded=%d\n", plan->verify_seed, plan->verify_given,
                plan->excluded);
        for (int i = 0; i < plan->n_output_checks; i++) {
            const korch_plan_output_check *c = &plan->output_checks[i];
            fprintf(f, "checked name=");
            put_escaped(f, c->name);
            fprintf(f, " worst=%.6g max-abs=%.6g", c->worst_ratio, c->max_abs);
            if (plan->precision != KORCH_PRECISION_FP32)
                fprintf(f, " fp32-max-rel=%.6g fp32-mean-rel=%.6g", c->fp32_max_rel, c->fp32_mean_rel);
            fputc('\n', f);
        }
        for (int i = 0; i < plan->n_excluded_kernels; i++) {
            const korch_plan_excluded *e = &plan->excluded_kernels[i];
            fprintf(f, "excluded worst=%.6g impl=", e->worst_ratio < 1e12 ? e->worst_ratio : 1e12);
            put_escaped(f, e->impl);
            fprintf(f, " detail=");
            put_escaped(f, e->detail);
            fputc('\n', f);
        }
    }
    for (int i = 0; i < plan->n_kernels; i++) {
        const korch_plan_kernel *k = &plan->kernels[i];
        fprintf(f, "kernel backend=%s latency-ms=%.9g nodes=", korch_backend_name(k->backend), k->latency_ms);
        put_list(f, k->nodes, k->n_nodes);
        fprintf(f, " inputs=");
        put_list(f, k->inputs, k->n_inputs);
        fprintf(f, " outputs=");
        put_list(f, k->outputs, k->n_outputs);
        fprintf(f, " schedule=");
        put_escaped(f, k->schedule);
        fprintf(f, " impl=");
        put_escaped(f, k->impl);
        fprintf(f, " primitives=");
        put_escaped(f, k->primitives);
        fprintf(f, " onnx=");
        put_escaped(f, k->onnx_nodes);
        if (k->verify_ratio >= 0) fprintf(f, " verified=%.6g", k->verify_ratio);
        if (k->measured_ms > 0) fprintf(f, " measured-ms=%.9g", k->measured_ms);
        fputc('\n', f);
    }
}

/* Everything before the end line (whose checksum covers these bytes). A
 * bucketed plan (format 4): the shared header, the bucket table's count,
 * then each bucket's line followed by its plan's lines. */
static void write_body(FILE *f, const korch_plan *plan, const sections_info *embedded) {
    write_header(f, plan, embedded);
    if (plan->n_buckets == 0) {
        write_plan_lines(f, plan);
        return;
    }
    fprintf(f, "buckets count=%d\n", plan->n_buckets);
    for (int b = 0; b < plan->n_buckets; b++) {
        char shapes[1024];
        fprintf(f, "bucket index=%d kernels=%d shapes=", b, plan->buckets[b]->n_kernels);
        put_escaped(f, korch_plan_shapes_format(plan->buckets[b], shapes, sizeof shapes));
        fputc('\n', f);
        write_plan_lines(f, plan->buckets[b]);
    }
}

static int total_kernels(const korch_plan *plan) {
    int n = plan->n_kernels;
    for (int b = 0; b < plan->n_buckets; b++) n += plan->buckets[b]->n_kernels;
    return n;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* The first byte of the sections: past the text and at least one NUL, which
 * ends the text for the reader. */
static size_t sections_start(size_t text_size) { return (text_size / KORCH_PLAN_ALIGN + 1) * KORCH_PLAN_ALIGN; }

static bool write_zeros(FILE *f, size_t n) {
    static const char zeros[KORCH_PLAN_ALIGN];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        if (fwrite(zeros, 1, k, f) != k) return false;
        n -= k;
    }
    return true;
}

static korch_status save(const korch_plan *plan, const char *path, const uint8_t *graph, const uint8_t *weights,
                         const sections_info *embedded) {
    char *body = NULL;
    size_t body_size = 0;
    FILE *m = open_memstream(&body, &body_size);
    if (!m) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cannot write plan \"%s\": out of memory", path);
    write_body(m, plan, embedded);
    if (fclose(m) != 0 || !body) {
        free(body);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cannot write plan \"%s\": out of memory", path);
    }
    char end[96];
    int end_size = plan->n_buckets > 0
                       ? snprintf(end, sizeof end, "end buckets=%d kernels=%d crc32c=%08" PRIx32 "\n",
                                  plan->n_buckets, total_kernels(plan), korch_crc32c(0, body, body_size))
                       : snprintf(end, sizeof end, "end kernels=%d crc32c=%08" PRIx32 "\n", plan->n_kernels,
                                  korch_crc32c(0, body, body_size));
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(body);
        return korch_error(KORCH_ERR_IO, "cannot write plan \"%s\": %s", path, strerror(errno));
    }
    bool ok = fwrite(body, 1, body_size, f) == body_size && fwrite(end, 1, (size_t)end_size, f) == (size_t)end_size;
    if (ok && embedded) {
        size_t text = body_size + (size_t)end_size, start = sections_start(text);
        ok = write_zeros(f, start - text) &&
             (embedded->graph_size == 0 || fwrite(graph, 1, embedded->graph_size, f) == embedded->graph_size) &&
             write_zeros(f, embedded->weights_offset - embedded->graph_size) &&
             (embedded->weights_size == 0 || fwrite(weights, 1, embedded->weights_size, f) == embedded->weights_size);
    }
    free(body);
    bool failed = !ok || ferror(f) != 0;
    if (fclose(f) != 0 || failed)
        return korch_error(KORCH_ERR_IO, "cannot write plan \"%s\": %s", path, strerror(errno));
    return KORCH_OK;
}

korch_status korch_plan_save(const korch_plan *plan, const char *path) { return save(plan, path, NULL, NULL, NULL); }

korch_status korch_plan_save_sections(const korch_plan *plan, const char *path, const uint8_t *graph,
                                      size_t graph_size, const uint8_t *weights, size_t weights_size) {
    sections_info info = {.graph_size = graph_size,
                          .weights_offset = round_up(graph_size, KORCH_PLAN_ALIGN),
                          .weights_size = weights_size,
                          .graph_crc = korch_crc32c(0, graph, graph_size),
                          .weights_crc = korch_crc32c(0, weights, weights_size)};
    return save(plan, path, graph, weights, &info);
}

korch_status korch_plan_save_embedded(const korch_plan *plan, const char *path, const uint8_t *model, size_t size,
                                      const char *model_dir) {
    uint8_t *graph = NULL, *weights = NULL;
    size_t graph_size = 0, weights_size = 0;
    korch_status st = korch_onnx_split_weights(model, size, model_dir, KORCH_PLAN_ALIGN, &graph, &graph_size, &weights,
                                               &weights_size);
    if (st != KORCH_OK) return korch_error_prefix(st, "cannot embed the model in plan \"%s\"", path);
    st = korch_plan_save_sections(plan, path, graph, graph_size, weights, weights_size);
    free(graph);
    free(weights);
    return st;
}

/* ---- reading --------------------------------------------------------------- */

typedef struct parser {
    const char *path;
    /* a bucketed plan (format 4): the bucket table's count (-1: no buckets
     * line yet), the bucket the plan lines go to and the kernels its bucket
     * line announced */
    int buckets_declared;
    korch_plan *bucket;
    int bucket_kernels;
    char *bucket_shapes;
    int line;
    size_t line_start; /* offset of the current line */
    sections_info sections;
    bool has_crc;
    size_t end_offset; /* where the end line starts */
    uint32_t text_crc; /* the end line's checksum, of the bytes before it */
} parser;

static korch_status perr(const parser *p, const char *fmt, const char *detail) {
    return korch_error(KORCH_ERR_PARSE, "plan \"%s\", line %d: %s%s", p->path, p->line, fmt, detail ? detail : "");
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes in place; false on a bad escape or an embedded NUL. */
static bool unescape(char *s) {
    if (strcmp(s, "-") == 0) {
        s[0] = '\0';
        return true;
    }
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        int hi = r[1] ? hexval(r[1]) : -1, lo = hi >= 0 && r[2] ? hexval(r[2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return false;
        *w++ = (char)(hi * 16 + lo);
        r += 2;
    }
    *w = '\0';
    return true;
}

typedef struct field {
    char *key, *value;
} field;

/* Splits "kw k=v k=v" in place. Returns the number of fields or -1. */
static int split_fields(char *line, char **keyword, field *fields, int cap) {
    char *save = NULL;
    *keyword = strtok_r(line, " \t", &save);
    int n = 0;
    for (char *tok = strtok_r(NULL, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || n == cap) return -1;
        *eq = '\0';
        fields[n].key = tok;
        fields[n].value = eq + 1;
        n++;
    }
    return n;
}

static const char *get(field *fields, int n, const char *key) {
    for (int i = 0; i < n; i++)
        if (strcmp(fields[i].key, key) == 0) return fields[i].value;
    return NULL;
}

static bool parse_long(const char *s, long lo, long hi, long *out) {
    if (!s || !*s) return false;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* fp32-linear=I,J,...: strictly ascending node indices below pgraph-nodes
 * (read before it on the same line); whether each names a linear primitive
 * is checked when the model is lowered (korch_pgraph_set_precision_except). */
static korch_status parse_fp32_linear(const char *text, korch_plan *plan) {
    free(plan->fp32_linear);
    plan->fp32_linear = NULL;
    plan->n_fp32_linear = 0;
    size_t cap = 1;
    for (const char *c = text; *c; c++) cap += *c == ',';
    if (cap > (size_t)plan->pgraph_nodes) return KORCH_ERR_INVALID_MODEL;
    plan->fp32_linear = malloc(cap * sizeof *plan->fp32_linear);
    if (!plan->fp32_linear) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    const char *c = text;
    for (;;) {
        if (!isdigit((unsigned char)*c)) return KORCH_ERR_INVALID_MODEL;
        char *end = NULL;
        errno = 0;
        long v = strtol(c, &end, 10);
        if (errno || v >= plan->pgraph_nodes ||
            (plan->n_fp32_linear > 0 && v <= plan->fp32_linear[plan->n_fp32_linear - 1]))
            return KORCH_ERR_INVALID_MODEL;
        plan->fp32_linear[plan->n_fp32_linear++] = (int)v;
        if (*end == '\0') return KORCH_OK;
        if (*end != ',') return KORCH_ERR_INVALID_MODEL;
        c = end + 1;
    }
}

static bool parse_double(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= 0) || v > 1e12) return false;
    *out = v;
    return true;
}

static bool parse_size(const char *s, size_t *out) {
    if (!s || !isdigit((unsigned char)s[0])) return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > ((unsigned long long)1 << 48)) return false;
    *out = (size_t)v;
    return true;
}

static bool parse_hex32(const char *s, uint32_t *out) {
    if (!s || strlen(s) != 8) return false;
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        int h = hexval(s[i]);
        if (h < 0) return false;
        v = v * 16 + (uint32_t)h;
    }
    *out = v;
    return true;
}

/* "1,2,3" or "-" -> malloc'd array */
static bool parse_list(const char *s, int **out, int *n) {
    *out = NULL;
    *n = 0;
    if (!s) return false;
    if (strcmp(s, "-") == 0) return true;
    int count = 1;
    for (const char *c = s; *c; c++) count += *c == ',';
    if (count > MAX_LIST) return false;
    int *items = malloc((size_t)count * sizeof *items);
    if (!items) return false;
    const char *c = s;
    for (int i = 0; i < count; i++) {
        char *end = NULL;
        errno = 0;
        long v = strtol(c, &end, 10);
        if (errno || end == c || v < 0 || v > 1000000000L || (*end != ',' && *end != '\0') ||
            !isdigit((unsigned char)*c)) {
            free(items);
            return false;
        }
        items[i] = (int)v;
        c = *end ? end + 1 : end;
    }
    *out = items;
    *n = count;
    return true;
}

static char *dup_unescaped(const char *s, bool *ok) {
    char *d = strdup(s ? s : "-");
    if (!d || !unescape(d)) {
        free(d);
        *ok = false;
        return NULL;
    }
    return d;
}

static korch_status parse_kernel(parser *p, korch_plan *plan, field *fields, int nf) {
    korch_plan_kernel *grown = realloc(plan->kernels, ((size_t)plan->n_kernels + 1) * sizeof *grown);
    if (!grown) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
    plan->kernels = grown;
    korch_plan_kernel *k = &plan->kernels[plan->n_kernels];
    memset(k, 0, sizeof *k);
    const char *backend = get(fields, nf, "backend");
    if (!backend) return perr(p, "kernel without backend=", NULL);
    if (!korch_backend_from_name(backend, &k->backend)) return perr(p, "unknown backend ", backend);
    if (!parse_double(get(fields, nf, "latency-ms"), &k->latency_ms)) return perr(p, "bad or missing latency-ms", NULL);
    int *nodes = NULL, *ins = NULL, *outs = NULL, nn = 0, ni = 0, no = 0;
    if (!parse_list(get(fields, nf, "nodes"), &nodes, &nn) || nn < 1 || nn > 64 ||
        !parse_list(get(fields, nf, "inputs"), &ins, &ni) || !parse_list(get(fields, nf, "outputs"), &outs, &no)) {
        free(nodes);
        free(ins);
        return perr(p, "bad nodes=, inputs= or outputs= list", NULL);
    }
    /* one block like korch_plan_add_kernel, so korch_plan_free frees it the same way */
    int *buf = malloc(((size_t)nn + (size_t)ni + (size_t)no + 1) * sizeof *buf);
    if (!buf) {
        free(nodes);
        free(ins);
        free(outs);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
    }
    memcpy(buf, nodes, (size_t)nn * sizeof *buf);
    if (ni) memcpy(buf + nn, ins, (size_t)ni * sizeof *buf);
    if (no) memcpy(buf + nn + ni, outs, (size_t)no * sizeof *buf);
    free(nodes);
    free(ins);
    free(outs);
    k->nodes = buf;
    k->n_nodes = nn;
    k->inputs = buf + nn;
    k->n_inputs = ni;
    k->outputs = buf + nn + ni;
    k->n_outputs = no;
    plan->n_kernels++;
    bool ok = true;
    char *schedule = dup_unescaped(get(fields, nf, "schedule"), &ok);
    char *impl = dup_unescaped(get(fields, nf, "impl"), &ok);
    k->primitives = dup_unescaped(get(fields, nf, "primitives"), &ok);
    k->onnx_nodes = dup_unescaped(get(fields, nf, "onnx"), &ok);
    if (ok && (strlen(schedule) >= sizeof k->schedule || strlen(impl) >= sizeof k->impl)) ok = false;
    if (ok) {
        snprintf(k->schedule, sizeof k->schedule, "%s", schedule);
        snprintf(k->impl, sizeof k->impl, "%s", impl);
    }
    free(schedule);
    free(impl);
    if (!ok) return perr(p, "bad schedule=, impl=, primitives= or onnx= field", NULL);
    k->verify_ratio = -1;
    const char *verified = get(fields, nf, "verified");
    if (verified && !parse_double(verified, &k->verify_ratio)) return perr(p, "bad verified=", NULL);
    const char *measured = get(fields, nf, "measured-ms");
    if (measured && !parse_double(measured, &k->measured_ms)) return perr(p, "bad measured-ms=", NULL);
    return KORCH_OK;
}

/* specialize name= dtype= shape= value=HEX: a guard on an input listed before */
static korch_status parse_specialize(parser *p, korch_plan *plan, field *fields, int nf) {
    bool ok = true;
    char *name = dup_unescaped(get(fields, nf, "name"), &ok);
    korch_plan_shape *s = NULL;
    for (int i = 0; ok && i < plan->n_input_shapes; i++)
        if (strcmp(plan->input_shapes[i].name, name) == 0) s = &plan->input_shapes[i];
    free(name);
    if (!ok) return perr(p, "bad specialize name", NULL);
    if (!s) return perr(p, "specialize names no input line before it", NULL);
    if (s->specialized) return perr(p, "input specialized twice", NULL);
    const char *dtype = get(fields, nf, "dtype"), *shape = get(fields, nf, "shape"), *hex = get(fields, nf, "value");
    korch_tensor t = {0};
    for (int d = 1; dtype && d <= 16; d++)
        if (strcmp(korch_dtype_name((korch_dtype)d), dtype) == 0 && korch_dtype_size((korch_dtype)d) > 0 &&
            d != KORCH_DTYPE_STRING)
            t.dtype = (korch_dtype)d;
    if (t.dtype == KORCH_DTYPE_UNDEFINED) return perr(p, "bad specialize dtype ", dtype ? dtype : "(none)");
    if (!shape) return perr(p, "specialize without shape=", NULL);
    if (strcmp(shape, "scalar") == 0) t.shape = (korch_shape){0};
    else if (!korch_shape_parse(shape, &t.shape)) return perr(p, "bad specialize shape ", shape);
    if (!korch_shape_equal(&t.shape, &s->shape)) return perr(p, "specialize shape differs from the input's ", shape);
    int64_t numel = korch_shape_numel(&t.shape);
    if (numel < 0 || (size_t)numel * korch_dtype_size(t.dtype) > KORCH_SPECIALIZE_MAX_BYTES)
        return perr(p, "specialize value too large", NULL);
    size_t bytes = (size_t)numel * korch_dtype_size(t.dtype);
    if (!hex || strlen(hex) != (bytes ? 2 * bytes : 1) || (bytes == 0 && strcmp(hex, "-") != 0))
        return perr(p, "bad specialize value (expected 2 hex digits per byte)", NULL);
    korch_tensor *guard = calloc(1, sizeof *guard);
    if (!guard || korch_tensor_alloc(guard, t.dtype, &t.shape) != KORCH_OK) {
        free(guard);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
    }
    for (size_t b = 0; b < bytes; b++) {
        int hi = hexval(hex[2 * b]), lo = hexval(hex[2 * b + 1]);
        if (hi < 0 || lo < 0) {
            korch_tensor_free(guard);
            free(guard);
            return perr(p, "bad specialize value (expected 2 hex digits per byte)", NULL);
        }
        ((unsigned char *)guard->data)[b] = (unsigned char)(hi * 16 + lo);
    }
    s->specialized = guard;
    return KORCH_OK;
}

/* The lines that belong to one plan; in a bucketed plan, to a bucket. */
static bool per_plan_keyword(const char *k) {
    static const char *const own[] = {"input",        "specialize", "fission",  "strategy",
                                      "verification", "checked",    "excluded", "kernel"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (strcmp(k, own[i]) == 0) return true;
    return false;
}

/* Checks the bucket being read against its bucket line once its lines are
 * over (the next bucket line or the end line): a cut or damaged table shows
 * here even before the checksum is compared. */
static korch_status close_bucket(parser *p, korch_plan *file_plan) {
    korch_plan *b = p->bucket;
    if (!b) return KORCH_OK;
    int index = file_plan->n_buckets - 1; /* messages count buckets from 1, as explain and info do */
    char shapes[1024], detail[160];
    snprintf(detail, sizeof detail, "%d", index + 1);
    korch_status st = KORCH_OK;
    if (b->n_kernels != p->bucket_kernels)
        st = korch_error(KORCH_ERR_PARSE,
                         "plan \"%s\" is damaged: bucket %d has %d kernel lines, its bucket line says %d (truncated "
                         "or damaged bucket table); copy it again or re-run korch optimize",
                         p->path, index + 1, b->n_kernels, p->bucket_kernels);
    else if (!b->fission_version[0] || b->n_input_shapes == 0)
        st = perr(p, "no fission or input line in bucket ", detail);
    else if (strcmp(korch_plan_shapes_format(b, shapes, sizeof shapes), p->bucket_shapes) != 0)
        st = perr(p, "the input lines differ from the shapes= of bucket ", detail);
    for (int o = 0; st == KORCH_OK && o < index; o++) {
        const korch_plan *other = file_plan->buckets[o];
        char theirs[1024];
        bool same_names = other->n_input_shapes == b->n_input_shapes;
        for (int i = 0; same_names && i < b->n_input_shapes; i++)
            same_names = strcmp(other->input_shapes[i].name, b->input_shapes[i].name) == 0;
        if (!same_names) st = perr(p, "the inputs differ from the first bucket's in bucket ", detail);
        else if (strcmp(korch_plan_shapes_format(other, theirs, sizeof theirs), shapes) == 0)
            st = perr(p, "two buckets have the same shapes: ", shapes);
    }
    free(p->bucket_shapes);
    p->bucket_shapes = NULL;
    p->bucket = NULL;
    return st;
}

/* buckets count=N, then bucket index=I kernels=K shapes=S per bucket */
static korch_status parse_bucket_line(parser *p, korch_plan *file_plan, const char *keyword, field *fields, int nf) {
    long n = 0;
    if (strcmp(keyword, "buckets") == 0) {
        if (p->buckets_declared >= 0 || file_plan->n_buckets) return perr(p, "a second buckets line", NULL);
        if (!parse_long(get(fields, nf, "count"), 1, KORCH_PLAN_MAX_BUCKETS, &n))
            return perr(p, "bad buckets count", NULL);
        p->buckets_declared = (int)n;
        return KORCH_OK;
    }
    KORCH_TRY(close_bucket(p, file_plan));
    if (p->buckets_declared < 0) return perr(p, "a bucket line before the buckets line", NULL);
    if (file_plan->n_buckets >= p->buckets_declared) return perr(p, "more bucket lines than the buckets line says", NULL);
    if (!parse_long(get(fields, nf, "index"), 0, KORCH_PLAN_MAX_BUCKETS, &n) || n != file_plan->n_buckets)
        return perr(p, "bucket lines out of order (index=)", NULL);
    long kernels = 0;
    if (!parse_long(get(fields, nf, "kernels"), 0, 10000000L, &kernels)) return perr(p, "bad bucket kernels=", NULL);
    bool ok = true;
    char *shapes = dup_unescaped(get(fields, nf, "shapes"), &ok);
    korch_plan *b = ok ? korch_plan_new() : NULL;
    korch_plan **grown = b ? realloc(file_plan->buckets, ((size_t)file_plan->n_buckets + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(shapes);
        korch_plan_free(b);
        return ok ? korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory") : perr(p, "bad bucket shapes=", NULL);
    }
    file_plan->buckets = grown;
    file_plan->buckets[file_plan->n_buckets++] = b;
    b->version = file_plan->version;
    p->bucket = b;
    p->bucket_kernels = (int)kernels;
    p->bucket_shapes = shapes;
    return KORCH_OK;
}

static korch_status parse_line(parser *p, korch_plan *file_plan, char *line, bool *ended) {
    char *keyword = NULL;
    field fields[16];
    int nf = split_fields(line, &keyword, fields, 16);
    if (!keyword || keyword[0] == '#') return KORCH_OK;
    if (nf < 0) return perr(p, "malformed fields (expected key=value)", NULL);
    if (*ended) return perr(p, "text after the end line", NULL);
    korch_plan *plan = file_plan; /* where a plan line goes: the file's plan, or its bucket */
    if (file_plan->version >= KORCH_PLAN_VERSION_BUCKETS) {
        if (strcmp(keyword, "buckets") == 0 || strcmp(keyword, "bucket") == 0)
            return parse_bucket_line(p, file_plan, keyword, fields, nf);
        if (per_plan_keyword(keyword)) {
            if (!p->bucket) return perr(p, "a plan line before the first bucket line: ", keyword);
            plan = p->bucket;
        } else if (p->bucket && strcmp(keyword, "end") != 0) {
            return perr(p, "a shared line after the first bucket line: ", keyword);
        }
    }
    if (strcmp(keyword, "model") == 0) {
        bool ok = true;
        free(plan->model_path);
        plan->model_path = dup_unescaped(get(fields, nf, "path"), &ok);
        const char *sha = get(fields, nf, "sha256");
        if (!ok || !plan->model_path || !*plan->model_path) return perr(p, "bad model path", NULL);
        if (!sha || strlen(sha) != 64) return perr(p, "bad model sha256", NULL);
        for (int i = 0; i < 64; i++)
            if (hexval(sha[i]) < 0) return perr(p, "bad model sha256", NULL);
        memcpy(plan->model_sha256, sha, 65);
    } else if (strcmp(keyword, "input") == 0) {
        if (plan->n_input_shapes >= 4096) return perr(p, "too many inputs", NULL);
        korch_plan_shape *grown = realloc(plan->input_shapes, ((size_t)plan->n_input_shapes + 1) * sizeof *grown);
        if (!grown) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
        plan->input_shapes = grown;
        korch_plan_shape *s = &plan->input_shapes[plan->n_input_shapes];
        memset(s, 0, sizeof *s);
        bool ok = true;
        s->name = dup_unescaped(get(fields, nf, "name"), &ok);
        if (!ok) return perr(p, "bad input name", NULL);
        plan->n_input_shapes++;
        const char *shape = get(fields, nf, "shape");
        if (!shape) return perr(p, "input without shape=", NULL);
        if (strcmp(shape, "scalar") == 0) s->shape = (korch_shape){0};
        else if (!korch_shape_parse(shape, &s->shape)) return perr(p, "bad input shape ", shape);
    } else if (strcmp(keyword, "specialize") == 0) {
        return parse_specialize(p, plan, fields, nf);
    } else if (strcmp(keyword, "fission") == 0) {
        bool ok = true;
        char *v = dup_unescaped(get(fields, nf, "version"), &ok);
        if (!ok || strlen(v) >= sizeof plan->fission_version) {
            free(v);
            return perr(p, "bad fission version", NULL);
        }
        snprintf(plan->fission_version, sizeof plan->fission_version, "%s", v);
        free(v);
        const char *hash = get(fields, nf, "pgraph-hash");
        long nodes = 0;
        char *end = NULL;
        if (!hash || strlen(hash) != 16) return perr(p, "bad pgraph-hash", NULL);
        plan->pgraph_hash = strtoull(hash, &end, 16);
        if (*end) return perr(p, "bad pgraph-hash", NULL);
        if (!parse_long(get(fields, nf, "pgraph-nodes"), 0, 100000000L, &nodes))
            return perr(p, "bad pgraph-nodes", NULL);
        plan->pgraph_nodes = (int)nodes;
        const char *layout = get(fields, nf, "layout");
        plan->layout_recorded = layout != NULL;
        if (layout && !korch_layout_strategy_parse(layout, &plan->layout)) return perr(p, "bad layout ", layout);
        const char *precision = get(fields, nf, "precision");
        plan->precision = KORCH_PRECISION_FP32;
        if (precision && !korch_precision_parse(precision, &plan->precision))
            return perr(p, "bad precision ", precision);
        const char *kept = get(fields, nf, "fp32-linear");
        if (kept && parse_fp32_linear(kept, plan) != KORCH_OK) return perr(p, "bad fp32-linear ", kept);
    } else if (strcmp(keyword, "strategy") == 0) {
        const char *name = get(fields, nf, "name");
        long threads = 0;
        if (!name || strlen(name) >= sizeof plan->strategy) return perr(p, "bad strategy name", NULL);
        snprintf(plan->strategy, sizeof plan->strategy, "%s", name);
        if (!parse_long(get(fields, nf, "threads"), 0, 1024, &threads)) return perr(p, "bad threads", NULL);
        plan->threads = (int)threads;
        if (!parse_double(get(fields, nf, "predicted-ms"), &plan->predicted_ms))
            return perr(p, "bad predicted-ms", NULL);
        const char *measured = get(fields, nf, "measured-ms");
        if (measured && !parse_double(measured, &plan->measured_ms)) return perr(p, "bad measured-ms", NULL);
    } else if (strcmp(keyword, "verification") == 0 && plan->version >= 2) {
        const char *seed = get(fields, nf, "seed");
        long given = 0, excluded = 0;
        char *end = NULL;
        if (!seed || !*seed || !isdigit((unsigned char)seed[0])) return perr(p, "bad verification seed", NULL);
        errno = 0;
        plan->verify_seed = strtoull(seed, &end, 10);
        if (errno || *end) return perr(p, "bad verification seed", NULL);
        if (!parse_long(get(fields, nf, "given"), 0, 1000000L, &given) ||
            !parse_long(get(fields, nf, "excluded"), 0, 100000000L, &excluded))
            return perr(p, "bad verification given= or excluded=", NULL);
        plan->verify_given = (int)given;
        plan->excluded = (int)excluded;
        plan->verified = true;
    } else if (strcmp(keyword, "checked") == 0 && plan->version >= 2) {
        if (plan->n_output_checks >= 4096) return perr(p, "too many checked outputs", NULL);
        korch_plan_output_check *grown =
            realloc(plan->output_checks, ((size_t)plan->n_output_checks + 1) * sizeof *grown);
        if (!grown) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
        plan->output_checks = grown;
        korch_plan_output_check *c = &plan->output_checks[plan->n_output_checks];
        memset(c, 0, sizeof *c);
        bool ok = true;
        c->name = dup_unescaped(get(fields, nf, "name"), &ok);
        plan->n_output_checks++;
        if (!ok || !parse_double(get(fields, nf, "worst"), &c->worst_ratio) ||
            !parse_double(get(fields, nf, "max-abs"), &c->max_abs))
            return perr(p, "bad checked line", NULL);
        const char *max_rel = get(fields, nf, "fp32-max-rel"), *mean_rel = get(fields, nf, "fp32-mean-rel");
        if ((max_rel && !parse_double(max_rel, &c->fp32_max_rel)) ||
            (mean_rel && !parse_double(mean_rel, &c->fp32_mean_rel)))
            return perr(p, "bad checked line", NULL);
    } else if (strcmp(keyword, "excluded") == 0 && plan->version >= 2) {
        if (plan->n_excluded_kernels >= KORCH_PLAN_MAX_EXCLUDED) return perr(p, "too many excluded lines", NULL);
        korch_plan_excluded *grown =
            realloc(plan->excluded_kernels, ((size_t)plan->n_excluded_kernels + 1) * sizeof *grown);
        if (!grown) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
        plan->excluded_kernels = grown;
        korch_plan_excluded *e = &plan->excluded_kernels[plan->n_excluded_kernels++];
        memset(e, 0, sizeof *e);
        bool ok = true;
        e->impl = dup_unescaped(get(fields, nf, "impl"), &ok);
        e->detail = dup_unescaped(get(fields, nf, "detail"), &ok);
        if (!ok || !parse_double(get(fields, nf, "worst"), &e->worst_ratio)) return perr(p, "bad excluded line", NULL);
    } else if (strcmp(keyword, "kernel") == 0) {
        if (plan->n_kernels >= 10000000) return perr(p, "too many kernels", NULL);
        return parse_kernel(p, plan, fields, nf);
    } else if (strcmp(keyword, "end") == 0) {
        long n = -1, buckets = -1;
        if (plan->version >= KORCH_PLAN_VERSION_BUCKETS) {
            KORCH_TRY(close_bucket(p, plan));
            if (!parse_long(get(fields, nf, "buckets"), 1, KORCH_PLAN_MAX_BUCKETS, &buckets) ||
                buckets != plan->n_buckets || buckets != p->buckets_declared)
                return korch_error(KORCH_ERR_PARSE,
                                   "plan \"%s\" is damaged: its bucket table lists %d of %d buckets, the end line "
                                   "says %ld (truncated or damaged bucket table); copy it again or re-run korch "
                                   "optimize",
                                   p->path, plan->n_buckets, p->buckets_declared, buckets);
        }
        if (!parse_long(get(fields, nf, "kernels"), 0, 100000000L, &n) || n != total_kernels(plan))
            return perr(p, "the end line does not match the number of kernels (truncated file?)", NULL);
        const char *crc = get(fields, nf, "crc32c");
        if (crc && !parse_hex32(crc, &p->text_crc)) return perr(p, "bad crc32c", NULL);
        p->has_crc = crc != NULL;
        p->end_offset = p->line_start;
        *ended = true;
    } else if (strcmp(keyword, "embedded") == 0 && plan->version >= 3) {
        sections_info *e = &p->sections;
        if (!parse_size(get(fields, nf, "graph-bytes"), &e->graph_size) ||
            !parse_size(get(fields, nf, "weights-offset"), &e->weights_offset) ||
            !parse_size(get(fields, nf, "weights-bytes"), &e->weights_size) ||
            !parse_hex32(get(fields, nf, "graph-crc32c"), &e->graph_crc) ||
            !parse_hex32(get(fields, nf, "weights-crc32c"), &e->weights_crc))
            return perr(p, "bad embedded line", NULL);
        if (e->graph_size == 0 || e->weights_offset < e->graph_size || e->weights_offset % KORCH_PLAN_ALIGN)
            return perr(p, "bad embedded line (the sections overlap or are misaligned)", NULL);
        plan->embedded = true;
    } else if (strcmp(keyword, "machine") == 0 && plan->version >= 3) {
        bool ok = true;
        char *cpu = dup_unescaped(get(fields, nf, "cpu"), &ok), *isa = dup_unescaped(get(fields, nf, "isa"), &ok);
        if (ok && (strlen(cpu) >= sizeof plan->machine_cpu || strlen(isa) >= sizeof plan->machine_isa)) ok = false;
        if (ok) {
            snprintf(plan->machine_cpu, sizeof plan->machine_cpu, "%s", cpu);
            snprintf(plan->machine_isa, sizeof plan->machine_isa, "%s", isa);
        }
        free(cpu);
        free(isa);
        if (!ok) return perr(p, "bad machine line", NULL);
    } else {
        return perr(p, "unknown line ", keyword);
    }
    return KORCH_OK;
}

static bool has_end_line(const char *text, size_t size) {
    for (size_t i = 0; i + 5 <= size; i++)
        if (text[i] == '\n' && memcmp(text + i + 1, "end ", 4) == 0) return true;
    return false;
}

/* Parses the text part (the bytes before the first NUL) into plan. */
static korch_status parse_text(parser *p, korch_plan *plan, const char *file_text, size_t size) {
    const char *path = p->path;
    char *text = malloc(size + 1);
    if (!text) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
    memcpy(text, file_text, size);
    text[size] = '\0';
    korch_status st = KORCH_OK;
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    int version = 0;
    size_t magic = strlen(KORCH_PLAN_MAGIC);
    if (!line || strncmp(line, KORCH_PLAN_MAGIC, magic) != 0 || line[magic] != ' ')
        st = korch_error(KORCH_ERR_PARSE, "\"%s\" is not a korch plan (no \"%s\" header)", path, KORCH_PLAN_MAGIC);
    else if ((version = atoi(line + magic + 1)) < 1 || version > KORCH_PLAN_VERSION_BUCKETS)
        st = korch_error(KORCH_ERR_UNSUPPORTED, "plan \"%s\" has format version %d; this korch reads versions 1 to %d",
                         path, version, KORCH_PLAN_VERSION_BUCKETS);
    plan->version = version;
    /* a file cut anywhere before its end line: say so, rather than what the
     * cut left of its last line looks like */
    if (st == KORCH_OK && !has_end_line(file_text, size))
        st = korch_error(KORCH_ERR_PARSE, "plan \"%s\": no end line (truncated file?)", path);
    bool ended = false;
    /* strtok_r skips empty lines, so count line breaks by position instead
     * (strtok_r turned the break after each token into a NUL) */
    const char *counted = text;
    while (st == KORCH_OK && (line = strtok_r(NULL, "\n", &save)) != NULL) {
        for (; counted < line; counted++) p->line += *counted == '\n' || *counted == '\0';
        p->line_start = (size_t)(line - text);
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[len - 1] = '\0';
        st = parse_line(p, plan, line, &ended);
    }
    free(text);
    if (st == KORCH_OK && !ended) st = korch_error(KORCH_ERR_PARSE, "plan \"%s\": no end line (truncated file?)", path);
    if (st == KORCH_OK && version >= 3 && !p->has_crc)
        st = korch_error(KORCH_ERR_PARSE, "plan \"%s\": the end line has no crc32c= checksum", path);
    if (st == KORCH_OK && p->has_crc) {
        uint32_t crc = korch_crc32c(0, file_text, p->end_offset);
        if (crc != p->text_crc)
            st = korch_error(KORCH_ERR_PARSE,
                             "plan \"%s\" is damaged: the checksum of its text does not match (crc32c %08" PRIx32
                             ", the end line says %08" PRIx32 "); copy it again or re-run korch optimize",
                             path, crc, p->text_crc);
    }
    if (st == KORCH_OK && (!plan->model_path || !plan->model_sha256[0]))
        st = korch_error(KORCH_ERR_PARSE, "plan \"%s\": no model line", path);
    if (st == KORCH_OK && version >= KORCH_PLAN_VERSION_BUCKETS && plan->n_buckets == 0)
        st = korch_error(KORCH_ERR_PARSE, "plan \"%s\": no bucket lines", path);
    if (st == KORCH_OK && version < KORCH_PLAN_VERSION_BUCKETS && !plan->fission_version[0])
        st = korch_error(KORCH_ERR_PARSE, "plan \"%s\": no fission line", path);
    free(p->bucket_shapes);
    p->bucket_shapes = NULL;
    return st;
}

/* Checks the sections after the text of an embedded plan and points the
 * plan at them: the file's size must be exactly what the embedded line
 * describes, the padding zero, each section's checksum right. */
static korch_status check_sections(const parser *p, korch_plan *plan, uint8_t *file, size_t size, size_t text_size) {
    const sections_info *e = &p->sections;
    const char *path = p->path;
    size_t start = sections_start(text_size);
    size_t need = start + e->weights_offset + e->weights_size;
    if (need < start || size < need)
        return korch_error(KORCH_ERR_PARSE,
                           "plan \"%s\" is truncated: %zu bytes, its embedded model needs %zu; copy it again or "
                           "re-run korch optimize",
                           path, size, need);
    if (size > need)
        return korch_error(KORCH_ERR_PARSE,
                           "plan \"%s\" is damaged: %zu unexpected bytes after its weight section; copy it again or "
                           "re-run korch optimize",
                           path, size - need);
    for (size_t i = text_size; i < start; i++)
        if (file[i] != 0)
            return korch_error(KORCH_ERR_PARSE, "plan \"%s\" is damaged: a non-zero byte at offset %zu, in the padding "
                                                "after its text; copy it again or re-run korch optimize",
                               path, i);
    const uint8_t *graph = file + start, *weights = file + start + e->weights_offset;
    uint32_t graph_crc = korch_crc32c(0, graph, e->graph_size);
    uint32_t weights_crc = korch_crc32c(0, weights, e->weights_size);
    const char *bad = graph_crc != e->graph_crc ? "graph" : weights_crc != e->weights_crc ? "weight" : NULL;
    if (bad)
        return korch_error(KORCH_ERR_PARSE,
                           "plan \"%s\" is damaged: the checksum of its %s section does not match (crc32c %08" PRIx32
                           ", the plan says %08" PRIx32 "); copy it again or re-run korch optimize",
                           path, bad, bad[0] == 'g' ? graph_crc : weights_crc,
                           bad[0] == 'g' ? e->graph_crc : e->weights_crc);
    plan->sections = (korch_plan_sections){.map = file,
                                           .map_size = size,
                                           .graph = graph,
                                           .graph_size = e->graph_size,
                                           .weights = weights,
                                           .weights_size = e->weights_size};
    return KORCH_OK;
}

/* Maps the whole file private and writable: the weights are read in place,
 * and a kernel or pass that writes into a constant gets its own copy of
 * that page instead of a crash (the file never changes). */
static korch_status map_plan(const char *path, uint8_t **out, size_t *size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return korch_error(KORCH_ERR_IO, "cannot open plan \"%s\": %s", path, strerror(errno));
    struct stat sb;
    korch_status st = KORCH_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = korch_error(KORCH_ERR_IO, "plan \"%s\" is not a regular file", path);
    else if (sb.st_size == 0)
        st = korch_error(KORCH_ERR_PARSE, "plan \"%s\" is empty", path);
    else if ((unsigned long long)sb.st_size > (unsigned long long)SIZE_MAX / 2)
        st = korch_error(KORCH_ERR_UNSUPPORTED, "plan \"%s\" is too large", path);
    void *map = MAP_FAILED;
    if (st == KORCH_OK) {
        map = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) st = korch_error(KORCH_ERR_IO, "cannot map plan \"%s\": %s", path, strerror(errno));
    }
    close(fd);
    if (st != KORCH_OK) return st;
    *out = map;
    *size = (size_t)sb.st_size;
    return KORCH_OK;
}

/* Parses `file` (mapped when `mapped`, else the caller's memory); on
 * success an embedded plan points into it. */
static korch_status load_bytes(const char *path, uint8_t *file, size_t size, bool mapped, korch_plan **out) {
    *out = NULL;
    const uint8_t *nul = memchr(file, 0, size);
    size_t text_size = nul ? (size_t)(nul - file) : size;
    parser p = {.path = path, .line = 0, .buckets_declared = -1};
    korch_plan *plan = korch_plan_new();
    korch_status st = plan ? KORCH_OK : KORCH_ERR_OUT_OF_MEMORY;
    if (st == KORCH_OK && text_size > MAX_PLAN_BYTES)
        st = korch_error(KORCH_ERR_PARSE, "plan \"%s\": its text is larger than %zu MiB", path, MAX_PLAN_BYTES >> 20);
    if (st == KORCH_OK) st = parse_text(&p, plan, (const char *)file, text_size);
    if (st == KORCH_OK && plan->embedded) st = check_sections(&p, plan, file, size, text_size);
    else if (st == KORCH_OK && nul)
        st = korch_error(KORCH_ERR_PARSE, "plan \"%s\": contains a NUL byte", path);
    if (st == KORCH_OK && plan->n_buckets) st = korch_plan_buckets_share(plan);
    if (plan && !mapped) { /* the caller's memory: never unmapped */
        plan->sections.map = NULL;
        plan->sections.map_size = 0;
    }
    if (st != KORCH_OK) {
        if (plan) plan->sections.map = NULL;
        korch_plan_free(plan);
        return st;
    }
    *out = plan;
    return KORCH_OK;
}

korch_status korch_plan_load(const char *path, korch_plan **out) {
    *out = NULL;
    uint8_t *file = NULL;
    size_t size = 0;
    KORCH_TRY(map_plan(path, &file, &size));
    korch_status st = load_bytes(path, file, size, true, out);
    if (st != KORCH_OK || !(*out)->embedded) munmap(file, size);
    return st;
}

korch_status korch_plan_load_memory(const char *name, const uint8_t *data, size_t size, korch_plan **out) {
    *out = NULL;
    if (size == 0) return korch_error(KORCH_ERR_PARSE, "plan \"%s\" is empty", name);
    /* read only: the sections are never written through (bools are copied) */
    return load_bytes(name, (uint8_t *)data, size, false, out);
}

bool korch_plan_file_is_plan(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char head[16] = {0};
    size_t n = fread(head, 1, strlen(KORCH_PLAN_MAGIC) + 1, f);
    fclose(f);
    return n == strlen(KORCH_PLAN_MAGIC) + 1 && memcmp(head, KORCH_PLAN_MAGIC " ", n) == 0;
}

char *korch_plan_model_path(const korch_plan *plan, const char *plan_path) {
    const char *model = plan->model_path;
    const char *slash = strrchr(plan_path, '/');
    size_t dir = slash ? (size_t)(slash - plan_path) + 1 : 0;
    char *out = NULL;
    if (model[0] == '/') {
        out = strdup(model);
        /* moved together with its plan: the model's file name beside the plan
         * (the hash check still guarantees it is the same model) */
        FILE *f = out ? fopen(out, "rb") : NULL;
        if (f) {
            fclose(f);
        } else if (out) {
            const char *base = strrchr(model, '/') + 1;
            char *beside = malloc(dir + strlen(base) + 1);
            if (beside) {
                memcpy(beside, plan_path, dir);
                strcpy(beside + dir, base);
                FILE *g = fopen(beside, "rb");
                if (g) {
                    fclose(g);
                    free(out);
                    out = beside;
                } else {
                    free(beside);
                }
            }
        }
    } else {
        out = malloc(dir + strlen(model) + 1);
        if (out) {
            memcpy(out, plan_path, dir);
            strcpy(out + dir, model);
        }
    }
    if (!out) korch_error(KORCH_ERR_OUT_OF_MEMORY, "plan: out of memory");
    return out;
}
