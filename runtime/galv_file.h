/* galv_file.h — whole files, written atomically and read with limits; shared
 * by galvc (program sources, weights, plans) and the generated programs'
 * runtime (outputs, weights checks). It depends on nothing but libc.
 *
 * A writer never changes a file in place: it writes PATH.tmp.PID in the same
 * directory, flushes it to disk (fsync), renames it over PATH and syncs the
 * directory, so a reader (or a running program with PATH mapped) sees the
 * old file or the new one, never a part of either. A reader takes regular
 * files only, up to a stated size, so /dev/zero or a directory is an error,
 * not an endless read.
 *
 * weights.bin (and weights_ENTRY.bin) carry a checksum trailer after their
 * N blocks (N ranks; one block of B bytes, blocks at a 4096-byte stride when
 * N > 1, so each rank maps its own block at a page-aligned offset):
 *   u32 CRC-32 of each block's B bytes (N of them)
 *   i64 B, u32 N, u32 CRC-32 of the trailer before this field, "GALVWSUM"
 * Little-endian. A program checks its own block against its CRC at load. */
#ifndef GALV_FILE_H
#define GALV_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* CRC-32 (IEEE, as zlib's crc32): crc of the bytes so far (0 to start). */
uint32_t galv_crc32(uint32_t crc, const void *data, size_t n);

typedef struct {
  FILE *f;
  char path[4096], tmp[4128];
} galv_wfile;
/* Opens the temporary file that galv_wfile_commit renames over PATH ("wb+":
 * it may be read back); exec: mode 0777 (less the umask), else 0666.
 * Returns the stream, or NULL with "PATH: reason" in err. */
FILE *galv_wfile_open(galv_wfile *w, const char *path, int exec, char *err, size_t errlen);
/* Flushes, fsyncs, closes, renames over PATH, syncs the directory. On
 * failure (a write error earlier included) removes the temporary file and
 * returns -1 with "PATH: reason" in err. */
int galv_wfile_commit(galv_wfile *w, char *err, size_t errlen);
void galv_wfile_abandon(galv_wfile *w); /* closes and removes the temporary file */
/* The whole of PATH as DATA, atomically. */
int galv_write_whole(const char *path, const void *data, size_t n, int exec, char *err, size_t errlen);

/* Reads PATH whole into a malloc'ed buffer (NUL-terminated; *len excludes the
 * NUL). Refuses what is not a regular file and files above cap bytes.
 * Returns 0, or -1 with a one-line reason (without the path) in err. */
int galv_read_whole(const char *path, size_t cap, char **data, size_t *len, char *err, size_t errlen);

enum { GALV_WSUM_FOOTER = 24 };
/* The stride of the blocks of an N-block weights file of block bytes B. */
int64_t galv_weights_stride(int64_t block_bytes, int nblocks);
/* The size of the whole file: N blocks, then the trailer. */
int64_t galv_weights_file_bytes(int64_t block_bytes, int nblocks);
/* Appends the checksum trailer to F, which holds (at its start) nblocks
 * blocks of block_bytes at galv_weights_stride: reads them back for their
 * CRCs. Returns 0, or -1 with a reason in err. */
int galv_weights_seal(FILE *f, int64_t block_bytes, int nblocks, char *err, size_t errlen);
/* Checks block `index` (its block_bytes bytes at `block`) against the
 * trailer of the weights file open as fd. Returns 0, or -1 with a one-line
 * reason (without the path) in err. */
int galv_weights_verify(int fd, const void *block, int64_t block_bytes, int nblocks, int index, char *err, size_t errlen);

#endif
