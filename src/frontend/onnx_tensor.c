#include "frontend/onnx_tensor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/graph.h"

bool korch_external_location_is_safe(const char *location) {
    if (!location || !*location || location[0] == '/') return false;
    /* walk components separated by '/' (and '\\', which some writers use) */
    const char *p = location;
    while (*p) {
        const char *end = p;
        while (*end && *end != '/' && *end != '\\') end++;
        size_t len = (size_t)(end - p);
        if (len == 0) return false;
        if (len == 2 && p[0] == '.' && p[1] == '.') return false;
        if (memchr(p, ':', len)) return false; /* drive letters, URLs */
        p = *end ? end + 1 : end;
    }
    return true;
}

/* Opens a tensor's external data and positions it at its offset, after every
 * check (allowed, safe location, length, a regular file holding `expected`
 * bytes there), so that nothing is allocated for data that is not there. */
/* The external_data entries: location (NULL if absent), offset (0) and
 * length (-1 if absent). */
static korch_status external_fields(const Onnx__TensorProto *proto, const char *what, const char **location_out,
                                    long long *offset_out, long long *length_out) {
    const char *location = NULL;
    long long offset = 0, length = -1;
    for (size_t i = 0; i < proto->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = proto->external_data[i];
        if (!e->key || !e->value) continue;
        char *end = NULL;
        if (strcmp(e->key, "location") == 0) {
            location = e->value;
        } else if (strcmp(e->key, "offset") == 0) {
            offset = strtoll(e->value, &end, 10);
            if (!*e->value || *end || offset < 0)
                return korch_error(KORCH_ERR_INVALID_MODEL, "%s: bad external data offset \"%.40s\"", what, e->value);
        } else if (strcmp(e->key, "length") == 0) {
            length = strtoll(e->value, &end, 10);
            if (!*e->value || *end || length < 0)
                return korch_error(KORCH_ERR_INVALID_MODEL, "%s: bad external data length \"%.40s\"", what, e->value);
        }
    }
    *location_out = location;
    *offset_out = offset;
    *length_out = length;
    return KORCH_OK;
}

static korch_status open_external(const Onnx__TensorProto *proto, const char *base_dir, const char *what,
                                  size_t expected, FILE **out) {
    const char *location = NULL;
    long long offset = 0, length = -1;
    KORCH_TRY(external_fields(proto, what, &location, &offset, &length));
    char printable[256];
    if (!base_dir) return korch_error(KORCH_ERR_INVALID_MODEL, "%s: external data is not allowed here", what);
    if (!location) return korch_error(KORCH_ERR_INVALID_MODEL, "%s: external data without a location", what);
    if (!korch_external_location_is_safe(location))
        return korch_error(KORCH_ERR_INVALID_MODEL,
                           "%s: external data location \"%s\" leaves the model's folder (absolute paths and '..' are "
                           "refused)",
                           what, korch_printable(location, printable, sizeof printable));
    if (length >= 0 && (size_t)length != expected)
        return korch_error(KORCH_ERR_INVALID_MODEL, "%s: external data length %lld does not match its shape (%zu bytes)",
                           what, length, expected);
    size_t plen = strlen(base_dir) + strlen(location) + 2;
    char *path = malloc(plen);
    if (!path) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    snprintf(path, plen, "%s/%s", base_dir, location);
    FILE *f = fopen(path, "rb");
    korch_status st = KORCH_OK;
    if (!f) {
        st = korch_error(KORCH_ERR_IO, "%s: cannot open external data file \"%s\": %s", what,
                         korch_printable(path, printable, sizeof printable), strerror(errno));
    } else {
        struct stat sb;
        if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
            st = korch_error(KORCH_ERR_IO, "%s: external data \"%s\" is not a regular file", what,
                             korch_printable(path, printable, sizeof printable));
        } else if ((unsigned long long)offset + expected > (unsigned long long)sb.st_size) {
            st = korch_error(KORCH_ERR_INVALID_MODEL,
                             "%s: external data file \"%s\" is too short (%lld bytes, need %zu at offset %lld)", what,
                             korch_printable(path, printable, sizeof printable), (long long)sb.st_size, expected,
                             offset);
        } else if (fseeko(f, (off_t)offset, SEEK_SET) != 0) {
            st = korch_error(KORCH_ERR_IO, "%s: cannot read external data \"%s\"", what,
                             korch_printable(path, printable, sizeof printable));
        }
        if (st == KORCH_OK) *out = f;
        else fclose(f);
    }
    free(path);
    return st;
}

