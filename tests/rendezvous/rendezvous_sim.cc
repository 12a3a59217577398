// Rank 0's TCP rendezvous against N ranks without N processes (tests/README.md; figures in scripts/bench/README.md).
// Rank 0 is a process of its own, forked before anything else, running the real
// TcpBootstrap; the other N-1 ranks are threads of this process (and of one more process
// per 4,096 ranks beyond the first, for the open-file limit), each one a real TcpBootstrap
// client (make_tcp_bootstrap) on its own socket. So every frame on the wire is the real
// protocol, the tree's included (a parent's forwarding runs in the clients' threads),
// and rank 0's time and peak RSS are its own, not the clients'.
//
// The phases are what a command's start-up and results do through the bootstrap: the
// rendezvous, the host gather (all_gather_strings of a host name, 8 ranks a host), an
// all_gather of a fixed block per rank (addresses and keys), and an all_gather_v of a
// larger per-rank block (what the commands gathered to every rank before they had a
// gather to rank 0), and a gather_v to rank 0 of a per-rank block (per-rank results,
// JSON). Every rank checks that every gathered byte is the one its sender put there, and
// a rank other than the root that it got nothing. A barrier separates the phases, so
// each starts with every rank there.
//
// Last, 20 barriers and an all_reduce_max of 64 values (checked on every rank), the
// per-iteration exchanges of a benchmark ("-" where the star's copies would not fit).
//
//   railbench_rendezvous_sim --ranks N [--block 100] [--results 2048] [--gather 0] [--timeout 60]
//                            [--topology auto|star|tree]
//
// Prints one line, rank 0's view: "N connect_s hosts_s block_s results_s rss_mib cpu_s
// gather_s block_sent results_sent gather_sent barrier_s max_s layout" (barrier_s is one
// barrier's mean; layout the bootstrap's, star or tree; a phase given 0 bytes prints "-"; cpu_s is rank 0's
// user + system time, which tells its own work from waiting for the clients; *_sent are
// the bytes rank 0 wrote to its sockets in that phase, frames included, from the kernel's
// TCP_INFO and SIOCOUTQ). Exit 0 when every rank saw exact data, 1 otherwise, 2 on bad input.
#include <dirent.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "lib/core/clock.h"
#include "lib/core/errors.h"
#include "lib/runtime/bootstrap.h"
#include "lib/runtime/rendezvous_root.h"

