/* The peer railbench is compared against in scripts/bench: Open MPI's own collectives,
 * timed exactly as railbench times its own (one barrier, back-to-back iterations, each
 * iteration's time the slowest rank's, time = mean over iterations), so a ratio
 * compares implementations, not stopwatches. Also measures plain memcpy bandwidth,
 * the one-copy limit of an intra-host transfer.
 *
 *   mpi_reference allreduce|allgather|reducescatter|alltoall|oneway MIN MAX FACTOR ITERS WARMUP
 *   (oneway: rank 0 MPI_Send's the whole size to rank 1, the transport's copy alone)
 *   mpi_reference memcpy BYTES ITERS
 *
 * Output, one line per size: bytes time_us algbw_gbps busbw_gbps busbw_p50_gbps (float32
 * sum). The last is busbw at the median iteration: on a shared host a few preempted
 * iterations move the mean a lot and the median little.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void run_memcpy(size_t bytes, int iters) {
  char* src = malloc(bytes);
  char* dst = malloc(bytes);
  double* t = malloc(sizeof(double) * (size_t)iters);
  memset(src, 1, bytes);
  memset(dst, 2, bytes);
  for (int i = 0; i < iters; ++i) {
    double t0 = now_s();
    memcpy(dst, src, bytes);
    t[i] = now_s() - t0;
    src[i % bytes] = (char)i; /* keep the copies from being optimized away */
  }
  qsort(t, (size_t)iters, sizeof(double), cmp_double);
  double median = t[(iters - 1) / 2];
  printf("%zu %.3f %.4f %.4f\n", bytes, median * 1e6, (double)bytes / median / 1e9, (double)bytes / median / 1e9);
  free(src);
  free(dst);
  free(t);
}

int main(int argc, char** argv) {
  if (argc >= 4 && strcmp(argv[1], "memcpy") == 0) {
    run_memcpy((size_t)atoll(argv[2]), atoi(argv[3]));
    return 0;
  }
  if (argc != 7) {
    fprintf(stderr,
            "usage: %s allreduce|allgather|reducescatter|alltoall|oneway MIN MAX FACTOR ITERS WARMUP\n"
            "       %s memcpy BYTES ITERS\n",
            argv[0], argv[0]);
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char* coll = argv[1];
  size_t lo = (size_t)atoll(argv[2]), hi = (size_t)atoll(argv[3]), factor = (size_t)atoll(argv[4]);
  int iters = atoi(argv[5]), warmup = atoi(argv[6]);
  double bus;
  if (strcmp(coll, "allreduce") == 0)
    bus = 2.0 * (n - 1) / n;
  else if (strcmp(coll, "allgather") == 0 || strcmp(coll, "reducescatter") == 0 || strcmp(coll, "alltoall") == 0)
    bus = (double)(n - 1) / n;
  else if (strcmp(coll, "oneway") == 0)
    bus = 1.0;
  else {
    if (rank == 0) fprintf(stderr, "unknown collective %s\n", coll);
    MPI_Finalize();
    return 2;
  }
  /* nccl-tests sizes: for all-gather, reduce-scatter and all-to-all the size is the
   * whole buffer (count x n), so each rank's block is size / n. */
  float* sbuf = malloc(hi + 64);
  float* rbuf = malloc(hi + 64);
  /* Real values, not memset to 0: the compiler turns malloc + memset 0 into calloc, whose
   * pages of a large buffer stay unmapped, and a peer's CMA read of them then copies the
   * one shared zero page from cache instead of the buffer, much faster than any real
   * data (railbench and fi_reference send real data). */
  for (size_t i = 0; i < (hi + 64) / sizeof(float); ++i) {
    sbuf[i] = (float)(i % 251) + 1.0f;
    rbuf[i] = 0.5f;
  }
  double* local = malloc(sizeof(double) * (size_t)iters);
  double* all = malloc(sizeof(double) * (size_t)iters * (size_t)n);
  for (size_t bytes = lo; bytes <= hi; bytes *= factor) {
    size_t count = bytes / sizeof(float);
    size_t block = count / (size_t)n;
    for (int it = -warmup; it < iters; ++it) {
      if (it == 0) MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      if (strcmp(coll, "allreduce") == 0)
        MPI_Allreduce(sbuf, rbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (strcmp(coll, "allgather") == 0)
        MPI_Allgather(sbuf, (int)block, MPI_FLOAT, rbuf, (int)block, MPI_FLOAT, MPI_COMM_WORLD);
      else if (strcmp(coll, "reducescatter") == 0)
        MPI_Reduce_scatter_block(sbuf, rbuf, (int)block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (strcmp(coll, "alltoall") == 0)
        MPI_Alltoall(sbuf, (int)block, MPI_FLOAT, rbuf, (int)block, MPI_FLOAT, MPI_COMM_WORLD);
      else if (rank == 0)
        MPI_Send(sbuf, (int)count, MPI_FLOAT, 1, 0, MPI_COMM_WORLD);
      else if (rank == 1)
        MPI_Recv(rbuf, (int)count, MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (it >= 0) local[it] = now_s() - t0;
    }
    MPI_Gather(local, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double sum = 0;
      for (int it = 0; it < iters; ++it) {
        double worst = 0;
        for (int r = 0; r < n; ++r)
          if (all[r * iters + it] > worst) worst = all[r * iters + it];
        sum += worst;
        local[it] = worst;
      }
      double t = sum / iters;
      double algbw = (double)(count * sizeof(float)) / t / 1e9;
      qsort(local, (size_t)iters, sizeof(double), cmp_double);
      double p50 = local[(iters - 1) / 2];
      printf("%zu %.3f %.4f %.4f %.4f\n", count * sizeof(float), t * 1e6, algbw, algbw * bus,
             (double)(count * sizeof(float)) / p50 / 1e9 * bus);
      fflush(stdout);
    }
    if (factor < 2) break;
  }
  free(sbuf);
  free(rbuf);
  free(local);
  free(all);
  MPI_Finalize();
  return 0;
}
