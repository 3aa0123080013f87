/* emu.cc — the CUDA execution layer: runs galvc's CUDA programs (the same
 * program.cu and runtime/cuda/ sources, compiled by the host C++ compiler)
 * on the CPU, as a test tool. What it does:
 *
 * Launch: every block of the grid, in a seeded random order (GALV_EMU_SEED);
 * the threads of a block are cooperative user-level contexts (the x86-64
 * switch below: callee-saved registers, MXCSR / x87 control word and rsp;
 * no system call, unlike swapcontext), annotated for ASan
 * (__sanitizer_*_switch_fiber). A launch starts on the fast path: the
 * threads of a block run one after another on one context; the first
 * barrier or warp operation moves the launch to full scheduling, where each
 * thread has its own context and runs until it blocks, in a seeded random
 * order between barriers. CUDA's rules are checked, not assumed: every
 * thread of a block reaches each __syncthreads (a thread that exits, or
 * waits at another barrier, while others wait is reported as barrier
 * divergence), every lane named in a warp operation's mask calls it with
 * the same mask, and the launch limits of the architecture hold (1024
 * threads, block dims 1024 x 1024 x 64, grid y / z 65535, 48 KiB of
 * static + dynamic shared memory; static __shared__ sizes are read from the
 * program's own symbol table at start, where ptxas would reject them; the
 * registers a block needs, from ptxas's counts per kernel when make emu
 * found nvcc, at most 65536).
 *
 * Shared memory: each __shared__ variable is one static in the section
 * galv_shm (galv_emu.h); blocks run one at a time, so it is the running
 * block's; so is the dynamic shared memory (GALV_DYNAMIC_SHARED). Under
 * full scheduling a block starts with it filled with 0xff bytes (NaN /
 * -1), so a read before the write it should wait for sees garbage. The
 * race-check build (make emu-race, GALV_EMU_SHADOW below) keeps a shadow
 * of every shared byte per barrier epoch: two threads touching it in one
 * epoch, one writing, is reported whatever order they ran in; and a shadow
 * of the global bytes each launch touches, where two threads of the launch
 * touching a byte unordered (different blocks, or one block's threads
 * without a barrier between), one writing, is reported too.
 *
 * Device memory: each cudaMalloc is its own mapping between two
 * inaccessible guard pages, the block placed at the end of its pages (its
 * tail beyond the size poisoned under ASan), so an out-of-bounds device
 * access faults or is an ASan report; outside the layer's own calls device
 * memory is inaccessible (PROT_NONE), so host code touching it faults, and
 * the fault handler names the allocation. Freed blocks stay mapped
 * inaccessible (use after cudaFree is a fault too).
 *
 * Streams: every operation runs when it is issued; the happens-before
 * order CUDA guarantees is kept as vector clocks (per stream, per event,
 * for the host), and the exact byte ranges of copies, memsets, cuBLAS and
 * NCCL calls are recorded: an operation touching bytes an operation on
 * another stream touched (one of them writing) with no event, stream or
 * host synchronisation between them is reported (a real GPU may run them
 * concurrently). Kernels' ranges are known in the race-check build only.
 *
 * Every error is one line "PROG: error: emulation: ..." on stderr and exit
 * status 1. Nothing here is shared with runtime/ (the CPU target C files). */
#include <cxxabi.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "galv_emu.h"
#include "galv_emu_impl.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

uint3 galv_emu_thread_idx, galv_emu_block_idx, galv_emu_block_dim, galv_emu_grid_dim;
int galv_emu_want_pc;

/* ---------------------------------------------------------------- errors */

static char emu_where[160]; /* the running kernel, block and thread, for reports */
static int emu_rank = -1;
void galv_emu_set_rank(int r) { emu_rank = r; }

[[noreturn]] void galv_emu_die(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char r[32] = "";
  if (emu_rank >= 0) snprintf(r, sizeof r, "rank %d: ", emu_rank);
  fprintf(stderr, "%s: error: %semulation: %s\n", program_invocation_short_name, r, msg);
  fflush(stderr);
  _exit(1);
}

/* ---------------------------------------------------------------- device memory */

struct dev_alloc {
  char *map;      /* guard page, data pages, guard page */
  size_t maplen;
  char *p;        /* the block: ends at the end of the data pages */
  size_t n;
  bool live;
};
static std::vector<dev_alloc> allocs;
static int open_depth;
static const size_t PG = 4096;
static size_t dev_bytes, dev_high;

static void protect(dev_alloc &a, int prot) {
  if (!a.live) return;
  if (mprotect(a.map + PG, a.maplen - 2 * PG, prot) != 0) galv_emu_die("mprotect: %s", strerror(errno));
}
/* device memory is accessible only inside the layer's calls (GALV_EMU_HOST_GUARD=0: always) */
static bool host_guard(void) {
  static int g = -1;
  if (g < 0) {
    const char *e = getenv("GALV_EMU_HOST_GUARD");
    g = !(e && *e == '0');
  }
  return g;
}
galv_emu_open::galv_emu_open() {
  if (open_depth++ == 0 && host_guard())
    for (auto &a : allocs) protect(a, PROT_READ | PROT_WRITE);
}
galv_emu_open::~galv_emu_open() {
  if (--open_depth == 0 && host_guard())
    for (auto &a : allocs) protect(a, PROT_NONE);
}

static dev_alloc *find_alloc(const void *p) {
  for (auto &a : allocs)
    if ((const char *)p >= a.map && (const char *)p < a.map + a.maplen) return &a;
  return nullptr;
}
bool galv_emu_is_device(const void *p) { return find_alloc(p) != nullptr; }

/* [p, p+n) must lie in one live device allocation */
void galv_emu_check_device(const void *p, size_t n, const char *what) {
  if (n == 0) return;
  dev_alloc *a = find_alloc(p);
  if (!a) galv_emu_die("%s: %p is not device memory (a host pointer where the call needs a device one)", what, p);
  if (!a->live) galv_emu_die("%s: %p is in a device allocation already freed (cudaFree)", what, p);
  const char *q = (const char *)p;
  if (q < a->p || q + n > a->p + a->n)
    galv_emu_die("%s: bytes [%td, %td) of a %zu-byte device allocation are out of bounds", what, q - a->p,
                 q + n - a->p, a->n);
}
void galv_emu_check_host(const void *p, size_t n, const char *what) {
  if (n && !p) galv_emu_die("%s: a NULL host pointer for %zu bytes (a GPU returns cudaErrorInvalidValue)", what, n);
  if (n && find_alloc(p)) galv_emu_die("%s: %p is device memory where the call needs a host pointer", what, p);
}

/* GALV_EMU_MEM=1: at exit, the device-memory high-water mark (bytes requested by cudaMalloc, live at
 * once), the figure a GPU's allocator would have to hold (tests compare it with the planner's), and the bytes
 * copied between host and device each way (cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2DAsync: what crosses PCIe) */
static size_t h2d_bytes, d2h_bytes, h2d_calls, d2h_calls;
static void mem_report(void) {
  fprintf(stderr, "emulation: device memory high-water %zu bytes (%zu allocations)\n", dev_high, allocs.size());
  fprintf(stderr, "emulation: host-device copies: h2d %zu bytes in %zu calls, d2h %zu bytes in %zu calls\n", h2d_bytes,
          h2d_calls, d2h_bytes, d2h_calls);
}
static void count_copy(size_t n, cudaMemcpyKind k) {
  if (k == cudaMemcpyHostToDevice) h2d_bytes += n, h2d_calls++;
  else if (k == cudaMemcpyDeviceToHost) d2h_bytes += n, d2h_calls++;
}

cudaError_t cudaMalloc(void **p, size_t n) {
  if (!p) return cudaErrorInvalidValue;
  size_t data = (n + 255) / 256 * 256;
  size_t pages = (data + PG - 1) / PG;
  if (pages == 0) pages = 1;
  size_t len = (pages + 2) * PG;
  char *m = (char *)mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return cudaErrorMemoryAllocation;
  dev_alloc a{m, len, m + PG + pages * PG - data, n, true};
  if (open_depth || !host_guard()) protect(a, PROT_READ | PROT_WRITE);
#if EMU_ASAN
  ASAN_POISON_MEMORY_REGION(a.p + n, data - n); /* the tail up to the 256-byte rounding */
#endif
  allocs.push_back(a);
  dev_bytes += n;
  dev_high = std::max(dev_high, dev_bytes);
  *p = a.p;
  static bool report;
  if (!report && (report = true) && getenv("GALV_EMU_MEM") && *getenv("GALV_EMU_MEM") == '1') atexit(mem_report);
  return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
  if (!p) return cudaSuccess;
  dev_alloc *a = find_alloc(p);
  if (!a || !a->live || a->p != p) galv_emu_die("cudaFree(%p): not the start of a live device allocation", p);
  protect(*a, PROT_NONE);
  a->live = false; /* stays mapped, inaccessible: a later access faults as use after free */
  dev_bytes -= a->n;
  return cudaSuccess;
}
size_t galv_emu_device_high_water(void) { return dev_high; }

