/* Canonical form and signature of a kernel spec.
 *
 * Two specs that compute the same thing on the same shapes get the same
 * signature, whatever their tensor names, node numbering or the order in
 * which the spec lists its inputs: nodes are renumbered by a depth-first walk
 * from the outputs and inputs by first use. Large constants enter the
 * signature by dtype and shape only (they are kernel inputs); 1-element
 * constants are inlined as literals, so their values are part of it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/cgen.h"

/* ---- strings and hashes ---------------------------------------------------- */

void cg_buf_append(cg_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void cg_buf_printf(cg_buf *b, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        cg_buf_append(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    cg_buf_append(b, big, (size_t)n);
    free(big);
}

void cg_buf_free(cg_buf *b) {
    free(b->data);
    *b = (cg_buf){0};
}

/* Two independent 64-bit hashes (FNV-1a and a multiply-xorshift stream). */
void cg_hash_hex(const void *data, size_t n, char out[33]) {
    const unsigned char *p = data;
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t i = 0; i < n; i++) {
        h1 = (h1 ^ p[i]) * 0x100000001b3ull;
        h2 = (h2 ^ p[i]) * 0xff51afd7ed558ccdull;
        h2 ^= h2 >> 29;
    }
    h2 ^= h2 >> 33;
    h2 *= 0xc4ceb9fe1a85ec53ull;
    h2 ^= h2 >> 33;
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

/* ---- canonicalisation ------------------------------------------------------- */

const char *cg_ctype(korch_dtype dt) {
    switch (dt) {
    case KORCH_DTYPE_FLOAT32: return "float";
    case KORCH_DTYPE_FLOAT64: return "double";
    case KORCH_DTYPE_INT64: return "int64_t";
    case KORCH_DTYPE_INT32: return "int32_t";
    case KORCH_DTYPE_INT8: return "int8_t";
    case KORCH_DTYPE_UINT8: return "uint8_t";
    case KORCH_DTYPE_BOOL: return "uint8_t";
    /* stored as their bits; elementwise code converts them (cg_h2f, cg_f2h) */
    case KORCH_DTYPE_FLOAT16: return "uint16_t";
    case KORCH_DTYPE_BFLOAT16: return "uint16_t";
    default: return NULL;
    }
}

typedef struct canon_ctx {
    const korch_kernel_spec *spec;
    cg_kernel *k;
    int *local_of_pv; /* pgraph value -> local value, -1 */
    int *node_state;  /* per spec node position: 0 new, 1 visiting, 2 done */
    char *reason;
    size_t size;
} canon_ctx;

static int spec_node_of_value(const korch_kernel_spec *spec, int pv) {
    int producer = spec->pg->values[pv].producer;
    for (int i = 0; i < spec->n_nodes; i++)
        if (spec->nodes[i] == producer) return i;
    return -1;
}

static int spec_input_of_value(const korch_kernel_spec *spec, int pv) {
    for (int i = 0; i < spec->n_inputs; i++)
        if (spec->inputs[i] == pv) return i;
    return -1;
}

static korch_status unsupported(canon_ctx *c, const char *fmt, const char *detail) {
    snprintf(c->reason, c->size, fmt, detail);
    return korch_error(KORCH_ERR_UNSUPPORTED, "cgen: %s", c->reason);
}

static int add_value(canon_ctx *c, int pv) {
    cg_kernel *k = c->k;
    const korch_pvalue *v = &c->spec->pg->values[pv];
    int id = k->n_values++;
    k->values[id] = (cg_value){.pv = pv, .dtype = v->dtype, .shape = v->shape, .producer = -1, .input_slot = -1,
                               .output_slot = -1};
    c->local_of_pv[pv] = id;
    return id;
}

/* Post-order walk from value pv; returns its local id or -1 (error set). */
static int visit(canon_ctx *c, int pv) {
    if (c->local_of_pv[pv] >= 0) return c->local_of_pv[pv];
    const korch_kernel_spec *spec = c->spec;
    const korch_pvalue *v = &spec->pg->values[pv];
    if (!cg_ctype(v->dtype)) {
        unsupported(c, "value of dtype %s", korch_dtype_name(v->dtype));
        return -1;
    }
    int64_t numel = korch_shape_numel(&v->shape);
    if (numel <= 0) {
        unsupported(c, "empty or oversized tensor%s", "");
        return -1;
    }
    int sn = spec_node_of_value(spec, pv);
    if (sn < 0 || spec_input_of_value(spec, pv) >= 0) {
        if (spec_input_of_value(spec, pv) < 0) {
            unsupported(c, "a value is neither produced in the kernel nor one of its inputs%s", "");
            return -1;
        }
        int id = add_value(c, pv);
        cg_value *cv = &c->k->values[id];
        if (v->is_constant && numel == 1 && v->constant.data) {
            cv->inline_scalar = true;
            cv->scalar = korch_tensor_get_f64(&v->constant, 0);
        }
        cv->input_slot = c->k->n_inputs;
        c->k->input_spec[c->k->n_inputs++] = spec_input_of_value(spec, pv);
        return id;
    }
    if (c->node_state[sn] == 1) {
        unsupported(c, "the kernel's nodes form a cycle%s", "");
        return -1;
    }
    c->node_state[sn] = 1;
    const korch_pnode *pn = &spec->pg->nodes[spec->nodes[sn]];
    if (pn->kind != KORCH_PRIM_ELEMENTWISE && pn->kind != KORCH_PRIM_REDUCE && pn->kind != KORCH_PRIM_LAYOUT) {
        unsupported(c, "%s primitive (memory-bound kernels only)", pn->kind == KORCH_PRIM_LINEAR ? "linear" : "opaque");
        return -1;
    }
    if (pn->n_outputs != 1 || pn->n_inputs < 1 || pn->n_inputs > KORCH_MAX_RANK) {
        unsupported(c, "malformed primitive%s", "");
        return -1;
    }
    if (pn->kind == KORCH_PRIM_LAYOUT && pn->u.layout.n_maps != pn->n_inputs) {
        unsupported(c, "layout primitive whose maps do not match its inputs%s", "");
        return -1;
    }
    if (pn->kind == KORCH_PRIM_ELEMENTWISE && korch_ew_arity(pn->u.ew.op) != pn->n_inputs) {
        unsupported(c, "elementwise primitive with the wrong arity%s", "");
        return -1;
    }
    cg_node node = {.pn = pn, .n_in = pn->n_inputs};
    for (int i = 0; i < pn->n_inputs; i++) {
        int in = pn->inputs[i];
        if (in < 0 || in >= spec->pg->n_values) {
            unsupported(c, "primitive input out of range%s", "");
            return -1;
        }
        node.in[i] = visit(c, in);
        if (node.in[i] < 0) return -1;
    }
    if (pn->kind == KORCH_PRIM_REDUCE) {
        korch_dtype dt = c->k->values[node.in[0]].dtype;
        if (dt != KORCH_DTYPE_FLOAT32 && dt != KORCH_DTYPE_FLOAT64) {
            unsupported(c, "reduction over %s (floating point only)", korch_dtype_name(dt));
            return -1;
        }
    }
    c->node_state[sn] = 2;
    int id = add_value(c, pv);
    node.out = id;
    c->k->values[id].producer = c->k->n_nodes;
    c->k->nodes[c->k->n_nodes++] = node;
    return id;
}

static void sig_shape(cg_buf *b, const cg_value *v) {
    cg_buf_printf(b, "%d[", (int)v->dtype);
    for (int d = 0; d < v->shape.rank; d++) cg_buf_printf(b, "%lld,", (long long)v->shape.dims[d]);
    cg_buf_printf(b, "]");
}

static void sig_text(cg_kernel *k, cg_buf *b) {
    cg_buf_printf(b, "%s;", CG_GENERATOR_VERSION);
    for (int i = 0; i < k->n_values; i++) {
        const cg_value *v = &k->values[i];
        cg_buf_printf(b, "v%d:", i);
        sig_shape(b, v);
        if (v->producer < 0) {
            cg_buf_printf(b, "=in%d", v->input_slot);
            if (v->inline_scalar) cg_buf_printf(b, "(%a)", v->scalar);
        } else {
            const cg_node *n = &k->nodes[v->producer];
            const korch_pnode *pn = n->pn;
            cg_buf_printf(b, "=k%d(", (int)pn->kind);
            for (int j = 0; j < n->n_in; j++) cg_buf_printf(b, "v%d,", n->in[j]);
            cg_buf_printf(b, ")");
            if (pn->kind == KORCH_PRIM_ELEMENTWISE)
                cg_buf_printf(b, "ew%d,%a,%a", (int)pn->u.ew.op, (double)pn->u.ew.alpha, (double)pn->u.ew.beta);
            else if (pn->kind == KORCH_PRIM_REDUCE)
                cg_buf_printf(b, "r%d,%x,%d", (int)pn->u.reduce.op, pn->u.reduce.axes, (int)pn->u.reduce.keepdims);
            else {
                const korch_prim_layout *l = &pn->u.layout;
                cg_buf_printf(b, "l%d,%a", l->n_maps, l->pad_value);
                for (int m = 0; m < l->n_maps; m++) {
                    const korch_index_map *map = &l->maps[m];
                    cg_buf_printf(b, "|m%d", map->input_rank);
                    for (int t = 0; t < map->input_rank && t < KORCH_MAX_RANK; t++) {
                        const korch_index_term *term = &map->terms[t];
                        cg_buf_printf(b, "{");
                        for (int j = 0; j < v->shape.rank; j++) cg_buf_printf(b, "%lld,", (long long)term->coef[j]);
                        cg_buf_printf(b, "%lld/%lld%%%lld", (long long)term->offset, (long long)term->div,
                                      (long long)term->mod);
                        if (term->table) {
                            char h[33];
                            cg_hash_hex(term->table, (size_t)term->table_size * sizeof *term->table, h);
                            cg_buf_printf(b, "T%lld:%s", (long long)term->table_size, h);
                        }
                        cg_buf_printf(b, "}");
                    }
                }
            }
        }
        cg_buf_printf(b, ";");
    }
    cg_buf_printf(b, "out");
    for (int i = 0; i < k->n_outputs; i++) cg_buf_printf(b, ",v%d", k->output_value[i]);
}

korch_status cg_kernel_from_spec(const korch_kernel_spec *spec, cg_kernel *k, char *reason, size_t size) {
    memset(k, 0, sizeof *k);
    if (reason && size) reason[0] = '\0';
    char dummy[8];
    if (!reason || !size) {
        reason = dummy;
        size = sizeof dummy;
    }
    if (!spec || !spec->pg || spec->n_nodes < 1 || spec->n_outputs < 1 || spec->n_nodes > 4096 ||
        spec->n_inputs < 0 || spec->n_inputs > 4096 || spec->n_outputs > 4096) {
        snprintf(reason, size, "empty or oversized kernel spec");
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "cgen: %s", reason);
    }
    const korch_pgraph *pg = spec->pg;
    for (int i = 0; i < spec->n_nodes; i++)
        if (spec->nodes[i] < 0 || spec->nodes[i] >= pg->n_nodes || pg->nodes[spec->nodes[i]].dead) {
            snprintf(reason, size, "spec node %d is not a live primitive", i);
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "cgen: %s", reason);
        }
    for (int i = 0; i < spec->n_inputs; i++)
        if (spec->inputs[i] < 0 || spec->inputs[i] >= pg->n_values) {
            snprintf(reason, size, "spec input %d is not a value", i);
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "cgen: %s", reason);
        }
    for (int i = 0; i < spec->n_outputs; i++)
        if (spec->outputs[i] < 0 || spec->outputs[i] >= pg->n_values) {
            snprintf(reason, size, "spec output %d is not a value", i);
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "cgen: %s", reason);
        }
    if (cg_spec_has_linear(spec)) {
        /* depthwise convolutions written out as primitives the generator
         * has (expand.c); the kernel keeps the private graph they live in */
        cg_expanded e;
        KORCH_TRY(cg_expand_spec(spec, &e, reason, size));
        korch_status st = cg_kernel_from_spec(&e.spec, k, reason, size);
        if (st == KORCH_OK) {
            k->expanded = e.pg;
            e.pg = NULL;
        }
        cg_expanded_free(&e);
        return st;
    }
    canon_ctx c = {.spec = spec, .k = k, .reason = reason, .size = size};
    int cap_values = spec->n_nodes + spec->n_inputs + 1;
    k->values = calloc((size_t)cap_values, sizeof *k->values);
    k->nodes = calloc((size_t)spec->n_nodes, sizeof *k->nodes);
    k->input_spec = calloc((size_t)spec->n_inputs + 1, sizeof *k->input_spec);
    k->output_value = calloc((size_t)spec->n_outputs, sizeof *k->output_value);
    c.local_of_pv = malloc((size_t)pg->n_values * sizeof *c.local_of_pv);
    c.node_state = calloc((size_t)spec->n_nodes, sizeof *c.node_state);
    korch_status st = KORCH_OK;
    if (!k->values || !k->nodes || !k->input_spec || !k->output_value || !c.local_of_pv || !c.node_state) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        goto done;
    }
    for (int i = 0; i < pg->n_values; i++) c.local_of_pv[i] = -1;
    k->n_outputs = spec->n_outputs;
    for (int i = 0; i < spec->n_outputs; i++) {
        if (spec_node_of_value(spec, spec->outputs[i]) < 0) {
            st = unsupported(&c, "an output is not produced by the kernel's nodes%s", "");
            goto done;
        }
        int id = visit(&c, spec->outputs[i]);
        if (id < 0) {
            st = KORCH_ERR_UNSUPPORTED;
            goto done;
        }
        k->output_value[i] = id;
        if (k->values[id].output_slot < 0) k->values[id].output_slot = i;
    }
    cg_buf b = {0};
    sig_text(k, &b);
    if (b.oom) {
        cg_buf_free(&b);
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        goto done;
    }
    cg_hash_hex(b.data, b.len, k->sig);
    k->sig_text = b.data;
done:
    free(c.local_of_pv);
    free(c.node_state);
    if (st != KORCH_OK) cg_kernel_free(k);
    return st;
}

void cg_kernel_free(cg_kernel *k) {
    korch_pgraph_free(k->expanded);
    free(k->values);
    free(k->nodes);
    free(k->input_spec);
    free(k->output_value);
    free(k->sig_text);
    memset(k, 0, sizeof *k);
}
