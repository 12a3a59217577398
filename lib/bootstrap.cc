#include "lib/bootstrap.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "lib/errors.h"

namespace railbench {

std::vector<std::vector<uint8_t>> Bootstrap::all_gather_v(std::span<const uint8_t> in) {
  // Two rounds: lengths first, then every block padded to the longest.
  auto lengths = all_gather_value<uint64_t>(in.size());
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::vector<std::byte> padded(longest);
  std::memcpy(padded.data(), in.data(), in.size());
  std::vector<std::byte> all(longest * static_cast<size_t>(size()));
  all_gather(padded, all);
  std::vector<std::vector<uint8_t>> out(size());
  for (int r = 0; r < size(); ++r) {
    const auto* p = reinterpret_cast<const uint8_t*>(all.data() + longest * r);
    out[r].assign(p, p + lengths[r]);
  }
  return out;
}

std::vector<std::string> Bootstrap::all_gather_strings(const std::string& s) {
  auto blocks = all_gather_v(std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  std::vector<std::string> out;
  out.reserve(blocks.size());
  for (auto& b : blocks) out.emplace_back(b.begin(), b.end());
  return out;
}

std::string Bootstrap::suspects() const {
  if (!liveness_) return "";
  try {
    return liveness_(0);
  } catch (const std::exception&) {
    return "";  // the probe only adds detail to the error it is asked for
  }
}

void Bootstrap::abort(int code) noexcept {
  std::_Exit(code);
}

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

int env_int(const char* name, const char* meaning) {
  const char* v = env(name);
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < 0 || errno == ERANGE || x > std::numeric_limits<int>::max()) {
    throw UsageError(fmt::format("{}='{}' is not a non-negative integer: set it to {}", name, v, meaning));
  }
  return static_cast<int>(x);
}

}  // namespace

bool launched_by_mpi() {
  // Open MPI's mpirun, PMIx launchers (srun --mpi=pmix) and PMI-1/2 launchers (MPICH).
  return env("OMPI_COMM_WORLD_SIZE") || env("PMIX_RANK") || env("PMI_RANK") || env("PMI_SIZE");
}

std::unique_ptr<Bootstrap> make_bootstrap_from_environment(double timeout_s) {
  std::unique_ptr<Bootstrap> b;
  if (env("RAILBENCH_ROOT")) {
    if (!env("RAILBENCH_RANK") || !env("RAILBENCH_WORLD_SIZE")) {
      throw UsageError(
          "RAILBENCH_ROOT is set but RAILBENCH_RANK or RAILBENCH_WORLD_SIZE is not: set all three "
          "(RAILBENCH_ROOT=host:port of rank 0)");
    }
    // Interim wiring for the rendezvous's token and bind override (the launcher
    // detection fills these for every launcher).
    TcpRendezvous where{env("RAILBENCH_ROOT"), env("RAILBENCH_JOB_TOKEN") ? env("RAILBENCH_JOB_TOKEN") : "", false};
    if (const char* bind = env("RAILBENCH_BIND")) {
      if (std::string(bind) == "any") {
        where.bind_any = true;
      } else {
        where.bind_address = bind;
      }
    }
    b = make_tcp_bootstrap(env_int("RAILBENCH_RANK", "this process's rank number"),
                           env_int("RAILBENCH_WORLD_SIZE", "the number of ranks"), where, timeout_s);
  } else if (launched_by_mpi()) {
#ifdef RAILBENCH_HAVE_MPI
    b = make_mpi_bootstrap();
#else
    throw UnsupportedError(
        "started by mpirun but this railbench was built without MPI: install libopenmpi-dev and rebuild, or "
        "launch with RAILBENCH_RANK/RAILBENCH_WORLD_SIZE/RAILBENCH_ROOT");
#endif
  } else {
    b = make_single_bootstrap();
  }
  b->set_timeout(timeout_s);
  return b;
}

}  // namespace railbench
