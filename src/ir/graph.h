/* The operator graph: an ONNX graph after parsing, owned by korch (no
 * protobuf structures survive the loader). Values are tensors (graph inputs,
 * initializers, node outputs); nodes refer to values by index. */
#ifndef KORCH_IR_GRAPH_H
#define KORCH_IR_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/strmap.h"
#include "core/tensor.h"

struct korch_op_def;

/* Attribute kinds use the ONNX AttributeProto.AttributeType numbering. */
typedef enum korch_attr_type {
    KORCH_ATTR_UNDEFINED = 0,
    KORCH_ATTR_FLOAT = 1,
    KORCH_ATTR_INT = 2,
    KORCH_ATTR_STRING = 3,
    KORCH_ATTR_TENSOR = 4,
    KORCH_ATTR_GRAPH = 5,
    KORCH_ATTR_FLOATS = 6,
    KORCH_ATTR_INTS = 7,
    KORCH_ATTR_STRINGS = 8,
} korch_attr_type;

typedef struct korch_attr {
    char *name;
    korch_attr_type type;
    float f;
    int64_t i;
    char *s;            /* NUL-terminated copy of a STRING attribute */
    float *floats;      /* FLOATS */
    int64_t *ints;      /* INTS */
    char **strings;     /* STRINGS: count NUL-terminated copies (RNN activations) */
    int count;          /* elements in floats / ints / strings */
    korch_tensor *tensor; /* TENSOR */
    struct korch_graph *graph; /* GRAPH (If branches, Loop/Scan bodies; owned) */
} korch_attr;

typedef struct korch_value {
    char *name;
    korch_dtype dtype;     /* UNDEFINED until known */
    korch_shape shape;
    bool has_shape;        /* every dim known and static */
    int producer;          /* node index, or -1 */
    bool is_graph_input;
    bool is_graph_output;
    bool is_constant;      /* initializer or folded: `constant` holds the data */
    /* In a subgraph: defined in an enclosing graph (docs/control-flow.md). */
    bool is_outer_scope;
    korch_tensor constant;
    /* For graph inputs with symbolic dims: the dim_param names (NULL if static). */
    char *dim_params[KORCH_MAX_RANK];
    /* Type declared by the model (graph input/output or value_info), checked
     * against inference. Dims < 0 are unknown/symbolic. */
    korch_dtype declared_dtype;
    bool has_declared_shape;
    korch_shape declared_shape;
} korch_value;

typedef struct korch_node {
    char *name;        /* never NULL: the loader names unnamed nodes "<op>_<index>" */
    char *op_type;
    char *domain;      /* "" for the default ONNX domain */
    int opset;         /* opset version of the node's domain */
    const struct korch_op_def *def; /* resolved by korch_graph_resolve_ops */
    int n_inputs;
    int *inputs;       /* value indices; -1 for an omitted optional input */
    int n_outputs;
    int *outputs;      /* value indices; -1 for an omitted optional output */
    /* The last n_implicit_inputs of `inputs` are not ONNX inputs: they are the
     * outer-scope values the node's subgraphs read (If/Loop/Scan), so that
     * ordering, liveness and fission see the dependency. */
    int n_implicit_inputs;
    int n_attrs;
    korch_attr *attrs;
    bool dead;         /* removed by folding or clean-up; skipped everywhere */
    /* A run-time If replaced by both its branches and a Where per output
     * (dead too; frontend/if_convert.c), kept for `korch check`'s note. */
    bool if_converted;
} korch_node;

typedef struct korch_opset_import {
    char *domain;
    int64_t version;
} korch_opset_import;

