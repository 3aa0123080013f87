"""torch_graph.py — the torch side of tests/vision_models.sh's training
check: an ONNX interpreter in torch over the graph dumped by
tests/train/onnx_dump.py (the ops of the vision and recurrent exports), so
that torch trains the same graph galv does. Runs with Debian's python3
(torch 1.13, no onnx).

usage: torch_graph.py DUMPDIR BATCHES STEPS OUTDIR TRAINABLE WRITTEN LOSS [adamw|sgd LR WD B1 B2 EPS MOMENTUM]
BATCHES holds x.npy [S, ...] and labels.npy [S, ...] (step s uses s mod S);
TRAINABLE a file with the initializer names that train (one a line: the
ones galv trained), WRITTEN the names to write (galv's program writes its
frozen parameters too, unchanged); LOSS cross_entropy (torch's, over the last dim) or mse.
Prints 'step I loss X' and writes the trained params as OUTDIR/NAME.npy.
STEPS 0: inference only, the output for the first batch as OUTDIR/out.npy
(the reference of the fp16 / bf16 storage check: fp32 compute on the
rounded weights, which the Cast nodes of tests/vision/half_model.py widen)."""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
import torch_train  # noqa: E402  the shared interpreter; vision_op adds the ops it has not



ints = torch_train.ints


def pads_of(a, k):
    p = a.get("pads", [0] * (2 * k))
    return p[:k], p[k:]


def pool(x, a, maxp):
    k = len(a["kernel_shape"])
    pb, pe = pads_of(a, k)
    st = a.get("strides", [1] * k)
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise SystemExit("torch_graph: pool auto_pad")
    if pb != pe:  # asymmetric: pad explicitly
        pad = [v for i in reversed(range(k)) for v in (pb[i], pe[i])]
        x = F.pad(x, pad, value=float("-inf") if maxp else 0.0)
        pb = [0] * k
    fn = getattr(F, ("max_pool%dd" if maxp else "avg_pool%dd") % k)
    if maxp:
        return fn(x, a["kernel_shape"], st, pb, a.get("dilations", [1] * k), ceil_mode=bool(a.get("ceil_mode", 0)))
    return fn(x, a["kernel_shape"], st, pb, ceil_mode=bool(a.get("ceil_mode", 0)),
              count_include_pad=bool(a.get("count_include_pad", 0)))


