/* file.c — atomic whole-file writes, bounded reads of regular files, CRC-32
 * and the weights files' checksum trailer (galv_file.h). Compiled into galvc
 * and into every generated program; never prints, never exits: callers turn
 * the reasons into their own one-line errors. */
#include "galv_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Slicing-by-8: weights are checked at every program start, so the CRC runs
 * at a few GB/s rather than the bytewise table's ~0.5. */
static uint32_t crc_tab[8][256];
static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    crc_tab[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

uint32_t galv_crc32(uint32_t crc, const void *data, size_t n) {
  if (!crc_tab[0][1]) crc_init();
  const uint8_t *p = data;
  crc = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^ crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
          crc_tab[3][p[4]] ^ crc_tab[2][p[5]] ^ crc_tab[1][p[6]] ^ crc_tab[0][p[7]];
  }
  while (n--) crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

/* ---------------------------------------------------------------- writing */

FILE *galv_wfile_open(galv_wfile *w, const char *path, int exec, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  if ((size_t)snprintf(w->path, sizeof w->path, "%s", path) >= sizeof w->path) {
    snprintf(err, errlen, "%.200s...: path too long", path);
    return NULL;
  }
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* -o /dev/stdout, a FIFO: written directly, nothing to rename */
    if (!(w->f = fopen(path, "wb"))) snprintf(err, errlen, "%s: cannot write file: %s", path, strerror(errno));
    return w->f;
  }
  snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(w->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, exec ? 0777 : 0666);
  if (fd < 0) {
    snprintf(err, errlen, "%s: cannot write file: %s", path, strerror(errno));
    return NULL;
  }
  if (!(w->f = fdopen(fd, "w+b"))) {
    snprintf(err, errlen, "%s: cannot write file: %s", path, strerror(errno));
    close(fd);
    unlink(w->tmp);
  }
  return w->f;
}

void galv_wfile_abandon(galv_wfile *w) {
  if (w->f) fclose(w->f), w->f = NULL;
  if (w->tmp[0]) unlink(w->tmp), w->tmp[0] = 0;
}

int galv_wfile_commit(galv_wfile *w, char *err, size_t errlen) {
  if (!w->tmp[0]) { /* not a regular file: written in place */
    int bad = ferror(w->f) | (fclose(w->f) != 0);
    w->f = NULL;
    if (bad) snprintf(err, errlen, "%s: write failed: %s", w->path, strerror(errno));
    return bad ? -1 : 0;
  }
  errno = 0;
  int bad = ferror(w->f) || fflush(w->f) != 0 || fsync(fileno(w->f)) != 0;
  int e = errno;
  bad |= fclose(w->f) != 0;
  w->f = NULL;
  if (bad || rename(w->tmp, w->path)) {
    if (!bad) e = errno;
    snprintf(err, errlen, "%s: write failed: %s", w->path, e ? strerror(e) : "I/O error");
    unlink(w->tmp), w->tmp[0] = 0;
    return -1;
  }
  w->tmp[0] = 0;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", w->path);
  char *sl = strrchr(dir, '/');
  if (sl) *(sl == dir ? sl + 1 : sl) = 0;
  else snprintf(dir, sizeof dir, ".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) fsync(fd), close(fd); /* the rename itself on disk */
  return 0;
}

int galv_write_whole(const char *path, const void *data, size_t n, int exec, char *err, size_t errlen) {
  galv_wfile w;
  FILE *f = galv_wfile_open(&w, path, exec, err, errlen);
  if (!f) return -1;
  if (n && fwrite(data, 1, n, f) != n) {
    snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
    galv_wfile_abandon(&w);
    return -1;
  }
  return galv_wfile_commit(&w, err, errlen);
}

/* ---------------------------------------------------------------- reading */

int galv_read_whole(const char *path, size_t cap, char **data, size_t *len, char *err, size_t errlen) {
  *data = NULL, *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* O_NONBLOCK: a FIFO does not hang the open */
  if (fd < 0) return snprintf(err, errlen, "cannot open: %s", strerror(errno)), -1;
  struct stat st;
  if (fstat(fd, &st)) {
    snprintf(err, errlen, "cannot stat: %s", strerror(errno));
    close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "not a regular file (%s)", S_ISDIR(st.st_mode) ? "a directory" : "a device, pipe or socket");
    close(fd);
    return -1;
  }
  if ((uint64_t)st.st_size > cap) {
    snprintf(err, errlen, "file of %lld bytes, larger than the %zu bytes this reader accepts", (long long)st.st_size, cap);
    close(fd);
    return -1;
  }
  size_t n = (size_t)st.st_size, got = 0;
  char *b = malloc(n + 1);
  if (!b) {
    snprintf(err, errlen, "out of memory");
    close(fd);
    return -1;
  }
  while (got < n) { /* the size known, the file may still shrink or grow under us: read at most n, once */
    ssize_t k = read(fd, b + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd);
  if (got != n) {
    free(b);
    snprintf(err, errlen, "read error (the file changed while it was read?)");
    return -1;
  }
  b[n] = 0;
  *data = b, *len = n;
  return 0;
}

/* ---------------------------------------------------------------- weights trailer */

static const char wsum_magic[8] = {'G', 'A', 'L', 'V', 'W', 'S', 'U', 'M'};

int64_t galv_weights_stride(int64_t block_bytes, int nblocks) {
  return nblocks > 1 ? (block_bytes + 4095) / 4096 * 4096 : block_bytes;
}

int64_t galv_weights_file_bytes(int64_t block_bytes, int nblocks) {
  return galv_weights_stride(block_bytes, nblocks) * nblocks + 4 * (int64_t)nblocks + GALV_WSUM_FOOTER;
}

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}
static uint32_t get_u32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

