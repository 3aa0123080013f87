#!/usr/bin/env python3
"""make_seeds.py DIR — small seed inputs for the reader fuzz targets
(tests/fuzz/run.sh), one folder per target: DIR/plan, DIR/sharding,
DIR/npy, DIR/ckpt, DIR/weights. Each is a valid file of its format (the
fuzzer mutates from there), written the way galvc and the programs write
them (docs/cpu-target.md: checkpoints; runtime/galv_file.h: weights.bin's
trailer). The IR, cluster and ONNX seeds are the repository's own files
(run.sh copies them). Needs numpy only; the .pb seed needs onnx (skipped
without it)."""
import io, os, struct, sys, zlib

import numpy as np

out = sys.argv[1]
def put(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())

# plan.json for 3 units (outer + 2 layers), as plan_sharding.c writes it
def plan(axes, shape, batch, tp, vocab, zeros):
    units = ",\n".join('    {"unit": "%s", "strategy": "x", "zero": %s}' % ("outer0" if i == 0 else "layer %d" % (i - 1),
                       "true" if z else "false") for i, z in enumerate(zeros))
    q = lambda a: "null" if a is None else '"%s"' % a
    return ('{\n  "cluster": "cpu-local",\n  "devices_per_node": 4,\n  "memory_limit": 1000000,\n'
            '  "mesh": {"axes": [%s], "shape": [%s]},\n  "batch_axes": [%s],\n  "tp_axis": %s,\n  "vocab_axis": %s,\n'
            '  "units": [\n%s\n  ],\n  "predicted": {"step_ns": 1, "compute_ns": 1, "communication_ns": 0},\n'
            '  "planning_seconds": 0.001,\n  "candidates": 3\n}\n') % (
        ", ".join('"%s"' % a for a in axes), ", ".join(str(s) for s in shape), ", ".join('"%s"' % a for a in batch),
        q(tp), q(vocab), units)
put("plan", "dp4.json", plan(["dp"], [4], ["dp"], None, None, [False, False, False]))
put("plan", "dp2tp2.json", plan(["dp", "tp"], [2, 2], ["dp"], "tp", "tp", [False, True, True]))
put("plan", "three.json", plan(["a", "b", "c"], [2, 1, 2], ["a", "c"], "b", None, [True, False, True]))

# sharding files for the fuzz model (x, w1, w2 on a dp=2 x tp=2 mesh)
put("sharding", "tp.txt", '# Megatron MLP\nw1 [{}, {"tp"}]\nw2 [{"tp"}, {}]\n')
put("sharding", "dp.txt", 'x [{"dp"}, {}]\n')
put("sharding", "both.txt", 'x [{"dp"}, {}]\r\nw1 [{}, {"tp"}]\r\n  # comment\n\nw2 [{"tp"}, {}]')
put("sharding", "two_axes.txt", 'w1 [{"dp", "tp"}, {}]\n')

# .npy arrays of every dtype npy.c reads, and a TensorProto
for name, a in [("f4", np.arange(6, dtype=np.float32).reshape(2, 3)), ("i8", np.arange(4, dtype=np.int64)),
                ("f2", np.ones((1, 2, 2), np.float16)), ("b1", np.array([True, False])), ("u1", np.zeros((0, 3), np.uint8)),
                ("scalar", np.array(3.5, np.float64)), ("i4", np.arange(8, dtype=np.int32).reshape(2, 2, 2))]:
    b = io.BytesIO()
    np.save(b, a)
    put("npy", name + ".npy", b.getvalue())
try:
    from onnx import numpy_helper
    put("npy", "t.pb", numpy_helper.from_array(np.arange(6, dtype=np.int64).reshape(2, 3), "input_ids").SerializeToString())
except ImportError:
    pass

# checkpoints, version 2 (runtime/io.c): header, tensors, end with count and CRC-32
def ckpt(steps, tensors):
    b = b"GALVCKPT" + struct.pack("<IIq", 2, 0, steps)
    for name, dtype, arr in tensors:
        nb = name.encode()
        b += struct.pack("<I", len(nb)) + nb + struct.pack("<II", dtype, arr.ndim)
        b += struct.pack("<%dq" % arr.ndim, *arr.shape) + struct.pack("<q", arr.nbytes) + arr.tobytes()
    return b + struct.pack("<III", 0xffffffff, len(tensors), zlib.crc32(b))
F32, I64 = 1, 5  # galv_rt.h dtypes
put("ckpt", "one.ckpt", ckpt(3, [("w", F32, np.arange(4, dtype=np.float32))]))
put("ckpt", "two.ckpt", ckpt(100, [("h.0.w", F32, np.ones((2, 3), np.float32)), ("adam.m.h.0.w", F32, np.zeros((2, 3), np.float32))]))
put("ckpt", "empty.ckpt", ckpt(0, []))

# weights.bin with its trailer (runtime/galv_file.h), after fuzz_weights.c's 4-byte prefix
def weights(block, nblocks, index, blocks):
    stride = block if nblocks == 1 else (block + 4095) // 4096 * 4096
    body = b"".join(x.ljust(stride, b"\0") for x in blocks)
    t = b"".join(struct.pack("<I", zlib.crc32(x)) for x in blocks) + struct.pack("<qI", block, nblocks)
    t += struct.pack("<I", zlib.crc32(t)) + b"GALVWSUM"
    return struct.pack("<HBB", block, nblocks - 1, index) + body + t
put("weights", "one.bin", weights(16, 1, 0, [bytes(range(16))]))
put("weights", "two.bin", weights(8, 2, 1, [b"\1" * 8, b"\2" * 8]))
put("weights", "empty.bin", weights(0, 1, 0, [b""]))
