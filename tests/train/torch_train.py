"""torch_train.py — the torch side of tests/train_torch.sh: a small ONNX
interpreter in torch (the ops the example GPT-2 / Llama models use) over the
graph dumped by onnx_dump.py; every float initializer is a parameter.
Runs STEPS steps of cross-entropy (ignore_index -100) + torch.optim.AdamW
(or SGD) on one batch and prints 'step I loss X'; writes the final params
as OUT/NAME.npy. Runs with Debian's python3 (torch 1.13, no onnx).
IDS / LABELS of shape [S, B, T] give one batch per step (step s uses s mod S).
The loss: GALV_TORCH_LOSS=cross_entropy (default; GALV_TORCH_IGNORE, default
-100, the ignored label) or mse (LABELS then holds float targets of the
logits' shape: torch's mse_loss, the mean over every element).
GALV_TORCH_CLIP=X: torch.nn.utils.clip_grad_norm_(params, X) before each step
(galvc --clip-grad-norm X); prints "grad norm at step I: N" (before clipping).
GALV_TORCH_RULE=onnx trains galvc's default set of initializers (else every
float one of more than one element); GALV_TORCH_FEEDS=NAME=FILE,.. feeds the
graph's other inputs.
usage: torch_train.py DUMPDIR IDS.npy LABELS.npy STEPS OUTDIR [adamw|sgd LR WD B1 B2 EPS MOMENTUM]"""
import json
import os
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float32)
DT = {"float32": torch.float32, "int64": torch.int64, "bool": torch.bool, "int32": torch.int32}
ONNX_DT = {1: torch.float32, 7: torch.int64, 9: torch.bool, 6: torch.int32, 11: torch.float64, 10: torch.float16,
           16: torch.bfloat16}


def ints(t):
    return [int(v) for v in t.reshape(-1).tolist()]


