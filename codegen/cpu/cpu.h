/* cpu.h — shared declarations of the CPU emitter's files (codegen/cpu/):
 * emit.c walks the device program and writes program.c; loops.c writes the
 * elementwise loop functions (galv.fused ops and lone elementwise ops);
 * files.c writes weights.bin, the Makefile and the runtime sources. Private
 * to codegen/cpu; nothing here may change the IR. */
#ifndef GALV_CODEGEN_CPU_H
#define GALV_CODEGEN_CPU_H

#include <stdio.h>

#include "../codegen.h"
#include "../../runtime/galv_file.h"

/* Every file of an output directory is written atomically (files.c, through
 * runtime/galv_file.h): a program running from the directory keeps its
 * mapped weights.bin, and an interrupted galvc leaves the old files.
 * cg_open_file returns the temporary file's stream (NULL after reporting);
 * cg_close_file renames it over its path unless rc (an earlier failure,
 * returned) or a write error (reported, -1); weights files get their
 * checksum trailer first (nblocks blocks of block_bytes; galv_file.h). */
FILE *cg_open_file(galv_wfile *w, const char *path);
int cg_close_file(galv_wfile *w, int rc);
int cg_close_weights(galv_wfile *w, int rc, int64_t block_bytes, int nblocks);

/* The dtype a value is stored in (an f32 value stored bf16 / f16 under
 * --precision bf16 / fp16), ctx passed back. */
typedef gv_dtype (*cg_storage_fn)(const void *ctx, const gv_value *v);
/* Writes `static void NAME(const void *p0.., void *q0..)` computing op (a
 * galv.fused op or one elementwise op) as one loop nest over its iteration
 * space; each operand and result in its storage (st, NULL: its type's
 * dtype): 16-bit ones widened on load and rounded on store. Returns 0 or -1
 * after reporting through gv_error_op. */
int cg_emit_loop(gv_module *m, FILE *f, const char *name, const gv_op *op, cg_storage_fn st, const void *ctx);

/* The runtime dtype constant name (GALV_F32 ...) and C element type;
 * NULL when the CPU target does not handle the dtype. */
const char *cg_rt_dtype(gv_dtype t);
const char *cg_ctype(gv_dtype t);

/* Writes s as a C string literal / as comment text that cannot end the comment. */
void cg_c_string(FILE *f, const char *s);
void cg_c_comment(FILE *f, const char *s);

/* files.c */
int cg_write_file(const char *dir, const char *name, const void *data, size_t len);
/* the symbols a generated program defines (galv_NAME); a second entry's are galv_ENTRY_NAME (codegen/cpu/emit.c) */
extern const char *const cg_program_syms[];
extern const int cg_program_nsyms;
int cg_write_makefile(const char *dir);
/* mpi: the program communicates (mpicc, runtime/comm_mpi.c); else runtime/comm_single.c */
int cg_write_makefile_comm(const char *dir, int mpi);
int cg_write_runtime(const char *dir);

#endif
