/* galv_emu_impl.h — what the parts of the CUDA execution layer (emu.cc,
 * emu_blas.cc, emu_nccl.cc) share: errors, device-memory checks and the
 * stream happens-before record (emu.cc). Not seen by the programs. */
#ifndef GALV_EMU_IMPL_H
#define GALV_EMU_IMPL_H
#include "galv_emu.h"

/* one line "PROG: error: [rank R: ]emulation: ...", exit 1 */
[[noreturn]] void galv_emu_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void galv_emu_set_rank(int rank);
/* [p, p+n) lies in one live device allocation / is not device memory; else die naming what */
void galv_emu_check_device(const void *p, size_t n, const char *what);
void galv_emu_check_host(const void *p, size_t n, const char *what);
bool galv_emu_is_device(const void *p);
size_t galv_emu_device_high_water(void);
/* device memory is accessible while one of these lives (the layer's own calls) */
struct galv_emu_open {
  galv_emu_open();
  ~galv_emu_open();
};
/* an operation on stream s touching these bytes: checked against unordered
 * operations of other streams, then recorded */
struct galv_emu_range {
  const void *p;
  size_t n;
  bool write;
};
void galv_emu_stream_op(cudaStream_t s, const galv_emu_range *r, int nr, const char *what);
/* the host has waited for stream s (a blocking call) */
void galv_emu_host_waits(cudaStream_t s);
#endif
