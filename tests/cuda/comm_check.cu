/* comm_check.cu — a smoke test of a CUDA communicator backend (linked with
 * comm_nccl.cu or comm_staged.cu + comm_mpi.c): every rank all-reduces a
 * buffer of its rank number, all-gathers it, and exchanges a p2p ring in one
 * group; the results are checked on the host. Run: mpirun -np N ./comm_check
 * (staged: several ranks may share one GPU). */
#include "../../runtime/cuda/galv_cuda.h"

extern "C" {
#include "../../runtime/galv_comm.h"
}

int main(int argc, char **argv) {
  galv_progname = "comm_check";
  int rank, size;
  galv_comm_world_init(&argc, &argv, &rank, &size);
  galv_cu_init(0);
  const int64_t mesh[] = {size};
  galv_comm *c = galv_comm_group(mesh, 1, 1);
  galv_queue *q = galv_queue_new();
  const size_t n = 1000;
  float *buf, *sum, *all, *from;
  cudaCheck(cudaMalloc((void **)&buf, n * 4));
  cudaCheck(cudaMalloc((void **)&sum, n * 4));
  cudaCheck(cudaMalloc((void **)&all, n * 4 * size));
  cudaCheck(cudaMalloc((void **)&from, n * 4));
  float *h = (float *)malloc(n * 4 * size);
  for (size_t i = 0; i < n; i++) h[i] = (float)rank;
  /* on galv_cu.stream, complete before the collectives' queue reads buf (a legacy-stream cudaMemcpy from pageable
   * memory may return before the copy lands) */
  cudaCheck(cudaMemcpyAsync(buf, h, n * 4, cudaMemcpyHostToDevice, galv_cu.stream));
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  galv_all_reduce(c, buf, sum, n, GALV_F32, GALV_RED_SUM, q);
  galv_all_gather(c, buf, all, n, GALV_F32, q);
  galv_group_start();
  galv_send(c, (rank + 1) % size, buf, n, GALV_F32, q);
  galv_recv(c, (rank + size - 1) % size, from, n, GALV_F32, q);
  galv_group_end();
  galv_queue_sync(q);
  int bad = 0;
  cudaCheck(cudaMemcpy(h, sum, n * 4, cudaMemcpyDeviceToHost));
  bad |= h[n - 1] != (float)(size * (size - 1) / 2);
  cudaCheck(cudaMemcpy(h, all, n * 4 * size, cudaMemcpyDeviceToHost));
  for (int r = 0; r < size; r++) bad |= h[(size_t)r * n] != (float)r;
  cudaCheck(cudaMemcpy(h, from, n * 4, cudaMemcpyDeviceToHost));
  bad |= h[0] != (float)((rank + size - 1) % size);
  printf("comm_check: rank %d of %d: %s\n", rank, size, bad ? "MISMATCH" : "ok");
  galv_queue_free(q);
  galv_cu_finish();
  galv_comm_world_finalize();
  return bad;
}
