#!/usr/bin/env python3
"""galvatron_terms.py PLANNER_INPUTS.json GPUS GIB [--json]

Galvatron's predicted iteration time for its own chosen plan (the anchor's runs_36GB / runs_80GB), split into the
terms of its time cost model (Hetu-Galvatron's search_engine cost_model.py: TimeCostModel, OtherTimeCostModel,
pipeline_costmodel; re-derived here for the pp = 1, tp = 1 data-parallel plans it chose for Llama2-7B):

  per layer and chunk of b = batch / (dp x chunks) samples per GPU:
    fct  = a x b + c                       (the profile's fit, ms)
    bct  = 2 x fct (+ fct when the layer recomputes)
    D    = 2 (d - 1) / d x P / 2 MB        (the gradient all-reduce of the layer's bf16 gradients, P its fp32-equivalent
                                            MB), T_dp = D / busbw(d) ms, busbw the measured all-reduce bus bandwidth of d
                                            consecutive ranks (1-node file: 154.2 GB/s at 8; 2-8 nodes: 44.68 GB/s)
    ZeRO-3: the forward all-gather D / 2 / busbw(d), added in full per chunk
  the embedding / head: 3 x (a_o x b + c_o) per chunk
  chunks m: m x (compute + ZeRO-3 gathers), the all-reduce once (asynchronous, overlapped with the backward)

  compute    = m x (sum of fct + bct over the layers + the embedding / head's)
  exposed dp = the ZeRO-3 gathers (the all-reduce hides under the backward: T_dp < bct on every row, and the printed
               predictions carry no slowdown for it: printed - compute - gathers = 0.4 - 1.3 ms at 36 GB)
  tp         = 0 (tp = 1; the embedding's Ulysses split is not priced here)
  residual   = printed - compute - exposed dp (what this reconstruction does not have of the 2.4.1 search)

Prints the terms (ms) beside Galvatron's printed prediction.
"""
import json
import sys


def busbw(hw, gpus, k):
    """measured all-reduce bus bandwidth (GB/s = MB/ms) of k consecutive ranks in the file for `gpus` devices"""
    nodes = max(1, gpus // 8)
    f = hw[f"allreduce_bandwidth_{nodes}nodes_8gpus_per_node.json"]
    return f.get(f"allreduce_size_{k}_consec_1", f.get(f"allreduce_size_{k}_consec_0"))


def parse_layers(s):
    """'27 ZeRO-3+ckpt, 5 ZeRO-2+ckpt' / '1 ZeRO-2+ckpt, 31 ZeRO-2' -> [(zero, ckpt)] * 32"""
    out = []
    for part in s.split(","):
        n, kind = part.strip().split(" ", 1)
        if not n.isdigit(): continue  # "no ckpt"
        out += [(3 if "ZeRO-3" in kind else 2, "ckpt" in kind and "no ckpt" not in kind)] * int(n)
    return out


def terms(inp, gpus, gib):
    run = inp[f"runs_{gib}GB"][str(gpus)]
    d, m = run["dp"], run["chunks"]
    fit, ofit = inp["compute_ms"]["per_layer_fwd_ms_fit"], inp["compute_ms"]["embed_lmhead_fwd_ms_fit"]
    bwd = inp["compute_ms"]["bwd_over_fwd"]
    P = inp["memory_MB"]["per_layer_param_MB_fp32_equiv"]
    k = inp["hardware"]["overlap_coefficient.json"]["overlap_coe"]
    bw = busbw(inp["hardware"], gpus, d)
    b = run["gbsz"] / d / m
    layers = parse_layers(run["layers"])
    fct = fit["a_ms_per_sample"] * b + fit["b_ms_const"]
    D = 2 * (d - 1) / d * P / 2
    t_dp = D / bw
    compute = gather = hidden_bct = 0.0
    for zero, ckpt in layers:
        bct = bwd * fct + (fct if ckpt else 0.0)
        compute += m * (fct + bct)
        hidden_bct += bct
        if zero == 3: gather += m * D / 2 / bw
    ofct = ofit["a_ms_per_sample"] * b + ofit["b_ms_const"]
    other_compute = m * 3 * ofct
    printed = run["s_per_iter"] * 1000.0
    return {
        "gpus": gpus, "gib": gib, "dp": d, "chunks": m, "samples_per_chunk": b, "busbw_gbps": bw, "plan": run["layers"],
        "layer_compute_ms": compute, "other_compute_ms": other_compute, "compute_ms": compute + other_compute,
        "dp_allreduce_ms": len(layers) * t_dp, "backward_ms": hidden_bct, "zero3_gather_ms": gather,
        "exposed_dp_ms": gather, "tp_ms": 0.0, "overlap_coe": k,
        "residual_ms": printed - compute - other_compute - gather, "galvatron_ms": printed,
    }


def main():
    inp = json.load(open(sys.argv[1]))
    t = terms(inp, int(sys.argv[2]), int(sys.argv[3]))
    if "--json" in sys.argv[4:]:
        print(json.dumps(t))
        return
    print(f"Galvatron {t['gpus']} GPUs {t['gib']} GB (dp={t['dp']}, {t['plan']}, {t['chunks']} chunk(s) of "
          f"{t['samples_per_chunk']:g}, busbw {t['busbw_gbps']:g} GB/s): compute {t['compute_ms']:.1f} (layers "
          f"{t['layer_compute_ms']:.1f}, embedding/head {t['other_compute_ms']:.1f}) + exposed dp {t['exposed_dp_ms']:.1f} "
          f"(ZeRO-3 gathers; all-reduce {t['dp_allreduce_ms']:.1f} under a backward of {t['backward_ms']:.1f} per chunk, "
          f"k {t['overlap_coe']:.4f}) + tp 0 + residual {t['residual_ms']:.1f} = printed {t['galvatron_ms']:.1f} ms")

if __name__ == "__main__":
    main()