/* Copies n typed elements from a protobuf repeated field, converting width. */
static korch_status copy_typed(const Onnx__TensorProto *p, korch_tensor *t, int64_t n, const char *what) {
    size_t have = 0;
    /* empty repeated fields are NULL, and memcpy from NULL is undefined even for 0 bytes */
    if (n == 0) return KORCH_OK;
    switch (t->dtype) {
    case KORCH_DTYPE_FLOAT32:
        have = p->n_float_data;
        if (have == (size_t)n && n > 0) memcpy(t->data, p->float_data, (size_t)n * 4);
        break;
    case KORCH_DTYPE_FLOAT64:
        have = p->n_double_data;
        if (have == (size_t)n && n > 0) memcpy(t->data, p->double_data, (size_t)n * 8);
        break;
    case KORCH_DTYPE_INT64:
        have = p->n_int64_data;
        if (have == (size_t)n && n > 0) memcpy(t->data, p->int64_data, (size_t)n * 8);
        break;
    case KORCH_DTYPE_UINT64:
        have = p->n_uint64_data;
        if (have == (size_t)n && n > 0) memcpy(t->data, p->uint64_data, (size_t)n * 8);
        break;
    case KORCH_DTYPE_UINT32:
        have = p->n_uint64_data;
        if (have == (size_t)n)
            for (int64_t i = 0; i < n; i++) ((uint32_t *)t->data)[i] = (uint32_t)p->uint64_data[i];
        break;
    case KORCH_DTYPE_INT32:
        have = p->n_int32_data;
        if (have == (size_t)n && n > 0) memcpy(t->data, p->int32_data, (size_t)n * 4);
        break;
    case KORCH_DTYPE_INT16:
    case KORCH_DTYPE_UINT16:
    case KORCH_DTYPE_FLOAT16:
    case KORCH_DTYPE_BFLOAT16: /* the 16 bits in the low half of each int32 */
        have = p->n_int32_data;
        if (have == (size_t)n)
            for (int64_t i = 0; i < n; i++) ((uint16_t *)t->data)[i] = (uint16_t)p->int32_data[i];
        break;
    case KORCH_DTYPE_INT8:
    case KORCH_DTYPE_UINT8:
    case KORCH_DTYPE_BOOL:
        have = p->n_int32_data;
        if (have == (size_t)n)
            for (int64_t i = 0; i < n; i++)
                ((uint8_t *)t->data)[i] =
                    t->dtype == KORCH_DTYPE_BOOL ? (p->int32_data[i] != 0) : (uint8_t)p->int32_data[i];
        break;
    default: break;
    }
    if (have != (size_t)n)
        return korch_error(KORCH_ERR_INVALID_MODEL, "%s: has %zu %s values, its shape needs %lld", what, have,
                           korch_dtype_name(t->dtype), (long long)n);
    return KORCH_OK;
}

/* A tensor of a plan's weight section: borrowed in place, after checking
 * that it lies inside the section and is aligned for its dtype. */
static korch_status borrow_plan_weights(const Onnx__TensorProto *p, const korch_onnx_source *src, const char *what,
                                        korch_dtype dtype, const korch_shape *shape, size_t expected,
                                        korch_tensor *out) {
    const char *location = NULL;
    long long offset = 0, length = -1;
    KORCH_TRY(external_fields(p, what, &location, &offset, &length));
    if (!location || strcmp(location, KORCH_ONNX_PLAN_WEIGHTS) != 0)
        return korch_error(KORCH_ERR_INVALID_MODEL, "%s: a plan's tensor must lie in its weight section", what);
    if (length >= 0 && (unsigned long long)length != expected)
        return korch_error(KORCH_ERR_INVALID_MODEL, "%s: weight length %lld does not match its shape (%zu bytes)", what,
                           length, expected);
    if ((unsigned long long)offset > src->weights_size || expected > src->weights_size - (size_t)offset)
        return korch_error(KORCH_ERR_INVALID_MODEL,
                           "%s: %zu bytes at offset %lld lie outside the plan's weight section (%zu bytes)", what,
                           expected, offset, src->weights_size);
    size_t esize = korch_dtype_size(dtype);
    if ((uintptr_t)(src->weights + offset) % esize != 0)
        return korch_error(KORCH_ERR_INVALID_MODEL, "%s: weight offset %lld is not aligned for %s", what, offset,
                           korch_dtype_name(dtype));
    const uint8_t *data = src->weights + offset;
    if (dtype == KORCH_DTYPE_BOOL) { /* copied, so that a byte other than 0 or 1 cannot reach a bool */
        KORCH_TRY(korch_tensor_alloc(out, dtype, shape));
        for (size_t i = 0; i < expected; i++) ((uint8_t *)out->data)[i] = data[i] != 0;
        return KORCH_OK;
    }
    *out = (korch_tensor){.dtype = dtype, .shape = *shape, .data = (void *)data, .owns_data = false};
    return KORCH_OK;
}

