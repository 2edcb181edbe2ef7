/* A bound on message nesting, checked before protobuf-c sees the bytes.
 * protobuf-c unpacks nested messages recursively with large stack frames:
 * a 90 KB model of If nodes nested in each other's subgraphs overflows an
 * 8 MiB stack. ONNX nests without bound through two paths, subgraphs
 * (Graph -> Node -> Attribute -> Graph) and types (TypeProto -> Sequence /
 * Map / Optional -> TypeProto), so only those fields are followed here; every
 * other message is a leaf of bounded depth. The walk is iterative and linear
 * in the input; bytes that are not valid wire format are left for protobuf-c
 * to reject. Field numbers are those of onnx.proto (IR version 8). */
#include "frontend/onnx_load.h"

typedef enum msg_kind {
    MSG_LEAF = 0, /* not followed */
    MSG_MODEL,
    MSG_GRAPH,
    MSG_NODE,
    MSG_ATTRIBUTE,
    MSG_VALUE_INFO,
    MSG_TYPE,
    MSG_TYPE_WRAPPER, /* TypeProto.Sequence / Optional: elem_type = 1 */
    MSG_TYPE_MAP,     /* TypeProto.Map: value_type = 2 */
    MSG_TRAINING_INFO,
    MSG_FUNCTION,
} msg_kind;

/* The kind of message in field `field` of a `parent` message, or MSG_LEAF. */
static msg_kind child_kind(msg_kind parent, uint64_t field) {
    switch (parent) {
    case MSG_MODEL: return field == 7 ? MSG_GRAPH : field == 20 ? MSG_TRAINING_INFO : field == 25 ? MSG_FUNCTION : MSG_LEAF;
    case MSG_TRAINING_INFO: return field == 1 || field == 2 ? MSG_GRAPH : MSG_LEAF;
    case MSG_FUNCTION: return field == 7 ? MSG_NODE : MSG_LEAF;
    case MSG_GRAPH: return field == 1 ? MSG_NODE : (field >= 11 && field <= 13) ? MSG_VALUE_INFO : MSG_LEAF;
    case MSG_NODE: return field == 5 ? MSG_ATTRIBUTE : MSG_LEAF;
    case MSG_ATTRIBUTE: return field == 6 || field == 11 ? MSG_GRAPH : field == 14 || field == 15 ? MSG_TYPE : MSG_LEAF;
    case MSG_VALUE_INFO: return field == 2 ? MSG_TYPE : MSG_LEAF;
    case MSG_TYPE: return field == 4 || field == 9 ? MSG_TYPE_WRAPPER : field == 5 ? MSG_TYPE_MAP : MSG_LEAF;
    case MSG_TYPE_WRAPPER: return field == 1 ? MSG_TYPE : MSG_LEAF;
    case MSG_TYPE_MAP: return field == 2 ? MSG_TYPE : MSG_LEAF;
    default: return MSG_LEAF;
    }
}

static bool read_varint(const uint8_t *data, size_t end, size_t *pos, uint64_t *value) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *pos < end; shift += 7) {
        uint8_t b = data[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *value = v;
            return true;
        }
    }
    return false;
}

korch_status korch_onnx_check_nesting(const uint8_t *data, size_t size) {
    struct {
        size_t end;
        msg_kind kind;
    } stack[KORCH_MAX_MESSAGE_NESTING + 1];
    int top = 0;
    stack[0].end = size;
    stack[0].kind = MSG_MODEL;
    size_t pos = 0;
    while (top >= 0) {
        size_t end = stack[top].end;
        if (pos >= end) {
            top--;
            continue;
        }
        uint64_t tag, len;
        if (!read_varint(data, end, &pos, &tag)) return KORCH_OK;
        switch (tag & 7) {
        case 0:
            if (!read_varint(data, end, &pos, &len)) return KORCH_OK;
            break;
        case 1:
            if (end - pos < 8) return KORCH_OK;
            pos += 8;
            break;
        case 5:
            if (end - pos < 4) return KORCH_OK;
            pos += 4;
            break;
        case 2: {
            if (!read_varint(data, end, &pos, &len) || len > end - pos) return KORCH_OK;
            msg_kind child = child_kind(stack[top].kind, tag >> 3);
            if (child == MSG_LEAF) {
                pos += (size_t)len;
                break;
            }
            if (top == KORCH_MAX_MESSAGE_NESTING)
                return korch_error(KORCH_ERR_UNSUPPORTED,
                                   "the model nests subgraphs or types deeper than %d protobuf messages",
                                   KORCH_MAX_MESSAGE_NESTING);
            top++;
            stack[top].end = pos + (size_t)len;
            stack[top].kind = child;
            break;
        }
        default: return KORCH_OK; /* groups or garbage: protobuf-c will refuse */
        }
    }
    return KORCH_OK;
}