def rnn(op, a, x):
    """ONNX LSTM / GRU (layout 0, default activations) in torch ops."""
    X, W, R = x[0], x[1], x[2]
    B = x[3] if len(x) > 3 and x[3] is not None else None
    H = a["hidden_size"]
    D = 2 if a.get("direction", "forward") == "bidirectional" else 1
    rev = a.get("direction", "forward") == "reverse"
    G = 4 if op == "LSTM" else 3
    S, N = X.shape[0], X.shape[1]
    ys, hs, cs = [], [], []
    for d in range(D):
        w, r = W[d], R[d]
        wb = B[d][:G * H] if B is not None else torch.zeros(G * H)
        rb = B[d][G * H:] if B is not None else torch.zeros(G * H)
        h = x[5][d] if len(x) > 5 and x[5] is not None else torch.zeros(N, H)
        c = x[6][d] if op == "LSTM" and len(x) > 6 and x[6] is not None else torch.zeros(N, H)
        out = [None] * S
        for s in range(S):
            t = S - 1 - s if (rev or d == 1) else s
            xw = X[t] @ w.t() + wb
            if op == "LSTM":
                g = xw + h @ r.t() + rb
                i, o, f, cc = g.split(H, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(cc)
                h = torch.sigmoid(o) * torch.tanh(c)
            else:
                xz, xr, xh = xw.split(H, 1)
                rz, rr, rh = r.split(H, 0)
                bz, br, bh = rb.split(H, 0)
                z = torch.sigmoid(xz + h @ rz.t() + bz)
                rg = torch.sigmoid(xr + h @ rr.t() + br)
                if a.get("linear_before_reset", 0):
                    n = torch.tanh(xh + rg * (h @ rh.t() + bh))
                else:
                    n = torch.tanh(xh + (rg * h) @ rh.t() + bh)
                h = n + z * (h - n)
            out[t] = h
        ys.append(torch.stack(out, 0))
        hs.append(h)
        cs.append(c)
    Y = torch.stack(ys, 1)
    return (Y, torch.stack(hs, 0), torch.stack(cs, 0)) if op == "LSTM" else (Y, torch.stack(hs, 0))


def resize(x, a, scales, sizes):
    mode, ct = a.get("mode", "nearest"), a.get("coordinate_transformation_mode", "half_pixel")
    size = [int(v) for v in sizes[2:]] if sizes is not None and sizes.numel() else None
    sf = [float(v) for v in scales[2:]] if size is None else None
    if mode == "nearest" and ct == "asymmetric" and a.get("nearest_mode") == "floor":
        return F.interpolate(x, size=size, scale_factor=sf, mode="nearest")
    if mode == "linear" and ct in ("pytorch_half_pixel", "half_pixel", "align_corners"):
        m = {3: "linear", 4: "bilinear", 5: "trilinear"}[x.dim()]
        return F.interpolate(x, size=size, scale_factor=sf, mode=m, align_corners=ct == "align_corners")
    raise SystemExit(f"torch_graph: Resize {mode} {ct} not supported")


def vision_op(op, a, x):
    """The ops of the vision and recurrent exports that tests/train/torch_train.py's interpreter has not;
    None for the others."""
    if op == "Conv":
        k = x[1].dim() - 2
        pb, pe = pads_of(a, k)
        xx = x[0]
        if pb != pe:
            xx = F.pad(xx, [v for i in reversed(range(k)) for v in (pb[i], pe[i])])
            pb = [0] * k
        y = getattr(F, "conv%dd" % k)(xx, x[1], x[2] if len(x) > 2 else None, a.get("strides", 1), pb,
                                      a.get("dilations", 1), a.get("group", 1))
    elif op == "ConvTranspose":
        k = x[1].dim() - 2
        pb, pe = pads_of(a, k)
        assert pb == pe and "output_shape" not in a
        y = getattr(F, "conv_transpose%dd" % k)(x[0], x[1], x[2] if len(x) > 2 else None, a.get("strides", 1), pb,
                                                a.get("output_padding", 0), a.get("group", 1),
                                                a.get("dilations", 1))
    elif op == "BatchNormalization":
        train = bool(a.get("training_mode", 0))
        dims = [d for d in range(x[0].dim()) if d != 1]
        shp = [1, -1] + [1] * (x[0].dim() - 2)
        mean, var = x[3], x[4]  # written out: an initializer may be both a statistic and a weight
        if train:  # batch statistics; ONNX's running statistics use the population variance
            mean, var = x[0].mean(dims), x[0].var(dims, unbiased=False)
        y = (x[0] - mean.reshape(shp)) / torch.sqrt(var.reshape(shp) + a.get("epsilon", 1e-5)) * x[1].reshape(shp) \
            + x[2].reshape(shp)
        if train:
            m = a.get("momentum", 0.9)
            y = (y, x[3] * m + mean * (1 - m), x[4] * m + var * (1 - m))
    elif op == "MaxPool":
        y = pool(x[0], a, True)
    elif op == "AveragePool":
        y = pool(x[0], a, False)
    elif op in ("GlobalAveragePool", "GlobalMaxPool"):
        dims = list(range(2, x[0].dim()))
        y = x[0].mean(dims, keepdim=True) if op == "GlobalAveragePool" else x[0].amax(dims, keepdim=True)
    elif op == "Flatten":
        ax = a.get("axis", 1)
        y = x[0].reshape(int(np.prod(x[0].shape[:ax])), -1)
    elif op == "Clip":
        y = x[0]
        if len(x) > 1 and x[1] is not None:
            y = torch.maximum(y, x[1])
        if len(x) > 2 and x[2] is not None:
            y = torch.minimum(y, x[2])
    elif op == "Resize":
        y = resize(x[0], a, x[2] if len(x) > 2 else None, x[3] if len(x) > 3 else None)
    elif op == "Pad":
        p = ints(x[1])
        k = len(p) // 2
        assert a.get("mode", "constant") == "constant" and len(x) < 4
        pad = [v for i in reversed(range(k)) for v in (p[i], p[k + i])]
        y = F.pad(x[0], pad, value=float(x[2]) if len(x) > 2 and x[2] is not None else 0.0)
    elif op in ("LSTM", "GRU"):
        assert a.get("layout", 0) == 0 and not (len(x) > 4 and x[4] is not None)
        y = rnn(op, a, x)
    else:
        return None
    return y


def run(graph, env):
    return torch_train.run(graph, env, vision_op)


def main():
    d, batches, steps, out, trainable, written, loss_kind = sys.argv[1:8]
    opt = (sys.argv[8:] + ["adamw", "1e-3", "0.01", "0.9", "0.999", "1e-8", "0"])[:7]
    g = json.load(open(os.path.join(d, "graph.json")))
    train = set(l.strip() for l in open(trainable) if l.strip())
    params, consts = {}, {}
    for it in g["initializers"]:
        a = np.load(os.path.join(d, it["file"]))
        if it["name"] in train:
            params[it["name"]] = torch.nn.Parameter(torch.from_numpy(a.copy()))
        else:
            consts[it["name"]] = torch.from_numpy(np.array(a))
    if set(params) != train:
        raise SystemExit(f"torch_graph: trainable names not in the graph: {sorted(train - set(params))}")
    xs = torch.from_numpy(np.load(os.path.join(batches, "x.npy")))
    if int(steps) == 0:  # inference: the first batch's output as OUTDIR/out.npy
        env = dict(consts)
        env[g["inputs"][0]] = xs[0]
        os.makedirs(out, exist_ok=True)
        with torch.no_grad():
            np.save(os.path.join(out, "out.npy"), run(g, env).float().numpy())
        return
    lr, wd, b1, b2, eps, mom = map(float, opt[1:])
    plist = list(params.values())
    if opt[0] == "adamw":
        o = torch.optim.AdamW(plist, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, foreach=False)
    else:
        o = torch.optim.SGD(plist, lr=lr, momentum=mom, weight_decay=wd, foreach=False)
    xs = torch.from_numpy(np.load(os.path.join(batches, "x.npy")))
    labs = torch.from_numpy(np.load(os.path.join(batches, "labels.npy")))
    for s in range(int(steps)):
        env = dict(consts)
        env.update(params)
        env[g["inputs"][0]] = xs[s % xs.shape[0]]
        lab = labs[s % labs.shape[0]]
        y = run(g, env)
        if loss_kind == "mse":
            loss = F.mse_loss(y, lab)
        else:
            loss = F.cross_entropy(y.reshape(-1, y.shape[-1]), lab.reshape(-1))
        o.zero_grad()
        loss.backward()
        o.step()
        print("step %d loss %.9g" % (s, loss.item()))
    os.makedirs(out, exist_ok=True)
    for k in (l.strip() for l in open(written) if l.strip()):
        v = params[k] if k in params else consts[k]
        np.save(os.path.join(out, k + ".npy"), v.detach().numpy())


if __name__ == "__main__":
    main()
