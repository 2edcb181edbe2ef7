#include <stdio.h>
#include <math.h>
void k(const float *in0, const float *in1, float *out1);
int main(void) {
    float a[15], b[1] = {0.3f}, z[30]; int bad = 0;
    for (int i = 0; i < 15; i++) a[i] = (float)((i * 7 % 11) - 5) / 5.0f;
    k(a, b, z);
    for (int i = 0; i < 30; i++) {
        float t = (i < 15 ? a[i] : a[i - 15]) - b[0];
        float w = i < 15 ? (t * 0.103f + t) * 0.0934f : t;
        if (fabsf(w - z[i]) > 1e-6f) bad++;
    }
    printf("%d bad\n", bad); return bad != 0;
}