/* faults: out of bounds (guard pages), host code on device memory, use after free */
static void on_fault(int sig, siginfo_t *si, void *) {
  const char *addr = (const char *)si->si_addr;
  dev_alloc *a = find_alloc(addr);
  char msg[512];
  if (a && !a->live)
    snprintf(msg, sizeof msg, "access to device memory after cudaFree (address %p)%s%s", (void *)addr,
             *emu_where ? " in " : "", emu_where);
  else if (a && (addr < a->map + PG || addr >= a->map + a->maplen - PG))
    snprintf(msg, sizeof msg, "out-of-bounds device memory access at byte %td of a %zu-byte allocation%s%s",
             addr - a->p, a->n, *emu_where ? " in " : "", emu_where);
  else if (a)
    snprintf(msg, sizeof msg, "host code touched device memory (byte %td of a %zu-byte allocation) outside a CUDA call",
             addr - a->p, a->n);
  else {
    snprintf(msg, sizeof msg, "%s at address %p%s%s", sig == SIGSEGV ? "segmentation fault" : "bus error",
             (void *)addr, *emu_where ? " in " : "", emu_where);
  }
  char r[32] = "";
  if (emu_rank >= 0) snprintf(r, sizeof r, "rank %d: ", emu_rank);
  char line[800];
  int k = snprintf(line, sizeof line, "%s: error: %semulation: %s\n", program_invocation_short_name, r, msg);
  if (write(2, line, (size_t)k) < 0) {}
  _exit(1);
}

/* ---------------------------------------------------------------- static shared memory sizes */

extern "C" char __start_galv_shm[] __attribute__((weak));
extern "C" char __stop_galv_shm[] __attribute__((weak));
struct shm_var {
  std::string name; /* kernel::variable */
  size_t off, size; /* in the section */
};
static std::vector<shm_var> *shm_vars; /* the race check's names */

/* the dynamic shared memory of the running block (GALV_DYNAMIC_SHARED): the
 * launch's shmem bytes at its start; in galv_shm like the static variables,
 * so the race check shadows it and a block under full scheduling starts
 * with it filled too */
enum { SHM_LIMIT = 48 * 1024 };
alignas(16) static char galv_emu_dynamic_shared_memory[SHM_LIMIT] __attribute__((section("galv_shm")));
static const char DYN_NAME[] = "galv_emu_dynamic_shared_memory";

/* The program's functions (symbol table, at their run-time addresses):
 * a kernel's code address gives its mangled name, the key of ptxas's
 * register counts; demangled, the key of its static __shared__ bytes. */
struct fn_sym {
  uintptr_t lo, hi;
  const char *name; /* mangled */
};
static std::vector<fn_sym> *fn_syms;
static std::map<std::string, size_t> *shm_static; /* demangled function -> static __shared__ bytes in galv_shm */
/* GCC ignores the section attribute on a static local of a template
 * function (it goes to a COMDAT .bss section): the __shared__ variables of
 * template kernels — the runtime's — are found instead as the program's
 * writable local statics (_ZZ<function>E<name>), all of them known from the
 * symbol table before the first launch. Device code touches no other
 * function-local static (CUDA allows none but __shared__ ones), so any of
 * them a kernel's thread touches is shared memory: the race check shadows
 * it from the launch's first access, whether or not the launch knows its
 * kernel yet; its function (the mangled name's prefix) is the kernel's
 * identity where an index read has not given it yet. */
struct shm_cell;
struct loc_static {
  const char *name; /* mangled */
  uintptr_t lo;
  size_t size;
  shm_cell *shadow;    /* race check: per byte, once a kernel touches it */
  const struct fn_sym *owner; /* the function it is local to (found once: owner_done) */
  bool owner_done;
  std::string *dname;  /* demangled, for reports (once) */
};
static std::vector<loc_static> *loc_statics; /* sorted by address */
static uintptr_t loc_lo = UINTPTR_MAX, loc_hi; /* the span of them all: a quick test */
static int exe_bias_cb(struct dl_phdr_info *i, size_t, void *d) {
  *(uintptr_t *)d = i->dlpi_addr; /* the first object is the program */
  return 1;
}
static const fn_sym *find_fn(uintptr_t pc) {
  if (!fn_syms) return nullptr;
  auto it = std::upper_bound(fn_syms->begin(), fn_syms->end(), pc,
                             [](uintptr_t a, const fn_sym &f) { return a < f.lo; });
  if (it == fn_syms->begin()) return nullptr;
  --it;
  return pc < it->hi ? &*it : nullptr;
}
static std::string demangle(const char *m) {
  int st = 0;
  char *dm = abi::__cxa_demangle(m, nullptr, nullptr, &st);
  std::string r = dm && st == 0 ? dm : m;
  free(dm);
  return r;
}

/* Each __shared__ variable is a static in section galv_shm; its symbol
 * (func::name) gives the kernel. ptxas rejects a kernel whose static shared
 * memory exceeds 48 KiB; so does the emulation, at start. */
static std::map<std::string, size_t> shm_sizes(std::vector<shm_var> *vars) {
  std::map<std::string, size_t> out;
  uintptr_t bias = 0;
  dl_iterate_phdr(exe_bias_cb, &bias);
  fn_syms = new std::vector<fn_sym>;
  loc_statics = new std::vector<loc_static>;
  int fd = open("/proc/self/exe", O_RDONLY);
  if (fd < 0) return out;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return out;
  }
  char *b = (char *)mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (b == MAP_FAILED) return out;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
  const char *shstr = b + sh[eh->e_shstrndx].sh_offset;
  int shm = -1;
  for (int i = 0; i < eh->e_shnum; i++)
    if (strcmp(shstr + sh[i].sh_name, "galv_shm") == 0) shm = i;
  for (int i = 0; shm >= 0 && i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB) continue;
    const Elf64_Sym *sy = (const Elf64_Sym *)(b + sh[i].sh_offset);
    const char *str = b + sh[sh[i].sh_link].sh_offset;
    size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
    for (size_t j = 0; j < n; j++) {
      if (ELF64_ST_TYPE(sy[j].st_info) == STT_FUNC && sy[j].st_value && sy[j].st_size) {
        fn_syms->push_back({bias + sy[j].st_value, bias + sy[j].st_value + sy[j].st_size, strdup(str + sy[j].st_name)});
        continue;
      }
      if (ELF64_ST_TYPE(sy[j].st_info) == STT_OBJECT && sy[j].st_shndx != shm && sy[j].st_shndx < eh->e_shnum &&
          (sh[sy[j].st_shndx].sh_flags & SHF_WRITE) && sy[j].st_size && !strncmp(str + sy[j].st_name, "_ZZ", 3)) {
        loc_statics->push_back({strdup(str + sy[j].st_name), bias + sy[j].st_value, (size_t)sy[j].st_size, nullptr,
                                nullptr, false, nullptr});
        continue;
      }
      if (sy[j].st_shndx != shm || ELF64_ST_TYPE(sy[j].st_info) != STT_OBJECT) continue;
      std::string name = demangle(str + sy[j].st_name);
      size_t off = (size_t)(sy[j].st_value - sh[shm].sh_addr);
      if (name == DYN_NAME) { /* the layer's own: the launch's dynamic bytes */
        vars->push_back({"the dynamic shared memory (GALV_DYNAMIC_SHARED)", off, (size_t)sy[j].st_size});
        continue;
      }
      size_t c = name.rfind("::");
      out[c == std::string::npos ? name : name.substr(0, c)] += sy[j].st_size;
      vars->push_back({name, off, (size_t)sy[j].st_size});
    }
  }
  munmap(b, (size_t)st.st_size);
  std::sort(fn_syms->begin(), fn_syms->end(), [](const fn_sym &a, const fn_sym &b) { return a.lo < b.lo; });
  std::sort(loc_statics->begin(), loc_statics->end(), [](const loc_static &a, const loc_static &b) { return a.lo < b.lo; });
  for (auto &v : *loc_statics) loc_lo = std::min(loc_lo, v.lo), loc_hi = std::max(loc_hi, v.lo + v.size);
  return out;
}

