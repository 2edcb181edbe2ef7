/* Linear kernel micro-benchmark: the oneDNN backend on real model shapes.
 *
 *   bench_linear SHAPES [--threads T] [--models m1,m2] [--modes M1,M2]
 *                [--epilogue none|bias_relu] [--rounds R]
 *
 * SHAPES is bench/linear/shapes.txt (extract_shapes.py). Each shape is built
 * as a one-kernel pgraph and run through the backend exactly as plans run it
 * (korch_backend_build, then kernel->run), timed with the profiler's
 * methodology (src/profile: warm-up, median of repeats, buffers rotated so
 * operands come from L3/DRAM). Modes (layouts) for convolutions:
 *
 *   nchw          NCHW buffers, oneDNN on them as they are ("fmt=plain")
 *   nchw_blocked  NCHW buffers, reordered to oneDNN's blocked choice and back
 *                 inside the kernel ("fmt=blocked")
 *   nhwc          channels-last pgraph (the layout pass), "fmt=plain"
 *   native        oneDNN's own choice for source and destination with no
 *                 reorder at all (blocked nChw16c across kernels: the upper
 *                 bound of the "blocked formats everywhere" option)
 *
 *   auto          channels-last, the variant the profiler picks (layout,
 *                 and one thread for small kernels): what a plan runs
 *   auto_nchw     NCHW buffers, the profiler's pick
 *
 * Matmuls have "plain" and "auto". Prints one JSON object per line. */
#include <dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/dnnl/dnnl_backend.h"
#include "ir/pgraph.h"
#include "profile/profile.h"

typedef struct shape {
    char kind[8]; /* conv, deconv, mm */
    long v[16];
    int nv;
    long count;
    char models[128];
    char text[160];
} shape;

static int threads = 2;
static bool bias_relu = false, bias_only = false; /* epilogue */
static long reported = 0;         /* JSON lines printed */

static float frand(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (float)((*s >> 40) & 0xffff) / 65536.0f - 0.5f;
}

static int add_const(korch_pgraph *pg, int rank, const int64_t *dims) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    uint64_t seed = 88172645463325252ull;
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) ((float *)t.data)[i] = 0.1f * frand(&seed);
    return korch_pgraph_add_constant(pg, &t);
}

static int add_input(korch_pgraph *pg, int rank, const int64_t *dims) {
    korch_shape s = korch_shape_make(rank, dims);
    return korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
}

/* The pgraph of one shape; returns the output value. flops set. */
static int build(korch_pgraph *pg, const shape *s, bool nhwc, double *flops) {
    const long *v = s->v;
    int y;
    int64_t channels;
    if (strcmp(s->kind, "mm") == 0) {
        int64_t B = v[0], M = v[1], K = v[2], N = v[3];
        bool wconst = v[4];
        int64_t a[3] = {B, M, K}, b3[3] = {B, K, N}, b2[2] = {K, N};
        int x = add_input(pg, 3, a);
        int w = wconst ? add_const(pg, 2, b2) : add_input(pg, 3, b3);
        korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
        y = korch_pgraph_linear(pg, &p, x, w);
        *flops = 2.0 * (double)(B * M * K * N);
        channels = N;
    } else {
        bool tr = strcmp(s->kind, "deconv") == 0;
        int64_t N = v[0], C = v[1], H = v[2], W = v[3], M = v[4], kh = v[5], kw = v[6], g = v[15];
        korch_prim_linear p = {.op = tr ? KORCH_LINEAR_CONV_TRANSPOSE : KORCH_LINEAR_CONV, .spatial = 2, .group = g,
                               .channels_last = nhwc, .strides = {v[7], v[8]}, .dilations = {v[13], v[14]},
                               .pads_begin = {v[9], v[10]}, .pads_end = {v[11], v[12]}};
        int64_t xd_first[4] = {N, C, H, W}, xd_last[4] = {N, H, W, C};
        int64_t wd[4] = {tr ? C : M, tr ? M / g : C / g, kh, kw};
        int x = add_input(pg, 4, nhwc ? xd_last : xd_first);
        y = korch_pgraph_linear(pg, &p, x, add_const(pg, 4, wd));
        if (y < 0) return -1;
        const korch_shape *ys = &pg->values[y].shape;
        *flops = tr ? 2.0 * (double)(N * C * H * W) * (double)(M / g * kh * kw)
                    : 2.0 * (double)korch_shape_numel(ys) * (double)(C / g * kh * kw);
        channels = M;
    }
    if (y >= 0 && (bias_relu || bias_only)) {
        const korch_shape *ys = &pg->values[y].shape;
        bool last = strcmp(s->kind, "mm") == 0 || nhwc;
        int64_t bd[3] = {channels, 1, 1};
        int b = last ? add_const(pg, 1, &channels) : add_const(pg, 3, bd);
        int ins[2] = {y, b};
        (void)ys;
        y = korch_pgraph_elementwise(pg, KORCH_EW_ADD, 2, ins, 0, 0, KORCH_DTYPE_UNDEFINED);
        if (bias_relu) y = korch_pgraph_elementwise(pg, KORCH_EW_RELU, 1, &y, 0, 0, KORCH_DTYPE_UNDEFINED);
    }
    return y;
}

