/* Standard competing loads for bench/load/run.py (issue 16): one process of
 * either kind, running until killed.
 *   load cpu      a register-only loop: takes one core, touches no memory
 *   load stream   STREAM triad over three 64 MiB arrays, one thread: takes
 *                 a core and as much memory bandwidth as one core can pull
 * Built by run.py with `cc -O2`; prints nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink;

static void cpu_loop(void)
{
    uint64_t x = 88172645463325252ull;
    for (;;) {
        for (int i = 0; i < 1 << 20; i++) { /* xorshift: no memory traffic */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        sink = x;
    }
}

static void stream_loop(void)
{
    const size_t n = (size_t)64 << 20 >> 3; /* 64 MiB of doubles each: far beyond any LLC */
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) { fprintf(stderr, "load: out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) { b[i] = 1.0; c[i] = 2.0; }
    for (;;) {
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
        sink = (uint64_t)a[n / 2];
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "cpu")) cpu_loop();
    if (argc == 2 && !strcmp(argv[1], "stream")) stream_loop();
    fprintf(stderr, "usage: load cpu|stream\n");
    return 2;
}