int galv_weights_seal(FILE *f, int64_t block_bytes, int nblocks, char *err, size_t errlen) {
  int64_t stride = galv_weights_stride(block_bytes, nblocks);
  size_t tn = 4 * (size_t)nblocks + GALV_WSUM_FOOTER;
  uint8_t *t = malloc(tn), *chunk = malloc(1 << 16);
  int rc = -1;
  if (!t || !chunk) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  if (fflush(f)) goto ioerr;
  for (int b = 0; b < nblocks; b++) {
    if (fseeko(f, (off_t)(stride * b), SEEK_SET)) goto ioerr;
    uint32_t crc = 0;
    for (int64_t left = block_bytes; left > 0;) {
      size_t k = left > (1 << 16) ? (1 << 16) : (size_t)left;
      if (fread(chunk, 1, k, f) != k) goto ioerr;
      crc = galv_crc32(crc, chunk, k);
      left -= (int64_t)k;
    }
    put_u32(t + 4 * b, crc);
  }
  uint8_t *ft = t + 4 * (size_t)nblocks;
  for (int i = 0; i < 8; i++) ft[i] = (uint8_t)((uint64_t)block_bytes >> 8 * i);
  put_u32(ft + 8, (uint32_t)nblocks);
  put_u32(ft + 12, galv_crc32(0, t, 4 * (size_t)nblocks + 12));
  memcpy(ft + 16, wsum_magic, 8);
  if (fseeko(f, (off_t)(stride * nblocks), SEEK_SET) || fwrite(t, 1, tn, f) != tn) goto ioerr;
  rc = 0;
  goto out;
ioerr:
  snprintf(err, errlen, "cannot write the weights' checksums: %s", errno ? strerror(errno) : "short file");
out:
  free(t), free(chunk);
  return rc;
}

static int pread_all(int fd, void *p, size_t n, off_t off) {
  for (size_t got = 0; got < n;) {
    ssize_t k = pread(fd, (char *)p + got, n - got, off + (off_t)got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    got += (size_t)k;
  }
  return 0;
}

int galv_weights_verify(int fd, const void *block, int64_t block_bytes, int nblocks, int index, char *err, size_t errlen) {
  int64_t end = galv_weights_stride(block_bytes, nblocks) * nblocks;
  size_t tn = 4 * (size_t)nblocks + GALV_WSUM_FOOTER;
  uint8_t *t = malloc(tn);
  if (!t) return snprintf(err, errlen, "out of memory"), -1;
  if (pread_all(fd, t, tn, (off_t)end)) {
    snprintf(err, errlen, "cannot read the checksum trailer: %s", errno ? strerror(errno) : "short file");
    free(t);
    return -1;
  }
  const uint8_t *ft = t + 4 * (size_t)nblocks;
  uint64_t b = 0;
  for (int i = 0; i < 8; i++) b |= (uint64_t)ft[i] << 8 * i;
  int ok = !memcmp(ft + 16, wsum_magic, 8) && b == (uint64_t)block_bytes && get_u32(ft + 8) == (uint32_t)nblocks;
  uint32_t tcrc = get_u32(ft + 12), want = get_u32(t + 4 * index);
  int tok = galv_crc32(0, t, tn - 12) == tcrc;
  free(t);
  if (!ok) return snprintf(err, errlen, "no valid checksum trailer (not written by this galvc: rebuild with galvc)"), -1;
  if (!tok) return snprintf(err, errlen, "weights checksum trailer damaged (its CRC-32 does not match): rebuild with galvc"), -1;
  uint32_t got = galv_crc32(0, block, (size_t)block_bytes);
  if (want != got) {
    char blk[48] = "";
    if (nblocks > 1) snprintf(blk, sizeof blk, " in rank %d's block", index);
    return snprintf(err, errlen, "weights checksum mismatch%s (CRC-32 %08x, computed %08x): the file is damaged; rebuild with galvc",
                    blk, want, got),
           -1;
  }
  return 0;
}
