#!/usr/bin/env bash
# PostgreSQL 15 from Debian bookworm + pgvector built from Debian trixie's source package against it
# (no bookworm binary of pgvector exists). Idempotent: each step leaves a stamp, and a step whose
# result is already on the machine is skipped. Needs root (apt-get); prints what it does.
set -euo pipefail
STAMPS="${VAULTLENS_PG_STAMPS:-/var/lib/vaultlens-ci}"
PGBIN=/usr/lib/postgresql/15/bin
EXT=/usr/share/postgresql/15/extension
mkdir -p "$STAMPS"

if [ "$(id -u)" -ne 0 ]; then
  echo "install-postgres: not root, skipping (the PostgreSQL tests skip when no server can start)" >&2
  exit 0
fi

# a stamp says the step ran; the files it checks say its result is still there
if [ ! -f "$STAMPS/postgresql-15.installed" ] || [ ! -x "$PGBIN/initdb" ] || [ ! -x "$PGBIN/pg_config" ] \
   || [ ! -d /usr/include/postgresql/15/server ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 postgresql-server-dev-15 \
    build-essential dpkg-dev >/dev/null
  touch "$STAMPS/postgresql-15.installed"
fi

if [ ! -f "$STAMPS/pgvector.installed" ] || [ ! -f "$EXT/vector.control" ]; then
  # a private sources list: trixie's *source* packages only, never its binaries
  SRCDIR="$STAMPS/apt"
  mkdir -p "$SRCDIR/lists/partial" "$SRCDIR/build"
  if id _apt >/dev/null 2>&1; then chown _apt "$SRCDIR/build"; fi  # apt downloads as _apt
  printf 'deb-src http://deb.debian.org/debian trixie main\n' >"$SRCDIR/trixie-src.list"
  APT_OPTS=(-o "Dir::Etc::SourceList=$SRCDIR/trixie-src.list" -o "Dir::Etc::SourceParts=-"
            -o "Dir::State::Lists=$SRCDIR/lists")
  apt-get "${APT_OPTS[@]}" update -qq
  cd "$SRCDIR/build"
  rm -rf pgvector-*/
  apt-get "${APT_OPTS[@]}" source -qq --download-only pgvector
  dpkg-source -x --no-check ./pgvector_*.dsc >/dev/null
  cd pgvector-*/
  make -s PG_CONFIG="$PGBIN/pg_config" OPTFLAGS="" >/dev/null
  make -s PG_CONFIG="$PGBIN/pg_config" install >/dev/null
  touch "$STAMPS/pgvector.installed"
fi
echo "install-postgres: PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') with pgvector $(sed -n "s/default_version = '\(.*\)'/\1/p" "$EXT/vector.control")"