/* the function-local static that [a, a+n) overlaps, if any */
__attribute__((unused)) static loc_static *find_loc_static(uintptr_t a, size_t n) {
  if (!loc_statics || a + n <= loc_lo || a >= loc_hi) return nullptr;
  auto it = std::upper_bound(loc_statics->begin(), loc_statics->end(), a + n - 1,
                             [](uintptr_t x, const loc_static &v) { return x < v.lo; });
  if (it == loc_statics->begin()) return nullptr;
  --it;
  return a < it->lo + it->size ? &*it : nullptr;
}
/* the function a local static belongs to: _ZZ<encoding>E<entity> names it _Z<encoding> (the longest match) */
__attribute__((unused)) static const fn_sym *static_owner(loc_static &v) {
  if (v.owner_done) return v.owner;
  v.owner_done = true;
  size_t best = 0;
  for (auto &f : *fn_syms) {
    if (strncmp(f.name, "_Z", 2)) continue;
    size_t n = strlen(f.name + 2);
    if (n > best && !strncmp(v.name + 3, f.name + 2, n) && v.name[3 + n] == 'E') best = n, v.owner = &f;
  }
  return v.owner;
}

/* ---------------------------------------------------------------- registers (ptxas) */

/* `make emu` links emu_regs.cc when nvcc is found: ptxas's register count
 * of every kernel of the program's sources for each --cuda-arch
 * (runtime/cuda/emu/ptxas_regs.sh), lines "ARCH MANGLED REGS". Without it
 * (no nvcc, EMU_REGS=) registers are not checked. */
extern "C" __attribute__((weak)) const char galv_emu_ptxas_regs[];
struct kregs {
  int regs;
  std::string arch; /* the arch with the most */
};
static std::unordered_map<std::string, kregs> *reg_table;
static uint64_t reg_launches, reg_checked;
static std::map<std::string, uint64_t> *reg_unjoined; /* kernels launched whose count was not found */
static void reg_report(void) {
  std::string archs;
  for (auto &k : *reg_table)
    if (archs.find(k.second.arch) == std::string::npos) archs += (archs.empty() ? "" : ",") + k.second.arch;
  fprintf(stderr, "emulation: registers checked for %llu of %llu launches (%zu kernels counted by ptxas for %s)",
          (unsigned long long)reg_checked, (unsigned long long)reg_launches, reg_table->size(), archs.c_str());
  for (auto &u : *reg_unjoined) fprintf(stderr, "; not found: %s (%llu launches)", u.first.c_str(), (unsigned long long)u.second);
  fprintf(stderr, "\n");
}
static void read_regs(void) {
  if (!galv_emu_ptxas_regs) return;
  reg_table = new std::unordered_map<std::string, kregs>;
  reg_unjoined = new std::map<std::string, uint64_t>;
  const char *p = galv_emu_ptxas_regs;
  char arch[32], name[4096];
  int regs, used;
  while (sscanf(p, "%31s %4095s %d%n", arch, name, &regs, &used) == 3) {
    p += used;
    auto it = reg_table->find(name);
    if (it == reg_table->end() || regs > it->second.regs) (*reg_table)[name] = {regs, arch};
  }
  const char *e = getenv("GALV_EMU_REGS");
  if (e && *e == '1') atexit(reg_report);
}

static uint64_t seed0 = 1;
static void emu_init(void) {
  static bool done;
  if (done) return;
  done = true;
  const char *s = getenv("GALV_EMU_SEED");
  if (s) seed0 = strtoull(s, nullptr, 10);
  static char altstack[1 << 16];
  stack_t ss = {};
  ss.ss_sp = altstack, ss.ss_size = sizeof altstack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa = {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  std::vector<shm_var> *vars = new std::vector<shm_var>; /* kept for the race check's reports */
  shm_static = new std::map<std::string, size_t>(shm_sizes(vars));
  for (auto &k : *shm_static)
    if (k.second > SHM_LIMIT)
      galv_emu_die("kernel %s declares %zu bytes of static __shared__ memory; the limit is 49152 (48 KiB) per block "
                   "(ptxas rejects it)", k.first.c_str(), k.second);
  read_regs();
#ifdef GALV_EMU_SHADOW
  shm_vars = vars;
#else
  delete vars;
#endif
}
/* run before main: the checks of the build itself (shared memory sizes) come first */
__attribute__((constructor)) static void emu_ctor(void) { emu_init(); }

/* ---------------------------------------------------------------- streams, events, happens-before */

enum { MAXS = 64 };
struct vclock {
  uint64_t c[MAXS] = {};
  void join(const vclock &o) {
    for (int i = 0; i < MAXS; i++) c[i] = std::max(c[i], o.c[i]);
  }
};
struct galv_emu_stream {
  int id;
  vclock vc;
  bool live;
};
struct galv_emu_event {
  vclock vc;
  bool recorded;
  double t;
};
static galv_emu_stream *streams[MAXS];
static int nstreams;
static vclock host_vc;
static galv_emu_stream legacy = {0, {}, true};

static galv_emu_stream *stream_of(cudaStream_t s) {
  if (!s) {
    if (!streams[0]) streams[0] = &legacy, nstreams = std::max(nstreams, 1);
    return &legacy;
  }
  if (!s->live) galv_emu_die("use of a destroyed stream");
  return s;
}

struct access_rec {
  int stream;
  uint64_t clock;
  uintptr_t lo, hi;
  bool write;
  char what[96];
};
static std::vector<access_rec> recs;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* drop the records every stream and the host have seen complete */
static void prune(void) {
  std::vector<vclock *> all;
  for (int i = 0; i < nstreams; i++)
    if (streams[i] && streams[i]->live) all.push_back(&streams[i]->vc);
  recs.erase(std::remove_if(recs.begin(), recs.end(),
                            [&](const access_rec &r) {
                              if (host_vc.c[r.stream] < r.clock) return false;
                              for (auto *v : all)
                                if (v->c[r.stream] < r.clock) return false;
                              return true;
                            }),
             recs.end());
}

/* An operation on stream s touching ranges: ordered after the host's view,
 * checked against unordered operations of other streams, then recorded. */
void galv_emu_stream_op(cudaStream_t cs, const galv_emu_range *r, int nr, const char *what) {
  galv_emu_stream *s = stream_of(cs);
  s->vc.join(host_vc);
  for (int i = 0; i < nr; i++) {
    if (r[i].n == 0) continue;
    uintptr_t lo = (uintptr_t)r[i].p, hi = lo + r[i].n;
    for (auto &o : recs) {
      if (o.stream == s->id || s->vc.c[o.stream] >= o.clock) continue;
      if (o.hi <= lo || hi <= o.lo || !(o.write || r[i].write)) continue;
      dev_alloc *a = find_alloc(r[i].p);
      galv_emu_die("stream race: %s on stream %d %s bytes [%td, %td) of a device allocation that %s on stream %d %s, "
                   "with no event, stream or host synchronisation between them (a GPU may run them concurrently)",
                   what, s->id, r[i].write ? "writes" : "reads", a ? (char *)std::max(lo, o.lo) - a->p : 0,
                   a ? (char *)std::min(hi, o.hi) - a->p : 0, o.what, o.stream, o.write ? "writes" : "reads");
    }
  }
  s->vc.c[s->id]++;
  for (int i = 0; i < nr; i++) {
    if (r[i].n == 0) continue;
    access_rec a;
    a.stream = s->id, a.clock = s->vc.c[s->id], a.lo = (uintptr_t)r[i].p, a.hi = a.lo + r[i].n, a.write = r[i].write;
    snprintf(a.what, sizeof a.what, "%s", what);
    recs.push_back(a);
  }
  if (recs.size() > 512) prune();
}
/* the host waits for stream s (synchronous call, query, stream synchronize) */
static void host_waits(galv_emu_stream *s) { host_vc.join(s->vc); }
void galv_emu_host_waits(cudaStream_t s) { host_waits(stream_of(s)); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
  (void)flags;
  if (nstreams == 0) nstreams = 1; /* id 0: the legacy default stream */
  if (nstreams == MAXS) galv_emu_die("more than %d streams", MAXS - 1);
  galv_emu_stream *n = new galv_emu_stream{nstreams, {}, true};
  n->vc.join(host_vc);
  streams[nstreams++] = n;
  *s = n;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!s || !s->live) return cudaErrorInvalidValue;
  host_waits(s); /* destroying waits for its work */
  s->live = false;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  host_waits(stream_of(s));
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  host_waits(stream_of(s)); /* everything ran at issue: complete, and the host now knows it */
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = new galv_emu_event{};
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t cs) {
  galv_emu_stream *s = stream_of(cs);
  s->vc.join(host_vc);
  e->vc = s->vc, e->recorded = true, e->t = now_ms();
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t cs, cudaEvent_t e, unsigned) {
  stream_of(cs)->vc.join(e->vc);
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  if (!a->recorded || !b->recorded) return cudaErrorInvalidValue;
  *ms = (float)(b->t - a->t);
  return cudaSuccess;
}

/* ---------------------------------------------------------------- device, copies, memset */

