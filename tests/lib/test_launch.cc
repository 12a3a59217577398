// Launcher detection from each launcher's environment, without starting one.
#include <map>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "lib/core/errors.h"
#include "lib/runtime/launch.h"

using namespace railbench;

namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return (it == vars.end() || it->second.empty()) ? nullptr : it->second.c_str();
    };
  }
};

LaunchInfo detect(const std::map<std::string, std::string>& vars) {
  FakeEnv env{vars};
  return detect_launch(env.lookup());
}

// What srun sets for task `procid` of a 4-task step on two nodes (2 per node).
std::map<std::string, std::string> srun_task(int procid) {
  return {{"SLURM_JOB_ID", "1234"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_NTASKS", "4"},
          {"SLURM_STEP_NUM_TASKS", "4"},
          {"SLURM_LOCALID", std::to_string(procid % 2)},
          {"SLURM_STEP_NODELIST", "gpu[007-008]"},
          {"SLURMD_NODENAME", procid < 2 ? "gpu007" : "gpu008"},
          {"SLURM_JOB_NODELIST", "gpu[007-008]"}};
}

}  // namespace

TEST_CASE("no launcher: one rank", "[launch]") {
  auto l = detect({{"HOME", "/root"}});
  CHECK(l.launcher == Launcher::none);
  CHECK(l.size == 1);
  CHECK_FALSE(l.uses_tcp());
}

TEST_CASE("RAILBENCH_* by hand comes first", "[launch]") {
  auto vars = srun_task(3);
  vars["RAILBENCH_RANK"] = "1";
  vars["RAILBENCH_WORLD_SIZE"] = "2";
  vars["RAILBENCH_ROOT"] = "node001:29500";
  vars["OMPI_COMM_WORLD_SIZE"] = "8";
  auto l = detect(vars);
  CHECK(l.launcher == Launcher::railbench);
  CHECK(l.rank == 1);
  CHECK(l.size == 2);
  CHECK(l.rendezvous.root == "node001:29500");
  CHECK(l.rendezvous.job_token.empty());  // ranks may spell the root differently
  CHECK(l.uses_tcp());

  vars["RAILBENCH_JOB_TOKEN"] = "secret-42";
  CHECK(detect(vars).rendezvous.job_token == "secret-42");

  vars.erase("RAILBENCH_ROOT");
  CHECK_THROWS_WITH(detect(vars), Catch::Contains("RAILBENCH_ROOT is not set") && Catch::Contains("RAILBENCH_RANK=1") &&
                                      Catch::Contains("host:port"));
  CHECK_THROWS_WITH(detect({{"RAILBENCH_RANK", "0"}}), Catch::Contains("go together"));
  CHECK_THROWS_WITH(detect({{"RAILBENCH_RANK", "2"}, {"RAILBENCH_WORLD_SIZE", "2"}, {"RAILBENCH_ROOT", "h:1"}}),
                    Catch::Contains("outside 0..1"));
  CHECK_THROWS_AS(detect({{"RAILBENCH_RANK", "x"}, {"RAILBENCH_WORLD_SIZE", "2"}}), UsageError);
  // RAILBENCH_ROOT alone with no launcher to give a rank: refused, not a single rank.
  CHECK_THROWS_WITH(detect({{"RAILBENCH_ROOT", "h:1"}}), Catch::Contains("RAILBENCH_RANK"));
}

TEST_CASE("MPI launchers: Open MPI, srun --mpi=pmix, PMI", "[launch]") {
  auto l = detect({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  CHECK(l.launcher == Launcher::mpi);
  CHECK(l.rank == 2);
  CHECK(l.size == 4);
  CHECK(l.local_rank == 0);
  CHECK_FALSE(l.uses_tcp());

  // srun --mpi=pmix: PMIx's rank plus the Slurm step; MPI wins over the Slurm rendezvous.
  auto vars = srun_task(3);
  vars["PMIX_RANK"] = "3";
  l = detect(vars);
  CHECK(l.launcher == Launcher::mpi);
  CHECK(l.rank == 3);
  CHECK(l.size == 4);
  CHECK(l.local_rank == 1);
  CHECK(l.node_name == "gpu008");

  l = detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}});
  CHECK(l.launcher == Launcher::mpi);
  CHECK(l.size == 2);
  CHECK(l.local_rank == 1);
}