/* ---- timing --------------------------------------------------------------- */

typedef struct timed {
    korch_kernel *k;
    int n_inputs, per, sets;
    void **ptrs;
    /* native mode */
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    int nargs;
    dnnl_exec_arg_t *args; /* per set */
} timed;

static korch_status run_once(void *ctx, int it) {
    timed *t = ctx;
    int s = it % t->sets;
    if (t->prim) {
        if (dnnl_primitive_execute(t->prim, t->stream, t->nargs, t->args + (size_t)s * (size_t)t->nargs) != dnnl_success)
            return korch_error(KORCH_ERR_RUNTIME, "oneDNN execute failed");
        dnnl_stream_wait(t->stream);
        return KORCH_OK;
    }
    void **set = t->ptrs + (size_t)s * (size_t)t->per;
    return t->k->run(t->k, set, set + t->n_inputs);
}

static korch_timer_options timer(void) {
    return (korch_timer_options){.warmup_runs = 3, .warmup_ms = 20, .min_repeats = 11, .max_repeats = 400,
                                 .target_ms = 150};
}

static int sets_for(size_t footprint) {
    size_t target = (size_t)4 << 20;
    int n = footprint >= target ? 1 : (int)((target + footprint - 1) / (footprint ? footprint : 1));
    return n > 64 ? 64 : n;
}

static void *filled(size_t bytes, uint64_t *seed) {
    float *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (p)
        for (size_t i = 0; i < bytes / sizeof(float); i++) p[i] = frand(seed);
    return p;
}

static void report(const shape *s, const char *mode, const char *impl, double flops, const korch_timing *tm,
                   double bytes) {
    reported++;
    printf("{\"kind\": \"%s\", \"shape\": \"%s\", \"models\": \"%s\", \"count\": %ld, \"mode\": \"%s\", "
           "\"epilogue\": \"%s\", \"threads\": %d, \"impl\": \"%s\", \"gflop\": %.6f, \"bytes\": %.0f, "
           "\"median_ms\": %.5f, \"min_ms\": %.5f, \"spread_ms\": %.5f, \"repeats\": %d, \"gflops\": %.2f}\n",
           s->kind, s->text, s->models, s->count, mode, bias_relu ? "bias_relu" : bias_only ? "bias" : "none", threads, impl, flops / 1e9,
           bytes, tm->median_ms, tm->min_ms, tm->spread_ms, tm->repeats, flops / (tm->median_ms * 1e6));
    fflush(stdout);
}

static char db_path[64];

