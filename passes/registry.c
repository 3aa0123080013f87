/* registry.c — the table of passes that galvc and galv-opt can run. */
#include "passes.h"

#include <string.h>

const gv_pass gv_pass_table[] = {
    {"shape-infer", gv_pass_shape_infer, "infer every value's type; shapes become static once dims are bound"},
    {"compute-f32", gv_pass_compute_f32, "--precision bf16|fp16: a model computed in that 16-bit dtype (a .half() export) computes in fp32, its values stored 16-bit"},
    {"fold-constants", gv_pass_fold_constants, "evaluate ops whose inputs are constants; resolve shape chains and constant If"},
    {"canonicalize", gv_pass_canonicalize, "recognise decomposed LayerNorm, RMSNorm and GELU as single ops"},
    {"dce", gv_pass_dce, "remove ops whose results are unused"},
    {"master-weights", gv_pass_master_weights, "training: a 16-bit (bf16 / fp16) trained parameter becomes an fp32 master, cast to its stored type where it is read"},
    {"loss", gv_pass_loss, "training: append the loss (--loss, --labels) and return it"},
    {"fuse-attention", gv_pass_fuse_attention, "training: attention chains -> galv.attention (no S x S values; docs/fused-attention.md)"},
    {"autodiff", gv_pass_autodiff, "training: reverse-mode gradients of the loss for every parameter"},
    {"recompute", gv_pass_recompute, "training: recompute the selected layers' activations, or only their attention cores, in backward (--recompute)"},
    {"accumulate", gv_pass_accumulate, "training: gradients accumulated over --microbatches microbatches of the imported batch"},
    {"optimizer", gv_pass_optimizer, "training: append the SGD / AdamW update; the function becomes the training step"},
    {"cluster-layers", gv_pass_cluster_layers, "pipeline: METIS layer groups (--layers K), repaired into an acyclic ordered sequence"},
    {"propagate-sharding", gv_pass_propagate_sharding, "shardings for every value from pinned ones (--strategy, --sharding); galv.reshard where they differ"},
    {"regather", gv_pass_regather, "training: a gathered parameter (ZeRO-3) gathered again before each later layer that reads it, not kept whole"},
    {"spmd-partition", gv_pass_spmd_partition, "global IR -> one rank's local IR: local shapes, reshards lowered to collectives (bytes)"},
    {"stage-split", gv_pass_stage_split, "pipeline: galv.send / galv.recv where values cross stages (cross-mesh tiles, local all-gather)"},
    {"stage-stash", gv_pass_stage_stash, "pipeline training: an earlier stage's forward or backward entry (--stash=forward|backward), the stash between them"},
    {"fuse", gv_pass_fuse, "group elementwise ops of one shape into galv.fused ops (one loop each)"},
    {"overlap", gv_pass_overlap, "gradient reductions posted as the backward produces each gradient, not at its update"},
    {"bucket", gv_pass_bucket, "gradient reductions of one kind and group coalesced into buckets of --bucket-mb MiB, one call each"},
    {"storage", gv_pass_storage, "16-bit storage (--precision bf16|fp16): which values are stored 16-bit (storage, input_storage attrs)"},
    {"memory-plan", gv_pass_memory_plan, "place activations in one arena with liveness-based reuse (galv.arena, offsets)"},
};
gv_train_options gv_train_opts = {
    .loss = "cross_entropy", .labels = "labels", .ignore_index = -100, .optimizer = "adamw",
    .lr = 1e-3, .weight_decay = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .momentum = 0.0, .recompute = "none",
    .microbatches = 1, .loss_scale_mode = 0, .loss_scale = 65536.0, .scale_growth = 2.0, .scale_backoff = 0.5,
    .scale_interval = 2000, .zero_reduce_each = true,
};

gv_shard_options gv_shard_opts = {.strategy = NULL, .file = NULL, .quiet = true, .bucket_bytes = 0, .bucket_planned = -1};

const int gv_pass_count = (int)(sizeof gv_pass_table / sizeof gv_pass_table[0]);

const gv_pass *gv_pass_lookup(const char *name) {
  for (int i = 0; i < gv_pass_count; i++)
    if (strcmp(gv_pass_table[i].name, name) == 0) return &gv_pass_table[i];
  return 0;
}
