#!/usr/bin/env bash
# The test command (README "The two set-up commands"; .ci/run calls exactly
# this): install what the tests need where a fresh machine of this kind
# lacks it, then run every test of the workspace.
#
# Each dependency is checked first and installed only when missing, so on a
# machine that has everything this only runs the tests. Installing needs
# root (as CI is) or sudo; without either, the script names what to install
# and stops before running any test.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else SUDO="none"; fi
apt_updated=""

# apt_need CHECK PACKAGE...: install the Debian PACKAGEs unless the shell
# test CHECK already succeeds.
apt_need() {
  local check=$1; shift
  if eval "$check" >/dev/null 2>&1; then return 0; fi
  if [ "$SUDO" = none ]; then
    echo "scripts/test.sh: the tests need: $* (apt-get install -y $*); run as root or with sudo" >&2
    exit 1
  fi
  if [ -z "$apt_updated" ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  echo "scripts/test.sh: installing $*" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

command -v cargo >/dev/null 2>&1 || { echo "scripts/test.sh: cargo not found: install Rust (rustup) first" >&2; exit 1; }

# PostgreSQL server binaries (private servers) and psql/pgbench (compatibility tests).
apt_need 'ls /usr/lib/postgresql/*/bin/initdb || command -v initdb' postgresql
apt_need 'command -v psql' postgresql-client
# MariaDB server and client (private MariaDB servers).
apt_need 'command -v mariadbd || test -x /usr/sbin/mariadbd' mariadb-server mariadb-client
# strace (syscall counts of the studies).
apt_need 'command -v strace' strace
# openssl (a certificate for a server that serves SSL, in the server
# tracer's tests).
apt_need 'command -v openssl' openssl

# DuckDB and PySpark (local mode, on the machine's Java 17) read the
# exports of `tracelab calls` in crates/tracelab/tests/calls_engines.rs.
pip_need() {
  local module=$1; shift
  if python3 -c "import $module" >/dev/null 2>&1; then return 0; fi
  echo "scripts/test.sh: installing $* (pip)" >&2
  python3 -m pip install --quiet --disable-pip-version-check "$@" >/dev/null \
    || { echo "scripts/test.sh: the tests need: $* (python3 -m pip install $*)" >&2; exit 1; }
}
command -v python3 >/dev/null 2>&1 || { echo "scripts/test.sh: python3 not found: the tests need it (apt-get install python3 python3-pip)" >&2; exit 1; }
apt_need 'command -v java' openjdk-17-jre-headless
pip_need duckdb duckdb
pip_need pyspark pyspark

# Headless Chromium opens every kind of HTML page tracelab writes
# (crates/tracelab/tests/html_pages.rs): Debian's browser and driver,
# Selenium to drive them, Pillow to read the screenshots.
apt_need 'command -v chromium' chromium
apt_need 'command -v chromedriver' chromium-driver
pip_need selenium selenium
pip_need PIL pillow

# The docs' examples (crates/tracelab/tests/docs_examples.rs) query a
# study's results store with the sqlite3 shell, as docs/study.md shows.
apt_need 'command -v sqlite3' sqlite3

# PostgreSQL 13, 14, 16, 17 and 18 beside the machine's 15, MariaDB 11.4
# beside its 10.11: the server tracer is tested on every version it
# supports (crates/tracelab/tests/server_trace.rs). Pinned builds from
# Maven Central, checked by SHA-256 (scripts/fetch_servers.sh); where they
# cannot be had, those tests say they skipped and the rest runs.
apt_need 'command -v curl' curl
apt_need 'command -v xz' xz-utils
if builds=$(scripts/fetch_servers.sh postgres); then
  export TRACELAB_TEST_PG_BINDIRS=$builds
else
  echo "scripts/test.sh: warning: no PostgreSQL builds of other versions; the server tracer is tested on this machine's version only" >&2
fi
if builds=$(scripts/fetch_servers.sh mariadb); then
  export TRACELAB_TEST_MARIADB_BINDIRS=$builds
else
  echo "scripts/test.sh: warning: no MariaDB builds of other versions; the server tracer is tested on this machine's version only" >&2
fi

# --no-fail-fast: one failing test binary does not hide the others.
cargo test --workspace --no-fail-fast "$@"