def run(graph, env, extra=None):
    """Runs graph over env; extra(op, attrs, inputs) -> outputs (or None) covers the ops not here
    (tests/vision/torch_graph.py: convolutions, pools, recurrences, ...)."""
    for n in graph["nodes"]:
        op, a = n["op"], n["attrs"]
        x = [env[i] if i else None for i in n["inputs"]]
        if op == "Constant":
            v = a["value"]
            y = torch.tensor(v["tensor"], dtype=DT[v["dtype"]]).reshape(v["shape"])
        elif op == "ConstantOfShape":
            v = a.get("value", {"tensor": [0.0], "dtype": "float32", "shape": [1]})
            y = torch.full(ints(x[0]), v["tensor"][0], dtype=DT[v["dtype"]])
        elif op == "Shape":
            y = torch.tensor(list(x[0].shape), dtype=torch.int64)
        elif op == "Range":
            y = torch.arange(int(x[0]), int(x[1]), int(x[2]), dtype=torch.int64)
        elif op == "Unsqueeze":
            y = x[0]
            for ax in sorted(ints(x[1]) if len(x) > 1 else a["axes"]):
                y = y.unsqueeze(ax if ax >= 0 else ax + y.dim() + 1)
        elif op == "Squeeze":
            y = x[0]
            for ax in sorted(ints(x[1]) if len(x) > 1 else a["axes"], reverse=True):
                y = y.squeeze(ax)
        elif op == "Gather":
            ix = x[1].reshape(-1) % x[0].shape[a.get("axis", 0)]  # negative indices wrap
            y = torch.index_select(x[0], a.get("axis", 0), ix).reshape(
                list(x[0].shape[:a.get("axis", 0)]) + list(x[1].shape) + list(x[0].shape[a.get("axis", 0) + 1:]))
        elif op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "LessOrEqual", "Greater"):
            f = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div, "Pow": torch.pow,
                 "Equal": torch.eq, "Less": torch.lt, "LessOrEqual": torch.le, "Greater": torch.gt}[op]
            y = f(x[0], x[1])
        elif op == "Trilu":
            k = int(x[1]) if len(x) > 1 and x[1] is not None else 0
            y = torch.triu(x[0], k) if a.get("upper", 1) else torch.tril(x[0], k)
        elif op == "Where":
            y = torch.where(x[0], x[1], x[2])
        elif op == "Concat":
            y = torch.cat(x, a["axis"])
        elif op == "Slice":
            st, en = ints(x[1]), ints(x[2])
            axes = ints(x[3]) if len(x) > 3 and x[3] is not None else list(range(len(st)))
            steps = ints(x[4]) if len(x) > 4 and x[4] is not None else [1] * len(st)
            y = x[0]
            for s, e, ax, sp in zip(st, en, axes, steps):
                idx = list(range(y.shape[ax]))[slice(s, e, sp)]  # python's clamping is ONNX's
                y = torch.index_select(y, ax, torch.tensor(idx, dtype=torch.int64))
        elif op == "Reshape":
            shp = ints(x[1])
            shp = [x[0].shape[i] if v == 0 else v for i, v in enumerate(shp)]
            y = x[0].reshape(shp)
        elif op == "Expand":
            shp = ints(x[1])
            r = max(len(shp), x[0].dim())
            xs = [1] * (r - x[0].dim()) + list(x[0].shape)
            shp = [1] * (r - len(shp)) + shp
            y = x[0].reshape(xs).expand([max(p, q) for p, q in zip(xs, shp)])
        elif op in ("ReduceMean", "ReduceSum"):
            axes = ints(x[1]) if len(x) > 1 and x[1] is not None else a.get("axes")
            f = torch.mean if op == "ReduceMean" else torch.sum
            y = f(x[0], dim=axes, keepdim=bool(a.get("keepdims", 1))) if axes else f(x[0])
        elif op in ("Sqrt", "Tanh", "Cos", "Sin", "Neg", "Sigmoid", "Reciprocal", "Exp", "Erf", "Relu", "Log"):
            y = getattr(torch, op.lower())(x[0])
        elif op == "MatMul":
            y = torch.matmul(x[0], x[1])
        elif op == "Split":
            y = torch.split(x[0], ints(x[1]) if len(x) > 1 else a["split"], a.get("axis", 0))
        elif op == "Transpose":
            y = x[0].permute(a["perm"])
        elif op == "Softmax":
            y = torch.softmax(x[0], a.get("axis", -1))
        elif op == "Cast":
            y = x[0].to(ONNX_DT[a["to"]])
        elif op == "CumSum":
            y = torch.cumsum(x[0], int(x[1]))
        elif op in ("Identity", "Dropout"):
            y = x[0]
        elif op in ("Max", "Min"):
            y = x[0]
            for v in x[1:]:
                y = torch.maximum(y, v) if op == "Max" else torch.minimum(y, v)
        elif op in ("Not", "Abs"):
            y = torch.logical_not(x[0]) if op == "Not" else torch.abs(x[0])
        elif op == "LayerNormalization":
            ax = a.get("axis", -1) % x[0].dim()
            y = torch.nn.functional.layer_norm(x[0], x[0].shape[ax:], x[1], x[2] if len(x) > 2 else None,
                                               a.get("epsilon", 1e-5))
        elif op == "Gemm":
            p = x[0].t() if a.get("transA", 0) else x[0]
            q = x[1].t() if a.get("transB", 0) else x[1]
            y = a.get("alpha", 1.0) * (p @ q)
            if len(x) > 2 and x[2] is not None:
                y = y + a.get("beta", 1.0) * x[2]
        elif op == "Tile":
            y = x[0].repeat(ints(x[1]))
        elif op == "GatherElements":
            y = torch.gather(x[0], a.get("axis", 0), x[1] % x[0].shape[a.get("axis", 0)])
        elif op == "Mod":
            y = torch.fmod(x[0], x[1]) if a.get("fmod", 0) else torch.remainder(x[0], x[1])
        elif op == "ScatterElements":
            ax, ix = a.get("axis", 0), x[1] % x[0].shape[a.get("axis", 0)]
            if a.get("reduction", "none") == "add":
                y = x[0].scatter_add(ax, ix, x[2])
            else:
                y = x[0].scatter(ax, ix, x[2])
        elif op == "TopK":
            y = torch.topk(x[0], int(x[1].reshape(-1)[0]), a.get("axis", -1), bool(a.get("largest", 1)),
                           bool(a.get("sorted", 1)))
            y = (y.values, y.indices)
        elif op == "GatherND":
            k = x[1].shape[-1]
            flat = x[1].reshape(-1, k)
            y = x[0][tuple(flat[:, j] for j in range(k))].reshape(tuple(x[1].shape[:-1]) + tuple(x[0].shape[k:]))
        elif op == "ScatterND":
            # out-of-place: index tuples over the leading dims of data
            y, idx = x[0].clone(), x[1]
            k = idx.shape[-1]
            flat = idx.reshape(-1, k)
            upd = x[2].reshape((flat.shape[0],) + tuple(x[0].shape[k:]))
            if a.get("reduction", "none") == "add":
                y = y.index_put(tuple(flat[:, j] for j in range(k)), upd, accumulate=True)
            else:
                y[tuple(flat[:, j] for j in range(k))] = upd
        # sequences are python lists (a sequence-valued output is wrapped in a 1-tuple)
        elif op == "SequenceEmpty":
            y = ([],)
        elif op == "SequenceConstruct":
            y = (list(x),)
        elif op == "SequenceInsert":
            seq = list(x[0])
            seq.insert(int(x[2]) if len(x) > 2 and x[2] is not None else len(seq), x[1])
            y = (seq,)
        elif op == "SequenceErase":
            seq = list(x[0])
            del seq[int(x[1]) if len(x) > 1 and x[1] is not None else -1]
            y = (seq,)
        elif op == "SequenceAt":
            y = x[0][int(x[1])]
        elif op == "SequenceLength":
            y = torch.tensor(len(x[0]), dtype=torch.int64)
        elif op == "SplitToSequence":
            ax = a.get("axis", 0)
            if len(x) > 1 and x[1] is not None:
                y = (list(torch.split(x[0], int(x[1]) if x[1].dim() == 0 else ints(x[1]), ax)),)
            else:
                parts = list(torch.split(x[0], 1, ax))
                y = ([p.squeeze(ax) for p in parts] if a.get("keepdims", 1) == 0 else parts,)
        elif op == "ConcatFromSequence":
            y = torch.stack(x[0], a["axis"]) if a.get("new_axis", 0) else torch.cat(x[0], a["axis"])
        elif op == "Loop":  # the outer scope stays visible in the body; scan outputs stacked on axis 0
            body = a["body"]["graph"]
            trip = int(x[0]) if x[0] is not None else None
            cond = bool(x[1]) if len(x) > 1 and x[1] is not None else True
            carried = list(x[2:])
            scans = [[] for _ in range(len(body["outputs"]) - 1 - len(carried))]
            it = 0
            while cond and (trip is None or it < trip):
                e = dict(env)
                for c in body["consts"]:
                    e[c["name"]] = torch.tensor(c["tensor"], dtype=DT[c["dtype"]]).reshape(c["shape"])
                e[body["inputs"][0]] = torch.tensor(it, dtype=torch.int64)
                e[body["inputs"][1]] = torch.tensor(cond)
                e.update(zip(body["inputs"][2:], carried))
                run(body, e, extra)
                outs = [e[o] for o in body["outputs"]]
                cond, carried = bool(outs[0]), outs[1:1 + len(carried)]
                for j, v in enumerate(outs[1 + len(carried):]):
                    scans[j].append(v)
                it += 1
            y = carried + [torch.stack(v) for v in scans]
        elif extra is None or (y := extra(op, a, x)) is None:
            raise SystemExit("torch_train: op %s not supported" % op)
        outs = y if isinstance(y, (tuple, list)) else [y]
        for name, v in zip(n["outputs"], outs):
            if name:  # an optional output left out
                env[name] = v
    return env[graph["outputs"][0]]