static void bench_backend(const shape *s, const char *mode) {
    bool nhwc = strcmp(mode, "nhwc") == 0 || strcmp(mode, "auto") == 0;
    bool autotune = strncmp(mode, "auto", 4) == 0;
    const char *variant = strcmp(mode, "nchw_blocked") == 0 ? "fmt=blocked" : "fmt=plain";
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    double flops = 0;
    int y = build(pg, s, nhwc, &flops);
    if (y < 0) {
        fprintf(stderr, "%s: %s\n", s->text, korch_last_error());
        korch_pgraph_free(pg);
        return;
    }
    int nodes[8], n_nodes = 0, inputs[8], n_inputs = 0;
    for (int i = 0; i < pg->n_nodes; i++) nodes[n_nodes++] = i;
    for (int i = 0; i < pg->n_nodes; i++)
        for (int k = 0; k < pg->nodes[i].n_inputs; k++) {
            int v = pg->nodes[i].inputs[k];
            if (pg->values[v].producer >= 0) continue;
            bool seen = false;
            for (int j = 0; j < n_inputs; j++) seen |= inputs[j] == v;
            if (!seen) inputs[n_inputs++] = v;
        }
    korch_kernel_spec spec = {.pg = pg, .n_nodes = n_nodes, .nodes = nodes, .n_inputs = n_inputs, .inputs = inputs,
                              .n_outputs = 1, .outputs = &y};
    korch_profile_options o = {.threads = threads, .db_path = db_path};
    korch_kernel *k = NULL;
    korch_profile_result pr;
    if (autotune) { /* what a plan runs: the profiler's choice of variant */
        if (korch_backend_profile(KORCH_BACKEND_DNNL, &spec, 1, &o, &pr) != KORCH_OK || pr.status != KORCH_OK) {
            fprintf(stderr, "%s [%s]: %s\n", s->text, mode, pr.status != KORCH_OK ? pr.reason : korch_last_error());
            korch_pgraph_free(pg);
            return;
        }
        variant = pr.schedule;
    }
    if (korch_backend_build(KORCH_BACKEND_DNNL, &spec, &variant, 1, &o, &k) != KORCH_OK) {
        fprintf(stderr, "%s [%s]: %s\n", s->text, mode, korch_last_error());
        korch_pgraph_free(pg);
        return;
    }
    size_t footprint = 0;
    for (int i = 0; i <= n_inputs; i++) {
        int v = i < n_inputs ? inputs[i] : y;
        if (!pg->values[v].is_constant) footprint += (size_t)korch_shape_numel(&pg->values[v].shape) * 4;
    }
    timed t = {.k = k, .n_inputs = n_inputs, .per = n_inputs + 1, .sets = sets_for(footprint)};
    t.ptrs = calloc((size_t)(t.sets * t.per), sizeof *t.ptrs);
    uint64_t seed = 0x2545f4914f6cdd1dull;
    for (int s2 = 0; s2 < t.sets; s2++)
        for (int i = 0; i <= n_inputs; i++) {
            int v = i < n_inputs ? inputs[i] : y;
            const korch_pvalue *pv = &pg->values[v];
            t.ptrs[s2 * t.per + i] = pv->is_constant ? pv->constant.data
                                                     : filled((size_t)korch_shape_numel(&pv->shape) * 4, &seed);
        }
    korch_timing tm;
    korch_timer_options opt = timer();
    if (korch_profile_time(run_once, &t, &opt, &tm) == KORCH_OK) report(s, mode, k->impl, flops, &tm, (double)footprint);
    for (int s2 = 0; s2 < t.sets; s2++)
        for (int i = 0; i <= n_inputs; i++) {
            int v = i < n_inputs ? inputs[i] : y;
            if (!pg->values[v].is_constant) free(t.ptrs[s2 * t.per + i]);
        }
    free(t.ptrs);
    korch_kernel_destroy(k);
    korch_pgraph_free(pg);
}

