# shellcheck shell=bash
# A throwaway PostgreSQL server for the store's cases (source it after
# tests/support/case.sh, with $work made): initdb and pg_ctl in a folder of its own, a
# Unix socket only, fsync off, as the postgres user when run as root, stopped and removed
# at exit.
#   pg_up DB...      starts the server and makes each database; fails naming what failed
#   pg_url DB        the URL of database DB on it: postgresql://railbench@/DB?host=<socket folder>
pg_up() {
  local pgbin db
  pgbin=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)
  [[ -n $pgbin && -x $pgbin/initdb ]] ||
    fail "no PostgreSQL server programs (initdb, pg_ctl): install them with scripts/install-deps.sh --for test"
  if ((EUID == 0)); then
    id postgres >/dev/null 2>&1 || fail "no postgres user to run the server as: install the postgresql package"
  fi
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/rbpg.XXXXXX")
  chmod 755 "$pgdir"
  ((EUID != 0)) || chown postgres "$pgdir"
  case_on_exit "pg_as_server '$pgbin/pg_ctl' -D '$pgdir/data' -m immediate stop >/dev/null 2>&1; rm -rf '$pgdir'"
  pg_as_server "$pgbin/initdb" -D "$pgdir/data" -A trust -U railbench --no-sync >"$work/initdb.log" 2>&1 ||
    fail "initdb failed"
  pg_as_server "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 \
    -o "-k $pgdir -c listen_addresses='' -c fsync=off" start >"$work/pg_ctl.log" 2>&1 ||
    { cat "$pgdir/server.log"; fail "the throwaway PostgreSQL server did not start"; }
  for db in "$@"; do
    pg_as_server "$pgbin/createdb" -h "$pgdir" -U railbench "$db" || fail "createdb $db failed"
  done
}

pg_url() { echo "postgresql://railbench@/$1?host=$pgdir"; }

# The server refuses to run as root: as root, it runs as the postgres user.
pg_as_server() { if ((EUID == 0)); then runuser -u postgres -- "$@"; else "$@"; fi; }