static cudaError_t last_error = cudaSuccess;
const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  case cudaErrorNotReady: return "device not ready";
  default: return "unknown error";
  }
}
cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
/* GALV_EMU_DEVICES=N (1 to 64, default 1): the process sees N devices, all one emulated memory (a machine of several
 * GPUs for the device choice's checks: each rank on device 0 .. N - 1) */
static int emu_devices(void) {
  const char *e = getenv("GALV_EMU_DEVICES");
  int n = e && *e ? atoi(e) : 1;
  return n >= 1 && n <= 64 ? n : 1;
}
cudaError_t cudaGetDeviceCount(int *n) {
  emu_init();
  *n = emu_devices();
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d >= 0 && d < emu_devices() ? cudaSuccess : cudaErrorInvalidDevice; }
enum { EMU_SMS = 132 }; /* an H100 / H200: grid sizes as on the GPU */
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int) {
  if (a != cudaDevAttrMultiProcessorCount) return cudaErrorInvalidValue;
  *v = EMU_SMS;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "galv CPU emulation (sm_90 limits)");
  p->totalGlobalMem = (size_t)141 << 30;
  p->sharedMemPerBlock = 48 * 1024;
  p->multiProcessorCount = EMU_SMS;
  p->major = 9, p->minor = 0;
  p->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}

static void check_kind(const void *dst, const void *src, size_t n, cudaMemcpyKind k, const char *what) {
  bool dd = k == cudaMemcpyDeviceToDevice || k == cudaMemcpyHostToDevice;
  bool sd = k == cudaMemcpyDeviceToDevice || k == cudaMemcpyDeviceToHost;
  if (k == cudaMemcpyDefault || k == cudaMemcpyHostToHost) galv_emu_die("%s: copy kind %d is not used by the programs", what, (int)k);
  if (dd) galv_emu_check_device(dst, n, what);
  else galv_emu_check_host(dst, n, what);
  if (sd) galv_emu_check_device(src, n, what);
  else galv_emu_check_host(src, n, what);
}

static void copy_op(void *dst, const void *src, size_t n, cudaMemcpyKind k, cudaStream_t s, const char *what) {
  check_kind(dst, src, n, k, what);
  count_copy(n, k);
  galv_emu_range r[2] = {{dst, n, true}, {src, n, false}};
  galv_emu_open o;
  galv_emu_stream_op(s, k == cudaMemcpyDeviceToDevice ? r : k == cudaMemcpyHostToDevice ? r : r + 1,
                     k == cudaMemcpyDeviceToDevice ? 2 : 1, what);
  if (n) memmove(dst, src, n);
}
/* cudaMemcpy runs on the legacy default stream, which does not synchronise with
 * the non-blocking streams the programs use. Its host-side behaviour is CUDA's
 * ("API synchronization behavior"): host -> device from pageable memory returns
 * once the source is staged, before the copy lands (the host has not seen it
 * complete: a kernel on another stream reading the destination races with it
 * unless ordered by a synchronisation); device -> host returns when the copy is
 * done; device -> device does not wait. */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind k) {
  if (k == cudaMemcpyHostToDevice) host_waits(&legacy); /* "a stream sync is performed before the copy is initiated" */
  copy_op(dst, src, n, k, 0, "cudaMemcpy");
  if (k == cudaMemcpyDeviceToHost) host_waits(&legacy);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind k, cudaStream_t s) {
  copy_op(dst, src, n, k, s, "cudaMemcpyAsync");
  return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t w, size_t h,
                              cudaMemcpyKind k, cudaStream_t s) {
  if (w > dpitch || w > spitch) return cudaErrorInvalidValue;
  if (h == 0 || w == 0) return cudaSuccess;
  size_t dn = dpitch * (h - 1) + w, sn = spitch * (h - 1) + w;
  check_kind(dst, src, 0, k, "cudaMemcpy2DAsync");
  count_copy(w * h, k);
  if (k == cudaMemcpyDeviceToDevice || k == cudaMemcpyHostToDevice) galv_emu_check_device(dst, dn, "cudaMemcpy2DAsync");
  if (k == cudaMemcpyDeviceToDevice || k == cudaMemcpyDeviceToHost) galv_emu_check_device(src, sn, "cudaMemcpy2DAsync");
  galv_emu_open o;
  std::vector<galv_emu_range> r;
  for (size_t i = 0; i < h; i++) {
    if (k != cudaMemcpyDeviceToHost) r.push_back({(char *)dst + i * dpitch, w, true});
    if (k != cudaMemcpyHostToDevice) r.push_back({(const char *)src + i * spitch, w, false});
  }
  galv_emu_stream_op(s, r.data(), (int)r.size(), "cudaMemcpy2DAsync");
  for (size_t i = 0; i < h; i++) memmove((char *)dst + i * dpitch, (const char *)src + i * spitch, w);
  return cudaSuccess;
}
static void memset_op(void *p, int v, size_t n, cudaStream_t s, const char *what) {
  galv_emu_check_device(p, n, what);
  galv_emu_open o;
  galv_emu_range r = {p, n, true};
  galv_emu_stream_op(s, &r, 1, what);
  if (n) memset(p, v, n);
}
cudaError_t cudaMemset(void *p, int v, size_t n) {
  memset_op(p, v, n, 0, "cudaMemset");
  host_waits(&legacy);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
  memset_op(p, v, n, s, "cudaMemsetAsync");
  return cudaSuccess;
}

/* A kernel, once a launch has found it (by its code address): its
 * register count, its static __shared__ bytes and the variables of them
 * outside galv_shm (a template's). */
struct kvar {
  uintptr_t lo, hi;
};
struct kregs;
struct kinfo {
  std::string mangled, name;
  const kregs *regs; /* nullptr: no ptxas count */
  size_t static_bytes;
  std::vector<kvar> vars;
};
/* the launch being run, for the limits and checks that need the kernel's identity */
static struct {
  const char *kernel, *file; /* the launch's kernel argument as written, its place */
  int line;
  uint64_t nt;  /* threads per block */
  size_t shmem; /* dynamic shared bytes per block */
  void (*call)(void *); /* the launch site (its lambda's invoker: one per site and template instance) */
  kinfo *k;     /* the kernel, once known */
  int notes;
} L;

/* ---------------------------------------------------------------- contexts */

/* galv_emu_switch(save, to): saves the callee-saved registers, MXCSR and the
 * x87 control word on the current stack, stores rsp in *save, loads rsp =
 * to and restores the same from there. A new context's stack holds a frame
 * whose return address is emu_trampoline, which calls r13(r12). */
extern "C" void galv_emu_switch(void **save, void *to);
extern "C" void galv_emu_trampoline(void);
asm(R"(
  .text
  .globl galv_emu_switch
  .type galv_emu_switch,@function
galv_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size galv_emu_switch,.-galv_emu_switch
  .globl galv_emu_trampoline
  .type galv_emu_trampoline,@function
galv_emu_trampoline:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size galv_emu_trampoline,.-galv_emu_trampoline
  .section .note.GNU-stack,"",@progbits
  .text
)");

enum { ST_NEW, ST_RUN, ST_BAR, ST_WARP, ST_DONE };
struct emu_thread {
  uint3 idx;
  int lin, state;
  struct worker *w;
  /* the barrier or warp operation it waits at */
  const char *file;
  int line;
  int kind, arg, width;
  unsigned mask;
  uint64_t val, res;
  bool res_ready;
};
struct worker {
  char *stack;
  size_t size;
  void *sp;
  emu_thread *t; /* the thread it runs now */
  void *fake;    /* ASan fake stack */
};
static void *sched_sp;
static worker *cur_worker;
static const void *main_bottom;
static size_t main_size;

/* the launch being run */
static void (*k_call)(void *);
static void *k_fn;
static std::vector<emu_thread> thr;
static int nthr;
static bool full_mode;

static void worker_main(void *arg);
static size_t stack_size(void) { return EMU_ASAN ? (size_t)1 << 20 : (size_t)256 << 10; }
static std::vector<worker *> &pool = *new std::vector<worker *>; /* never destroyed: reachable at the leak check */
static worker *get_worker(size_t i) {
  while (pool.size() <= i) {
    worker *w = new worker{};
    w->size = stack_size();
    char *m = (char *)mmap(nullptr, w->size + PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) galv_emu_die("cannot map a thread stack: %s", strerror(errno));
    mprotect(m, PG, PROT_NONE); /* overflow guard */
    w->stack = m + PG;
    uint64_t *top = (uint64_t *)(w->stack + w->size);
    /* frame popped by galv_emu_switch: mxcsr/fpucw, r15, r14, r13 = func, r12 = arg, rbx, rbp, ret */
    top[-1] = (uint64_t)galv_emu_trampoline;
    top[-2] = 0, top[-3] = 0;
    top[-4] = (uint64_t)w;
    top[-5] = (uint64_t)worker_main;
    top[-6] = 0, top[-7] = 0;
    uint32_t csr[2];
    asm volatile("stmxcsr %0" : "=m"(csr[0]));
    asm volatile("fnstcw %0" : "=m"(csr[1]));
    memcpy(&top[-8], csr, 8);
    w->sp = &top[-8];
    pool.push_back(w);
  }
  return pool[i];
}

