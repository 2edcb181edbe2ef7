/* Helpers for the --input NAME=FILE options of run and optimize: messages
 * that name the file, its shape and what the model expects, and list the
 * model's inputs when a name does not match. */
#ifndef KORCH_CLI_CLI_INPUTS_H
#define KORCH_CLI_CLI_INPUTS_H

#include <stddef.h>

#include "ir/graph.h"

/* "x, y" (the model's input names, printable, shortened with "..." to fit) */
const char *korch_cli_input_names(const korch_graph *g, char *buf, size_t size);

/* The model's declared shape of graph input `v`, symbolic dimensions by
 * their names: "Nx3x128x128". */
const char *korch_cli_declared_shape(const korch_value *v, char *buf, size_t size);

/* Does the tensor read from `path` fit graph input `v` of an unprepared
 * graph (rank, and every dimension the model fixes)? 0, or 1 after a
 * "korch: error:" line naming the file, its shape and the input's shape. */
int korch_cli_input_fits(const korch_value *v, const korch_shape *file_shape, const char *path);

/* `korch run` without --output-dir or --bench: one line per graph output on
 * stdout (name, dtype, shape, range of a float32 output), then a note on
 * stderr that nothing was written (unless quiet), so that a run is never
 * silent. */
void korch_cli_print_outputs(const korch_graph *g, const korch_tensor *outputs, bool quiet);

#endif
