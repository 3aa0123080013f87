/* spmd.c — what differs per rank in a generated CPU program (galv_spmd.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "galv_spmd.h"

static int rank_, size_ = 1;
static char progname[300];

static int help_asked(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
  return 0;
}

void galv_spmd_init(int *argc, char ***argv) {
  galv_comm_world_init(argc, argv, &rank_, &size_);
  if (galv_nranks > 1) {
    /* errors every rank finds alike: rank 0 prints them once, under the plain name */
    galv_fatal_rank = rank_;
    galv_fatal_name = galv_progname;
    int help = help_asked(*argc, *argv);
    if (!help) { /* rank-specific messages name the rank; --help (printed by rank 0) the program */
      snprintf(progname, sizeof progname, "%s[%d]", galv_progname, rank_);
      galv_progname = progname;
    }
    if (size_ != galv_nranks && !help) /* --help is answered by any number of ranks */
      galv_fatal_all("the program was partitioned for %d ranks, but %d were started (run it with %s, or mpirun -np %d)",
                     galv_nranks, size_, galv_launch_hint(), galv_nranks);
    if (rank_ != 0 && !freopen("/dev/null", "w", stdout)) galv_fatal("cannot silence stdout: %s", strerror(errno));
  }
}

void galv_spmd_attach(int rank, int size) {
  if (size != galv_nranks)
    galv_fatal("the stage program was partitioned for %d ranks, but its stage was started with %d (run it with %s)",
               galv_nranks, size, galv_launch_hint());
  rank_ = rank, size_ = size;
}

int galv_spmd_rank(void) { return rank_; }

int64_t galv_spmd_weights_stride(void) { return galv_weights_stride(galv_weights_bytes, galv_nranks > 1 ? galv_nranks : 1); }

const char *galv_spmd_map_weights(const char *path, size_t *len) { return galv_spmd_map_weights_of(path, galv_weights_bytes, len); }

const char *galv_spmd_map_weights_of(const char *path, int64_t bytes, size_t *len) {
  return galv_map_weights_block(path, bytes, galv_nranks > 1 ? galv_nranks : 1, galv_nranks > 1 ? rank_ : 0, len);
}

galv_io galv_spmd_global_io(const galv_io *local, const galv_io_split *s) {
  galv_io g = *local;
  if (galv_nranks <= 1 || !s->starts) return g;
  int64_t n = (int64_t)galv_dtype_size(g.dtype);
  for (int d = 0; d < g.rank; d++) g.dims[d] = s->gdims[d], n *= g.dims[d];
  g.nbytes = n;
  return g;
}

static void gstrides(int rank, const int64_t *gd, int64_t *gs) {
  int64_t k = 1;
  for (int d = rank - 1; d >= 0; d--) gs[d] = k, k *= gd[d];
}

void galv_spmd_load_input(int i, void *dst, const void *global) {
  galv_spmd_block(&galv_inputs[i], &galv_input_split[i], dst, global);
}

void galv_spmd_block(const galv_io *l, const galv_io_split *s, void *dst, const void *global) {
  if (galv_nranks <= 1 || !s->starts) {
    memcpy(dst, global, (size_t)l->nbytes);
    return;
  }
  int64_t gs[GALV_RT_MAX_RANK], base = 0;
  gstrides(l->rank, s->gdims, gs);
  for (int d = 0; d < l->rank; d++) base += s->starts[rank_ * l->rank + d] * gs[d];
  size_t es = galv_dtype_size(l->dtype);
  galv_copy_strided(dst, (const char *)global + base * (int64_t)es, es, l->rank, l->dims, gs);
}

/* dst (global dims gd) at start <- src (contiguous, local dims ld) */
static void place(char *dst, const char *src, size_t es, int rank, const int64_t *ld, const int64_t *gd, const int64_t *start) {
  int64_t gs[GALV_RT_MAX_RANK], base = 0, n = 1, idx[GALV_RT_MAX_RANK] = {0};
  gstrides(rank, gd, gs);
  for (int d = 0; d < rank; d++) base += start[d] * gs[d], n *= ld[d];
  int64_t inner = rank ? ld[rank - 1] : 1; /* contiguous rows */
  for (int64_t i = 0; i < n; i += inner) {
    int64_t off = base;
    for (int d = 0; d < rank - 1; d++) off += idx[d] * gs[d];
    memcpy(dst + off * (int64_t)es, src + i * (int64_t)es, (size_t)inner * es);
    for (int d = rank - 2; d >= 0; d--) {
      if (++idx[d] < ld[d]) break;
      idx[d] = 0;
    }
  }
}

