#include "lib/runtime/launch.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "lib/core/errors.h"
#include "lib/runtime/hostlist.h"

namespace railbench {

std::string to_string(Launcher l) {
  switch (l) {
    case Launcher::none: return "none";
    case Launcher::railbench: return "railbench";
    case Launcher::mpi: return "mpi";
    case Launcher::slurm: return "slurm";
    case Launcher::torchrun: return "torchrun";
  }
  return "?";
}

std::string LaunchInfo::describe() const {
  std::string vars;
  for (const auto& [name, value] : seen) vars += fmt::format("{}{}={}", vars.empty() ? "" : " ", name, value);
  return fmt::format("{} ({})", to_string(launcher), vars.empty() ? "no launcher variables" : vars);
}

EnvLookup process_environment() {
  return [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return (v && *v) ? v : nullptr;
  };
}

int slurm_rendezvous_port(unsigned long long job_id, unsigned long long step_id) {
  // 20000..29999: below Linux's ephemeral range (32768-60999), above the well-known and
  // most registered service ports. Steps of one job differ by step id; concurrent jobs
  // differ by job id unless their ids collide modulo the range (then RAILBENCH_PORT).
  constexpr unsigned long long kBase = 20000, kSpan = 10000;
  return static_cast<int>(kBase + (job_id * 16 + step_id) % kSpan);
}

namespace {

// Reads the variables one launcher uses and records each one it finds in `info.seen`,
// so that every error names what this process was given.
class Reader {
 public:
  Reader(const EnvLookup& env, LaunchInfo& info) : env_(env), info_(info) {}

  const char* get(const char* name) {
    const char* v = env_(name);
    if (v) info_.seen.emplace_back(name, v);
    return v;
  }
  bool has(const char* name) const { return env_(name) != nullptr; }

  // A whole number >= lo, or -1 when unset; a malformed value is a UsageError.
  long long number(const char* name, long long lo, long long hi = std::numeric_limits<int>::max()) {
    const char* v = get(name);
    if (!v) return -1;
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE || x < lo || x > hi) {
      fail(fmt::format("{}='{}' is not a whole number in {}..{}", name, v, lo, hi),
           fmt::format("fix or unset {}", name));
    }
    return x;
  }

  [[noreturn]] void fail(const std::string& problem, const std::string& fix) const {
    throw UsageError(
        fmt::format("{} launch: {}; this process saw {}: {}", to_string(info_.launcher), problem, seen_text(), fix));
  }

  std::string seen_text() const {
    std::string out;
    for (const auto& [name, value] : info_.seen) out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, value);
    return out.empty() ? "none of its variables" : out;
  }

 private:
  const EnvLookup& env_;
  LaunchInfo& info_;
};

void check_rank(Reader& r, const LaunchInfo& info, const char* rank_var, const char* size_var) {
  if (info.size < 1) r.fail(fmt::format("{} is {}", size_var, info.size), fmt::format("set {} to 1 or more", size_var));
  if (info.rank < 0 || info.rank >= info.size) {
    r.fail(fmt::format("{}={} is outside 0..{}", rank_var, info.rank, info.size - 1),
           fmt::format("give each process its own {} below {}", rank_var, size_var));
  }
}

// RAILBENCH_ROOT without RAILBENCH_RANK overrides where a Slurm or torchrun job meets
// (the first node's name may not resolve on the network the ranks share);
// RAILBENCH_PORT overrides only the port.
void apply_root_overrides(Reader& r, LaunchInfo& info, const std::string& host, int port, std::string origin) {
  if (const char* root = r.get("RAILBENCH_ROOT")) {
    info.rendezvous.root = root;
    info.rendezvous_origin = "RAILBENCH_ROOT";
    return;
  }
  if (r.has("RAILBENCH_PORT")) {
    port = static_cast<int>(r.number("RAILBENCH_PORT", 1, 65535));
    origin += ", port from RAILBENCH_PORT";
  }
  // An IPv6 literal needs brackets to be split from its port again.
  const bool v6 = host.find(':') != std::string::npos;
  info.rendezvous.root = v6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
  info.rendezvous_origin = std::move(origin);
}

void apply_common(Reader& r, LaunchInfo& info, const std::string& default_token) {
  const char* token = r.get("RAILBENCH_JOB_TOKEN");
  info.rendezvous.job_token = token ? token : default_token;
  // "any": every address; an address: that one (the root's name may resolve to one the
  // kernel does not own, behind NAT or in a container).
  if (const char* bind = r.get("RAILBENCH_BIND")) {
    if (std::string(bind) == "any")
      info.rendezvous.bind_any = true;
    else
      info.rendezvous.bind_address = bind;
  }
  if (const char* topology = r.get("RAILBENCH_BOOTSTRAP_TOPOLOGY")) {
    const std::string t = topology;
    if (t != "auto" && t != "star" && t != "tree")
      r.fail(fmt::format("RAILBENCH_BOOTSTRAP_TOPOLOGY={} is not a topology", t),
             "set it to auto (a tree from 64 ranks), star (every collective through rank 0) or tree");
    info.rendezvous.topology = t;
  }
}