TEST_CASE("Slurm job step without MPI: rank 0 is the first host of the step", "[launch]") {
  auto l0 = detect(srun_task(0));
  auto l3 = detect(srun_task(3));
  CHECK(l0.launcher == Launcher::slurm);
  CHECK(l3.rank == 3);
  CHECK(l3.size == 4);
  CHECK(l3.local_rank == 1);
  CHECK(l3.node_name == "gpu008");
  CHECK(l3.uses_tcp());
  const std::string root = fmt::format("gpu007:{}", slurm_rendezvous_port(1234, 0));
  CHECK(l0.rendezvous.root == root);
  CHECK(l3.rendezvous.root == root);
  CHECK(l0.rendezvous.job_token == l3.rendezvous.job_token);
  CHECK(l3.rendezvous.job_token == "slurm:1234.0");

  // Another step of the same job, and another job, meet elsewhere and with another token.
  auto step1 = srun_task(0);
  step1["SLURM_STEP_ID"] = "1";
  CHECK(detect(step1).rendezvous.root != root);
  CHECK(detect(step1).rendezvous.job_token != l0.rendezvous.job_token);
  auto job2 = srun_task(0);
  job2["SLURM_JOB_ID"] = "1235";
  CHECK(detect(job2).rendezvous.root != root);

  auto port = srun_task(2);
  port["RAILBENCH_PORT"] = "31000";
  CHECK(detect(port).rendezvous.root == "gpu007:31000");
  auto over = srun_task(2);
  over["RAILBENCH_ROOT"] = "10.1.0.7:29500";
  CHECK(detect(over).rendezvous.root == "10.1.0.7:29500");
  CHECK(detect(over).rank == 2);
}

