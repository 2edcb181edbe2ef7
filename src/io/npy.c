#include "io/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/graph.h"
#include "frontend/onnx_load.h"
#include "frontend/onnx_tensor.h"

static const struct {
    const char *descr;
    korch_dtype dtype;
} npy_types[] = {
    {"<f4", KORCH_DTYPE_FLOAT32}, {"<f8", KORCH_DTYPE_FLOAT64}, {"<i8", KORCH_DTYPE_INT64},
    {"<i4", KORCH_DTYPE_INT32},   {"<i2", KORCH_DTYPE_INT16},   {"|i1", KORCH_DTYPE_INT8},
    {"|u1", KORCH_DTYPE_UINT8},   {"<u2", KORCH_DTYPE_UINT16},  {"<u4", KORCH_DTYPE_UINT32},
    {"<u8", KORCH_DTYPE_UINT64},  {"|b1", KORCH_DTYPE_BOOL},    {"<f2", KORCH_DTYPE_FLOAT16},
};

/* Finds `'key':` in the header dict and returns a pointer after the colon. */
static const char *dict_value(const char *header, const char *key) {
    char pattern[32];
    snprintf(pattern, sizeof pattern, "'%s'", key);
    const char *p = strstr(header, pattern);
    if (!p) return NULL;
    p += strlen(pattern);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

/* The dtype of a descr value ('<f4', '>i8', '|u1', '=f8'...). Big-endian
 * arrays ('>', what numpy writes for dtype('>f4')) are read and byte-swapped
 * into the machine's little-endian order: *swap says so. */
static korch_dtype descr_dtype(const char *d, bool *swap) {
    *swap = false;
    /* d[1] first: strchr also finds the terminator, and a header cut right
     * after the opening quote must not send the compare past it (fuzz_tensor) */
    if (d[0] != '\'' || d[1] == '\0' || !strchr("<>|=", d[1])) return KORCH_DTYPE_UNDEFINED;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++) {
        const char *code = npy_types[i].descr + 1; /* "f4" */
        size_t len = strlen(code);
        if (strncmp(d + 2, code, len) != 0 || d[2 + len] != '\'') continue;
        bool one_byte = npy_types[i].descr[0] == '|';
        /* numpy writes bytes as '|u1' but also accepts '<u1' and '>u1' */
        *swap = d[1] == '>' && !one_byte;
        if (d[1] == '|' && !one_byte) return KORCH_DTYPE_UNDEFINED; /* no byte order for a multi-byte type */
        return npy_types[i].dtype;
    }
    return KORCH_DTYPE_UNDEFINED;
}

/* the descr value as written, quotes included, for messages */
static void descr_text(const char *d, char *buf, size_t size) {
    size_t n = 0;
    if (*d == '\'') buf[n++] = *d++;
    while (*d && *d != '\'' && *d != ',' && n + 2 < size) buf[n++] = *d++;
    if (*d == '\'' && n + 1 < size) buf[n++] = '\'';
    buf[n] = '\0';
}

static void swap_bytes(void *data, size_t count, size_t width) {
    uint8_t *p = data;
    for (size_t e = 0; e < count; e++, p += width)
        for (size_t a = 0, b = width - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

korch_status korch_npy_parse(const uint8_t *data, size_t size, const char *what, korch_tensor *out) {
    memset(out, 0, sizeof *out);
    if (size < 10 || memcmp(data, "\x93NUMPY", 6) != 0)
        return korch_error(KORCH_ERR_PARSE,
                           "%s: not a .npy file (bad magic); a tensor file is a NumPy .npy file or an ONNX "
                           "TensorProto named .pb",
                           what);
    int major = data[6];
    size_t header_len, offset;
    if (major == 1) {
        header_len = (size_t)data[8] | ((size_t)data[9] << 8);
        offset = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12) return korch_error(KORCH_ERR_PARSE, "%s: truncated .npy header", what);
        header_len = (size_t)data[8] | ((size_t)data[9] << 8) | ((size_t)data[10] << 16) | ((size_t)data[11] << 24);
        offset = 12;
    } else {
        return korch_error(KORCH_ERR_PARSE, "%s: unsupported .npy version %d", what, major);
    }
    if (header_len > size - offset || header_len > (1u << 20))
        return korch_error(KORCH_ERR_PARSE, "%s: truncated .npy header", what);
    char *header = malloc(header_len + 1);
    if (!header) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(header, data + offset, header_len);
    header[header_len] = '\0';
    korch_status st = KORCH_OK;
    korch_dtype dtype = KORCH_DTYPE_UNDEFINED;
    korch_shape shape = {0};
    const char *d = dict_value(header, "descr");
    const char *f = dict_value(header, "fortran_order");
    const char *s = dict_value(header, "shape");
    if (!d || !f || !s) {
        st = korch_error(KORCH_ERR_PARSE, "%s: .npy header lacks descr, fortran_order or shape", what);
        goto done;
    }
    bool swap = false;
    dtype = descr_dtype(d, &swap);
    if (dtype == KORCH_DTYPE_UNDEFINED) {
        char buf[40];
        descr_text(d, buf, sizeof buf);
        st = korch_error(KORCH_ERR_UNSUPPORTED,
                         "%s: the .npy dtype %s is not supported; korch reads float16, float32, float64, int8 to "
                         "int64, uint8 to uint64 and bool arrays",
                         what, buf);
        goto done;
    }
    if (strncmp(f, "False", 5) != 0) {
        st = korch_error(KORCH_ERR_UNSUPPORTED, "%s: Fortran-ordered .npy arrays are not supported; save a C-ordered copy "
                                                  "(numpy.save(path, numpy.ascontiguousarray(a)))", what);
        goto done;
    }
    if (*s != '(') {
        st = korch_error(KORCH_ERR_PARSE, "%s: bad .npy shape", what);
        goto done;
    }
    s++;
    while (*s && *s != ')') {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        char *end = NULL;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || shape.rank >= KORCH_MAX_RANK) {
            st = korch_error(KORCH_ERR_PARSE, "%s: bad .npy shape", what);
            goto done;
        }
        shape.dims[shape.rank++] = v;
        s = end;
    }
    if (*s != ')') {
        st = korch_error(KORCH_ERR_PARSE, "%s: bad .npy shape", what);
        goto done;
    }
    if (korch_shape_numel(&shape) < 0) {
        st = korch_error(KORCH_ERR_PARSE, "%s: .npy shape is too large", what);
        goto done;
    }
    size_t bytes = (size_t)korch_shape_numel(&shape) * korch_dtype_size(dtype);
    if (size - offset - header_len < bytes) {
        st = korch_error(KORCH_ERR_PARSE, "%s: .npy data is truncated (%zu bytes, need %zu)", what,
                         size - offset - header_len, bytes);
        goto done;
    }
    st = korch_tensor_alloc(out, dtype, &shape);
    if (st == KORCH_OK && bytes) memcpy(out->data, data + offset + header_len, bytes);
    if (st == KORCH_OK && swap) swap_bytes(out->data, (size_t)korch_shape_numel(&shape), korch_dtype_size(dtype));
done:
    free(header);
    return st;
}

