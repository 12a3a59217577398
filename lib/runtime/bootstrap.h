// Out-of-band exchange of small messages between ranks: addresses, keys, results.
// Every wait has a deadline; a rank that does not arrive is named when possible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace railbench {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string kind() const = 0;  // "mpi", "tcp", "threads", "single"

  // Every rank contributes `in` (same length on every rank); `out` receives
  // size() * in.size() bytes, rank r's block at offset r * in.size().
  virtual void all_gather(std::span<const std::byte> in, std::span<std::byte> out) = 0;
  virtual void barrier() = 0;

  // The elementwise maximum over ranks of a vector every rank gives, with the same length
  // on every rank (an iteration's time is its slowest rank's), returned on every rank.
  // Done as an all-gather unless the bootstrap has a reduction of its own.
  virtual std::vector<double> all_reduce_max(std::span<const double> mine);

  // How the collectives travel: "star" (through rank 0), "tree", or the bootstrap's kind
  // where it has one way only (MPI's own algorithms, threads in one process).
  virtual std::string layout() const { return kind(); }

  // Ends every rank of the job after an error that other ranks may not have seen
  // (MPI_Abort under MPI), so nothing is left waiting. Never returns.
  [[noreturn]] virtual void abort(int code) noexcept;

  // What the launcher said about where this rank runs (lib/runtime/launch.h): its name, the
  // rank's place on its node and the node's name, when it says them.
  struct Place {
    std::string launcher = "none";
    int local_rank = -1;    // -1: not given; ranks on one host are counted instead
    std::string node_name;  // "": the hostname
  };
  void set_place(Place p) { place_ = std::move(p); }
  const Place& place() const { return place_; }

  // Seconds each wait may take before it fails with a TimeoutError.
  void set_timeout(double seconds) { timeout_s_ = seconds; }
  double timeout() const { return timeout_s_; }

  // Asked when a wait times out, to name the ranks that are stopped or dead rather than
  // "some rank" (lib/runtime/liveness.h's Liveness::hook()); "" when every rank answers. The
  // owner of the probe clears it (an empty function) before the probe goes away.
  void set_liveness_probe(std::function<std::string(double)> probe) { liveness_ = std::move(probe); }

  // ---- helpers built on all_gather ----

  // Blocks of different lengths: returns one vector per rank.
  std::vector<std::vector<uint8_t>> all_gather_v(std::span<const uint8_t> in);
  std::vector<std::string> all_gather_strings(const std::string& s);
  // A vector per rank, of any length (trivially copyable elements): iteration times,
  // samples, counters.
  template <class T>
  std::vector<std::vector<T>> all_gather_vectors(std::span<const T> mine) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto bytes = std::as_bytes(mine);
    return blocks_as<T>(all_gather_v({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}));
  }
  template <class T>
  std::vector<std::vector<T>> all_gather_vectors(const std::vector<T>& mine) {
    return all_gather_vectors(std::span<const T>(mine));
  }

  // One value per rank.
  template <class T>
  std::vector<T> all_gather_value(const T& v) {
    std::vector<T> out(size());
    all_gather(std::as_bytes(std::span<const T>(&v, 1)), std::as_writable_bytes(std::span<T>(out)));
    return out;
  }

  // ---- gathers to one rank: for what only the root reads (per-rank results, JSON) ----
  // An all-gather through the TCP star sends every rank the whole world's data, N x N x
  // block bytes from rank 0; a gather moves N x block bytes and rank 0 sends none
  // (figures: lib/runtime/README.md, "Gathers to rank 0").

  // Every rank contributes a block of any length (at most kMaxGatherBlock bytes); `root`
  // gets one block per rank (rank r's at [r]), every other rank an empty vector. Every
  // rank must call it, with the same root; the deadline and the ranks named when one does
  // not arrive are all_gather's. Throws UsageError for a root outside 0..size()-1.
  std::vector<std::vector<uint8_t>> gather_v(std::span<const uint8_t> in, int root = 0);
  std::vector<std::string> gather_strings(const std::string& s, int root = 0);
  template <class T>
  std::vector<std::vector<T>> gather_vectors(std::span<const T> mine, int root = 0) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto bytes = std::as_bytes(mine);
    return blocks_as<T>(gather_v({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, root));
  }
  template <class T>
  std::vector<std::vector<T>> gather_vectors(const std::vector<T>& mine, int root = 0) {
    return gather_vectors(std::span<const T>(mine), root);
  }
  // The largest block one rank may contribute to a gather: the root sizes its buffer from
  // the length a rank announces, so a corrupt length fails by name instead of allocating.
  static constexpr uint64_t kMaxGatherBlock = uint64_t{1} << 30;

 protected:
  // The gather itself, with `root` already checked.
  virtual std::vector<std::vector<uint8_t>> gather_blocks(std::span<const uint8_t> in, int root) = 0;

  template <class T>
  static std::vector<std::vector<T>> blocks_as(const std::vector<std::vector<uint8_t>>& blocks) {
    std::vector<std::vector<T>> out;
    out.reserve(blocks.size());
    for (const auto& blob : blocks) {
      std::vector<T>& v = out.emplace_back(blob.size() / sizeof(T));
      if (!v.empty()) std::memcpy(v.data(), blob.data(), v.size() * sizeof(T));
    }
    return out;
  }

  // The liveness probe's findings: "" without a probe or when every rank answers.
  std::string suspects() const;

  double timeout_s_ = 60.0;
  Place place_;
  std::function<std::string(double)> liveness_;
};

// A rank count and rank for a run inside one process (tests): `size` threads share
// one ThreadGroup and each builds its Bootstrap from it.
class ThreadGroup;
std::shared_ptr<ThreadGroup> make_thread_group(int size);
std::unique_ptr<Bootstrap> make_thread_bootstrap(std::shared_ptr<ThreadGroup> group, int rank);

// Where and how the TCP rendezvous meets (launchers without MPI: RAILBENCH_*, Slurm
// without PMI, torchrun-style variables).
struct TcpRendezvous {
  std::string root;          // host:port of rank 0
  std::string job_token;     // shared by every rank of one launch; a hello with another is refused
  bool bind_any = false;     // rank 0 listens on every address instead of root's host only
  std::string bind_address;  // else, when set: rank 0 listens here instead of on root's host
  // RAILBENCH_BOOTSTRAP_TOPOLOGY: "auto" (a tree from 64 ranks), "star" or "tree"; rank 0's
  // setting is the one the job takes.
  std::string topology = "auto";
};

// Rendezvous over TCP: rank 0 listens on `where.root`, every other rank connects to it.
std::unique_ptr<Bootstrap> make_tcp_bootstrap(int rank, int size, const TcpRendezvous& where, double timeout_s);

// A world of one rank (run without a launcher).
std::unique_ptr<Bootstrap> make_single_bootstrap();

// MPI_COMM_WORLD; calls MPI_Init if nobody has and MPI_Finalize when destroyed.
// Only in builds with MPI.
std::unique_ptr<Bootstrap> make_mpi_bootstrap();
// Whether this build has the MPI bootstrap (what `railbench info` says), so that code
// above lib/ asks instead of testing the build's macros.
bool mpi_bootstrap_built();

// Joins the job of the launcher that started this process (lib/runtime/launch.h's
// detect_launch: RAILBENCH_*, MPI, Slurm, torchrun-style, else a single rank).
std::unique_ptr<Bootstrap> make_bootstrap_from_environment(double timeout_s);

}  // namespace railbench
