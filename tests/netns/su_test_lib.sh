# shellcheck shell=bash
# shellcheck disable=SC2034  # su and work are for the sourcing test
# Sourced by the tests that build a simulated SU (scripts/netns-su), so each says only
# what it builds and checks:
#   rb_su_test_setup PREFIX
# sets $su (the netns-su scripts) and $work (a fresh directory, readable by the ranks),
# exports RB_SU_PREFIX / RB_SU_STATE for this test's own SU (one prefix per test, so a
# leftover of one never meets another), exits 77 (ctest: skipped) where network
# namespaces cannot be made (not root, no iproute2), removes what a killed earlier run
# of the same test left, and installs an EXIT trap that tears the SU down and removes
# $work whatever happens. A test that wants to keep files defines rb_su_test_keep, which
# the trap runs before $work goes.

rb_su_test_setup() {
  su="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts/netns-su" && pwd)"
  export RB_SU_PREFIX=$1
  export RB_SU_STATE="/run/railbench-netns-su/$RB_SU_PREFIX"
  if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null || ! ip netns add "$RB_SU_PREFIX-probe" 2>/dev/null; then
    echo "SKIP: network namespaces need root and iproute2 on this host"
    exit 77
  fi
  ip netns del "$RB_SU_PREFIX-probe"
  work=$(mktemp -d)
  chmod 755 "$work"
  trap rb_su_test_cleanup EXIT
  "$su/down.sh" >/dev/null 2>&1 || true
}

rb_su_test_cleanup() {
  "$su/down.sh" >/dev/null 2>&1 || true
  if declare -F rb_su_test_keep >/dev/null; then rb_su_test_keep; fi
  rm -rf "$work"
}