korch_status korch_onnx_tensor_convert(const Onnx__TensorProto *p, const char *base_dir, const char *what,
                                       korch_tensor *out) {
    korch_onnx_source src = {.dir = base_dir};
    return korch_onnx_tensor_convert_from(p, &src, what, out);
}

korch_status korch_onnx_tensor_convert_from(const Onnx__TensorProto *p, const korch_onnx_source *src,
                                            const char *what, korch_tensor *out) {
    const char *base_dir = src->dir;
    memset(out, 0, sizeof *out);
    if (p->n_dims > KORCH_MAX_RANK)
        return korch_error(KORCH_ERR_UNSUPPORTED, "%s: rank %zu exceeds korch's maximum of %d", what, p->n_dims,
                           KORCH_MAX_RANK);
    korch_shape shape = {0};
    shape.rank = (int)p->n_dims;
    for (size_t i = 0; i < p->n_dims; i++) {
        if (p->dims[i] < 0)
            return korch_error(KORCH_ERR_INVALID_MODEL, "%s: negative dimension %lld", what, (long long)p->dims[i]);
        shape.dims[i] = p->dims[i];
    }
    int64_t n = korch_shape_numel(&shape);
    if (n < 0) return korch_error(KORCH_ERR_INVALID_MODEL, "%s: dimensions are too large", what);
    if (!p->has_data_type || !korch_dtype_is_valid(p->data_type))
        return korch_error(KORCH_ERR_INVALID_MODEL, "%s: invalid data type %d", what, (int)p->data_type);
    korch_dtype dtype = (korch_dtype)p->data_type;
    size_t esize = korch_dtype_size(dtype);
    if (esize == 0 || dtype == KORCH_DTYPE_STRING)
        return korch_error(KORCH_ERR_UNSUPPORTED, "%s: data type %s is not supported", what, korch_dtype_name(dtype));
    if (p->segment) return korch_error(KORCH_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
    size_t expected = (size_t)n * esize;

    bool external = p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    /* Reject sizes the source cannot possibly back before allocating. */
    if (!external) {
        if (p->has_raw_data && p->raw_data.len != expected)
            return korch_error(KORCH_ERR_INVALID_MODEL, "%s: raw_data holds %zu bytes, its shape %s needs %zu", what,
                               p->raw_data.len, korch_dtype_name(dtype), expected);
        if (!p->has_raw_data) {
            size_t typed = p->n_float_data + p->n_int32_data + p->n_int64_data + p->n_double_data + p->n_uint64_data;
            if (typed != (size_t)n)
                return korch_error(KORCH_ERR_INVALID_MODEL, "%s: holds %zu values, its shape needs %lld", what, typed,
                                   (long long)n);
        }
    }
        if (external && src->weights) return borrow_plan_weights(p, src, what, dtype, &shape, expected, out);
    FILE *ext = NULL;
    if (external) KORCH_TRY(open_external(p, base_dir, what, expected, &ext));
    korch_status st = korch_tensor_alloc(out, dtype, &shape);
    if (st == KORCH_OK && external) {
        if (expected && fread(out->data, 1, expected, ext) != expected)
            st = korch_error(KORCH_ERR_IO, "%s: cannot read %zu bytes of external data", what, expected);
    } else if (st == KORCH_OK && p->has_raw_data) {
        if (expected) memcpy(out->data, p->raw_data.data, expected); /* little-endian host */
        if (dtype == KORCH_DTYPE_BOOL)
            for (size_t i = 0; i < expected; i++) ((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
    } else if (st == KORCH_OK) {
        st = copy_typed(p, out, n, what);
    }
    if (ext) fclose(ext);
    if (st != KORCH_OK) korch_tensor_free(out);
    return st;
}
