/* Staged tiles: transposes written with contiguous stores.
 *
 * Tiled with its last two loops swapped (t>0, o1), a nest's point loops run
 * down the output's columns, so reads that walk an input's rows (NCHW to
 * NHWC) are contiguous, and the output would be written one element per
 * row. Each output is therefore computed into a tile buffer in that order
 * and then copied out row by row. With the concat's pointer select
 * (emit_value.c) this took SegFormer's decoder kernel (four NCHW inputs
 * concatenated into one NHWC tensor, 64 MiB each way) from 20.7 to 14.8 ms
 * (docs/codegen.md, "Page-striding layouts"). Outputs as large as the
 * last-level cache are copied out with streaming stores, a line at a time
 * (the stream knob; attempt() fences each thread after the nest), so they
 * do not also cost their read for ownership. */
#include <stdio.h>
#include <string.h>

#include "backend/cgen/emit.h"

/* Loops of a tiled nest, innermost last: ..., tile, tile, point, point. The
 * point loop of dimension d runs from its tile variable for at most T. */
void cg_stage_store(cg_emit *e, cg_stage *g, int value, int slot, const char *expr) {
    const cg_nest *ns = g->nest;
    int r = ns->n - 2, col = ns->n - 1, T = e->s->tile;
    if (g->n >= CG_STAGE_MAX) {
        cg_fail(e, KORCH_ERR_UNSUPPORTED, "more than %d staged outputs", CG_STAGE_MAX);
        return;
    }
    char *buf = g->buf[g->n];
    snprintf(buf, sizeof g->buf[0], "tb%d", e->n_tmp++);
    g->value[g->n] = value;
    g->slot[g->n++] = slot;
    /* declared in the innermost tile loop, before the point loops */
    cg_stmt(e, e->depth - 3, "%s %s[%d];", cg_ctype(e->k->values[value].dtype), buf, T * T);
    cg_stmt(e, e->depth - 1, "%s[%d * (x%d - %s) + (x%d - %s)] = %s;", buf, T, ns->sym[r], ns->tile_var[r],
            ns->sym[col], ns->tile_var[col], expr);
}

void cg_stage_copy_out(cg_emit *e, cg_stage *g) {
    cg_nest *ns = g->nest;
    int r = ns->n - 2, col = ns->n - 1, T = e->s->tile;
    cg_loop_close(e);
    cg_loop_close(e);
    ns->opened -= 2;
    /* one pair of loops per output: rows outer, columns inner */
    for (int o = 0; o < g->n; o++) {
        int xs[2];
        for (int i = 0; i < 2; i++) {
            int d = i == 0 ? r : col;
            xs[i] = cg_new_sym(e, 0, ns->ext[d] - 1, e->depth);
            char pragma[64] = "", header[256];
            if (i == 1 && e->s->vec && !g->stream)
                snprintf(pragma, sizeof pragma, "%*s#pragma omp simd\n", 4 * (e->depth + 1), "");
            /* a streamed row is copied in whole lines: 16 floats a step */
            cg_point_loop_header(header, sizeof header, 4 * (e->depth + 1), xs[i], ns->tile_var[d], T, ns->ext[d],
                                 i == 1 && g->stream ? 16 : 1);
            cg_loop_open_raw(e, pragma, header);
        }
        const korch_shape *shape = &e->k->values[g->value[o]].shape;
        /* the nest covers the output's last ns->n dimensions; the ones
         * before are the fused outer loops */
        int first = shape->rank - ns->n;
        cg_aff c[KORCH_MAX_RANK];
        for (int d = 0; d < shape->rank; d++) {
            int nd = d - first;
            c[d] = cg_aff_sym(d < first ? e->outer[d] : nd == r ? xs[0] : nd == col ? xs[1] : ns->sym[nd]);
        }
        cg_aff lin = cg_linear(e, shape, c);
        char s[400];
        cg_aff_str(&lin, s, sizeof s);
        if (g->stream)
            cg_stmt(e, e->depth - 1, "cg_stream16(&out%d[%s], &%s[%d * (x%d - %s) + (x%d - %s)]);", g->slot[o], s,
                    g->buf[o], T, xs[0], ns->tile_var[r], xs[1], ns->tile_var[col]);
        else
            cg_stmt(e, e->depth - 1, "out%d[%s] = %s[%d * (x%d - %s) + (x%d - %s)];", g->slot[o], s, g->buf[o], T,
                    xs[0], ns->tile_var[r], xs[1], ns->tile_var[col]);
        cg_loop_close(e);
        cg_loop_close(e);
    }
}
