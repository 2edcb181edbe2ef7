/* Text helpers of the exporter: the only way a model's string reaches
 * generated source (ex_c_string), buffer expressions, kernel descriptions. */
#include <stdio.h>
#include <string.h>

#include "export/export_internal.h"

/* Printable ASCII stays readable; everything else, and the three characters
 * that mean something inside a literal (" and \, and ? which starts
 * trigraphs in strict ISO C), becomes a three-digit octal escape: octal
 * escapes stop after three digits, so a following digit cannot join them
 * (hex escapes would swallow it). A newline, a NUL-less "* /", a "#include"
 * or a backslash inside the literal is then inert. */
void ex_c_string(cg_buf *b, const char *s) {
    cg_buf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\' && *p != '?') cg_buf_append(b, (const char *)p, 1);
        else cg_buf_printf(b, "\\%03o", *p);
    }
    cg_buf_append(b, "\"", 1);
}

void ex_value_ptr(const ex_ctx *x, int v, char *buf, size_t size) {
    const korch_pvalue *pv = &x->pg->values[v];
    if (pv->graph_input >= 0) snprintf(buf, size, "(void *)I[%d]", pv->graph_input);
    else if (pv->is_constant) snprintf(buf, size, "(void *)(W + %lld)", (long long)x->weight_offset[v]);
    else if (pv->graph_output >= 0) snprintf(buf, size, "O[%d]", pv->graph_output);
    else snprintf(buf, size, "(void *)(A + %lld)", (long long)x->mp.offset[v]);
}

void ex_describe_kernel(const ex_ctx *x, const korch_plan_kernel *k, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < k->n_nodes && n + 40 < size; i++) {
        const korch_pnode *pn = &x->pg->nodes[k->nodes[i]];
        const char *detail = "";
        switch (pn->kind) {
        case KORCH_PRIM_ELEMENTWISE: detail = korch_ew_name(pn->u.ew.op); break;
        case KORCH_PRIM_REDUCE: detail = korch_reduce_op_name(pn->u.reduce.op); break;
        case KORCH_PRIM_LAYOUT: detail = korch_layout_tag_name(pn->u.layout.tag); break;
        case KORCH_PRIM_LINEAR:
            detail = pn->u.linear.op == KORCH_LINEAR_MATMUL ? "matmul"
                     : pn->u.linear.op == KORCH_LINEAR_CONV ? "conv" : "conv_transpose";
            break;
        case KORCH_PRIM_OPAQUE: /* a known op type (validated at load), never model text */
            detail = x->pg->source ? x->pg->source->nodes[pn->u.opaque.source_node].op_type : "";
            break;
        default: break;
        }
        n += (size_t)snprintf(buf + n, size - n, "%s%s.%s", i ? " " : "", korch_prim_kind_name(pn->kind), detail);
    }
    /* korch's names are identifiers, but a comment must never end early */
    for (char *p = buf; *p; p++)
        if (*p == '*' || *p == '/' || (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) *p = '_';
}

/* FNV-1a over 64-bit little-endian words, the tail padded with zeros
 * (support/runtime.inc computes the same) */
static uint64_t read_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

uint64_t ex_checksum(const uint8_t *data, uint64_t n) {
    uint64_t h = 0xcbf29ce484222325ull, i = 0;
    for (; i + 8 <= n; i += 8) h = (h ^ read_u64(data + i)) * 0x100000001b3ull;
    if (i < n) {
        uint8_t tail[8] = {0};
        memcpy(tail, data + i, (size_t)(n - i));
        h = (h ^ read_u64(tail)) * 0x100000001b3ull;
    }
    return h;
}