/* oneDNN with source and destination in its own (blocked) layouts: no reorders. */
static void bench_native(const shape *s) {
    if (strcmp(s->kind, "mm") == 0) return;
    const long *v = s->v;
    bool tr = strcmp(s->kind, "deconv") == 0;
    long N = v[0], C = v[1], H = v[2], W = v[3], M = v[4], kh = v[5], kw = v[6], g = v[15];
    long OH = tr ? (H - 1) * v[7] + (kh - 1) * v[13] + 1 - v[9] - v[11]
                 : (H + v[9] + v[11] - ((kh - 1) * v[13] + 1)) / v[7] + 1;
    long OW = tr ? (W - 1) * v[8] + (kw - 1) * v[14] + 1 - v[10] - v[12]
                 : (W + v[10] + v[12] - ((kw - 1) * v[14] + 1)) / v[8] + 1;
    dnnl_engine_t eng;
    dnnl_engine_create(&eng, dnnl_cpu, 0);
    dnnl_stream_t stream;
    dnnl_stream_create(&stream, eng, dnnl_stream_default_flags);
    dnnl_memory_desc_t sm, wm, dm, bm;
    dnnl_dims_t sd = {N, C, H, W}, dd = {N, M, OH, OW}, bd = {M};
    dnnl_dims_t wd5 = {g, M / g, C / g, kh, kw}, wd4 = {M, C, kh, kw};
    dnnl_memory_desc_init_by_tag(&sm, 4, sd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dm, 4, dd, dnnl_f32, dnnl_format_tag_any);
    if (g > 1) dnnl_memory_desc_init_by_tag(&wm, 5, wd5, dnnl_f32, dnnl_format_tag_any);
    else dnnl_memory_desc_init_by_tag(&wm, 4, wd4, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&bm, 1, bd, dnnl_f32, dnnl_x);
    dnnl_dims_t st = {v[7], v[8]}, dl = {v[13] - 1, v[14] - 1}, pl = {v[9], v[10]}, pr = {v[11], v[12]};
    dnnl_primitive_attr_t attr;
    dnnl_primitive_attr_create(&attr);
    bool with_bias = bias_relu || bias_only;
    if (bias_relu) {
        dnnl_post_ops_t po;
        dnnl_post_ops_create(&po);
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0, 0);
        dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
    }
    union {
        dnnl_convolution_desc_t c;
        dnnl_deconvolution_desc_t d;
    } desc;
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    dnnl_status_t r =
        tr ? dnnl_dilated_deconvolution_forward_desc_init(&desc.d, dnnl_forward_inference, dnnl_deconvolution_direct,
                                                          &sm, &wm, with_bias ? &bm : NULL, &dm, st, dl, pl, pr)
           : dnnl_dilated_convolution_forward_desc_init(&desc.c, dnnl_forward_inference, dnnl_convolution_direct, &sm,
                                                        &wm, with_bias ? &bm : NULL, &dm, st, dl, pl, pr);
    dnnl_primitive_desc_t pd = NULL;
    if (r == dnnl_success) r = dnnl_primitive_desc_create(&pd, &desc, attr, eng, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (r != dnnl_success) {
        fprintf(stderr, "%s [native]: oneDNN refused (%d)\n", s->text, (int)r);
        omp_set_num_threads(saved);
        return;
    }
    const char *impl;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    char impl_copy[128];
    snprintf(impl_copy, sizeof impl_copy, "dnnl %s native", impl);
    timed t = {0};
    dnnl_primitive_create(&t.prim, pd);
    const dnnl_memory_desc_t *q[4] = {dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                                      dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
                                      dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &bm};
    size_t footprint = dnnl_memory_desc_get_size(q[0]) + dnnl_memory_desc_get_size(q[2]);
    t.sets = sets_for(footprint);
    t.nargs = with_bias ? 4 : 3;
    t.args = calloc((size_t)(t.sets * t.nargs), sizeof *t.args);
    t.stream = stream;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    void *wbuf = filled(dnnl_memory_desc_get_size(q[1]), &seed), *bbuf = filled((size_t)M * 4, &seed);
    dnnl_memory_t wmem, bmem;
    dnnl_memory_create(&wmem, q[1], eng, wbuf);
    dnnl_memory_create(&bmem, &bm, eng, bbuf);
    void **bufs = calloc((size_t)t.sets * 2, sizeof *bufs);
    dnnl_memory_t *mems = calloc((size_t)t.sets * 2, sizeof *mems);
    for (int i = 0; i < t.sets; i++) {
        bufs[2 * i] = filled(dnnl_memory_desc_get_size(q[0]), &seed);
        bufs[2 * i + 1] = filled(dnnl_memory_desc_get_size(q[2]), &seed);
        dnnl_memory_create(&mems[2 * i], q[0], eng, bufs[2 * i]);
        dnnl_memory_create(&mems[2 * i + 1], q[2], eng, bufs[2 * i + 1]);
        dnnl_exec_arg_t *a = t.args + (size_t)i * (size_t)t.nargs;
        a[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mems[2 * i]};
        a[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wmem};
        a[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, mems[2 * i + 1]};
        if (with_bias) a[3] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bmem};
    }
    korch_timing tm;
    korch_timer_options opt = timer();
    double flops = tr ? 2.0 * N * C * H * W * (double)(M / g * kh * kw) : 2.0 * N * M * OH * OW * (double)(C / g * kh * kw);
    if (korch_profile_time(run_once, &t, &opt, &tm) == KORCH_OK) report(s, "native", impl_copy, flops, &tm, (double)footprint);
    omp_set_num_threads(saved);
    for (int i = 0; i < 2 * t.sets; i++) {
        dnnl_memory_destroy(mems[i]);
        free(bufs[i]);
    }
    free(mems);
    free(bufs);
    dnnl_memory_destroy(wmem);
    dnnl_memory_destroy(bmem);
    free(wbuf);
    free(bbuf);
    free(t.args);
    dnnl_primitive_destroy(t.prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(eng);
}

