// Which launcher started this process, read from the environment before anything joins
// a job: the rank, the world size, where the ranks meet, and what the launcher says
// about the node (local rank, node name). Pure: the environment is passed in, so every
// launcher's variables are unit-tested without starting one.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lib/runtime/bootstrap.h"

namespace railbench {

enum class Launcher {
  none,       // no launcher: a single rank
  railbench,  // RAILBENCH_RANK / RAILBENCH_WORLD_SIZE / RAILBENCH_ROOT set by hand or a script
  mpi,        // mpirun, srun --mpi=pmix, a PMI-1/2 launcher: MPI_COMM_WORLD
  slurm,      // srun without MPI: SLURM_PROCID etc., over the TCP rendezvous
  torchrun,   // RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (torchrun, Kubernetes indexed Jobs)
};

std::string to_string(Launcher l);

struct LaunchInfo {
  Launcher launcher = Launcher::none;
  // Why this launcher: the variables that decided it, as NAME=value.
  std::vector<std::pair<std::string, std::string>> seen;
  int rank = 0;
  int size = 1;
  int local_rank = -1;    // -1: the launcher does not say (then ranks on one host are counted)
  std::string node_name;  // the launcher's name for this node ("": use the hostname)
  // For the TCP rendezvous (railbench, slurm, torchrun launches of more than one rank).
  TcpRendezvous rendezvous;
  // How root's address and port were chosen, for `railbench info` ("first host of
  // SLURM_STEP_NODELIST, port from job 1234 step 0").
  std::string rendezvous_origin;

  // By hand, a given RAILBENCH_ROOT is used (and so checked) even for one rank.
  bool uses_tcp() const {
    if (launcher == Launcher::railbench) return size > 1 || !rendezvous.root.empty();
    return size > 1 && launcher != Launcher::mpi;
  }
  // "slurm: SLURM_PROCID=1 SLURM_NTASKS=4 ..." for info and errors.
  std::string describe() const;
};

// Looks a variable up; nullptr when unset. Empty values count as unset.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup process_environment();

// First match wins: RAILBENCH_* > MPI/PMIx/PMI > Slurm job step > torchrun-style.
// Throws UsageError naming the variables it saw when a launcher says there is more than
// one rank but its variables cannot make a job (never a silent single-rank run).
LaunchInfo detect_launch(const EnvLookup& env);

// The port a Slurm job step's ranks meet on when RAILBENCH_PORT is not set: the same on
// every rank of the step, different for the steps of one job and for concurrent jobs
// (up to collisions of the hash), outside Linux's ephemeral range.
int slurm_rendezvous_port(unsigned long long job_id, unsigned long long step_id);

}  // namespace railbench