namespace {

using railbench::Bootstrap;
using railbench::Clock;

struct Options {
  int ranks = 0;
  size_t block = 100;     // bytes per rank in the fixed all_gather
  size_t results = 2048;  // bytes per rank in the all_gather_v; 0 skips it
  size_t gather = 0;      // bytes per rank in the gather_v to rank 0; 0 skips it
  double timeout_s = 60;
  std::string topology = "auto";
};

// What rank r puts at byte i of a phase's block: differs by rank, byte and phase, so a
// block delivered to the wrong slot or shifted by a byte is caught.
uint8_t pattern(int rank, size_t i, int phase) {
  return static_cast<uint8_t>((rank * 131u + i * 7u + phase * 29u + (rank >> 8)) & 0xff);
}

std::string host_of(int rank) {
  return fmt::format("sim-node{:05d}", rank / 8);
}

struct Timings {
  double connect = 0, hosts = 0, block = 0, results = 0, gather = 0, barrier = 0, max = 0;
  uint64_t block_sent = 0, results_sent = 0, gather_sent = 0;
};

// Bytes this process has written to its TCP sockets: acknowledged by the peer (TCP_INFO's
// tcpi_bytes_acked) plus still in the send queue (SIOCOUTQ), so a phase's count depends
// neither on how fast the clients read nor on retransmissions (which tcpi_bytes_sent counts).
uint64_t tcp_bytes_written() {
  uint64_t total = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  while (const dirent* e = ::readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    tcp_info info{};
    socklen_t len = sizeof(info);
    if (fd <= 2 || ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) continue;
    int queued = 0;
    if (::ioctl(fd, SIOCOUTQ, &queued) != 0) queued = 0;
    total += info.tcpi_bytes_acked + static_cast<uint64_t>(queued);
  }
  ::closedir(dir);
  return total;
}

// Each phase in a function of its own, so its buffers are freed before the next: at
// 8,192 ranks the clients together hold N x N x block bytes of every gather.
double hosts_phase(Bootstrap& b) {
  auto t0 = Clock::now();
  const auto hosts = b.all_gather_strings(host_of(b.rank()));
  const double s = railbench::seconds_between(t0, Clock::now());
  for (int r = 0; r < b.size(); ++r)
    if (hosts[r] != host_of(r))
      throw railbench::BootstrapError(fmt::format("rank {}: host of rank {} arrived as '{}'", b.rank(), r, hosts[r]));
  return s;
}

double block_phase(Bootstrap& b, size_t block) {
  std::vector<std::byte> mine(block);
  for (size_t i = 0; i < block; ++i) mine[i] = std::byte{pattern(b.rank(), i, 1)};
  std::vector<std::byte> all(block * b.size());
  auto t0 = Clock::now();
  b.all_gather(mine, all);
  const double s = railbench::seconds_between(t0, Clock::now());
  for (int r = 0; r < b.size(); ++r)
    for (size_t i = 0; i < block; ++i)
      if (all[block * r + i] != std::byte{pattern(r, i, 1)})
        throw railbench::BootstrapError(fmt::format("rank {}: byte {} of rank {}'s block is wrong", b.rank(), i, r));
  return s;
}

// Rank r's block of a variable-length phase: one byte shorter on odd ranks, as results
// of different lengths are, filled with the phase's pattern.
std::vector<uint8_t> uneven_block(int rank, size_t bytes, int phase) {
  std::vector<uint8_t> block(bytes - static_cast<size_t>(rank % 2));
  for (size_t i = 0; i < block.size(); ++i) block[i] = pattern(rank, i, phase);
  return block;
}

// Ranks' results differ in length, as validate's do: all_gather_v pads to the longest.
double results_phase(Bootstrap& b, size_t results) {
  const std::vector<uint8_t> res = uneven_block(b.rank(), results, 2);
  auto t0 = Clock::now();
  const auto got = b.all_gather_v(res);
  const double s = railbench::seconds_between(t0, Clock::now());
  for (int r = 0; r < b.size(); ++r)
    if (got[r] != uneven_block(r, results, 2))
      throw railbench::BootstrapError(fmt::format("rank {}: rank {}'s results arrived wrong", b.rank(), r));
  return s;
}

// The per-rank results gathered to rank 0 only: the root checks every block, the others
// that they got nothing.
double gather_phase(Bootstrap& b, size_t bytes) {
  const std::vector<uint8_t> mine = uneven_block(b.rank(), bytes, 3);
  auto t0 = Clock::now();
  const auto got = b.gather_v(mine);
  const double s = railbench::seconds_between(t0, Clock::now());
  const size_t want = b.rank() == 0 ? static_cast<size_t>(b.size()) : 0;
  if (got.size() != want)
    throw railbench::BootstrapError(
        fmt::format("rank {}: got {} blocks of a gather to rank 0, expected {}", b.rank(), got.size(), want));
  for (size_t r = 0; r < got.size(); ++r)
    if (got[r] != uneven_block(static_cast<int>(r), bytes, 3))
      throw railbench::BootstrapError(fmt::format("rank 0: rank {}'s gathered block arrived wrong", r));
  return s;
}

// 20 barriers: one barrier's mean time.
double barrier_phase(Bootstrap& b) {
  constexpr int kBarriers = 20;
  const auto t0 = Clock::now();
  for (int i = 0; i < kBarriers; ++i) b.barrier();
  return railbench::seconds_between(t0, Clock::now()) / kBarriers;
}

// Value i of rank r's vector; the maximum over ranks of value i is at rank (i * 37) % N,
// so a reduction that drops or mixes up any rank's contribution is caught.
double max_value(int rank, int ranks, size_t i) {
  const int top = static_cast<int>((i * 37) % static_cast<size_t>(ranks));
  return rank == top ? 1e6 + static_cast<double>(i) : static_cast<double>((rank * 131 + i * 7) % 1000);
}

constexpr size_t kValues = 64;

// Through the star, all_reduce_max is an all-gather: every client thread holds N x 64
// values, N x N x 512 bytes in this one process (34 GB at 8,192): left out past 2 GiB.
bool max_fits(const Bootstrap& b) {
  const auto n = static_cast<uint64_t>(b.size());
  return b.layout() != "star" || n * n * kValues * sizeof(double) <= (uint64_t{2} << 30);
}

double max_phase(Bootstrap& b) {
  std::vector<double> mine(kValues);
  for (size_t i = 0; i < kValues; ++i) mine[i] = max_value(b.rank(), b.size(), i);
  const auto t0 = Clock::now();
  const auto got = b.all_reduce_max(mine);
  const double s = railbench::seconds_between(t0, Clock::now());
  for (size_t i = 0; i < kValues; ++i) {
    if (got.size() != kValues || got[i] != 1e6 + static_cast<double>(i))
      throw std::runtime_error(fmt::format("rank {}: all_reduce_max value {} is wrong", b.rank(), i));
  }
  return s;
}

// One phase between barriers, with the bytes rank 0 wrote in it (0 on other ranks).
template <class Phase>
double measured(Bootstrap& b, uint64_t& sent, Phase phase) {
  b.barrier();
  const uint64_t before = b.rank() == 0 ? tcp_bytes_written() : 0;
  const double s = phase();
  sent = b.rank() == 0 ? tcp_bytes_written() - before : 0;
  return s;
}

// The phases after the rendezvous, on any rank; throws naming the first wrong byte.
void run_phases(Bootstrap& b, const Options& o, Timings& t) {
  t.hosts = hosts_phase(b);
  t.block = measured(b, t.block_sent, [&] { return block_phase(b, o.block); });
  if (o.results > 0) t.results = measured(b, t.results_sent, [&] { return results_phase(b, o.results); });
  if (o.gather > 0) t.gather = measured(b, t.gather_sent, [&] { return gather_phase(b, o.gather); });
  t.barrier = barrier_phase(b);
  t.max = max_fits(b) ? max_phase(b) : -1;
}

int rank0(const Options& o, const railbench::TcpRendezvous& where) {
  try {
    Timings t;
    auto t0 = Clock::now();
    auto b = railbench::make_tcp_bootstrap(0, o.ranks, where, o.timeout_s);
    t.connect = railbench::seconds_between(t0, Clock::now());
    run_phases(*b, o, t);
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const std::string results = o.results > 0 ? fmt::format("{:.4f}", t.results) : "-";
    const std::string gather = o.gather > 0 ? fmt::format("{:.4f}", t.gather) : "-";
    const std::string results_sent = o.results > 0 ? std::to_string(t.results_sent) : "-";
    const std::string gather_sent = o.gather > 0 ? std::to_string(t.gather_sent) : "-";
    const double cpu_s =
        usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    const std::string max = t.max >= 0 ? fmt::format("{:.6f}", t.max) : "-";
    fmt::print("{} {:.4f} {:.4f} {:.4f} {} {:.1f} {:.3f} {} {} {} {} {:.6f} {} {}\n", o.ranks, t.connect, t.hosts,
               t.block, results, usage.ru_maxrss / 1024.0, cpu_s, gather, t.block_sent, results_sent, gather_sent,
               t.barrier, max, b->layout());
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "rank 0: {}\n", e.what());
    return 1;
  }
}