static char *outbuf, *gathered;

const void *galv_spmd_output(int o, const void *local, galv_io *g) {
  return galv_spmd_gather(&galv_outputs[o], &galv_output_split[o], local, g);
}

const void *galv_spmd_gather(const galv_io *l, const galv_io_split *s, const void *local, galv_io *g) {
  *g = galv_spmd_global_io(l, s);
  if (galv_nranks <= 1 || !s->starts) return local;
  int64_t one = galv_nranks;
  galv_comm *world = galv_comm_group(&one, 1, 1);
  galv_queue *q = galv_queue_new();
  free(gathered), free(outbuf);
  gathered = malloc((size_t)(l->nbytes * galv_nranks) + 1);
  outbuf = malloc((size_t)g->nbytes + 1);
  if (!gathered || !outbuf) galv_fatal("out of memory gathering output '%s'", l->name);
  galv_all_gather(world, local, gathered, (size_t)l->nbytes, GALV_U8, q);
  galv_queue_free(q);
  galv_spmd_place(l, s, gathered, outbuf);
  return outbuf;
}

void galv_spmd_place(const galv_io *l, const galv_io_split *s, const void *gathered, void *global) {
  size_t es = galv_dtype_size(l->dtype);
  for (int r = 0; r < galv_nranks; r++)
    place((char *)global, (const char *)gathered + (int64_t)r * l->nbytes, es, l->rank, l->dims, s->gdims, s->starts + r * l->rank);
}

void galv_spmd_check_bytes(int print, long runs) {
  galv_comm_bytes c = galv_comm_counters();
  const uint64_t got[4] = {c.all_reduce, c.all_gather, c.reduce_scatter, c.all_to_all};
  static const char *const kind[4] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  if (print) {
    printf("%s: comm bytes sent by rank %d in %ld runs: all_reduce %llu, all_gather %llu, reduce_scatter %llu, "
           "all_to_all %llu, send %llu",
           galv_progname, rank_, runs, (unsigned long long)c.all_reduce, (unsigned long long)c.all_gather,
           (unsigned long long)c.reduce_scatter, (unsigned long long)c.all_to_all, (unsigned long long)c.send);
    int known = 1;
    for (int k = 0; k < 4; k++) known &= galv_comm_predicted[k] >= 0;
    if (known)
      printf(" (predicted per run: %lld, %lld, %lld, %lld) from the %s", (long long)galv_comm_predicted[0],
             (long long)galv_comm_predicted[1], (long long)galv_comm_predicted[2], (long long)galv_comm_predicted[3],
             galv_comm_predicted_global ? "global program" : "partitioned collectives");
    printf("\n%s: comm calls by rank %d in %ld runs: all_reduce %llu, all_gather %llu, reduce_scatter %llu, all_to_all %llu\n",
           galv_progname, rank_, runs, (unsigned long long)c.calls[0], (unsigned long long)c.calls[1],
           (unsigned long long)c.calls[2], (unsigned long long)c.calls[3]);
    fflush(stdout);
  }
  for (int k = 0; k < 4; k++)
    if (galv_comm_predicted[k] >= 0 && got[k] != (uint64_t)galv_comm_predicted[k] * (uint64_t)runs)
      galv_fatal("rank %d: %s moved %llu bytes in %ld runs, the planner predicted %lld per run (%llu in all)", rank_,
                 kind[k], (unsigned long long)got[k], runs, (long long)galv_comm_predicted[k],
                 (unsigned long long)galv_comm_predicted[k] * (unsigned long long)runs);
}

void galv_spmd_finalize(void) {
  galv_program_comm_free();
  free(gathered), free(outbuf);
  gathered = outbuf = NULL;
  galv_comm_world_finalize();
}
