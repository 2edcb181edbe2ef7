/* The precision the linear primitives compute in (docs/precision.md,
 * "Computing in bfloat16"). A lowering choice like the layout pass: it marks
 * primitives, and every consumer (interpreter, backends, structural hash)
 * reads the mark, so a bf16 plan can never be mistaken for a float32 one. */
#include <string.h>

#include "core/cpu.h"
#include "ir/pgraph.h"

bool korch_precision_parse(const char *text, korch_precision *out) {
    if (!text) return false;
    if (!strcmp(text, "fp32") || !strcmp(text, "f32") || !strcmp(text, "float32")) *out = KORCH_PRECISION_FP32;
    else if (!strcmp(text, "bf16") || !strcmp(text, "bfloat16")) *out = KORCH_PRECISION_BF16;
    else return false;
    return true;
}

const char *korch_precision_token(korch_precision p) { return p == KORCH_PRECISION_BF16 ? "bf16" : "fp32"; }

static bool float_operands(const korch_pgraph *pg, const korch_pnode *n) {
    return n->n_inputs >= 2 && pg->values[n->inputs[0]].dtype == KORCH_DTYPE_FLOAT32 &&
           pg->values[n->inputs[1]].dtype == KORCH_DTYPE_FLOAT32;
}

void korch_pgraph_set_precision(korch_pgraph *pg, korch_precision p) {
    for (int i = 0; i < pg->n_nodes; i++) {
        korch_pnode *n = &pg->nodes[i];
        if (n->dead || n->kind != KORCH_PRIM_LINEAR) continue;
        n->u.linear.bf16 = p == KORCH_PRECISION_BF16 && float_operands(pg, n);
    }
}

korch_precision korch_pgraph_precision(const korch_pgraph *pg) {
    for (int i = 0; i < pg->n_nodes; i++)
        if (!pg->nodes[i].dead && pg->nodes[i].kind == KORCH_PRIM_LINEAR && pg->nodes[i].u.linear.bf16)
            return KORCH_PRECISION_BF16;
    return KORCH_PRECISION_FP32;
}

korch_status korch_precision_check_cpu(korch_precision p) {
    /* oneDNN 2.6 computes bf16 convolutions and matmuls with AVX512_BF16's
     * dot products; without them it has no bf16 kernel faster than float32
     * (an emulation on plain AVX-512, nothing on AVX2), so asking for bf16
     * there is refused rather than quietly made slower */
    if (p == KORCH_PRECISION_BF16 && !korch_cpu_has_avx512_bf16())
        return korch_error(KORCH_ERR_UNSUPPORTED,
                           "--precision bf16 needs a CPU with AVX512_BF16 (bfloat16 dot products); this one has none "
                           "(see /proc/cpuinfo: avx512_bf16)");
    return KORCH_OK;
}