static void to_thread(worker *w) {
  cur_worker = w;
  galv_emu_thread_idx = w->t->idx;
#if EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, w->stack, w->size);
#endif
  galv_emu_switch(&sched_sp, w->sp);
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, &main_bottom, &main_size);
#endif
  cur_worker = nullptr;
}
static void to_scheduler(void) {
  worker *w = cur_worker;
#if EMU_ASAN
  __sanitizer_start_switch_fiber(&w->fake, main_bottom, main_size);
#endif
  galv_emu_switch(&w->sp, sched_sp);
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(w->fake, nullptr, nullptr);
#endif
}
static void worker_main(void *arg) {
  worker *w = (worker *)arg;
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &main_bottom, &main_size);
#endif
  for (;;) {
    k_call(k_fn);
    w->t->state = ST_DONE;
    to_scheduler();
  }
}

/* ---------------------------------------------------------------- barriers and warp operations */

static const char *kind_name(int k) {
  static const char *n[] = {"__shfl_sync", "__shfl_xor_sync", "__shfl_down_sync", "__shfl_up_sync", "__any_sync",
                            "__all_sync", "__ballot_sync"};
  return k >= 0 && k < 7 ? n[k] : "?";
}
static void where_thread(char *b, size_t n, const emu_thread &t) {
  snprintf(b, n, "thread (%u,%u,%u) of block (%u,%u,%u)", t.idx.x, t.idx.y, t.idx.z, galv_emu_block_idx.x,
           galv_emu_block_idx.y, galv_emu_block_idx.z);
}
static void no_kernel(const char *what) {
  if (!cur_worker) galv_emu_die("%s called outside a kernel", what);
}

void galv_emu_syncthreads(const char *file, int line) {
  no_kernel("__syncthreads");
  emu_thread *t = cur_worker->t;
  t->state = ST_BAR, t->file = file, t->line = line;
  to_scheduler();
}

/* the lanes of warp w that exist in the block, as a mask */
static unsigned lanes_of(int w) {
  int n = std::min(32, nthr - 32 * w);
  return n >= 32 ? 0xffffffffu : (1u << n) - 1;
}

/* all participants of t's warp operation have arrived: compute every result */
static void warp_complete(int w, unsigned mask) {
  emu_thread *L = &thr[32 * w];
  int kind = -1;
  uint64_t any = 0, all = 1, ballot = 0;
  for (int l = 0; l < 32; l++)
    if (mask >> l & 1) {
      kind = L[l].kind;
      any |= L[l].val != 0, all &= L[l].val != 0, ballot |= (uint64_t)(L[l].val != 0) << l;
    }
  for (int l = 0; l < 32; l++) {
    if (!(mask >> l & 1)) continue;
    emu_thread &t = L[l];
    int width = t.width, base = l & ~(width - 1), src = l;
    switch (kind) {
    case 0: src = base + (t.arg & (width - 1)); break;
    case 1: src = l ^ t.arg; if (src >= base + width) src = l; break;
    case 2: src = l + t.arg; if (src >= base + width) src = l; break;
    case 3: src = l - t.arg; if (src < base) src = l; break;
    }
    if (kind <= 3) {
      if (!(mask >> src & 1)) {
        char b[96];
        where_thread(b, sizeof b, t);
        galv_emu_die("%s at %s:%d: %s reads lane %d, which is not in the mask 0x%08x (undefined on a GPU)",
                     kind_name(kind), t.file, t.line, b, src, mask);
      }
      t.res = L[src].val;
    } else t.res = kind == 4 ? any : kind == 5 ? all : ballot;
    t.res_ready = true;
    if (t.state == ST_WARP) t.state = ST_RUN;
  }
}

uint64_t galv_emu_warp_op(int kind, unsigned mask, uint64_t v, int arg, int width, const char *file, int line) {
  no_kernel(kind_name(kind));
  emu_thread *t = cur_worker->t;
  int w = t->lin / 32, lane = t->lin % 32;
  char b[96];
  if (width <= 0 || width > 32 || (width & (width - 1))) {
    where_thread(b, sizeof b, *t);
    galv_emu_die("%s at %s:%d: width %d is not a power of 2 up to 32 (%s)", kind_name(kind), file, line, width, b);
  }
  if (!(mask >> lane & 1)) {
    where_thread(b, sizeof b, *t);
    galv_emu_die("%s at %s:%d: the calling lane %d is not in the mask 0x%08x (%s)", kind_name(kind), file, line, lane,
                 mask, b);
  }
  unsigned part = mask & lanes_of(w);
  emu_thread *L = &thr[32 * w];
  for (int l = 0; l < 32; l++) {
    if (!(part >> l & 1) || l == lane) continue;
    const emu_thread &o = L[l];
    if (o.state == ST_WARP && (o.mask != mask || o.kind != kind || o.file != file || o.line != line)) {
      where_thread(b, sizeof b, *t);
      galv_emu_die("warp operation mismatch: %s (mask 0x%08x) at %s:%d while lane %d waits in %s (mask 0x%08x) at "
                   "%s:%d (%s)", kind_name(kind), mask, file, line, l, kind_name(o.kind), o.mask, o.file, o.line, b);
    }
    if (o.state == ST_DONE) {
      where_thread(b, sizeof b, *t);
      galv_emu_die("%s at %s:%d names lane %d in its mask 0x%08x, but that lane has exited (%s)", kind_name(kind),
                   file, line, l, mask, b);
    }
  }
  t->kind = kind, t->mask = mask, t->val = v, t->arg = arg, t->width = width, t->file = file, t->line = line;
  t->res_ready = false;
  t->state = ST_WARP;
  bool all = true;
  for (int l = 0; l < 32; l++)
    if ((part >> l & 1) && L[l].state != ST_WARP) all = false;
  if (all) warp_complete(w, part);
  else to_scheduler(); /* the last lane to arrive completes it */
  t->state = ST_RUN;
  return t->res;
}

/* ---------------------------------------------------------------- shared-memory race check */

/* The race-check build (make emu-race, -DGALV_EMU_SHADOW): the program's
 * sources are compiled with -fsanitize=thread's instrumentation only (GCC
 * calls __tsan_readN / __tsan_writeN before every load and store), linked
 * against the hooks below instead of the TSan runtime. An access inside
 * the galv_shm section (__shared__ variables) by a thread of the running
 * block updates a per-byte shadow cell: the barrier epoch (a count that
 * grows at every block start and completed __syncthreads) and the thread
 * of its last write and read. Two threads touching one byte in one epoch,
 * one of them writing, is a race (a missing barrier): reported in one line
 * naming the kernel, the variable, both threads and the kinds of access.
 * Deterministic: it does not depend on the order the threads ran in. */
static uint32_t shm_epoch = 1;
#ifdef GALV_EMU_SHADOW
struct shm_cell {
  uint32_t we, re; /* epochs of the last write / read */
  int16_t w, r;    /* their threads */
  uint8_t multi;   /* more than one reader in epoch re */
};
static shm_cell *shadow;

static const char *shm_name(uintptr_t a, size_t *off) {
  if (loc_static *v = find_loc_static(a, 1)) {
    if (!v->dname) v->dname = new std::string(demangle(v->name));
    *off = a - v->lo;
    return v->dname->c_str();
  }
  if (shm_vars)
    for (auto &v : *shm_vars)
      if (a >= (uintptr_t)__start_galv_shm + v.off && a < (uintptr_t)__start_galv_shm + v.off + v.size) {
        *off = a - ((uintptr_t)__start_galv_shm + v.off);
        return v.name.c_str();
      }
  *off = a - (uintptr_t)__start_galv_shm;
  return "__shared__ memory";
}
[[noreturn]] static void shm_race(uintptr_t a, bool w, int other, bool ow) {
  size_t off = 0;
  const char *name = shm_name(a, &off);
  const emu_thread &t = *cur_worker->t, &o = thr[(size_t)other];
  galv_emu_die("shared-memory race in %s: thread (%u,%u,%u) %s byte %zu of %s, which thread (%u,%u,%u) %s in the same "
               "barrier epoch (no __syncthreads between them)", emu_where, t.idx.x, t.idx.y, t.idx.z,
               w ? "writes" : "reads", off, name, o.idx.x, o.idx.y, o.idx.z, ow ? "wrote" : "read");
}
/* A kernel's footprint (race-check build): the bytes its threads read and
 * wrote outside __shared__ memory, as merged intervals (accesses are mostly
 * sequential: the last interval is extended in place). At the end of the
 * launch the parts inside device allocations are the kernel's ranges for
 * the stream happens-before check (galv_emu_stream_op), exact to the byte,
 * as copies, cuBLAS and NCCL calls give theirs; thread stacks and other
 * host memory drop out there. */
