// MPI_COMM_WORLD as the bootstrap, for runs under mpirun/srun. Collectives are the
// nonblocking MPI-3 ones, tested in a loop against a deadline, so a rank that never
// arrives turns into a TimeoutError instead of a hang.
#include <mpi.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"
#include "lib/runtime/signals.h"

namespace railbench {

namespace {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw BootstrapError(fmt::format("{} failed: {}", call, std::string(text, len)));
}

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      check_mpi(MPI_Init(nullptr, nullptr), "MPI_Init");
      owns_mpi_ = true;
    }
    // A failed peer turns into an error code (and then a TimeoutError or BootstrapError
    // naming the call) instead of MPI's default of aborting the job on the spot.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // MPI_Init installs its own handlers (and a provider it loads may too): ours take over
    // again, so SIGTERM from the launcher still leaves a verdict in the results file.
    install_signal_handlers();
    set_signal_rank(rank_);
  }

  ~MpiBootstrap() override {
    if (owns_mpi_) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "mpi"; }

  void all_gather(std::span<const std::byte> in, std::span<std::byte> out) override {
    MPI_Request req;
    check_mpi(MPI_Iallgather(in.data(), static_cast<int>(in.size()), MPI_BYTE, out.data(), static_cast<int>(in.size()),
                             MPI_BYTE, MPI_COMM_WORLD, &req),
              "MPI_Iallgather");
    wait(req, "all_gather");
  }

  void barrier() override {
    MPI_Request req;
    check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
    wait(req, "barrier");
  }

  std::vector<double> all_reduce_max(std::span<const double> mine) override {
    std::vector<double> out(mine.size());
    MPI_Request req;
    check_mpi(MPI_Iallreduce(mine.data(), out.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX,
                             MPI_COMM_WORLD, &req),
              "MPI_Iallreduce");
    wait(req, "all_reduce_max");
    return out;
  }

  [[noreturn]] void abort(int code) noexcept override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 protected:
  // MPI_Gatherv needs every length at the root before the blocks: the lengths first (8
  // bytes a rank), then the blocks, each a nonblocking call waited on with the deadline.
  std::vector<std::vector<uint8_t>> gather_blocks(std::span<const uint8_t> in, int root) override {
    const uint64_t mine = in.size();
    std::vector<uint64_t> lengths(rank_ == root ? size_ : 0);
    MPI_Request req;
    check_mpi(MPI_Igather(&mine, 1, MPI_UINT64_T, lengths.data(), 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &req),
              "MPI_Igather");
    wait(req, "gather");
    std::vector<int> counts(lengths.size());
    std::vector<int> displs(lengths.size());
    uint64_t total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      // MPI counts are int: a gather past 2 GiB at the root is refused by name, not wrapped.
      if (total + lengths[r] > static_cast<uint64_t>(INT32_MAX)) {
        throw BootstrapError(
            fmt::format("bootstrap gather: the blocks of ranks 0..{} come to more than 2 GiB at rank "
                        "{}, more than one MPI_Gatherv takes: gather less per rank",
                        r, root));
      }
      counts[r] = static_cast<int>(lengths[r]);
      displs[r] = static_cast<int>(total);
      total += lengths[r];
    }
    std::vector<uint8_t> all(total);
    check_mpi(MPI_Igatherv(in.data(), static_cast<int>(in.size()), MPI_BYTE, all.data(), counts.data(), displs.data(),
                           MPI_BYTE, root, MPI_COMM_WORLD, &req),
              "MPI_Igatherv");
    wait(req, "gatherv");
    std::vector<std::vector<uint8_t>> out(lengths.size());
    for (size_t r = 0; r < out.size(); ++r) out[r].assign(all.begin() + displs[r], all.begin() + displs[r] + counts[r]);
    return out;
  }

 private:
  // Spins first (a collective among busy ranks ends in microseconds), then yields, then
  // sleeps: with more ranks than cores, ranks that spin while they wait take the cores
  // from the ranks they wait for. In validate's re-test round on 16 ranks over 2 cores,
  // 2 ranks measured latency while 14 waited in a barrier; spinning (a yield every 1024
  // tests), they made the pair's p50 4-5 ms against the 15 us it had beside busy ranks.
  void wait(MPI_Request& req, const char* what) {
    auto deadline = Deadline::after(timeout_s_);
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t spins = 0;; ++spins) {
      int done = 0;
      check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      if ((spins & 1023) == 1023) {
        if (deadline.passed()) {
          // MPI cannot tell which rank is missing; the liveness probe can.
          if (const std::string culprits = suspects(); !culprits.empty()) {
            throw TimeoutError(
                fmt::format("rank {}: MPI {} did not complete within {:.0f} s: {}", rank_, what, timeout_s_, culprits));
          }
          throw TimeoutError(
              fmt::format("rank {}: MPI {} did not complete within {:.0f} s: some rank has not "
                          "arrived (look for an earlier error from another rank, or raise --timeout)",
                          rank_, what, timeout_s_));
        }
        const auto waited = std::chrono::steady_clock::now() - start;
        if (waited < std::chrono::milliseconds(2)) {
          std::this_thread::yield();
        } else {
          // 100 us, 1 ms once the wait is long: a few hundred wake-ups a second at most.
          std::this_thread::sleep_for(waited < std::chrono::milliseconds(50) ? std::chrono::microseconds(100)
                                                                             : std::chrono::microseconds(1000));
        }
      }
    }
  }

  int rank_ = 0;
  int size_ = 1;
  bool owns_mpi_ = false;
};

}  // namespace

std::unique_ptr<Bootstrap> make_mpi_bootstrap() {
  return std::make_unique<MpiBootstrap>();
}

}  // namespace railbench
