/* The 2-rank all-gather and all-to-all written straight against libfabric, with none of
 * railbench's layers (Progress, slots, tags per rank, region bookkeeping): if railbench
 * is slower than Open MPI and this is not, the gap is railbench's; if this is as slow,
 * the gap is the provider's. Timed exactly as mpi_reference.c times Open MPI (one
 * barrier, back-to-back iterations, each iteration's time the slowest rank's, time =
 * mean over iterations, busbw = algbw x (n-1)/n). MPI is used only for rank, size,
 * address and key exchange, barriers and gathering the times.
 *
 *   fi_reference allgather|alltoall|oneway PROVIDER MIN MAX FACTOR ITERS WARMUP [MODE] [MSG] [IOV]
 *
 * With 2 ranks both patterns are one exchange: each rank sends its block (bytes/2) to
 * the other, receives the other's into its place in the result, and copies its own
 * block into the result while the transfer is in flight (out of place, as railbench
 * and Open MPI do). PROVIDER: "shm", "tcp;ofi_rxm", ... MODE: "send" (tagged
 * send/recv, the default, what railbench posts) or "write" (fi_writedata into the
 * peer's registered result buffer, the remote CQ data is the notification). MSG: bytes
 * per message, each block cut into pieces of at most MSG, all posted at once; 0 (the
 * default) is one message per block. railbench posts all-to-all blocks whole and cuts
 * ring blocks into --slice-bytes (16 MiB) slices.
 *
 * `oneway` instead of a collective: rank 0 sends `bytes` (in pieces of MSG) to rank 1 and
 * nothing else happens, the provider's copy alone (mpi_reference has the same pattern).
 * IOV (write mode only, default 1): pieces per fi_writemsg, each its own local and
 * remote iovec, as railbench's batched writes pack KV-cache blocks (kvcache per-block:
 * `oneway ... write 32768 4` against one whole write is the provider's own per-block
 * cost); only the last call of an exchange carries remote CQ data, as railbench's last
 * write carries the immediate.
 *
 * Output, one line per size: bytes time_us algbw_gbps busbw_gbps busbw_p50_gbps (busbw at
 * the median iteration), as mpi_reference prints.
 */
#include <mpi.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NAME_MAX_BYTES 256
#define DATA_TAG 0x5ULL

struct fabric {
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_cq* cq;
  struct fid_av* av;
  struct fid_ep* ep;
  fi_addr_t peer;
};

/* Where the peer's result buffer is, for the write mode. */
struct remote {
  uint64_t addr;
  uint64_t key;
};

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Setup failures end the job: this is a measuring tool, and a half-set-up rank would
 * only leave its peer waiting. */
static void check(int ret, const char* call) {
  if (ret == 0) return;
  fprintf(stderr, "fi_reference: %s failed: %s (%d)\n", call, fi_strerror(-ret), ret);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void open_fabric(struct fabric* f, const char* provider) {
  struct fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  /* The caps and modes railbench asks for (transports/ofi/ofi_select.cc), so the
   * provider takes the same paths. */
  hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
  hints->domain_attr->av_type = FI_AV_TABLE;
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  hints->fabric_attr->prov_name = strdup(provider);
  struct fi_info* list;
  check(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &list), "fi_getinfo");
  fi_freeinfo(hints);
  /* An IPv4 domain where there is one, as railbench picks: link-local IPv6 entries come
   * first in tcp's list. */
  struct fi_info* pick = list;
  for (struct fi_info* i = list; i != NULL; i = i->next) {
    if (i->addr_format == FI_SOCKADDR_IN) {
      pick = i;
      break;
    }
  }
  f->info = fi_dupinfo(pick);
  fi_freeinfo(list);
  if (f->info->mode & FI_RX_CQ_DATA) {
    fprintf(stderr, "fi_reference: provider %s needs FI_RX_CQ_DATA, which this tool does not handle\n", provider);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  check(fi_fabric(f->info->fabric_attr, &f->fabric, NULL), "fi_fabric");
  check(fi_domain(f->fabric, f->info, &f->domain, NULL), "fi_domain");
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
  check(fi_cq_open(f->domain, &cq_attr, &f->cq, NULL), "fi_cq_open");
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = 2};
  check(fi_av_open(f->domain, &av_attr, &f->av, NULL), "fi_av_open");
  check(fi_endpoint(f->domain, f->info, &f->ep, NULL), "fi_endpoint");
  check(fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  check(fi_ep_bind(f->ep, &f->av->fid, 0), "fi_ep_bind(av)");
  check(fi_enable(f->ep), "fi_enable");
}

static void connect_peer(struct fabric* f, int rank) {
  char names[2][NAME_MAX_BYTES];
  size_t len = NAME_MAX_BYTES;
  memset(names, 0, sizeof(names));
  check(fi_getname(&f->ep->fid, names[rank], &len), "fi_getname");
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, names, NAME_MAX_BYTES, MPI_BYTE, MPI_COMM_WORLD);
  if (fi_av_insert(f->av, names[1 - rank], 1, &f->peer, 0, NULL) != 1) check(-FI_EADDRNOTAVAIL, "fi_av_insert");
}

