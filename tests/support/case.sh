# shellcheck shell=bash
# shellcheck disable=SC2034  # here, rb_root and work are for the sourcing case
# The one way a shell case under tests/ starts, ends and fails. Source it first:
#   source "$(dirname "$0")/../support/case.sh"
# It sets `set -uo pipefail` (add `set -e` after it if the case wants it), $here (the
# case's own folder), $rb_root (the source tree) and rb_mpirun / rb_mpirun_deadline
# (scripts/lib/mpirun.sh), and defines:
#   case_work            $work: a fresh folder, removed at exit whatever happens (kept,
#                        and named, with RAILBENCH_KEEP_WORK=1)
#   case_on_exit CMD     runs CMD (a string for eval) at exit, before $work goes, in the
#                        order given
#   case_started PID...  processes this case started: killed (SIGKILL) at exit; only
#                        these are ever killed
#   case_logs FILE...    what `fail` shows the tail of (default: every file in $work
#                        whose name has out, err or log in it)
#   fail MESSAGE...      "FAIL: MESSAGE", the last RAILBENCH_FAIL_TAIL (30) lines of each
#                        non-empty log, exit 1: say what was expected and what came
#   expect_eq WHAT WANT GOT      fail "WHAT: expected 'WANT', got 'GOT'" unless equal
#   expect_grep REGEX FILE [WHAT] fail unless a line of FILE matches the ERE REGEX
#   skip REASON          "SKIP: REASON", exit 77 (ctest: skipped)
#   with_deadline SECONDS COMMAND...  COMMAND (a program or a shell function) ended at
#                        SECONDS (SIGTERM, then SIGKILL 10 s later); exit 124 = the deadline
#   case_mpirun_ok DEADLINE NP COMMAND...  rb_mpirun_deadline, stdout in $work/out (and
#                        printed), stderr in $work/err; fail unless it exits 0
#   case_bin NAME        the path of build binary NAME, beside the railbench given as $rb
#                        (or $RAILBENCH_BUILD_DIR, or the folder ctest runs in, build/tests/..)
#   free_port            a TCP port free on 127.0.0.1 now
#   case_su_up PREFIX    a simulated SU of network namespaces for this case (scripts/netns-su,
#                        as root; 77 where namespaces cannot be made): sets $su, makes
#                        $work readable by the ranks, tears the SU down at exit
set -uo pipefail
rb_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[1]:-$0}")" && pwd)
# shellcheck source=scripts/lib/mpirun.sh
source "$rb_root/scripts/lib/mpirun.sh"

work=""
case_exit_cmds=()
case_pids=()
case_log_files=()

case_work() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/rbcase.XXXXXX")
  trap case_cleanup EXIT
}

case_on_exit() { case_exit_cmds+=("$1"); }
case_started() { case_pids+=("$@"); }
case_logs() { case_log_files=("$@"); }

case_cleanup() {
  local c p
  for p in "${case_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for c in "${case_exit_cmds[@]}"; do eval "$c" || true; done
  [[ -n $work ]] || return 0
  if [[ ${RAILBENCH_KEEP_WORK:-0} == 1 ]]; then
    echo "(kept the work folder $work)"
  else
    rm -rf "$work"
  fi
}

fail() {
  echo "FAIL: $*"
  local -a logs=("${case_log_files[@]}")
  local f
  if ((${#logs[@]} == 0)) && [[ -n $work && -d $work ]]; then
    for f in "$work"/*out* "$work"/*err* "$work"/*log*; do logs+=("$f"); done
  fi
  for f in "${logs[@]}"; do
    [[ -f $f && -s $f ]] || continue
    echo "--- last lines of ${f#"$work"/}"
    tail -n "${RAILBENCH_FAIL_TAIL:-30}" "$f"
  done
  exit 1
}

expect_eq() {
  [[ $2 == "$3" ]] || fail "$1: expected '$2', got '$3'"
}

expect_grep() {
  local regex=$1 file=$2 what=${3:-}
  grep -Eq -- "$regex" "$file" 2>/dev/null ||
    fail "${what:+$what: }expected a line matching /$regex/ in ${file#"$work"/}"
}

skip() {
  echo "SKIP: $*"
  exit 77
}

with_deadline() {
  local deadline=$1
  shift
  if declare -F "$1" >/dev/null; then
    timeout --kill-after=10 "$deadline" bash -c "$(declare -f); $(printf '%q ' "$@")"
  else
    timeout --kill-after=10 "$deadline" "$@"
  fi
}

case_mpirun_ok() {
  local deadline=$1 rc
  rb_mpirun_deadline "$@" >"$work/out" 2>"$work/err"
  rc=$?
  cat "$work/out"
  ((rc == 0)) || fail "expected exit 0, got $rc (124: the deadline of ${deadline} s)"
}

case_bin() {
  local dir=${RAILBENCH_BUILD_DIR:-}
  if [[ -z $dir ]]; then
    if [[ -n ${rb:-} && -x ${rb:-} ]]; then dir=$(dirname "$rb"); else dir=$(cd .. && pwd); fi
  fi
  echo "$dir/$1"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

case_su_up() {
  su="$rb_root/scripts/netns-su"
  export RB_SU_PREFIX=$1
  export RB_SU_STATE="/run/railbench-netns-su/$RB_SU_PREFIX"
  if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null || ! ip netns add "$RB_SU_PREFIX-probe" 2>/dev/null; then
    skip "network namespaces need root and iproute2 on this host"
  fi
  ip netns del "$RB_SU_PREFIX-probe"
  [[ -n $work ]] || case_work
  chmod 755 "$work"
  case_on_exit '"$su/down.sh" >/dev/null 2>&1 || true'
  "$su/down.sh" >/dev/null 2>&1 || true
}
