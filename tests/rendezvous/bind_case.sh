#!/usr/bin/env bash
# Where rank 0 of the TCP rendezvous listens (lib/runtime/README.md, "The rendezvous:
# who may join"), with the railbench binary:
#   1. RAILBENCH_ROOT's host is not this machine's: exit 2 naming the host, its address
#      and the fix (RAILBENCH_BIND);
#   2. Debian's /etc/hosts maps the machine's own name to 127.0.1.1: with
#      RAILBENCH_ROOT=<hostname>:port on both ranks the job runs, and rank 0 listens on
#      127.0.1.1 only (127.0.0.1 is refused). Run in a private mount namespace with such
#      an /etc/hosts bind-mounted (needs root and unshare; else this part is skipped);
#   3. RAILBENCH_BIND=any: rank 0 listens on every address whatever the root's host.
#   bind_case.sh RAILBENCH
#   bind_case.sh --in-namespace RAILBENCH HOSTNAME   (part 2, inside the namespace)
source "$(dirname "$0")/../support/case.sh"
set -e
inner=""
if [[ $1 == --in-namespace ]]; then
  inner=$3
  shift
fi
rb=$1
case_work
run_cmd=(allreduce -t ofi:tcp --rails lo -c -b 1K -e 16K --timeout 20)

# Starts rank R with ROOT (and extra environment) in the background: its pid in $pid.
start_rank() {
  local r=$1 root=$2
  shift 2
  env "$@" RAILBENCH_RANK="$r" RAILBENCH_WORLD_SIZE=2 RAILBENCH_ROOT="$root" \
    timeout 60 "$rb" "${run_cmd[@]}" >"$work/rank$r.out" 2>"$work/rank$r.err" &
  pid=$!
  case_started "$pid"
}
# True when something accepts TCP connections at $1:$2.
listening() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }
wait_listening() {
  for _ in $(seq 100); do listening "$1" "$2" && return 0; sleep 0.1; done
  return 1
}
run_pair() {  # ROOT0 ROOT1 [VAR=value...]: both ranks must exit 0
  local root0=$1 root1=$2
  shift 2
  start_rank 0 "$root0" "$@"
  local p0=$pid
  wait_listening "${root1%:*}" "${root1##*:}" || fail "rank 0 never listened at $root1"
  if [[ -n ${also_refused:-} ]]; then
    ! listening "$also_refused" "${root1##*:}" || fail "rank 0 also listens on $also_refused"
    echo "ok: rank 0 does not listen on $also_refused"
  fi
  start_rank 1 "$root1" "$@"
  local p1=$pid rc0=0 rc1=0
  wait "$p0" || rc0=$?
  wait "$p1" || rc1=$?
  ((rc0 == 0 && rc1 == 0)) || fail "ranks exited $rc0 $rc1 (roots $root0, $root1)"
}

if [[ -n $inner ]]; then
  getent ahostsv4 "$inner" | grep '^127\.0\.1\.1 ' >/dev/null || fail "$inner does not resolve to 127.0.1.1 here"
  port=$(free_port)
  also_refused=127.0.0.1 run_pair "$inner:$port" "$inner:$port"
  echo "ok: RAILBENCH_ROOT=$inner:$port with $inner -> 127.0.1.1 in /etc/hosts: the job ran"
  exit 0
fi

# 1. Not an address of this machine (192.0.2.1 is TEST-NET-1).
port=$(free_port)
rc=0
RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=2 RAILBENCH_ROOT=192.0.2.1:$port \
  timeout 30 "$rb" "${run_cmd[@]}" >"$work/notlocal.out" 2>"$work/notlocal.err" || rc=$?
err=$(cat "$work/notlocal.err")
[[ $rc == 2 ]] || fail "root host not local: exit $rc, expected 2"
for want in "'192.0.2.1'" "not an address of this machine" "RAILBENCH_BIND=any"; do
  [[ $err == *"$want"* ]] || fail "root host not local: the error lacks \"$want\": $err"
done
echo "ok: a root host that is not this machine's: exit 2: $(tail -1 "$work/notlocal.err")"

# 2. Debian's hostname -> 127.0.1.1.
if (($(id -u) == 0)) && unshare -m true 2>/dev/null; then
  name=$(hostname)
  printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$name" >"$work/hosts"
  # shellcheck disable=SC2016  # expanded by the inner bash
  unshare -m bash -c 'mount --bind "$1" /etc/hosts && exec "$2" --in-namespace "$3" "$4"' _ \
    "$work/hosts" "$here/bind_case.sh" "$rb" "$name" || fail "the 127.0.1.1 case failed (above)"
else
  echo "skip: the 127.0.1.1 case needs root and unshare -m"
fi

# 3. RAILBENCH_BIND=any: rank 0's root host is not its own, yet it listens everywhere.
port=$(free_port)
run_pair "192.0.2.1:$port" "127.0.0.1:$port" RAILBENCH_BIND=any
echo "ok: RAILBENCH_BIND=any listens on every address"
echo PASS
