"""Exports transformers model classes, built from tiny configs with seeded
random weights (nothing is downloaded), with torch.onnx.export, plus the
inputs and torch's outputs the tests compare against.

    $HF_PY tests/hf/export.py CACHE [--models a,b] [--opsets 14,17] [--list]

Runs with the transformers venv (tests/lib/hf_python.sh: Debian's torch 1.13
+ transformers 4.40). For every (model, opset) it writes
CACHE/NAME_opN-KEY/ holding model.onnx, in_I_NAME.npy (the inputs, batch 2,
sequence 8), out_J.npy (torch's outputs in the graph's output order) and
meta.json ({"inputs": [...], "outputs": [...], "causal_lm": bool,
"axes": {...}}). KEY hashes this file, the model name, the opset and the
torch / transformers versions, so a rerun re-exports only what changed
(a stale directory of the same NAME_opN is removed). Prints one line per
model: NAME_opN DIR, or NAME_opN ERROR text when the export itself fails.
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import warnings

BATCH, SEQ, VOCAB = 2, 8, 100

# name -> (config class, config kwargs, model class, kind). kind says which
# inputs the model takes and which outputs are compared:
#   lm      input_ids -> logits (causal LM; also trained)
#   lm_mask input_ids, attention_mask (one row left-padded) -> logits (causal LM)
#   enc     input_ids, attention_mask -> last_hidden_state
#   enc_tt  input_ids, attention_mask, token_type_ids -> last_hidden_state
#   s2s     input_ids, attention_mask, decoder_input_ids -> logits
#   img     pixel_values [B, 3, 16, 16] -> last_hidden_state (batch axis only)
#   audio   input_features [B, 8, 16] -> last_hidden_state (batch axis only)
_DEC = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
            max_position_embeddings=64)
MODELS = {
    "gpt2": ("GPT2Config", dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=64),
             "GPT2LMHeadModel", "lm"),
    "bert": ("BertConfig", dict(_DEC, max_position_embeddings=64), "BertModel", "enc_tt"),
    "roberta": ("RobertaConfig", dict(_DEC, max_position_embeddings=64), "RobertaModel", "enc"),
    "distilbert": ("DistilBertConfig", dict(dim=32, hidden_dim=64, n_layers=2, n_heads=4, vocab_size=VOCAB,
                                            max_position_embeddings=64), "DistilBertModel", "enc"),
    "llama": ("LlamaConfig", dict(_DEC, num_key_value_heads=2), "LlamaForCausalLM", "lm_mask"),
    "mistral": ("MistralConfig", dict(_DEC, num_key_value_heads=2), "MistralForCausalLM", "lm"),
    "qwen2": ("Qwen2Config", dict(_DEC, num_key_value_heads=2), "Qwen2ForCausalLM", "lm"),
    "falcon_mqa": ("FalconConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
                                        multi_query=True, new_decoder_architecture=False, parallel_attn=True,
                                        bias=False), "FalconForCausalLM", "lm"),
    "falcon_gqa": ("FalconConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
                                        new_decoder_architecture=True, num_kv_heads=2), "FalconForCausalLM", "lm"),
    "gpt_neox": ("GPTNeoXConfig", dict(_DEC, rotary_pct=0.5), "GPTNeoXForCausalLM", "lm"),
    "opt": ("OPTConfig", dict(hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
                              vocab_size=VOCAB, max_position_embeddings=64, word_embed_proj_dim=32),
            "OPTForCausalLM", "lm"),
    "phi": ("PhiConfig", dict(_DEC, partial_rotary_factor=0.5), "PhiForCausalLM", "lm"),
    "t5": ("T5Config", dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                            vocab_size=VOCAB, relative_attention_num_buckets=8, decoder_start_token_id=0),
           "T5ForConditionalGeneration", "s2s"),
    "vit": ("ViTConfig", dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                              image_size=16, patch_size=4), "ViTModel", "img"),
    "gemma": ("GemmaConfig", dict(_DEC, num_key_value_heads=1, head_dim=8), "GemmaForCausalLM", "lm"),
    "bloom": ("BloomConfig", dict(hidden_size=32, n_layer=2, n_head=4, vocab_size=VOCAB), "BloomForCausalLM", "lm"),
    "gptj": ("GPTJConfig", dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=64, rotary_dim=4),
             "GPTJForCausalLM", "lm"),
    "clip_vision": ("CLIPVisionConfig", dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, image_size=16, patch_size=4), "CLIPVisionModel",
                    "img"),
    "whisper_encoder": ("WhisperConfig", dict(d_model=32, encoder_layers=2, decoder_layers=2,
                                              encoder_attention_heads=4, decoder_attention_heads=4,
                                              encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8,
                                              max_source_positions=8, vocab_size=VOCAB, pad_token_id=0,
                                              bos_token_id=1, eos_token_id=2, decoder_start_token_id=1),
                        "WhisperModel", "audio"),
}


def key(name, opset):
    import torch
    import transformers
    h = hashlib.sha256(open(os.path.abspath(__file__), "rb").read())
    h.update(f"{name} {opset} {torch.__version__} {transformers.__version__}".encode())
    return h.hexdigest()[:12]


def build(name):
    import torch
    import transformers
    cfg_cls, kw, model_cls, kind = MODELS[name]
    torch.manual_seed(0)
    cfg = getattr(transformers, cfg_cls)(**kw)
    try:
        cfg._attn_implementation = "eager"  # the math path (torch 1.13 has no fused attention to trace)
    except AttributeError:
        pass
    cfg.use_cache = False
    m = getattr(transformers, model_cls)(cfg)
    if name == "whisper_encoder":
        m = m.get_encoder()
    m.eval()
    return m, kind


def inputs(kind):
    import torch
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(2, VOCAB, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    if kind == "lm_mask":
        mask[1, :3] = 0  # row 1 left-padded (generation-style), row 0 full
    elif kind != "lm":
        mask[1, SEQ - 3:] = 0  # row 1 right-padded
    if kind in ("lm",):
        return {"input_ids": ids}
    if kind == "lm_mask":
        return {"input_ids": ids, "attention_mask": mask}
    if kind == "enc":
        return {"input_ids": ids, "attention_mask": mask}
    if kind == "enc_tt":
        tt = torch.zeros(BATCH, SEQ, dtype=torch.int64)
        tt[:, SEQ // 2:] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt}
    if kind == "s2s":
        dec = torch.randint(2, VOCAB, (BATCH, SEQ), generator=g)
        return {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": dec}
    if kind == "img":
        return {"pixel_values": torch.randn(BATCH, 3, 16, 16, generator=g)}
    if kind == "audio":
        return {"input_features": torch.randn(BATCH, 8, 16, generator=g)}
    raise ValueError(kind)


class Wrap:
    """The model as a function of positional inputs returning the one compared tensor."""

    @staticmethod
    def make(m, kind, names):
        import torch

        class W(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, *args):
                out = self.m(**dict(zip(names, args)), return_dict=True)
                return out.logits if kind in ("lm", "lm_mask", "s2s") else out.last_hidden_state

        return W()


def broadcast_to_symbolic():
    """torch 1.13's exporter has no aten::broadcast_to (Falcon's grouped-query
    attention calls it): it is aten::expand, so it exports as expand does."""
    import torch
    from torch.onnx import symbolic_opset9 as s9
    torch.onnx.register_custom_op_symbolic("aten::broadcast_to", lambda g, x, size: s9.expand(g, x, size, None), 9)


def export(name, opset, cache):
    import numpy as np
    import torch
    d = os.path.join(cache, f"{name}_op{opset}-{key(name, opset)}")
    if os.path.exists(os.path.join(d, "meta.json")):
        return d
    for old in os.listdir(cache) if os.path.isdir(cache) else []:
        if old.startswith(f"{name}_op{opset}-"):
            shutil.rmtree(os.path.join(cache, old), ignore_errors=True)
    m, kind = build(name)
    feeds = inputs(kind)
    names = list(feeds)
    w = Wrap.make(m, kind, names)
    with torch.no_grad():
        ref = w(*feeds.values())
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    out_name = "logits" if kind in ("lm", "lm_mask", "s2s") else "last_hidden_state"
    axes = {}
    for n in names:
        axes[n] = {0: "batch"} if kind in ("img", "audio") else {0: "batch", 1: "seq"}
    axes[out_name] = {0: "batch"} if kind in ("img", "audio") else {0: "batch", 1: "seq"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(w, tuple(feeds.values()), os.path.join(tmp, "model.onnx"), opset_version=opset,
                          input_names=names, output_names=[out_name], dynamic_axes=axes)
    for i, (n, v) in enumerate(feeds.items()):
        np.save(os.path.join(tmp, f"in_{i}_{n}.npy"), v.numpy())
    np.save(os.path.join(tmp, "out_0.npy"), ref.numpy())
    if kind in ("lm", "lm_mask"):  # training labels: next tokens, padded positions ignored
        ids = feeds["input_ids"].numpy()
        lab = np.roll(ids, -1, axis=1)
        lab[:, -1] = -100
        if "attention_mask" in feeds:
            lab[feeds["attention_mask"].numpy() == 0] = -100
        np.save(os.path.join(tmp, "labels.npy"), lab.astype(np.int64))
    json.dump({"inputs": names, "outputs": [out_name], "kind": kind, "causal_lm": kind in ("lm", "lm_mask"),
               "static_seq": kind in ("img", "audio")}, open(os.path.join(tmp, "meta.json"), "w"))
    os.rename(tmp, d)
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cache")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--opsets", default="14,17")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        print(" ".join(MODELS))
        return 0
    os.makedirs(a.cache, exist_ok=True)
    import transformers
    transformers.logging.set_verbosity_error()
    broadcast_to_symbolic()
    for name in a.models.split(","):
        if name not in MODELS:
            print(f"{name} ERROR unknown model (known: {' '.join(MODELS)})")
            continue
        for op in a.opsets.split(","):
            try:
                print(f"{name}_op{op} {export(name, int(op), a.cache)}", flush=True)
            except Exception as e:  # an export failure is one row of the table, not the end of the run
                msg = " ".join(str(e).split())[:300]
                print(f"{name}_op{op} ERROR {type(e).__name__}: {msg}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
