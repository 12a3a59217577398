#include "lib/runtime/bootstrap.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/runtime/launch.h"

namespace railbench {

std::vector<std::vector<uint8_t>> Bootstrap::all_gather_v(std::span<const uint8_t> in) {
  // Two rounds: lengths first, then every block padded to the longest.
  auto lengths = all_gather_value<uint64_t>(in.size());
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  // Every rank saw the same lengths, so all skip the second round together: with no
  // bytes anywhere, the buffers would be empty and each bootstrap's memcpy given null.
  if (longest == 0) return std::vector<std::vector<uint8_t>>(size());
  std::vector<std::byte> padded(longest);
  // memcpy's pointers must not be null even for 0 bytes, and an empty block has none.
  if (!in.empty()) std::memcpy(padded.data(), in.data(), in.size());
  std::vector<std::byte> all(longest * static_cast<size_t>(size()));
  all_gather(padded, all);
  std::vector<std::vector<uint8_t>> out(size());
  for (int r = 0; r < size(); ++r) {
    const auto* p = reinterpret_cast<const uint8_t*>(all.data() + longest * r);
    out[r].assign(p, p + lengths[r]);
  }
  return out;
}

std::vector<double> Bootstrap::all_reduce_max(std::span<const double> mine) {
  const auto all = all_gather_vectors(mine);
  std::vector<double> out(mine.begin(), mine.end());
  for (const auto& theirs : all) {
    if (theirs.size() != out.size()) {
      throw BootstrapError(
          fmt::format("bootstrap all_reduce_max: a rank gave {} values, this rank {}: every rank "
                      "must give the same count",
                      theirs.size(), out.size()));
    }
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::max(out[i], theirs[i]);
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

std::vector<std::vector<uint8_t>> Bootstrap::gather_v(std::span<const uint8_t> in, int root) {
  if (root < 0 || root >= size()) {
    throw UsageError(
        fmt::format("bootstrap gather: root rank {} is outside 0..{} (world size {})", root, size() - 1, size()));
  }
  if (in.size() > kMaxGatherBlock) {
    throw BootstrapError(
        fmt::format("bootstrap gather: rank {}'s block is {} bytes, over the {} bytes a gather takes: "
                    "gather a summary, or move the data over the transport",
                    rank(), in.size(), kMaxGatherBlock));
  }
  return gather_blocks(in, root);
}

std::vector<std::string> Bootstrap::gather_strings(const std::string& s, int root) {
  auto blocks = gather_v(std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size()), root);
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

bool mpi_bootstrap_built() {
#ifdef RAILBENCH_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Bootstrap> make_bootstrap_from_environment(double timeout_s) {
  const LaunchInfo launch = detect_launch(process_environment());
  std::unique_ptr<Bootstrap> b;
  if (launch.launcher == Launcher::mpi) {
#ifdef RAILBENCH_HAVE_MPI
    b = make_mpi_bootstrap();
    // An MPI that cannot talk to its launcher (srun --mpi=pmi2 and an Open MPI without
    // PMI-2, say) starts every process as a world of one: N single-rank runs that all
    // "pass". The launcher's own count says otherwise.
    if (launch.size > 0 && b->size() != launch.size) {
      throw UsageError(fmt::format(
          "the launcher says the job has {} ranks but MPI_Init made a world of {}: this MPI cannot talk to the "
          "launcher (launcher variables: {}); with Slurm use srun --mpi=pmix (see srun --mpi=list) or srun "
          "--mpi=none, which uses railbench's own TCP rendezvous",
          launch.size, b->size(), launch.describe()));
    }
#else
    throw UnsupportedError(fmt::format(
        "started by an MPI launcher ({}) but this railbench was built without MPI: install libopenmpi-dev and "
        "rebuild, or launch with srun --mpi=none, torchrun-style variables or RAILBENCH_RANK/RAILBENCH_WORLD_SIZE/"
        "RAILBENCH_ROOT",
        launch.describe()));
#endif
  } else if (launch.uses_tcp()) {
    try {
      b = make_tcp_bootstrap(launch.rank, launch.size, launch.rendezvous, timeout_s);
    } catch (const Error& e) {
      // Name what this process was given: the launcher's variables decide where it looked.
      const std::string what = fmt::format("{} (launcher {}; rendezvous {} from {})", e.what(), launch.describe(),
                                           launch.rendezvous.root, launch.rendezvous_origin);
      if (e.code() == ErrorCode::timeout) throw TimeoutError(what);
      if (e.code() == ErrorCode::usage) throw UsageError(what);
      throw BootstrapError(what);
    }
  } else {
    b = make_single_bootstrap();
  }
  b->set_timeout(timeout_s);
  b->set_place({to_string(launch.launcher), launch.local_rank, launch.node_name});
  return b;
}

}  // namespace railbench