# GALV_TORCH_RULE=onnx: train the float initializers galvc trains by default
# (docs/autodiff.md "Which initializers train", gv_onnx_default_trains);
# otherwise every float initializer of more than one element trains.
BUFFERS = ("running_mean", "*.running_mean", "running_var", "*.running_var", "inv_freq", "*.inv_freq", "*cos_cached",
           "*sin_cached", "*masked_bias", "*causal_mask", "*encoder.embed_positions.weight", "*embed_positions.weights")


def trains(name):
    if os.environ.get("GALV_TORCH_RULE") != "onnx":
        return True
    import fnmatch
    if name.startswith("/") or "::" in name:
        return name.startswith("onnx::MatMul_") or name.startswith("onnx::Gemm_")
    return not any(fnmatch.fnmatchcase(name, b) for b in BUFFERS)


def main():
    d, ids, labels, steps, out = sys.argv[1:6]
    opt = (sys.argv[6:] + ["adamw", "1e-3", "0.01", "0.9", "0.999", "1e-8", "0"])[:7]
    g = json.load(open(os.path.join(d, "graph.json")))
    params, consts = {}, {}
    for it in g["initializers"]:
        a = np.load(os.path.join(d, it["file"]))
        if a.dtype == np.float32 and a.ndim > 0 and a.size > 1 and trains(it["name"]):
            params[it["name"]] = torch.nn.Parameter(torch.from_numpy(a.copy()))
        else:
            consts[it["name"]] = torch.from_numpy(np.array(a))
    lr, wd, b1, b2, eps, mom = map(float, opt[1:])
    plist = list(params.values())
    if opt[0] == "adamw":
        o = torch.optim.AdamW(plist, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, foreach=False)
    else:
        o = torch.optim.SGD(plist, lr=lr, momentum=mom, weight_decay=wd, foreach=False)
    ids_t = torch.from_numpy(np.load(ids))
    lab = torch.from_numpy(np.load(labels))
    for s in range(int(steps)):
        env = dict(consts)
        env.update(params)
        # a leading step dim (the CPU program's batch files): step s uses batch s mod S
        env[g["inputs"][0]] = ids_t[s % ids_t.shape[0]] if ids_t.dim() == 3 else ids_t
        # GALV_TORCH_FEEDS="NAME=FILE.npy,...": the graph's other inputs (an attention mask)
        for kv in filter(None, os.environ.get("GALV_TORCH_FEEDS", "").split(",")):
            k, f = kv.split("=", 1)
            env[k] = torch.from_numpy(np.load(f))
        lab_s = lab[s % lab.shape[0]] if ids_t.dim() == 3 else lab
        logits = run(g, env)
        if os.environ.get("GALV_TORCH_LOSS", "cross_entropy") == "mse":
            loss = torch.nn.functional.mse_loss(logits, lab_s)
        else:
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab_s.reshape(-1),
                                                     ignore_index=int(os.environ.get("GALV_TORCH_IGNORE", "-100")))
        o.zero_grad()
        loss.backward()
        if os.environ.get("GALV_TORCH_CLIP"):  # galvc --clip-grad-norm X
            n = torch.nn.utils.clip_grad_norm_(plist, float(os.environ["GALV_TORCH_CLIP"]))
            print("grad norm at step %d: %.9g" % (s, n.item()))
        o.step()
        print("step %d loss %.9g" % (s, loss.item()))
    os.makedirs(out, exist_ok=True)
    for k, p in params.items():
        np.save(os.path.join(out, k + ".npy"), p.detach().numpy())


if __name__ == "__main__":
    main()