struct fp_set {
  std::map<uintptr_t, uintptr_t> m; /* lo -> hi, disjoint, not adjacent */
  uintptr_t lo = 0, hi = 0;         /* the open interval, not yet in m */
  void flush(void) {
    if (hi <= lo) return;
    auto it = m.upper_bound(lo);
    if (it != m.begin() && std::prev(it)->second >= lo) --it;
    while (it != m.end() && it->first <= hi) {
      lo = std::min(lo, it->first), hi = std::max(hi, it->second);
      it = m.erase(it);
    }
    m[lo] = hi;
    lo = hi = 0;
  }
  inline void add(uintptr_t a, uintptr_t b) {
    if (a >= lo && a <= hi) {
      if (b > hi) hi = b;
      return;
    }
    flush();
    lo = a, hi = b;
  }
};
static fp_set fp_read, fp_write;
static bool fp_on; /* a launch is running */

/* Global memory, per launch: a shadow cell per byte of device memory the
 * kernel touches holds the barrier epoch and thread of its last write,
 * last read, earlier reads by other threads (their epochs' range) and
 * atomics. Epochs number every block's barrier intervals in the order the
 * blocks ran (a block's epochs are one range), so an access at epoch e of
 * a block whose first epoch is b0 is ordered after another exactly when
 * that one's epoch lies in [b0, e) (the same block, an earlier barrier
 * interval) or it is the same thread's; threads of different blocks are
 * never ordered within a launch. Two unordered accesses of one byte, one
 * of them a plain write (or an atomic against a plain access), are a race:
 * reported with the kernel, both threads and blocks and the byte. Cells of
 * an earlier launch count as empty (the launch number). */
struct gcell {
  uint32_t launch;
  uint32_t w_ep, r_ep, o_min, o_max, a_min, a_max; /* 0: none */
  uint16_t w_t, r_t, a_t;
  uint8_t a_multi;
};
static uint32_t g_launch;   /* the running launch's number */
static uint32_t g_blk0;     /* the running block's first epoch */
static std::vector<std::pair<uint32_t, uint3>> g_blocks; /* first epoch -> block, this launch */
static std::unordered_map<uintptr_t, gcell *> g_pages;   /* 4096 cells per 4096 bytes */
static uintptr_t g_lo, g_hi;                             /* the device allocation last seen */
static uintptr_t g_page = ~(uintptr_t)0;
static gcell *g_cells;
static bool in_device(uintptr_t a) {
  if (a >= g_lo && a < g_hi) return true;
  dev_alloc *d = find_alloc((const void *)a);
  if (!d || !d->live || a < (uintptr_t)d->p || a >= (uintptr_t)(d->p + d->n)) return false;
  g_lo = (uintptr_t)d->p, g_hi = g_lo + d->n;
  return true;
}
static void g_thread(char *b, size_t n, uint32_t ep, uint16_t t) {
  uint3 blk = {0, 0, 0};
  auto it = std::upper_bound(g_blocks.begin(), g_blocks.end(), ep,
                             [](uint32_t e, const std::pair<uint32_t, uint3> &x) { return e < x.first; });
  if (it != g_blocks.begin()) blk = std::prev(it)->second;
  uint3 d = galv_emu_block_dim;
  snprintf(b, n, "thread (%u,%u,%u) of block (%u,%u,%u)", t % d.x, t / d.x % d.y, t / (d.x * d.y), blk.x, blk.y, blk.z);
}
/* the other access: at epoch ep by thread t (-1: one of several); cross: another block's */
[[noreturn]] static void g_race(uintptr_t a, const char *kind, uint32_t ep, int t, const char *okind, bool cross) {
  char me[96], other[96];
  g_thread(me, sizeof me, shm_epoch, (uint16_t)cur_worker->t->lin);
  if (t >= 0) g_thread(other, sizeof other, ep, (uint16_t)t);
  else snprintf(other, sizeof other, "another thread");
  dev_alloc *d = find_alloc((const void *)a);
  galv_emu_die("global-memory race in kernel %s (%s:%d): %s %s byte %td of a %zu-byte device allocation, which %s %s in "
               "the same launch (%s)", L.kernel, L.file, L.line, me, kind, d ? (const char *)a - d->p : 0, d ? d->n : 0,
               other, okind, cross ? "blocks of one launch are not ordered" : "no __syncthreads between them");
}
/* kind: 0 read, 1 write, 2 atomic */
static void global_access(uintptr_t a, size_t n, int kind) {
  uint32_t e = shm_epoch, b0 = g_blk0;
  uint16_t me = (uint16_t)cur_worker->t->lin;
  auto unordered = [&](uint32_t ep, uint16_t t) { return ep && !(ep >= b0 && (t == me || ep < e)); };
  for (uintptr_t x = a; x < a + n; x++) {
    if (!in_device(x)) continue;
    if ((x & ~(uintptr_t)4095) != g_page) {
      g_page = x & ~(uintptr_t)4095;
      gcell *&c = g_pages[g_page];
      if (!c) c = (gcell *)calloc(4096, sizeof(gcell));
      g_cells = c;
    }
    gcell &c = g_cells[x & 4095];
    if (c.launch != g_launch) c = gcell{}, c.launch = g_launch;
    const char *how = kind == 0 ? "reads" : kind == 1 ? "writes" : "atomically updates";
    if (unordered(c.w_ep, c.w_t)) g_race(x, how, c.w_ep, c.w_t, "wrote", c.w_ep < b0);
    if (kind != 0) {
      if (unordered(c.r_ep, c.r_t)) g_race(x, how, c.r_ep, c.r_t, "read", c.r_ep < b0);
      if (c.o_min && !(c.o_min >= b0 && c.o_max < e)) g_race(x, how, c.o_max, -1, "read", c.o_min < b0);
    }
    if (kind != 2 && c.a_min && !(c.a_min >= b0 && c.a_max < e) && (c.a_multi || c.a_min < b0 || c.a_t != me))
      g_race(x, how, c.a_max, c.a_multi ? -1 : c.a_t, "updated atomically", c.a_min < b0);
    if (kind == 0) {
      if (c.r_ep && (c.r_t != me || c.r_ep < b0)) {
        c.o_min = c.o_min ? std::min(c.o_min, c.r_ep) : c.r_ep;
        c.o_max = std::max(c.o_max, c.r_ep);
      }
      c.r_ep = e, c.r_t = me;
    } else if (kind == 1) {
      c.w_ep = e, c.w_t = me;
    } else {
      if (c.a_min && (c.a_t != me || c.a_max < b0)) c.a_multi = 1;
      if (!c.a_min) c.a_min = e;
      c.a_max = e, c.a_t = me;
    }
  }
}
void galv_emu_atomic_access(void *p, size_t n) {
  if (!fp_on || !cur_worker) return;
  uintptr_t a = (uintptr_t)p;
  fp_write.add(a, a + n);
  global_access(a, n, 2);
}

static void identify_static_owner(loc_static *v);
/* a __shared__ variable outside galv_shm (a template's) that [a, a+n) touches: any function-local static a
 * kernel's thread touches, from the launch's first access (the launch need not know its kernel: in the
 * first launch from a site, before the kernel's first index read, it does not) */