bool detect_railbench(const EnvLookup& env, LaunchInfo& info) {
  if (!env("RAILBENCH_RANK") && !env("RAILBENCH_WORLD_SIZE")) return false;
  info.launcher = Launcher::railbench;
  Reader r(env, info);
  info.rank = static_cast<int>(r.number("RAILBENCH_RANK", 0));
  info.size = static_cast<int>(r.number("RAILBENCH_WORLD_SIZE", 1));
  const char* root = r.get("RAILBENCH_ROOT");
  if (info.rank < 0 || info.size < 0)
    r.fail("RAILBENCH_RANK and RAILBENCH_WORLD_SIZE go together", "set both (and RAILBENCH_ROOT=host:port of rank 0)");
  check_rank(r, info, "RAILBENCH_RANK", "RAILBENCH_WORLD_SIZE");
  if (info.size > 1 && !root)
    r.fail("RAILBENCH_ROOT is not set", "set RAILBENCH_ROOT=host:port of rank 0 on every rank (e.g. node001:29500)");
  const long long local = r.number("RAILBENCH_LOCAL_RANK", 0);
  info.local_rank = static_cast<int>(local);
  if (root) {
    info.rendezvous.root = root;
    info.rendezvous_origin = "RAILBENCH_ROOT";
  }
  // No derived token: ranks may name the root differently (an address, a host name), and
  // a different world size must reach rank 0 to be reported as such. Set
  // RAILBENCH_JOB_TOKEN to tell jobs apart.
  apply_common(r, info, "");
  return true;
}

bool detect_mpi(const EnvLookup& env, LaunchInfo& info) {
  // Open MPI's mpirun, PMIx launchers (srun --mpi=pmix, prterun) and PMI-1/2 launchers
  // (MPICH's hydra, srun --mpi=pmi2).
  if (!env("OMPI_COMM_WORLD_SIZE") && !env("PMIX_RANK") && !env("PMI_RANK") && !env("PMI_SIZE")) return false;
  info.launcher = Launcher::mpi;
  Reader r(env, info);
  long long rank = r.number("OMPI_COMM_WORLD_RANK", 0);
  if (rank < 0) rank = r.number("PMIX_RANK", 0);
  if (rank < 0) rank = r.number("PMI_RANK", 0);
  // The world size the launcher promised, checked against MPI_Init's (0: it does not say).
  long long size = r.number("OMPI_COMM_WORLD_SIZE", 1);
  if (size < 0) size = r.number("PMI_SIZE", 1);
  if (size < 0 && r.has("SLURM_STEP_ID")) size = r.number("SLURM_STEP_NUM_TASKS", 1);
  long long local = r.number("OMPI_COMM_WORLD_LOCAL_RANK", 0);
  if (local < 0) local = r.number("MPI_LOCALRANKID", 0);
  if (local < 0 && r.has("SLURM_STEP_ID")) local = r.number("SLURM_LOCALID", 0);
  info.rank = rank < 0 ? 0 : static_cast<int>(rank);
  info.size = size < 0 ? 0 : static_cast<int>(size);
  info.local_rank = static_cast<int>(local);
  if (const char* node = env("SLURMD_NODENAME"); node && r.has("SLURM_STEP_ID")) info.node_name = node;
  return true;
}

