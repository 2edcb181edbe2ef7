/* The reference executor: runs an inferred op graph node by node with the
 * reference kernels of the op table. It is the oracle every optimised path is
 * checked against, so it favours clarity over speed. */
#ifndef KORCH_OPS_REFERENCE_H
#define KORCH_OPS_REFERENCE_H

#include "ir/graph.h"

/* Called after each node with the values it produced (for tracing/tests). */
typedef void (*korch_value_observer)(void *user, const korch_graph *g, int value, const korch_tensor *t);

/* inputs[i] binds g->inputs[i] and must match its inferred dtype and shape.
 * outputs[i] receives g->outputs[i] as a newly allocated tensor (owned). */
korch_status korch_reference_run(const korch_graph *g, const korch_tensor *inputs, korch_tensor *outputs);
/* Zero-copy variant: outputs[i] is caller storage of g->outputs[i]'s dtype and
 * shape (not owned). Nodes write graph outputs straight into it; an output
 * that is a graph input or a constant is copied. Storage must not overlap the
 * inputs. */
korch_status korch_reference_run_into(const korch_graph *g, const korch_tensor *inputs, korch_tensor *outputs);
/* A subgraph of a control-flow node: as korch_reference_run_into, and
 * captures[c] binds the outer-scope value g->captures[c] (ignored for
 * captures that were constant at load). */
korch_status korch_reference_run_subgraph(const korch_graph *g, const korch_tensor *inputs,
                                          korch_tensor *const *captures, korch_tensor *outputs);
korch_status korch_reference_run_observed(const korch_graph *g, const korch_tensor *inputs, korch_tensor *outputs,
                                          korch_value_observer observer, void *user);
/* As korch_reference_run, with every QuantizeLinear's computed x moved by a
 * relative 2^-20 first (korch_tensor_jitter): a second correct computation
 * of a model that quantizes, whose float32 noise rounds other values on
 * ties the other way (the quantization noise rule, verify/plan_check.c). */
korch_status korch_reference_run_jittered(const korch_graph *g, const korch_tensor *inputs, korch_tensor *outputs,
                                          uint64_t seed);

#endif