static inline loc_static *kernel_var(uintptr_t a, size_t n) {
  loc_static *v = find_loc_static(a, n);
  if (!v) return nullptr;
  if (!v->shadow) v->shadow = (shm_cell *)calloc(v->size, sizeof(shm_cell));
  if (!L.k) identify_static_owner(v);
  return v;
}
static inline void shadow_access(const void *p, size_t n, bool w) {
  uintptr_t a = (uintptr_t)p;
  bool sec = !(a + n <= (uintptr_t)__start_galv_shm || a >= (uintptr_t)__stop_galv_shm);
  loc_static *kv = sec || !cur_worker ? nullptr : kernel_var(a, n);
  if (fp_on && !sec && !kv) {
    (w ? fp_write : fp_read).add(a, a + n);
    if (cur_worker) global_access(a, n, w ? 1 : 0);
    return;
  }
  if ((!sec && !kv) || !cur_worker) return;
  if (!shadow) shadow = (shm_cell *)calloc((size_t)(__stop_galv_shm - __start_galv_shm), sizeof(shm_cell));
  int me = cur_worker->t->lin;
  uintptr_t d = (uintptr_t)galv_emu_dynamic_shared_memory;
  if (a + n > d + L.shmem && a < d + SHM_LIMIT) {
    const emu_thread &t = *cur_worker->t;
    galv_emu_die("dynamic shared memory out of bounds in %s: thread (%u,%u,%u) %s bytes [%zu, %zu) of the %zu the launch "
                 "gives a block", emu_where, t.idx.x, t.idx.y, t.idx.z, w ? "writes" : "reads",
                 (size_t)(std::max(a, d) - d), (size_t)(std::min(a + n, d + SHM_LIMIT) - d), L.shmem);
  }
  for (size_t i = 0; i < n; i++) {
    uintptr_t b = a + i;
    shm_cell *cp;
    if (kv) {
      if (b < kv->lo || b >= kv->lo + kv->size) continue;
      cp = &kv->shadow[b - kv->lo];
    } else {
      if (b < (uintptr_t)__start_galv_shm || b >= (uintptr_t)__stop_galv_shm) continue;
      cp = &shadow[b - (uintptr_t)__start_galv_shm];
    }
    shm_cell &c = *cp;
    if (c.we == shm_epoch && c.w != me) shm_race(b, w, c.w, true);
    if (w) {
      if (c.re == shm_epoch && (c.r != me || c.multi)) shm_race(b, w, c.r != me ? c.r : c.w, false);
      c.we = shm_epoch, c.w = (int16_t)me;
    } else if (c.re == shm_epoch && c.r != me) {
      c.multi = 1;
    } else if (c.re != shm_epoch) {
      c.re = shm_epoch, c.r = (int16_t)me, c.multi = 0;
    }
  }
}
extern "C" {
void __tsan_init(void) {}
void __tsan_func_entry(void *) {}
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void **, void *) {}
void __tsan_vptr_read(void **) {}
void __tsan_read_range(void *p, unsigned long n) { shadow_access(p, n, false); }
void __tsan_write_range(void *p, unsigned long n) { shadow_access(p, n, true); }
#define EMU_HOOKS(N)                                                                   \
  void __tsan_read##N(void *p) { shadow_access(p, N, false); }                        \
  void __tsan_write##N(void *p) { shadow_access(p, N, true); }                        \
  void __tsan_unaligned_read##N(void *p) { shadow_access(p, N, false); }              \
  void __tsan_unaligned_write##N(void *p) { shadow_access(p, N, true); }              \
  void __tsan_volatile_read##N(void *p) { shadow_access(p, N, false); }               \
  void __tsan_volatile_write##N(void *p) { shadow_access(p, N, true); }
EMU_HOOKS(1)
EMU_HOOKS(2)
EMU_HOOKS(4)
EMU_HOOKS(8)
EMU_HOOKS(16)
}
#endif

/* ---------------------------------------------------------------- the launch's kernel: registers, shared memory */

/* A block's registers: ptxas's count per thread, allocated per warp in units
 * of 256 (sm_80 / sm_90), must fit the 65536 32-bit registers a block may
 * use; a GPU refuses the launch otherwise (too many resources requested). */
static void check_regs(const kinfo &k) {
  uint64_t warps = (L.nt + 31) / 32, per_warp = ((uint64_t)k.regs->regs * 32 + 255) / 256 * 256;
  if (warps * per_warp > 65536)
    galv_emu_die("launch of kernel %s at %s:%d: a block of %llu threads x %d registers per thread (ptxas, %s) needs "
                 "%llu registers (%llu warps x %llu, allocated per warp in units of 256); a block has at most 65536 "
                 "(a GPU fails the launch: too many resources requested)", k.name.c_str(), L.file, L.line,
                 (unsigned long long)L.nt, k.regs->regs, k.regs->arch.c_str(), (unsigned long long)(warps * per_warp),
                 (unsigned long long)warps, (unsigned long long)per_warp);
}

/* the launch's limits once its kernel is known */
static void start_kernel(void) {
  const kinfo &k = *L.k;
  if (k.static_bytes > SHM_LIMIT)
    galv_emu_die("kernel %s declares %zu bytes of static __shared__ memory; the limit is 49152 (48 KiB) per block "
                 "(ptxas rejects it)", k.name.c_str(), k.static_bytes);
  if (L.shmem && k.static_bytes + L.shmem > SHM_LIMIT)
    galv_emu_die("launch of kernel %s at %s:%d: %zu bytes of dynamic shared memory + %zu bytes of static __shared__ "
                 "= %zu bytes per block (at most 49152 without an opt-in)", k.name.c_str(), L.file, L.line, L.shmem,
                 k.static_bytes, L.shmem + k.static_bytes);
  if (k.regs) check_regs(k);
}

/* The function containing pc as the launch's kernel: with ptxas's counts
 * linked in, only a function that has one (a kernel); else the first found. */
static std::unordered_map<std::string, kinfo *> *kinfos;
static std::unordered_map<void (*)(void *), kinfo *> *sites;
static bool identify_fn(const fn_sym *f) {
  if (!f || strncmp(f->name, "_Z", 2)) return false;
  const kregs *r = nullptr;
  if (reg_table) {
    auto it = reg_table->find(f->name);
    /* a static kernel that is not a template: g++ mangles it _ZL<name>..., ptxas names it _Z<name>... */
    if (it == reg_table->end() && !strncmp(f->name, "_ZL", 3)) it = reg_table->find(std::string("_Z") + (f->name + 3));
    if (it == reg_table->end()) return false;
    r = &it->second;
  }
  if (!kinfos) kinfos = new std::unordered_map<std::string, kinfo *>;
  kinfo *&k = (*kinfos)[f->name];
  if (!k) {
    k = new kinfo{f->name, demangle(f->name), r, 0, {}};
    /* static __shared__ bytes in galv_shm: a local static's name gives its function without the return type
     * that a template instance's own name carries ("copy<float>(float*)::s" in "void copy<float>(float*)") */
    const std::string &fn = k->name;
    for (auto &v : *shm_static)
      if (fn == v.first || (fn.size() > v.first.size() && fn[fn.size() - v.first.size() - 1] == ' ' &&
                            fn.compare(fn.size() - v.first.size(), v.first.size(), v.first) == 0))
        k->static_bytes += v.second;
    std::string pre = std::string("_ZZ") + (f->name + 2) + "E";
    for (auto &v : *loc_statics)
      if (!strncmp(v.name, pre.c_str(), pre.size())) {
        k->vars.push_back({v.lo, v.lo + v.size});
        k->static_bytes += v.size;
      }
  }
  L.k = k;
  (*sites)[L.call] = k;
  start_kernel();
  return true;
}
static bool identify(uintptr_t pc) { return identify_fn(find_fn(pc)); }

#ifdef GALV_EMU_SHADOW
/* a kernel's thread touched the function-local static v (a template's __shared__ variable) while the
 * launch does not know its kernel: its function is the kernel, unless ptxas's counts say it is a device
 * function (then an index read still names the kernel) */
static void identify_static_owner(loc_static *v) {
  if (identify_fn(static_owner(*v))) galv_emu_want_pc = 0;
}
#endif

/* Called by the first reads of threadIdx / blockIdx / blockDim / gridDim
 * in the first launch from a site (galv_emu.h): the return address lies in
 * the function the read is inlined in. A device function that is not
 * inlined is skipped when ptxas's counts tell (a few tries, then the launch
 * stays unknown: GALV_EMU_REGS=1 lists it). */
__attribute__((noinline)) void galv_emu_kernel_pc(void) {
  if (identify((uintptr_t)__builtin_return_address(0)) || ++L.notes >= 64) galv_emu_want_pc = 0;
}

/* GALV_DYNAMIC_SHARED in a kernel: the launch's bytes (checked with the
 * kernel's static bytes when the kernel is known; the caller is it) */
__attribute__((noinline)) void *galv_emu_dynamic_shared(void) {
  no_kernel("GALV_DYNAMIC_SHARED");
  if (!L.k && identify((uintptr_t)__builtin_return_address(0))) galv_emu_want_pc = 0;
  return galv_emu_dynamic_shared_memory;
}

/* ---------------------------------------------------------------- launch */

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
struct rng {
  uint64_t s;
  uint64_t next(void) { return s = mix64(s); }
  template <typename T> void shuffle(std::vector<T> &v) {
    for (size_t i = v.size(); i > 1; i--) std::swap(v[i - 1], v[next() % i]);
  }
};

