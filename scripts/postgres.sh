#!/usr/bin/env bash
# A throwaway PostgreSQL server for the ledger's tests and benchmarks.
#
#   scripts/postgres.sh run CMD...   start a server, run CMD with DECISIONS_TEST_POSTGRES_URL
#                                    (and DECISIONS_REQUIRE_POSTGRES=1) set, stop it; CMD's exit code
#   scripts/postgres.sh start        start one; prints "DATADIR URL"
#   scripts/postgres.sh stop DATADIR stop it and remove its data directory
#
# Installs Debian's `postgresql` package if initdb is missing. The server listens on a free
# loopback port with a fresh data directory under $TMPDIR and trusts local connections; as
# root it runs as the `postgres` user (the server refuses to run as root). fsync is off unless
# DECISIONS_PG_FSYNC=on (the benchmarks turn it on). Fails (exit 1)
# when the server cannot be started: the tests that need it must not be skipped silently.
set -euo pipefail

find_bin() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        [[ -x "$dir/initdb" ]] && { echo "$dir"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
    return 1
}

as_owner() {  # run a server binary as the data directory's owner
    if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
    local bin dir port url
    if ! bin=$(find_bin); then
        if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
            echo "postgres.sh: installing postgresql" >&2
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 || { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2; }
        fi
        bin=$(find_bin) || { echo "postgres.sh: initdb not found and postgresql could not be installed" >&2; return 1; }
    fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/decisions-pg.XXXXXX")
    [[ $(id -u) -eq 0 ]] && chown postgres: "$dir"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$bin/initdb" -D "$dir/data" -U decisions -A trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; return 1; }
    if ! as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=100 -c fsync=${DECISIONS_PG_FSYNC:-off}" >&2; then
        cat "$dir/server.log" >&2; rm -rf "$dir"; return 1
    fi
    url="postgresql://decisions@127.0.0.1:$port/postgres"
    for _ in $(seq 1 60); do
        "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && { echo "$dir $url"; return 0; }
        sleep 0.5
    done
    echo "postgres.sh: the server did not accept connections" >&2
    stop "$dir"; return 1
}

stop() {
    local dir=$1 bin
    bin=$(find_bin) || return 0
    [[ -d "$dir/data" ]] && as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}

case "${1:-}" in
    start) start ;;
    stop) stop "$2" ;;
    run)
        shift
        read -r PG_DIR PG_URL < <(start) || true
        [[ -n "${PG_URL:-}" ]] || { echo "postgres.sh: could not start PostgreSQL" >&2; exit 1; }
        trap 'stop "$PG_DIR"' EXIT
        DECISIONS_TEST_POSTGRES_URL=$PG_URL DECISIONS_REQUIRE_POSTGRES=1 "$@"
        ;;
    *) echo "usage: $0 run CMD... | start | stop DATADIR" >&2; exit 2 ;;
esac