// N-1 client ranks as threads; the count of those that failed (each says why).
int clients(const Options& o, const railbench::TcpRendezvous& where, int first, int last) {
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(last - first));
  for (int r = first; r < last; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto b = railbench::make_tcp_bootstrap(r, o.ranks, where, o.timeout_s);
        Timings t;
        run_phases(*b, o, t);
      } catch (const std::exception& e) {
        if (failed.fetch_add(1) < 5) fmt::print(stderr, "rank {}: {}\n", r, e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  return failed.load();
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// One option's value as a number, or UsageError naming the option.
template <class F>
auto number(const std::string& option, const std::string& value, F convert) {
  try {
    return convert(value);
  } catch (const std::logic_error&) {
    throw railbench::UsageError(fmt::format("{} '{}' is not a number: e.g. {} 1024", option, value, option));
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--ranks") {
      o.ranks = number(k, v, [](const std::string& s) { return std::stoi(s); });
    } else if (k == "--block") {
      o.block = number(k, v, [](const std::string& s) { return std::stoul(s); });
    } else if (k == "--results") {
      o.results = number(k, v, [](const std::string& s) { return std::stoul(s); });
    } else if (k == "--gather") {
      o.gather = number(k, v, [](const std::string& s) { return std::stoul(s); });
    } else if (k == "--topology") {
      if (v != "auto" && v != "star" && v != "tree")
        throw railbench::UsageError(fmt::format("--topology '{}' is not auto, star or tree", v));
      o.topology = v;
    } else if (k == "--timeout") {
      o.timeout_s = number(k, v, [](const std::string& s) { return std::stod(s); });
    } else {
      throw railbench::UsageError(
          fmt::format("unknown option '{}': give --ranks, --block, --results, --gather, --timeout, --topology", k));
    }
  }
  if (o.ranks < 2 || o.block == 0 || (argc - 1) % 2 != 0)
    throw railbench::UsageError(
        "give --ranks N (N >= 2) and --block above 0, each option with its value: e.g. --ranks 1024");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "railbench_rendezvous_sim: {}\n", e.what());
    return 2;
  }
  const railbench::TcpRendezvous where{fmt::format("127.0.0.1:{}", free_port()), "rendezvous-sim", false, "",
                                       o.topology};
  const pid_t pid = ::fork();
  if (pid < 0) {
    fmt::print(stderr, "railbench_rendezvous_sim: fork failed: {}\n", std::strerror(errno));
    return 1;
  }
  if (pid == 0) std::_Exit(rank0(o, where));
  // The client ranks' process holds a socket per client rank, and through the tree both
  // ends of every tree link and the parents' listeners too (about 3 N): past 4,096 ranks
  // the clients are split over processes of 4,096 ranks each, so none needs more than an
  // ordinary open-file limit, raised as rank 0 raises its own.
  constexpr int kRanksPerProcess = 4096;
  try {
    railbench::rendezvous::ensure_open_files(3 * std::min(o.ranks, kRanksPerProcess));
  } catch (const std::exception& e) {
    fmt::print(stderr, "railbench_rendezvous_sim: {}\n", e.what());
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    return 2;
  }
  std::vector<pid_t> others;
  int first = 1;
  while (o.ranks - first > kRanksPerProcess) {
    const int last = first + kRanksPerProcess;
    const pid_t child = ::fork();
    if (child == 0) std::_Exit(std::min(clients(o, where, first, last), 100));
    others.push_back(child);
    first = last;
  }
  int failed = clients(o, where, first, o.ranks);
  for (pid_t child : others) {
    int child_status = 0;
    ::waitpid(child, &child_status, 0);
    if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0)
      failed += WIFEXITED(child_status) ? WEXITSTATUS(child_status) : 1;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  const bool root_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (failed > 0 || !root_ok) {
    fmt::print(stderr, "railbench_rendezvous_sim: {} client rank(s) failed, rank 0 {}\n", failed,
               root_ok ? "succeeded" : "failed");
    return 1;
  }
  return 0;
}
