#include <string.h>

#include "core/tensor.h"
#include "test.h"

int main(void) {
    korch_shape s;
    CHECK(korch_shape_parse("1x3x224x224", &s));
    CHECK(s.rank == 4 && s.dims[0] == 1 && s.dims[1] == 3 && s.dims[3] == 224);
    CHECK(korch_shape_numel(&s) == 3 * 224 * 224);
    CHECK(korch_shape_parse("2,5", &s) && s.rank == 2 && s.dims[1] == 5);
    CHECK(korch_shape_parse("scalar", &s) && s.rank == 0 && korch_shape_numel(&s) == 1);
    CHECK(!korch_shape_parse("", &s));
    CHECK(!korch_shape_parse("1x", &s));
    CHECK(!korch_shape_parse("1x-3", &s));
    CHECK(!korch_shape_parse("1x2x3x4x5x6x7x8x9", &s));
    CHECK(!korch_shape_parse("axb", &s));

    char buf[64];
    CHECK(korch_shape_parse("4x5", &s));
    CHECK(strcmp(korch_shape_format(&s, buf, sizeof buf), "4x5") == 0);

    /* broadcasting */
    korch_shape a = {.rank = 3, .dims = {2, 1, 4}}, b = {.rank = 2, .dims = {3, 1}}, out;
    CHECK(korch_shape_broadcast(&a, &b, &out));
    CHECK(out.rank == 3 && out.dims[0] == 2 && out.dims[1] == 3 && out.dims[2] == 4);
    korch_shape c = {.rank = 1, .dims = {3}};
    CHECK(!korch_shape_broadcast(&a, &c, &out));

    /* absurd shapes are rejected without allocating */
    korch_shape huge = {.rank = 3, .dims = {1 << 20, 1 << 20, 1 << 20}};
    CHECK(korch_shape_numel(&huge) == -1);
    korch_tensor t;
    CHECK(korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &huge) == KORCH_ERR_SHAPE);
    CHECK(strstr(korch_last_error(), "too large") != NULL);
    korch_shape overflow = {.rank = 2, .dims = {INT64_MAX / 2, 4}};
    CHECK(korch_shape_numel(&overflow) == -1);

    CHECK(korch_axis_normalize(-1, 4) == 3);
    CHECK(korch_axis_normalize(4, 4) == -1);
    CHECK(korch_axis_normalize(-5, 4) == -1);
    TEST_MAIN_END();
}