static bool listed(const char *list, const char *item) {
    if (!list) return true;
    size_t n = strlen(item);
    for (const char *p = list; (p = strstr(p, item)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return true;
    return false;
}

static bool model_listed(const char *list, const char *models) {
    if (!list) return true;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", models);
    for (char *save = NULL, *m = strtok_r(copy, ",", &save); m; m = strtok_r(NULL, ",", &save))
        if (listed(list, m)) return true;
    return false;
}

/* "KIND v... [count [models]]" -> shape; false when malformed. */
static bool parse_shape(char *line, shape *s) {
    memset(s, 0, sizeof *s);
    char *save = NULL, *tok = strtok_r(line, " \n", &save);
    if (!tok) return false;
    snprintf(s->kind, sizeof s->kind, "%s", tok);
    if (strcmp(s->kind, "mm") && strcmp(s->kind, "conv") && strcmp(s->kind, "deconv")) return false;
    int want = strcmp(s->kind, "mm") == 0 ? 5 : 16;
    size_t len = 0;
    for (s->nv = 0; s->nv < want && (tok = strtok_r(NULL, " \n", &save)) != NULL; s->nv++) {
        s->v[s->nv] = atol(tok);
        len += (size_t)snprintf(s->text + len, sizeof s->text - len, "%s%ld", s->nv ? " " : "", s->v[s->nv]);
    }
    tok = strtok_r(NULL, " \n", &save);
    s->count = tok ? atol(tok) : 1;
    tok = strtok_r(NULL, " \n", &save);
    snprintf(s->models, sizeof s->models, "%s", tok ? tok : "");
    if (s->nv != want) return false;
    for (int i = 0; i < s->nv; i++)
        if (s->v[i] < 0 || (i < 7 && s->v[i] == 0 && strcmp(s->kind, "mm"))) return false;
    return true;
}

static void run_mode(const shape *s, const char *mode) {
    if (strcmp(mode, "native") == 0) bench_native(s);
    else bench_backend(s, mode);
}

/* Server mode (SHAPES "-"): one command per input line,
 *     MODE EPILOGUE KIND v... count models
 * answered by one JSON line (or {"error": ...}); lets a driver interleave
 * korch with ONNX Runtime and the machine probes. */
static int serve(void) {
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        char mode[32], epi[32];
        int used = 0;
        if (sscanf(line, "%31s %31s %n", mode, epi, &used) != 2) {
            printf("{\"error\": \"bad command\"}\n");
            fflush(stdout);
            continue;
        }
        bias_relu = strcmp(epi, "bias_relu") == 0;
        bias_only = strcmp(epi, "bias") == 0;
        shape s;
        if (!parse_shape(line + used, &s)) {
            printf("{\"error\": \"bad shape\"}\n");
            fflush(stdout);
            continue;
        }
        long before = reported;
        run_mode(&s, mode);
        if (reported == before) printf("{\"error\": \"%s %s failed\"}\n", mode, s.text);
        fflush(stdout);
    }
    return 0;
}

static void remove_db(void) {
    char p[80];
    remove(db_path);
    snprintf(p, sizeof p, "%s-wal", db_path);
    remove(p);
    snprintf(p, sizeof p, "%s-shm", db_path);
    remove(p);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_linear SHAPES|- [--threads T] [--models a,b] [--modes m1,m2] [--kinds k1,k2] "
                        "[--epilogue none|bias|bias_relu]\n");
        return 2;
    }
    const char *models = NULL, *modes = "nchw,nchw_blocked,nhwc,native", *kinds = NULL;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--models") == 0) models = argv[i + 1];
        else if (strcmp(argv[i], "--modes") == 0) modes = argv[i + 1];
        else if (strcmp(argv[i], "--kinds") == 0) kinds = argv[i + 1];
        else if (strcmp(argv[i], "--epilogue") == 0) {
            bias_relu = strcmp(argv[i + 1], "bias_relu") == 0;
            bias_only = strcmp(argv[i + 1], "bias") == 0;
        }
    }
    /* a private profile database for the auto modes (removed at exit) */
    snprintf(db_path, sizeof db_path, "/tmp/korch-bench-linear-%d.db", (int)getpid());
    atexit(remove_db);
    if (strcmp(argv[1], "-") == 0) return serve();
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        shape s;
        if (!parse_shape(line, &s) || !model_listed(models, s.models) || (kinds && !listed(kinds, s.kind))) continue;
        if (strcmp(s.kind, "mm") == 0) {
            bench_backend(&s, "plain");
            continue;
        }
        static const char *const all[] = {"nchw", "nchw_blocked", "nhwc", "native"};
        for (int m = 0; m < 4; m++)
            if (listed(modes, all[m])) run_mode(&s, all[m]);
    }
    fclose(f);
    return 0;
}