typedef struct korch_graph {
    char *name;
    char *model_dir;   /* folder of the model file (external data root) */
    int64_t ir_version;
    int n_opsets;
    korch_opset_import *opsets;

    int n_values, cap_values;
    korch_value *values;
    korch_strmap value_index; /* name -> value index */

    int n_nodes, cap_nodes;
    korch_node *nodes;

    int n_inputs;  /* non-constant graph inputs, in model order */
    int *inputs;
    /* NULL, or n_inputs entries: the value graph input i was specialized to
     * (korch optimize --specialize; dtype UNDEFINED where not). Its readers
     * read a constant copy instead; the input stays, and a plan guards it
     * (docs/control-flow.md, "Guarded specialization"). */
    korch_tensor *specialized;
    int n_outputs;
    int *outputs;

    /* Subgraphs (an attribute of a control-flow node) only: the values read
     * from enclosing graphs (is_outer_scope), and for each the index of the
     * owning node's input that carries it (docs/control-flow.md). */
    int depth;         /* 0 for the main graph */
    int n_captures;
    int *captures;
    int *capture_slots;
    /* An If branch that cannot be inferred at the model's shapes (the branch
     * a run-time condition never takes for them): why, or NULL. Running it
     * is an error; the If takes its types from the other branch. */
    char *unusable;
    /* A Loop body whose shapes depend on values: left uninferred at load and
     * inferred again at every iteration (ops/control_loop.c). */
    bool infer_each_iteration;
    /* Set before inference: every run-time If stays whole, none is
     * if-converted (frontend/if_convert.c); the differential tester's
     * reference for what the conversion changes. */
    bool keep_run_time_ifs;
    /* Set by frontend inference on every graph it infers (the function it
     * infers subgraphs with): a Loop whose body's shapes depend on values
     * infers its body again at every iteration when it runs
     * (ops/control_loop.c, docs/control-flow.md). */
    korch_status (*infer_subgraph)(struct korch_graph *sub, const korch_tensor *formal, int n_formal,
                                   korch_tensor *const *node_inputs);
} korch_graph;

korch_status korch_graph_create(korch_graph **out);
void korch_graph_free(korch_graph *g);

/* Finds or creates the value named `name`; returns its index or -1 (OOM). */
int korch_graph_intern_value(korch_graph *g, const char *name);
int korch_graph_find_value(const korch_graph *g, const char *name);
/* A new value with a name not used in g: "<base>::<tag>", then
 * "<base>::<tag>.1", ... (-1 when out of memory). */
int korch_graph_fresh_value(korch_graph *g, const char *base, const char *tag);
/* Appends a node with zeroed fields; returns its index or -1 (OOM). Pointers
 * into g->nodes are invalidated. */
int korch_graph_add_node(korch_graph *g);
/* Opset version imported for `domain` ("" or "ai.onnx" = default), or -1. */
int64_t korch_graph_opset(const korch_graph *g, const char *domain);

/* Topological order of live nodes. `order` must hold n_nodes ints; *count is
 * the number written. Fails naming a node on a cycle. */
korch_status korch_graph_toposort(const korch_graph *g, int *order, int *count);

/* Attribute access. Getters return the default when the attribute is absent. */
const korch_attr *korch_node_attr(const korch_node *n, const char *name);
int64_t korch_node_attr_int(const korch_node *n, const char *name, int64_t dflt);
float korch_node_attr_float(const korch_node *n, const char *name, float dflt);
const char *korch_node_attr_string(const korch_node *n, const char *name, const char *dflt);
/* INTS attribute: returns count (or -1 when absent) and sets *ints. */
int korch_node_attr_ints(const korch_node *n, const char *name, const int64_t **ints);
int korch_node_attr_floats(const korch_node *n, const char *name, const float **floats);
/* STRINGS attribute: returns count (or -1 when absent) and sets *strings. */
int korch_node_attr_strings(const korch_node *n, const char *name, char *const **strings);
/* The GRAPH attribute `name` of a node (a control-flow subgraph), or NULL. */
korch_graph *korch_node_subgraph(const korch_node *n, const char *name);

/* A deep copy (subgraphs included; borrowed constants stay borrowed;
 * graph_clone.c). */
korch_status korch_graph_clone(const korch_graph *g, korch_graph **out);

/* Number of inputs actually present (trailing omitted ones trimmed). */
int korch_node_input_count(const korch_node *n);
bool korch_node_has_input(const korch_node *n, int i);

void korch_attr_free(korch_attr *a);

/* Make a string safe to print on one terminal line (for error messages):
 * control characters become '?', long names are truncated with "...". */
const char *korch_printable(const char *s, char *buf, size_t size);

#endif
