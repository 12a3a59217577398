// MPI_COMM_WORLD as the bootstrap, for runs under mpirun/srun. Collectives are the
// nonblocking MPI-3 ones, tested in a loop against a deadline, so a rank that never
// arrives turns into a TimeoutError instead of a hang.
#include <mpi.h>

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

  [[noreturn]] void abort(int code) noexcept override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  void wait(MPI_Request& req, const char* what) {
    auto deadline = Deadline::after(timeout_s_);
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
        // With more ranks than cores, spinning starves the rank we wait for.
        std::this_thread::yield();
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