/* runs the threads of the current block; returns once all are done */
static void run_block(rng &R, const char *kname) {
  for (int i = 0; i < nthr; i++) thr[i].state = ST_NEW, thr[i].w = nullptr;
  shm_epoch++; /* a new block's shared memory */
#ifdef GALV_EMU_SHADOW
  g_blk0 = shm_epoch;
  g_blocks.push_back({shm_epoch, galv_emu_block_idx});
#endif
  if (__start_galv_shm && full_mode) { /* the static variables and the launch's dynamic bytes */
    char *d = galv_emu_dynamic_shared_memory;
    memset(__start_galv_shm, 0xff, (size_t)(d - __start_galv_shm));
    memset(d, 0xff, L.shmem);
    memset(d + SHM_LIMIT, 0xff, (size_t)(__stop_galv_shm - (d + SHM_LIMIT)));
    if (L.k)
      for (auto &v : L.k->vars) memset((void *)v.lo, 0xff, v.hi - v.lo);
  }
  std::vector<int> order(nthr);
  for (int i = 0; i < nthr; i++) order[i] = i;
  R.shuffle(order);
  size_t next_worker = 0;
  int started = 0;
  if (!full_mode) {
    /* fast path: one context, one thread after another */
    worker *w = get_worker(0);
    for (; started < nthr; started++) {
      emu_thread &t = thr[order[started]];
      t.state = ST_RUN, t.w = w, w->t = &t;
      to_thread(w);
      if (t.state != ST_DONE) { /* a barrier or warp operation: schedule every thread */
        full_mode = true;
        next_worker = 1, started++;
        break;
      }
    }
  }
  if (full_mode) {
    for (; started < nthr; started++) {
      emu_thread &t = thr[order[started]];
      t.state = ST_RUN, t.w = get_worker(next_worker++);
    }
    for (;;) {
      bool ran = false;
      R.shuffle(order);
      for (int i : order) {
        emu_thread &t = thr[i];
        if (t.state != ST_RUN) continue;
        t.w->t = &t;
        to_thread(t.w);
        ran = true;
      }
      if (ran) continue;
      /* nothing runnable: every thread is done, at a barrier or at a warp operation */
      int nbar = 0, ndone = 0, nwarp = 0;
      const emu_thread *bar = nullptr, *done = nullptr, *warp = nullptr;
      for (auto &t : thr) {
        if (t.state == ST_BAR) nbar++, bar = bar ? bar : &t;
        if (t.state == ST_DONE) ndone++, done = done ? done : &t;
        if (t.state == ST_WARP) nwarp++, warp = warp ? warp : &t;
      }
      if (ndone == nthr) break;
      char b1[96], b2[96];
      if (nwarp) {
        where_thread(b1, sizeof b1, *warp);
        int l = warp->lin % 32;
        unsigned part = warp->mask & lanes_of(warp->lin / 32);
        const emu_thread *o = nullptr;
        for (int k = 0; k < 32 && !o; k++)
          if ((part >> k & 1) && thr[warp->lin - l + k].state != ST_WARP) o = &thr[warp->lin - l + k];
        if (o) where_thread(b2, sizeof b2, *o);
        galv_emu_die("kernel %s: %s at %s:%d (mask 0x%08x) in %s never completes: lane %d %s", kname,
                     kind_name(warp->kind), warp->file, warp->line, warp->mask, b1, o ? o->lin % 32 : -1,
                     !o ? "?" : o->state == ST_DONE ? "has exited" : o->state == ST_BAR ? "waits at __syncthreads" : "waits elsewhere");
      }
      for (auto &t : thr)
        if (t.state == ST_BAR && (t.file != bar->file || t.line != bar->line)) {
          where_thread(b1, sizeof b1, *bar);
          where_thread(b2, sizeof b2, t);
          galv_emu_die("kernel %s: barrier divergence: %s waits at __syncthreads %s:%d, %s at %s:%d", kname, b1,
                       bar->file, bar->line, b2, t.file, t.line);
        }
      if (ndone) {
        where_thread(b1, sizeof b1, *bar);
        where_thread(b2, sizeof b2, *done);
        galv_emu_die("kernel %s: barrier divergence: %d threads wait at __syncthreads %s:%d (e.g. %s) but %s has exited "
                     "without reaching it", kname, nbar, bar->file, bar->line, b1, b2);
      }
      for (auto &t : thr) t.state = ST_RUN; /* the barrier is complete */
      shm_epoch++;
    }
  }
}

static uint64_t nlaunch;
void galv_emu_launch_erased(const char *kernel, const char *file, int line, dim3 g, dim3 b, size_t shmem,
                            cudaStream_t cs, void (*call)(void *), void *fn) {
  emu_init();
  if (cur_worker) galv_emu_die("kernel %s launched from device code at %s:%d (dynamic parallelism is not used)", kernel, file, line);
  uint64_t nt = (uint64_t)b.x * b.y * b.z;
  const char *bad = nullptr;
  char why[160];
  if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z) bad = "a grid or block dimension is 0";
  else if (nt > 1024) snprintf(why, sizeof why, "a block of %llu threads (at most 1024)", (unsigned long long)nt), bad = why;
  else if (b.x > 1024 || b.y > 1024 || b.z > 64)
    snprintf(why, sizeof why, "block dims %ux%ux%u (at most 1024 x 1024 x 64)", b.x, b.y, b.z), bad = why;
  else if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
    snprintf(why, sizeof why, "grid dims %ux%ux%u (at most 2^31-1 x 65535 x 65535)", g.x, g.y, g.z), bad = why;
  else if (shmem > SHM_LIMIT)
    snprintf(why, sizeof why, "%zu bytes of dynamic shared memory (at most 49152 without an opt-in)", shmem), bad = why;
  if (bad) galv_emu_die("launch of kernel %s at %s:%d: %s", kernel, file, line, bad);
  L.kernel = kernel, L.file = file, L.line = line, L.nt = nt, L.shmem = shmem, L.call = call;
  L.k = nullptr, L.notes = 0;
  if (!sites) sites = new std::unordered_map<void (*)(void *), kinfo *>;
  auto site = sites->find(call);
  if (site != sites->end()) L.k = site->second, start_kernel();
  galv_emu_want_pc = !L.k;
#if EMU_ASAN
  ASAN_POISON_MEMORY_REGION(galv_emu_dynamic_shared_memory + shmem, SHM_LIMIT - shmem);
#endif
#ifndef GALV_EMU_SHADOW
  galv_emu_stream_op(cs, nullptr, 0, kernel); /* in stream order; its ranges are known in the race-check build only */
#else
  fp_read.m.clear(), fp_write.m.clear();
  fp_read.lo = fp_read.hi = fp_write.lo = fp_write.hi = 0;
  fp_on = true;
  g_launch++, g_blocks.clear();
  g_lo = g_hi = 0;
#endif
  galv_emu_open o;
  k_call = call, k_fn = fn;
  nthr = (int)nt;
  thr.assign(nt, emu_thread{});
  for (int i = 0; i < nthr; i++) {
    thr[i].lin = i;
    thr[i].idx = {(unsigned)i % b.x, (unsigned)(i / b.x) % b.y, (unsigned)(i / (b.x * b.y))};
  }
  galv_emu_block_dim = {b.x, b.y, b.z};
  galv_emu_grid_dim = {g.x, g.y, g.z};
  rng R{mix64(seed0 * 0x100000001b3ull + ++nlaunch)};
  uint64_t nb = (uint64_t)g.x * g.y * g.z;
  std::vector<uint64_t> blocks(nb);
  for (uint64_t i = 0; i < nb; i++) blocks[i] = i;
  R.shuffle(blocks);
  full_mode = false;
  for (uint64_t bi : blocks) {
    galv_emu_block_idx = {(unsigned)(bi % g.x), (unsigned)(bi / g.x % g.y), (unsigned)(bi / ((uint64_t)g.x * g.y))};
    snprintf(emu_where, sizeof emu_where, "kernel %s (%s:%d), block (%u,%u,%u)", kernel, file, line,
             galv_emu_block_idx.x, galv_emu_block_idx.y, galv_emu_block_idx.z);
    run_block(R, kernel);
  }
  emu_where[0] = 0;
  galv_emu_want_pc = 0;
#if EMU_ASAN
  ASAN_UNPOISON_MEMORY_REGION(galv_emu_dynamic_shared_memory, SHM_LIMIT);
#endif
  if (reg_table) {
    reg_launches++;
    if (L.k && L.k->regs) reg_checked++;
    else (*reg_unjoined)[kernel]++;
  }
#ifdef GALV_EMU_SHADOW
  fp_on = false;
  fp_read.flush(), fp_write.flush();
  std::vector<galv_emu_range> r;
  for (int w = 1; w >= 0; w--)
    for (auto &iv : (w ? fp_write : fp_read).m) {
      dev_alloc *a = find_alloc((const void *)iv.first);
      if (!a) a = find_alloc((const void *)(iv.second - 1));
      if (!a) continue; /* host memory: thread stacks, the kernel's arguments */
      uintptr_t lo = std::max(iv.first, (uintptr_t)a->p), hi = std::min(iv.second, (uintptr_t)(a->p + a->n));
      if (lo < hi) r.push_back({(void *)lo, (size_t)(hi - lo), w == 1});
    }
  char what[96];
  snprintf(what, sizeof what, "kernel %s", kernel);
  galv_emu_stream_op(cs, r.data(), (int)r.size(), what);
#endif
}