/* `key` matters only where the provider does not choose keys (no FI_MR_PROV_KEY):
 * there it must be unique in the domain. */
static struct fid_mr* register_buffer(struct fabric* f, void* buf, size_t len, uint64_t access, uint64_t key) {
  struct fid_mr* mr;
  check(fi_mr_reg(f->domain, buf, len, access, 0, key, 0, &mr, NULL), "fi_mr_reg");
  if (f->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
    check(fi_mr_bind(mr, &f->ep->fid, 0), "fi_mr_bind");
    check(fi_mr_enable(mr), "fi_mr_enable");
  }
  return mr;
}

/* Polls the CQ once; returns how many of each kind completed. */
static void poll_cq(struct fabric* f, int* local_done, long* remote_writes) {
  struct fi_cq_data_entry e[16];
  ssize_t got = fi_cq_read(f->cq, e, 16);
  if (got == -FI_EAGAIN) return;
  if (got < 0) {
    struct fi_cq_err_entry err;
    memset(&err, 0, sizeof(err));
    fi_cq_readerr(f->cq, &err, 0);
    fprintf(stderr, "fi_reference: completion error: %s\n", fi_strerror(err.err));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (ssize_t i = 0; i < got; ++i) {
    if (e[i].flags & FI_REMOTE_CQ_DATA)
      ++*remote_writes;
    else
      ++*local_done;
  }
}

struct run {
  struct fabric* f;
  int write_mode;
  int iov;    /* pieces per fi_writemsg; 1: fi_writedata per piece */
  int oneway; /* rank 0 sends `bytes`, rank 1 receives them; nothing else */
  char *sbuf, *rbuf;
  void *sdesc, *rdesc;
  struct remote peer_rbuf;
  struct fi_context2* ctx; /* one per posted operation of an iteration */
  int rank;
  /* Counted over the whole run, not per iteration: the peer may finish an iteration
   * and write the next one's pieces while this rank still waits for its own sends. */
  long remote_writes, remote_expected;
};

/* Writes `block` bytes from offset `at` in pieces of at most `msg`, r->iov pieces per
 * fi_writemsg; the last call carries remote CQ data. Returns the calls posted. */
static int write_pieces(struct run* r, size_t block, size_t msg, size_t at, int* local_done) {
  struct fabric* f = r->f;
  struct iovec iov[16];
  void* desc[16];
  struct fi_rma_iov rma[16];
  int calls = 0;
  for (size_t off = 0; off < block;) {
    size_t k = 0;
    for (; k < (size_t)r->iov && off < block; ++k) {
      const size_t len = block - off < msg ? block - off : msg;
      iov[k].iov_base = r->sbuf + at + off;
      iov[k].iov_len = len;
      desc[k] = r->sdesc;
      rma[k].addr = r->peer_rbuf.addr + at + off;
      rma[k].len = len;
      rma[k].key = r->peer_rbuf.key;
      off += len;
    }
    struct fi_msg_rma m = {.msg_iov = iov,
                           .desc = desc,
                           .iov_count = k,
                           .addr = f->peer,
                           .rma_iov = rma,
                           .rma_iov_count = k,
                           .context = &r->ctx[calls],
                           .data = 0};
    const uint64_t flags = FI_COMPLETION | (off < block ? FI_MORE : FI_REMOTE_CQ_DATA);
    ssize_t ret;
    while ((ret = fi_writemsg(f->ep, &m, flags)) == -FI_EAGAIN) poll_cq(f, local_done, &r->remote_writes);
    check((int)ret, "fi_writemsg");
    ++calls;
  }
  return calls;
}

/* One 2-rank exchange of `block` bytes in pieces of at most `msg`. */
static void exchange(struct run* r, size_t block, size_t msg) {
  struct fabric* f = r->f;
  const int pieces = (int)((block + msg - 1) / msg);
  int local_done = 0, posted = 0;
  const size_t mine = r->oneway ? 0 : (size_t)r->rank * block;
  const size_t theirs = r->oneway ? 0 : (size_t)(1 - r->rank) * block;
  const int receives = !r->oneway || r->rank == 1, sends = !r->oneway || r->rank == 0;
  if (!r->write_mode && receives) {
    for (int i = 0; i < pieces; ++i) {
      size_t off = (size_t)i * msg, len = block - off < msg ? block - off : msg;
      ssize_t ret;
      while ((ret = fi_trecv(f->ep, r->rbuf + theirs + off, len, r->rdesc, f->peer, DATA_TAG, 0, &r->ctx[posted])) ==
             -FI_EAGAIN)
        poll_cq(f, &local_done, &r->remote_writes);
      check((int)ret, "fi_trecv");
      ++posted;
    }
  }
  if (r->write_mode && r->iov > 1) {
    if (sends) posted += write_pieces(r, block, msg, mine, &local_done);
    if (!r->oneway) memcpy(r->rbuf + mine, r->sbuf + mine, block);
    if (receives) r->remote_expected += 1;
    while (local_done < posted || r->remote_writes < r->remote_expected) poll_cq(f, &local_done, &r->remote_writes);
    return;
  }
  for (int i = 0; i < (sends ? pieces : 0); ++i) {
    size_t off = (size_t)i * msg, len = block - off < msg ? block - off : msg;
    ssize_t ret;
    for (;;) {
      if (r->write_mode)
        ret = fi_writedata(f->ep, r->sbuf + mine + off, len, r->sdesc, (uint64_t)i, f->peer,
                           r->peer_rbuf.addr + mine + off, r->peer_rbuf.key, &r->ctx[posted]);
      else
        ret = fi_tsend(f->ep, r->sbuf + mine + off, len, r->sdesc, f->peer, DATA_TAG, &r->ctx[posted]);
      if (ret != -FI_EAGAIN) break;
      poll_cq(f, &local_done, &r->remote_writes);
    }
    check((int)ret, r->write_mode ? "fi_writedata" : "fi_tsend");
    ++posted;
  }
  /* Own block into the result while the transfer is in flight. */
  if (!r->oneway) memcpy(r->rbuf + mine, r->sbuf + mine, block);
  if (r->write_mode && receives) r->remote_expected += pieces;
  while (local_done < posted || r->remote_writes < r->remote_expected) poll_cq(f, &local_done, &r->remote_writes);
}

int main(int argc, char** argv) {
  if (argc < 8 || argc > 11) {
    fprintf(stderr,
            "usage: %s allgather|alltoall|oneway PROVIDER MIN MAX FACTOR ITERS WARMUP [send|write] [MSG_BYTES] "
            "[IOV]\n",
            argv[0]);
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char* coll = argv[1];
  const int oneway = strcmp(coll, "oneway") == 0;
  if (n != 2 || (strcmp(coll, "allgather") != 0 && strcmp(coll, "alltoall") != 0 && !oneway)) {
    if (rank == 0)
      fprintf(stderr, "fi_reference: allgather, alltoall or oneway, on exactly 2 ranks (got %s on %d)\n", coll, n);
    MPI_Finalize();
    return 2;
  }
  size_t lo = (size_t)atoll(argv[3]), hi = (size_t)atoll(argv[4]), factor = (size_t)atoll(argv[5]);
  int iters = atoi(argv[6]), warmup = atoi(argv[7]);
  int write_mode = argc > 8 && strcmp(argv[8], "write") == 0;
  size_t msg_arg = argc > 9 ? (size_t)atoll(argv[9]) : 0;
  const int iov = argc > 10 ? atoi(argv[10]) : 1;
  if (iov < 1 || iov > 16 || (iov > 1 && !write_mode)) {
    if (rank == 0) fprintf(stderr, "fi_reference: IOV must be 1..16, and above 1 only with write (got %d)\n", iov);
    MPI_Finalize();
    return 2;
  }

  struct fabric f;
  memset(&f, 0, sizeof(f));
  open_fabric(&f, argv[2]);
  connect_peer(&f, rank);
  size_t iov_limit = f.info->tx_attr->iov_limit < f.info->tx_attr->rma_iov_limit ? f.info->tx_attr->iov_limit
                                                                                 : f.info->tx_attr->rma_iov_limit;
  if ((size_t)iov > iov_limit) {
    if (rank == 0)
      fprintf(stderr, "fi_reference: %s takes %zu iovecs per write; IOV %d lowered\n", argv[2], iov_limit, iov);
  }

  struct run r = {.f = &f,
                  .write_mode = write_mode,
                  .iov = (size_t)iov > iov_limit ? (int)iov_limit : iov,
                  .oneway = oneway,
                  .rank = rank};
  const double bus = oneway ? 1.0 : 0.5;
  r.sbuf = malloc(hi + 64);
  r.rbuf = malloc(hi + 64);
  /* Filled with non-zero bytes before timing: first-touch page faults are not what
   * either side measures, and zeroed pages would stay the kernel's shared zero page,
   * which a CMA read copies from cache (see mpi_reference.c). */
  memset(r.sbuf, 1, hi + 64);
  memset(r.rbuf, 2, hi + 64);
  struct fid_mr* smr = register_buffer(&f, r.sbuf, hi + 64, FI_SEND | FI_WRITE, 1);
  struct fid_mr* rmr = register_buffer(&f, r.rbuf, hi + 64, FI_RECV | FI_REMOTE_WRITE, 2);
  r.sdesc = fi_mr_desc(smr);
  r.rdesc = fi_mr_desc(rmr);
  struct remote keys[2];
  keys[rank].addr = (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)r.rbuf : 0;
  keys[rank].key = fi_mr_key(rmr);
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, keys, sizeof(struct remote), MPI_BYTE, MPI_COMM_WORLD);
  r.peer_rbuf = keys[1 - rank];

  double* local = malloc(sizeof(double) * (size_t)iters);
  double* all = malloc(sizeof(double) * (size_t)iters * 2);
  for (size_t bytes = lo; bytes <= hi; bytes *= factor) {
    const size_t block = oneway ? bytes : bytes / 2;
    const size_t msg = msg_arg == 0 || msg_arg > block ? block : msg_arg;
    r.ctx = calloc(2 * ((block + msg - 1) / msg) + 1, sizeof(struct fi_context2));
    for (int it = -warmup; it < iters; ++it) {
      if (it == 0) MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      exchange(&r, block, msg);
      if (it >= 0) local[it] = now_s() - t0;
    }
    free(r.ctx);
    MPI_Gather(local, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double sum = 0;
      for (int it = 0; it < iters; ++it) {
        local[it] = all[it] > all[iters + it] ? all[it] : all[iters + it];
        sum += local[it];
      }
      double t = sum / iters;
      double algbw = (double)bytes / t / 1e9;
      qsort(local, (size_t)iters, sizeof(double), cmp_double);
      double p50 = local[(iters - 1) / 2];
      printf("%zu %.3f %.4f %.4f %.4f\n", bytes, t * 1e6, algbw, algbw * bus, (double)bytes / p50 / 1e9 * bus);
      fflush(stdout);
    }
    /* No rank starts the next size's writes while the other still reads this one. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (factor < 2) break;
  }
  fi_close(&smr->fid);
  fi_close(&rmr->fid);
  fi_close(&f.ep->fid);
  fi_close(&f.av->fid);
  fi_close(&f.cq->fid);
  fi_close(&f.domain->fid);
  fi_close(&f.fabric->fid);
  fi_freeinfo(f.info);
  free(r.sbuf);
  free(r.rbuf);
  free(local);
  free(all);
  MPI_Finalize();
  return 0;
}