TEST_CASE("Slurm: a batch script or salloc shell is not a job step", "[launch]") {
  // sbatch's script has the allocation's task count but runs once: it must not wait for
  // the other tasks of a step that was never started.
  auto l =
      detect({{"SLURM_JOB_ID", "77"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"}, {"SLURM_NODELIST", "n[1-2]"}});
  CHECK(l.launcher == Launcher::none);
  CHECK(l.size == 1);
  auto batch = srun_task(0);
  batch["SLURM_STEP_ID"] = "4294967294";
  CHECK(detect(batch).launcher == Launcher::none);
}

TEST_CASE("Slurm: a step that cannot make a job names what it saw", "[launch]") {
  auto vars = srun_task(1);
  vars.erase("SLURM_STEP_NODELIST");
  CHECK_THROWS_WITH(detect(vars), Catch::Contains("SLURM_STEP_NODELIST is not set") &&
                                      Catch::Contains("SLURM_PROCID=1") && Catch::Contains("RAILBENCH_ROOT"));
  vars = srun_task(1);
  vars["SLURM_STEP_NODELIST"] = "gpu[3-";
  CHECK_THROWS_WITH(detect(vars), Catch::Contains("not a hostlist"));
  vars = srun_task(1);
  vars["SLURM_PROCID"] = "9";
  CHECK_THROWS_WITH(detect(vars), Catch::Contains("SLURM_PROCID=9 is outside 0..3"));
  vars = srun_task(1);
  vars.erase("SLURM_JOB_ID");
  CHECK_THROWS_WITH(detect(vars), Catch::Contains("RAILBENCH_PORT"));
  // One task needs no rendezvous.
  vars = srun_task(0);
  vars["SLURM_STEP_NUM_TASKS"] = "1";
  vars["SLURM_NTASKS"] = "1";
  CHECK_FALSE(detect(vars).uses_tcp());
}

TEST_CASE("Slurm's rendezvous port stays in 20000..29999", "[launch]") {
  for (unsigned long long job : {0ULL, 1ULL, 9999ULL, 123456789ULL, 18446744073709551615ULL}) {
    for (unsigned long long step : {0ULL, 1ULL, 15ULL, 4294967295ULL}) {
      const int p = slurm_rendezvous_port(job, step);
      CHECK(p >= 20000);
      CHECK(p <= 29999);
    }
  }
  CHECK(slurm_rendezvous_port(1234, 0) != slurm_rendezvous_port(1234, 1));
}

TEST_CASE("torchrun and Kubernetes indexed Jobs", "[launch]") {
  std::map<std::string, std::string> k8s = {{"RANK", "3"},
                                            {"WORLD_SIZE", "4"},
                                            {"LOCAL_RANK", "0"},
                                            {"MASTER_ADDR", "railbench-0.railbench"},
                                            {"MASTER_PORT", "29500"}};
  auto l = detect(k8s);
  CHECK(l.launcher == Launcher::torchrun);
  CHECK(l.rank == 3);
  CHECK(l.size == 4);
  CHECK(l.local_rank == 0);
  CHECK(l.rendezvous.root == "railbench-0.railbench:29500");

  // Under torchrun its agent's store holds MASTER_PORT.
  auto torchrun = k8s;
  torchrun["TORCHELASTIC_RUN_ID"] = "abc";
  l = detect(torchrun);
  CHECK(l.rendezvous.root == "railbench-0.railbench:29501");
  CHECK(l.rendezvous.job_token == "torchrun:abc");

  auto v6 = k8s;
  v6["MASTER_ADDR"] = "fd00::7";
  CHECK(detect(v6).rendezvous.root == "[fd00::7]:29500");

  auto missing = k8s;
  missing.erase("MASTER_ADDR");
  CHECK_THROWS_WITH(detect(missing),
                    Catch::Contains("MASTER_ADDR") && Catch::Contains("RANK=3") && Catch::Contains("WORLD_SIZE=4"));
  auto bad_port = k8s;
  bad_port["MASTER_PORT"] = "99999";
  CHECK_THROWS_WITH(detect(bad_port), Catch::Contains("MASTER_PORT='99999'"));

  // A Slurm step wins over torchrun-style variables that happen to be exported too.
  auto both = srun_task(1);
  both.insert(k8s.begin(), k8s.end());
  CHECK(detect(both).launcher == Launcher::slurm);
}

TEST_CASE("RAILBENCH_BIND: any, or one address", "[launch]") {
  auto vars = srun_task(0);
  vars["RAILBENCH_BIND"] = "any";
  CHECK(detect(vars).rendezvous.bind_any);
  vars["RAILBENCH_BIND"] = "10.0.0.7";
  CHECK_FALSE(detect(vars).rendezvous.bind_any);
  CHECK(detect(vars).rendezvous.bind_address == "10.0.0.7");
  CHECK_FALSE(detect(srun_task(0)).rendezvous.bind_any);
  CHECK(detect(srun_task(0)).rendezvous.bind_address.empty());
}

TEST_CASE("RAILBENCH_BOOTSTRAP_TOPOLOGY: auto, star or tree", "[launch]") {
  auto vars = srun_task(0);
  CHECK(detect(vars).rendezvous.topology == "auto");
  vars["RAILBENCH_BOOTSTRAP_TOPOLOGY"] = "star";
  CHECK(detect(vars).rendezvous.topology == "star");
  vars["RAILBENCH_BOOTSTRAP_TOPOLOGY"] = "tree";
  CHECK(detect(vars).rendezvous.topology == "tree");
  vars["RAILBENCH_BOOTSTRAP_TOPOLOGY"] = "ring";
  CHECK_THROWS_WITH(detect(vars), Catch::Contains("RAILBENCH_BOOTSTRAP_TOPOLOGY=ring is not a topology") &&
                                      Catch::Contains("auto") && Catch::Contains("star"));
}
