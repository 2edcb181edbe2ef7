#!/usr/bin/env python3
"""Makes damaged or foreign copies of a self-contained korch plan for
run_embedded_plan.sh (format: docs/plan-format.md). Standard library only.

  plan_damage.py flip-weights PLAN OUT   one byte of the weight section flipped
  plan_damage.py flip-graph PLAN OUT     one byte of the graph section flipped
  plan_damage.py truncate PLAN OUT       the file cut in the middle of its weights
  plan_damage.py foreign PLAN OUT        the machine line names another CPU, the
                                         text's checksum recomputed (a valid plan
                                         from an imaginary machine)
"""
import sys

ALIGN = 64


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def sections(blob):
    blob = bytes(blob)
    text_end = blob.index(b"\0")
    fields = {}
    for line in blob[:text_end].split(b"\n"):
        if line.startswith(b"embedded "):
            fields = dict(kv.split(b"=", 1) for kv in line.split()[1:])
    if not fields:
        sys.exit("plan_damage.py: not an embedded plan")
    start = (text_end // ALIGN + 1) * ALIGN
    graph = (start, int(fields[b"graph-bytes"]))
    weights = (start + int(fields[b"weights-offset"]), int(fields[b"weights-bytes"]))
    return text_end, graph, weights


def main():
    what, src, dst = sys.argv[1:4]
    blob = bytearray(open(src, "rb").read())
    text_end, graph, weights = sections(blob)
    if what == "flip-weights":
        blob[weights[0] + weights[1] // 2] ^= 0x40
    elif what == "flip-graph":
        blob[graph[0] + graph[1] // 2] ^= 0x40
    elif what == "truncate":
        blob = blob[: weights[0] + weights[1] // 2]
    elif what == "foreign":
        text = bytes(blob[:text_end]).decode("ascii")
        lines = text.split("\n")
        lines = [l for l in lines if not l.startswith("machine ")]
        end = [i for i, l in enumerate(lines) if l.startswith("end ")][0]
        lines.insert(2, "machine cpu=Imaginary%20CPU%209000 isa=avx512f%2Cimaginary_ext")
        end += 1
        body = "\n".join(lines[:end]) + "\n"
        kernels = lines[end].split()[1]
        new_text = (body + "%s crc32c=%08x\n" % ("end " + kernels, crc32c(body.encode("ascii")))).encode("ascii")
        start = (len(new_text) // ALIGN + 1) * ALIGN
        old_start = (text_end // ALIGN + 1) * ALIGN
        blob = new_text + b"\0" * (start - len(new_text)) + blob[old_start:]
    else:
        sys.exit("plan_damage.py: unknown action " + what)
    open(dst, "wb").write(blob)


if __name__ == "__main__":
    main()
