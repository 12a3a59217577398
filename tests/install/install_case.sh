#!/usr/bin/env bash
# railbench installed, not run from a build tree: `cmake --install` into a temporary
# prefix and the .deb from `cpack -G DEB` unpacked with dpkg-deb -x; each binary then
# runs from another working directory with RAILBENCH_CONFIG_DIR unset: --version (with
# the commit), info, validate --plan (configs) and a 2-rank kvcache with a model preset
# (configs/models, and the commit in its JSON). Those runs happen in a private mount
# namespace with an empty tmpfs over the source tree's configs/, so a binary that fell
# back to the source tree fails here; the build-tree binary, which may read it, is run
# there too and must fail, proving the mask works.
#   install_case.sh BUILD_DIR SOURCE_DIR
# Exit 77 (skipped) when unshare is not permitted (not root): the checks still run, but
# without the mask nothing proves the source tree was not read.
source "$(dirname "$0")/../support/case.sh"

# ---- inside the mount namespace: checks SOURCE_DIR BUILD_BIN BIN... ----
if [[ ${1:-} == --checks ]]; then
  src=$2 build_bin=$3 masked=$4
  shift 4
  if [[ $masked == yes ]]; then
    mount -t tmpfs -o size=1m,mode=0555 railbench-empty "$src/configs" || fail "cannot mount a tmpfs over $src/configs"
    [[ -z $(ls -A "$src/configs") ]] || fail "$src/configs is not empty under the mask"
    # The control: a build-tree binary reads the source tree, so here it must find nothing.
    out=$("$build_bin" validate --config su-h200-32x8-400g --plan 2>&1) &&
      fail "the build-tree binary still read configs with $src/configs masked: $out"
    echo "ok: masked $src/configs (the build-tree binary now fails: ${out%%$'\n'*})"
  fi
  unset RAILBENCH_CONFIG_DIR
  case_work
  cd "$work" || fail "cd $work"
  if git -c safe.directory='*' -C "$src" rev-parse HEAD >/dev/null 2>&1; then
    commit_re='[0-9a-f]{7,40}(-dirty)?'
  else
    commit_re='unknown'  # built from a tarball
  fi
  for bin in "$@"; do
    echo "---- $bin (cwd $work)"
    version=$("$bin" --version) || fail "$bin --version exited $?"
    [[ $version =~ ^railbench\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ ($commit_re)\)$ ]] ||
      fail "$bin --version printed '$version', expected 'railbench X.Y.Z (git $commit_re)'"
    commit=${BASH_REMATCH[1]}
    echo "ok: $version"

    out=$("$bin" info 2>&1) || fail "$bin info exited $?: $out"
    grep -q '^railbench [0-9]' <<<"$out" || fail "$bin info did not name itself: $out"
    echo "ok: info (${out%%$'\n'*})"

    out=$("$bin" validate --config su-h200-32x8-400g --plan 2>&1) || fail "$bin validate --plan exited $?: $out"
    grep -q '31 rounds of 16 disjoint node pairs' <<<"$out" || fail "$bin validate --plan: unexpected plan: $out"
    echo "ok: validate --config su-h200-32x8-400g --plan (31 rounds of 16 disjoint node pairs)"

    rm -f kv.json
    out=$(rb_mpirun_deadline 120 2 "$bin" kvcache -t ofi:shm --model llama-3.1-8b --tokens 40 --requests 2 -c \
      --json kv.json 2>&1) ||
      fail "$bin kvcache under mpirun exited $?: $out"
    python3 - "$commit" <<'PY' || fail "$bin kvcache: kv.json does not record the build"
import json, sys
doc = json.load(open("kv.json"))
assert doc["status"] == "complete", doc["status"]
assert doc["railbench_commit"] == sys.argv[1], (doc["railbench_commit"], sys.argv[1])
assert doc["railbench_version"], doc
print(f"ok: kvcache -np 2 llama-3.1-8b -c; JSON railbench_version {doc['railbench_version']}, "
      f"railbench_commit {doc['railbench_commit']}")
PY

    # An explicit RAILBENCH_CONFIG_DIR wins even when wrong, and the error names it.
    out=$(RAILBENCH_CONFIG_DIR=/nonexistent "$bin" validate --config su-h200-32x8-400g --plan 2>&1)
    rc=$?
    ((rc == 2)) || fail "RAILBENCH_CONFIG_DIR=/nonexistent: exit $rc, expected 2: $out"
    grep -q 'RAILBENCH_CONFIG_DIR=/nonexistent' <<<"$out" || fail "RAILBENCH_CONFIG_DIR=/nonexistent not named: $out"
    echo "ok: RAILBENCH_CONFIG_DIR=/nonexistent: exit 2, $out"
  done
  exit 0
fi

# ---- outside: install, package, unpack, then the checks ----
build=${1:?usage: install_case.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: install_case.sh BUILD_DIR SOURCE_DIR}
build=$(cd "$build" && pwd -P) && src=$(cd "$src" && pwd -P) || fail "no such build or source directory"
case_work
tmp=$work

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  fail "cmake --install: $(cat "$tmp/install.log")"
echo "ok: cmake --install --prefix $tmp/prefix:"
(cd "$tmp/prefix" && find . -type f | sort | sed 's/^/  /')
[[ ! -e $tmp/prefix/bin/mpi_reference ]] || fail "mpi_reference was installed"

cpack --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 || fail "cpack: $(cat "$tmp/cpack.log")"
deb=$(ls "$tmp"/pkg/railbench_*.deb 2>/dev/null | head -1)
[[ -n $deb ]] || fail "cpack made no railbench_*.deb: $(cat "$tmp/cpack.log")"
depends=$(dpkg-deb -f "$deb" Depends)
echo "ok: $(basename "$deb") ($(stat -c %s "$deb") bytes), Depends: $depends"
for pkg in libfabric1 libibverbs1; do
  [[ $depends == *"$pkg "* ]] || fail "the .deb does not depend on $pkg: Depends: $depends"
done
dpkg-deb -x "$deb" "$tmp/deb" || fail "dpkg-deb -x $deb"
[[ -x $tmp/deb/usr/bin/railbench ]] || fail "the .deb has no usr/bin/railbench"
[[ -f $tmp/deb/usr/share/railbench/configs/su-h200-32x8-400g.json ]] || fail "the .deb has no SU configs"
[[ -f $tmp/deb/usr/share/railbench/configs/models/llama-3.1-8b.json ]] || fail "the .deb has no model presets"

bins=("$tmp/prefix/bin/railbench" "$tmp/deb/usr/bin/railbench")
if unshare --mount --propagation private true 2>/dev/null; then
  unshare --mount --propagation private bash "$0" --checks "$src" "$build/railbench" yes "${bins[@]}" || exit 1
  echo "PASS: installed binaries ran with the source tree's configs/ masked"
  exit 0
fi
bash "$0" --checks "$src" "$build/railbench" no "${bins[@]}" || exit 1
echo "SKIP: the installed binaries work, but unshare --mount is not permitted here (needs root), so nothing" \
  "proved they did not read $src/configs"
exit 77
