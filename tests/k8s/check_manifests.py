#!/usr/bin/env python3
"""Checks the shipped Kubernetes manifests (scripts/k8s) for the fields railbench needs.

check_manifests.py MPIJOB.yaml INDEXED_JOB.yaml
  MPIJob (Kubeflow MPI Operator): apiVersion kubeflow.org/v2beta1, kind MPIJob, one
  launcher whose command runs mpirun with railbench, -np = worker replicas x
  slotsPerWorker, --map-by ppr:<slots>:node, workers asking for one GPU per slot.
  Indexed Job: completionMode Indexed, completions == parallelism == WORLD_SIZE, RANK
  from the completion index, every variable railbench reads (RANK, WORLD_SIZE,
  LOCAL_RANK, MASTER_ADDR, MASTER_PORT), MASTER_ADDR = <job>-0.<headless service> and
  the pods in that service's subdomain, MASTER_PORT a port the service exposes.
Then it breaks each manifest in the ways these checks exist for and makes sure every
breakage is caught (a check that cannot fail proves nothing). Prints PASS or the
first problem; exit 0 or 1.
"""
import copy
import os
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402

TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
INDEX_ANNOTATION = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


class Problem(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Problem(msg)


def containers(pod_template):
    return pod_template["spec"]["containers"]


def check_mpijob(docs):
    jobs = [d for d in docs if d and d.get("kind") == "MPIJob"]
    need(len(jobs) == 1, f"expected one MPIJob, found {len(jobs)}")
    job = jobs[0]
    need(job.get("apiVersion") == "kubeflow.org/v2beta1",
         f"MPIJob apiVersion is {job.get('apiVersion')!r}, want kubeflow.org/v2beta1")
    spec = job["spec"]
    slots = spec.get("slotsPerWorker")
    need(isinstance(slots, int) and slots >= 1, f"slotsPerWorker {slots!r}: want a positive integer")
    replicas = spec.get("mpiReplicaSpecs", {})
    need("Launcher" in replicas and "Worker" in replicas, "mpiReplicaSpecs needs a Launcher and a Worker")
    need(replicas["Launcher"].get("replicas") == 1, "exactly one launcher replica")
    workers = replicas["Worker"].get("replicas")
    need(isinstance(workers, int) and workers >= 1, f"Worker replicas {workers!r}: want a positive integer")

    launcher = containers(replicas["Launcher"]["template"])
    need(len(launcher) == 1, "the launcher pod has one container")
    cmd = [str(a) for a in (launcher[0].get("command") or []) + (launcher[0].get("args") or [])]
    need(cmd and cmd[0] == "mpirun", f"the launcher runs mpirun first, not {cmd[:1]}")
    need("railbench" in cmd, "the launcher's mpirun starts railbench")
    rb = cmd.index("railbench")
    need(rb + 1 < len(cmd) and cmd[rb + 1] in ("validate", "allreduce", "alltoall", "sendrecv", "allgather",
                                                  "reducescatter", "kvcache"),
         "railbench is followed by its subcommand")
    mpirun_opts = cmd[:rb]
    need("-np" in mpirun_opts, "mpirun -np is given")
    np_ = int(mpirun_opts[mpirun_opts.index("-np") + 1])
    need(np_ == workers * slots, f"mpirun -np {np_} but {workers} workers x {slots} slots = {workers * slots}")
    need("--map-by" in mpirun_opts and mpirun_opts[mpirun_opts.index("--map-by") + 1] == f"ppr:{slots}:node",
         f"mpirun --map-by ppr:{slots}:node keeps a node's ranks consecutive")
    if cmd[rb + 1] == "validate":
        need("--config" in cmd[rb:], "railbench validate has --config")

    worker = containers(replicas["Worker"]["template"])
    need(len(worker) == 1, "the worker pod has one container")
    limits = worker[0].get("resources", {}).get("limits", {})
    need(int(limits.get("nvidia.com/gpu", 0)) == slots, f"each worker asks for {slots} GPUs (one per slot)")
    need(any(k.startswith("rdma/") or "rdma" in k for k in limits), "each worker asks for an RDMA device")


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def check_indexed_job(docs):
    jobs = [d for d in docs if d and d.get("kind") == "Job"]
    svcs = [d for d in docs if d and d.get("kind") == "Service"]
    need(len(jobs) == 1, f"expected one Job, found {len(jobs)}")
    need(len(svcs) == 1, f"expected one Service, found {len(svcs)}")
    job, svc = jobs[0], svcs[0]
    need(job.get("apiVersion") == "batch/v1", f"Job apiVersion {job.get('apiVersion')!r}, want batch/v1")
    name, svc_name = job["metadata"]["name"], svc["metadata"]["name"]
    spec = job["spec"]
    need(spec.get("completionMode") == "Indexed", f"completionMode {spec.get('completionMode')!r}, want Indexed")
    need(svc["spec"].get("clusterIP") == "None", "the Service is headless (clusterIP: None)")
    need(svc["spec"].get("selector", {}).get("job-name") == name, f"the Service selects job-name: {name}")
    pod = spec["template"]["spec"]
    need(pod.get("subdomain") == svc_name, f"the pods' subdomain is the Service ({svc_name}), so <job>-0 resolves")

    c = containers(spec["template"])
    need(len(c) == 1, "one container per pod")
    cmd = [str(a) for a in (c[0].get("command") or []) + (c[0].get("args") or [])]
    need(any("railbench" in a for a in cmd), "the container runs railbench")
    env = env_of(c[0])
    for var in TORCHRUN_VARS:
        need(var in env, f"{var} is set (railbench reads it)")

    def value(var):
        need("value" in env[var], f"{var} has a literal value")
        return str(env[var]["value"])

    world = int(value("WORLD_SIZE"))
    need(spec.get("completions") == world, f"completions {spec.get('completions')} != WORLD_SIZE {world}")
    need(spec.get("parallelism") == world, f"parallelism {spec.get('parallelism')} != WORLD_SIZE {world}")
    rank = env["RANK"]
    from_index = rank.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == INDEX_ANNOTATION
    from_shell = any("JOB_COMPLETION_INDEX" in a and "RANK" in a for a in cmd)
    need(from_index or from_shell, "RANK comes from the completion index")
    need(value("MASTER_ADDR").split(".")[:2] == [f"{name}-0", svc_name],
         f"MASTER_ADDR {value('MASTER_ADDR')!r} is not {name}-0.{svc_name} (rank 0's pod)")
    port = int(value("MASTER_PORT"))
    need(port in [p.get("port") for p in svc["spec"].get("ports", [])], f"the Service exposes MASTER_PORT {port}")
    need(0 <= int(value("LOCAL_RANK")), "LOCAL_RANK is a number")


def breakages_mpijob(docs):
    def mj(d):
        return next(x for x in d if x and x.get("kind") == "MPIJob")

    def launcher_cmd(d):
        return containers(mj(d)["spec"]["mpiReplicaSpecs"]["Launcher"]["template"])[0]["command"]

    yield "wrong apiVersion", lambda d: mj(d).update(apiVersion="kubeflow.org/v1")
    yield "slots changed alone", lambda d: mj(d)["spec"].update(slotsPerWorker=4)
    yield "workers changed alone", lambda d: mj(d)["spec"]["mpiReplicaSpecs"]["Worker"].update(replicas=5)
    yield "no railbench", lambda d: launcher_cmd(d).remove("railbench")
    yield "no mpirun", lambda d: launcher_cmd(d).__setitem__(0, "srun")


def breakages_indexed(docs):
    def job(d):
        return next(x for x in d if x and x.get("kind") == "Job")

    def env(d):
        return env_of(containers(job(d)["spec"]["template"])[0])

    yield "not Indexed", lambda d: job(d)["spec"].update(completionMode="NonIndexed")
    yield "completions != WORLD_SIZE", lambda d: job(d)["spec"].update(completions=3)
    yield "parallelism != WORLD_SIZE", lambda d: job(d)["spec"].update(parallelism=2)
    yield "MASTER_ADDR elsewhere", lambda d: env(d)["MASTER_ADDR"].update(value="railbench-master")
    yield "no subdomain", lambda d: job(d)["spec"]["template"]["spec"].pop("subdomain")
    for var in TORCHRUN_VARS:
        yield f"no {var}", lambda d, v=var: containers(job(d)["spec"]["template"])[0]["env"].remove(env(d)[v])


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2])
        sys.exit(2)
    loaded = []
    for path in sys.argv[1:]:
        with open(path) as f:
            loaded.append(list(yaml.safe_load_all(f)))
    mpijob, indexed = loaded
    for what, check, docs, breakages in (("MPIJob", check_mpijob, mpijob, breakages_mpijob),
                                         ("indexed Job", check_indexed_job, indexed, breakages_indexed)):
        try:
            check(docs)
        except (Problem, KeyError, ValueError, TypeError) as e:
            rbtest.fail(f"{what} ({sys.argv[1] if what == 'MPIJob' else sys.argv[2]}): {e}")
        caught = 0
        for name, breakage in breakages(docs):
            broken = copy.deepcopy(docs)
            breakage(broken)
            try:
                check(broken)
            except (Problem, KeyError, ValueError, TypeError) as e:
                caught += 1
                print(f"ok: {what} with {name} is refused: {e}")
                continue
            rbtest.fail(f"the check accepts the {what} with {name}")
        print(f"ok: {what} has what railbench needs ({caught} breakages caught)")
    print("PASS")


if __name__ == "__main__":
    main()