bool detect_slurm(const EnvLookup& env, LaunchInfo& info) {
  // Only inside a job step (srun): a batch script or an salloc shell also has
  // SLURM_PROCID and SLURM_NTASKS (the whole allocation's), but no step of its own.
  const char* step = env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : env("SLURM_STEPID");
  if (!env("SLURM_PROCID") || !step) return false;
  // Slurm's ids for the batch script (0xfffffffe) and extern (0xfffffffd) steps.
  const std::string step_text = step;
  if (step_text == "4294967294" || step_text == "4294967293" || step_text == "batch" || step_text == "extern")
    return false;
  info.launcher = Launcher::slurm;
  Reader r(env, info);
  info.rank = static_cast<int>(r.number("SLURM_PROCID", 0));
  long long size = r.number("SLURM_STEP_NUM_TASKS", 1);
  if (size < 0) size = r.number("SLURM_NTASKS", 1);
  if (size < 0) r.fail("neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is set", "run it with srun -n N");
  info.size = static_cast<int>(size);
  check_rank(r, info, "SLURM_PROCID", "SLURM_NTASKS");
  info.local_rank = static_cast<int>(r.number("SLURM_LOCALID", 0));
  if (const char* node = r.get("SLURMD_NODENAME")) info.node_name = node;
  const char* job_var = env("SLURM_JOB_ID") ? "SLURM_JOB_ID" : "SLURM_JOBID";
  const long long job = r.number(job_var, 0, std::numeric_limits<long long>::max());
  const long long step_id =
      r.number(env("SLURM_STEP_ID") ? "SLURM_STEP_ID" : "SLURM_STEPID", 0, std::numeric_limits<long long>::max());
  if (info.size == 1) {
    apply_common(r, info, "");
    return true;
  }
  const char* nodes = r.get("SLURM_STEP_NODELIST");
  if (!nodes && !r.has("RAILBENCH_ROOT"))
    r.fail("SLURM_STEP_NODELIST is not set, so rank 0's host is unknown",
           "run it with srun (which sets it), or set RAILBENCH_ROOT=host:port of task 0");
  if (job < 0 && !r.has("RAILBENCH_ROOT") && !r.has("RAILBENCH_PORT"))
    r.fail("SLURM_JOB_ID is not set, so the rendezvous port cannot be derived", "set RAILBENCH_PORT=<a free port>");
  std::string first;
  if (nodes) {
    try {
      first = expand_hostlist(nodes).front();
    } catch (const UsageError& e) {
      r.fail(fmt::format("SLURM_STEP_NODELIST='{}' is not a hostlist ({})", nodes, e.what()),
             "set RAILBENCH_ROOT=host:port of task 0");
    }
  }
  const int port = job < 0 ? 0 : slurm_rendezvous_port(job, step_id < 0 ? 0 : step_id);
  apply_root_overrides(r, info, first, port,
                       fmt::format("first host of SLURM_STEP_NODELIST, port from job {} step {}", job, step_id));
  apply_common(r, info, fmt::format("slurm:{}.{}", job, step_id));
  return true;
}

bool detect_torchrun(const EnvLookup& env, LaunchInfo& info) {
  if (!env("RANK") || !env("WORLD_SIZE")) return false;
  info.launcher = Launcher::torchrun;
  Reader r(env, info);
  info.rank = static_cast<int>(r.number("RANK", 0));
  info.size = static_cast<int>(r.number("WORLD_SIZE", 1));
  check_rank(r, info, "RANK", "WORLD_SIZE");
  info.local_rank = static_cast<int>(r.number("LOCAL_RANK", 0));
  const char* run_id = r.get("TORCHELASTIC_RUN_ID");
  if (info.size == 1) {
    apply_common(r, info, "");
    return true;
  }
  const char* addr = r.get("MASTER_ADDR");
  const long long port = r.number("MASTER_PORT", 1, 65535);
  if ((!addr || port < 0) && !r.has("RAILBENCH_ROOT"))
    r.fail("MASTER_ADDR or MASTER_PORT is not set, so rank 0's address is unknown",
           "set MASTER_ADDR=<rank 0's host> and MASTER_PORT=<a free port> on every rank");
  // Under torchrun the elastic agent's own store may already listen on MASTER_PORT: the
  // ranks meet one port above it.
  const bool agent = run_id != nullptr;
  const int our_port = static_cast<int>(agent ? (port < 65535 ? port + 1 : port - 1) : port);
  apply_root_overrides(
      r, info, addr ? addr : "", our_port,
      agent ? "MASTER_ADDR, MASTER_PORT+1 (torchrun's agent holds MASTER_PORT)" : "MASTER_ADDR:MASTER_PORT");
  apply_common(r, info, run_id ? fmt::format("torchrun:{}", run_id) : fmt::format("torchrun:{}", port));
  return true;
}

}  // namespace

LaunchInfo detect_launch(const EnvLookup& env) {
  LaunchInfo info;
  if (detect_railbench(env, info)) return info;
  info = {};
  if (detect_mpi(env, info)) return info;
  info = {};
  if (detect_slurm(env, info)) return info;
  info = {};
  if (detect_torchrun(env, info)) return info;
  info = {};
  if (env("RAILBENCH_ROOT")) {
    throw UsageError(
        fmt::format("RAILBENCH_ROOT={} is set but RAILBENCH_RANK and RAILBENCH_WORLD_SIZE are not, and no launcher "
                    "(mpirun, srun, torchrun) gives a rank: set all three (RAILBENCH_ROOT=host:port of rank 0)",
                    env("RAILBENCH_ROOT")));
  }
  return info;
}

}  // namespace railbench