korch_status korch_npy_read(const char *path, korch_tensor *out) {
    uint8_t *data = NULL;
    size_t size = 0;
    KORCH_TRY(korch_read_file(path, (size_t)1 << 40, &data, &size));
    char what[300], buf[256];
    snprintf(what, sizeof what, "\"%s\"", korch_printable(path, buf, sizeof buf));
    korch_status st = korch_npy_parse(data, size, what, out);
    free(data);
    return st;
}

korch_status korch_npy_write(const char *path, const korch_tensor *t) {
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].dtype == t->dtype) descr = npy_types[i].descr;
    char buf[256];
    if (!descr) return korch_error(KORCH_ERR_UNSUPPORTED, "cannot write dtype %s to .npy", korch_dtype_name(t->dtype));
    char shape[256] = "(";
    size_t used = 1;
    for (int i = 0; i < t->shape.rank; i++)
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%lld%s", (long long)t->shape.dims[i],
                                 (t->shape.rank == 1 || i + 1 < t->shape.rank) ? ", " : "");
    snprintf(shape + used, sizeof shape - used, ")");
    char header[512];
    int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    /* pad with spaces so that magic + len + header + '\n' is a multiple of 64 */
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    for (int i = 0; i < pad; i++) header[len++] = ' ';
    header[len++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return korch_error(KORCH_ERR_IO, "cannot write \"%s\": %s", korch_printable(path, buf, sizeof buf), strerror(errno));
    uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(len & 0xff), (uint8_t)(len >> 8)};
    size_t bytes = korch_tensor_bytes(t);
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)len, f) == (size_t)len &&
              (bytes == 0 || fwrite(t->data, 1, bytes, f) == bytes);
    if (fclose(f) != 0) ok = false;
    if (!ok) return korch_error(KORCH_ERR_IO, "cannot write \"%s\"", korch_printable(path, buf, sizeof buf));
    return KORCH_OK;
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

korch_status korch_tensor_file_read(const char *path, korch_tensor *out, char **name) {
    if (name) *name = NULL;
    if (!has_suffix(path, ".pb")) {
        KORCH_TRY(korch_npy_read(path, out));
        if (name) *name = strdup("");
        return KORCH_OK;
    }
    uint8_t *data = NULL;
    size_t size = 0;
    KORCH_TRY(korch_read_file(path, (size_t)2 << 30, &data, &size));
    char buf[256], what[300];
    korch_printable(path, buf, sizeof buf);
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, data);
    free(data);
    if (!tp) return korch_error(KORCH_ERR_PARSE, "\"%s\" is not a valid ONNX TensorProto", buf);
    snprintf(what, sizeof what, "tensor file \"%s\"", buf);
    korch_status st = korch_onnx_tensor_convert(tp, NULL, what, out);
    if (st == KORCH_OK && name) *name = strdup(tp->name ? tp->name : "");
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return st;
}

void korch_sanitize_filename(const char *name, char *out, size_t size) {
    size_t j = 0;
    for (size_t i = 0; name[i] && j + 1 < size; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                  c == '-';
        out[j++] = ok ? c : '_';
    }
    out[j] = '\0';
    if (j == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) {
        for (size_t i = 0; i < j; i++) out[i] = '_';
        if (j == 0 && size > 1) {
            out[0] = '_';
            out[1] = '\0';
        }
    }
}
