#!/usr/bin/env bash
# deps.sh: install the Debian 12 packages the build, tests and demo need,
# with apt-get, and only those that are missing.  Idempotent.
# Usage: scripts/deps.sh [EXTRA...], each one of bench fuzz browser node server fleet python
# tree names apache; several at once get one apt-get for them all (`make test` asks for every
# extra its tests use, so none installs mid-suite).  (bench adds the baselines' packages
# and redis for scripts/bench_real.sh and bench_fleet.sh;
# browser: headless Chromium, a font and xmllint for test/e2e/e2e_views_browser.sh;
# node: nodejs and npm, which test/e2e/e2e_snapshot_memlab.sh uses to fetch memlab and
# test/e2e/e2e_node.sh and scripts/bench_jit.sh run;
# server: redis, a real server for test/e2e/e2e_server.sh and e2e_heap_time_redis.sh; python: CPython 3.11's internal headers,
# which test/unit/u_pyframes.c checks our frame offsets against; fleet: Go's pprof profile parser,
# which test/e2e/e2e_fleet.sh builds a reader with; tree: prefork servers for
# test/e2e/e2e_tree_servers.sh, nginx-light and postgresql-15; names: clang, llvm-symbolizer
# (the truth for names, lines and inlined frames), libc's debug info and Go's pprof parser for
# test/e2e/e2e_names.sh; apache: Apache 2.4 (event MPM) and ab for test/e2e/e2e_apache.sh)
set -eu
want() { case " $extras " in *" $1 "*) return 0 ;; esac; return 1; }
extras="$*"
pkgs="gcc g++ make pkg-config curl libunwind-dev zlib1g-dev libcivetweb-dev libnanopb-dev nanopb
      golang-go python3 protobuf-compiler valgrind bzip2 xz-utils binutils libjemalloc2 openssl
      clang-format rustc libseccomp-dev strace"
want bench && pkgs="$pkgs google-perftools libgoogle-perftools-dev libjemalloc2 hyperfine time redis-server redis-tools"
want fuzz && pkgs="$pkgs clang libclang-rt-14-dev"
want server && pkgs="$pkgs redis-server redis-tools"
want tree && pkgs="$pkgs nginx-light postgresql-15"
want apache && pkgs="$pkgs apache2 apache2-utils"
want fleet && pkgs="$pkgs golang-github-google-pprof-dev"
want names && pkgs="$pkgs golang-github-google-pprof-dev clang llvm libc6-dbg binutils"
want python && pkgs="$pkgs python3.11-dev"
# (a node and npm already on PATH, e.g. NodeSource's nodejs with its own npm, are kept)
want node && ! { command -v node && command -v npm; } >/dev/null && pkgs="$pkgs nodejs npm"
want browser &&
    pkgs="$pkgs chromium fonts-dejavu-core libxml2-utils"
missing=
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
if [ "$(id -u)" != 0 ]; then
    echo "deps: not root; install these packages:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# one apt-get at a time: test/run.sh runs tests side by side, and a test asks for its extras
exec 9>/tmp/profendpoints-deps.lock && flock -w 900 9
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
