# shellcheck shell=bash
# Shared helpers for baton's scripts: paths, toolchain setup and installs.
# Source it; it defines functions and variables and changes nothing else.

BATON_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BATON_BUILD=${BATON_BUILD:-$BATON_ROOT/build}
# shellcheck disable=SC2034  # used by the scripts that source this file
CONTROLPLANE_BIN=$BATON_BUILD/controlplane/bin
# The clang tree: ASan + UBSan with libFuzzer's coverage, and clang's
# -Wthread-safety -Werror. scripts/test builds it whole for the sanitizer
# tests and the thread-safety check; scripts/fuzz builds its fuzzers there.
BATON_CLANG_BUILD=$BATON_BUILD-clang

# Go, pip and ccache keep their caches under $HOME; a CI runner may start
# without it.
export HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}

# ccache: paths under the checkout count as relative, so a second clone (CI's
# fresh clone on a machine that already built baton) hits the same cache.
# Not hashing the working directory means debug info may name another
# clone's build directory; nothing here depends on it.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$BATON_ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# Depend mode: a miss (every unit, on a new machine) compiles once and reads
# the included files from the compiler's -MD output, instead of running the
# preprocessor first to look for the result under another name.
export CCACHE_DEPEND=${CCACHE_DEPEND:-1}

# Go: the machine's toolchain only (never download one), module and build
# caches in their default, persistent places. Packages compile without DWARF:
# nothing here reads it (the control plane's binaries are stripped; a failing
# test's stack comes from the symbol table), and it was a tenth of the CPU of
# a cold build (etcd: 112 CPU-s with it, 102 without).
export GOTOOLCHAIN=local
export GOFLAGS=${GOFLAGS:--mod=mod -gcflags=all=-dwarf=false}

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Debian packages the C++ build and the tests need.
BATON_APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config clang-14 clang-format-14
  libclang-rt-14-dev shellcheck
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libboost1.81-dev libboost-json1.81-dev libssl-dev
  libgtest-dev libgmock-dev libspdlog-dev libyaml-cpp-dev
  wrk python3-venv curl procps
  postgresql-15  # the fencing tests' throwaway clusters (clients/testing/postgres)
)

# ensure_apt_packages: installs any of BATON_APT_PACKAGES that is missing.
ensure_apt_packages() {
  local missing=()
  for p in "${BATON_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  # The tests start their own PostgreSQL clusters; Debian's package would
  # otherwise create and start one of its own on port 5432.
  if [[ " ${missing[*]} " == *" postgresql-15 "* && ! -e /etc/postgresql-common/createcluster.conf ]]; then
    $sudo mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" | $sudo tee /etc/postgresql-common/createcluster.conf >/dev/null
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# configure_clang_tree: configures (or re-checks) the clang tree.
configure_clang_tree() {
  CXX=clang++-14 cmake -S "$BATON_ROOT" -B "$BATON_CLANG_BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_FUZZ=ON
}

# need_go: fails clearly when Go is missing or older than go.mod wants.
need_go() {
  command -v go >/dev/null || die "Go 1.26 is required (https://go.dev/doc/install)"
}

# --- build results kept across checkouts ---------------------------------------
# What a fresh clone (CI's) would otherwise redo from nothing on a machine that
# has built baton before: the Rust client's compiled crates, the TypeScript
# client's node_modules, the Python venv and wheel, the Java build. Each entry
# is a directory $BATON_CACHE/KIND/KEY, KEY a hash of everything the entry was
# made from (lock files, sources, tool versions), so an entry is only ever used
# for the same inputs. An entry is written beside its place and renamed into
# it, so a reader sees a whole entry or none, and is never changed afterwards:
# users copy it out. Only the few most recently used entries of a kind are
# kept. BATON_CACHE=off turns it off (every build from nothing).
BATON_CACHE=${BATON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton}

# cache_key: 20 hex digits of the SHA-256 of stdin.
cache_key() { sha256sum | cut -c1-20; }

# source_digest PATH...: a "sha256  path" line per file under PATHs (relative
# to the checkout) that git does not ignore: tracked and new files, with what
# is in the working tree; every file when the checkout is no git repository.
source_digest() {
  (
    cd "$BATON_ROOT" || exit 1
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git ls-files -z --cached --others --exclude-standard -- "$@"
    else
      find "$@" -type f -print0
    fi | sort -zu | xargs -0r sha256sum -- 2>/dev/null
    true  # a tracked file deleted from the working tree has no line
  )
}

# cache_get KIND KEY: prints the entry's directory and marks it used; fails
# when there is none.
cache_get() {
  [[ $BATON_CACHE != off ]] || return 1
  local d=$BATON_CACHE/$1/$2
  [[ -d $d ]] || return 1
  touch "$d" 2>/dev/null
  printf '%s\n' "$d"
}

# cache_put KIND KEY DIR... [-- FIXUP...]: stores copies of the DIRs (each
# under its own name) as entry KEY of KIND, replacing an entry of that key.
# FIXUP, if given, runs with the new entry's path appended before it is
# renamed into place; when it fails, nothing is stored. Then prunes KIND
# (cache_prune).
cache_put() {
  [[ $BATON_CACHE != off ]] || return 0
  local kind=$BATON_CACHE/$1 key=$2 tmp dirs=()
  shift 2
  while (($#)) && [[ $1 != -- ]]; do dirs+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift
  mkdir -p "$kind" && tmp=$(mktemp -d "$kind/.new.XXXXXX") || return 1
  if ! mkdir "$tmp/d" || ! cp -a --reflink=auto "${dirs[@]}" "$tmp/d/" || { (($#)) && ! "$@" "$tmp/d"; }; then
    rm -rf "$tmp"
    return 1
  fi
  # A rename cannot replace a directory that has files: the old entry (if
  # any) is moved aside first. A reader copying it then fails and builds from
  # nothing, which is slower but not wrong.
  [[ -e $kind/$key ]] && mv "$kind/$key" "$tmp/old"
  mv -T "$tmp/d" "$kind/$key" || { rm -rf "$tmp"; return 1; }
  rm -rf "$tmp"
  touch "$kind/$key"  # the most recently used
  # Left by a run that died while writing an entry.
  find "$kind" -mindepth 1 -maxdepth 1 -name '.new.*' -mmin +120 -exec rm -rf {} + 2>/dev/null
  cache_prune "${kind##*/}"
}

# cache_prune KIND: drops all but the $BATON_CACHE_KEEP (3) most recently used
# entries of KIND.
cache_prune() {
  local old
  # shellcheck disable=SC2012  # entry names are hex digits
  old=$(ls -1td "$BATON_CACHE/$1"/*/ 2>/dev/null | tail -n +$((${BATON_CACHE_KEEP:-3} + 1)))
  [[ -z $old ]] || xargs -d '\n' rm -rf <<<"$old"
  return 0
}

# copy_in SRC DEST: copies directory SRC to DEST (which must not exist) through
# a temporary name, so that DEST is whole or absent. Keeps timestamps unless
# COPY_NEW_TIMES=1.
copy_in() {
  local keep=-a
  [[ ${COPY_NEW_TIMES:-0} == 1 ]] && keep="-R --preserve=mode,links"
  rm -rf "$2.part"
  # shellcheck disable=SC2086  # keep is two words or one
  if mkdir -p "$(dirname "$2")" && cp $keep --reflink=auto "$1" "$2.part" && mv -T "$2.part" "$2"; then
    return 0
  fi
  rm -rf "$2.part"
  return 1
}

# Rust (clients/rust): its crates.io dependencies, compiled, keyed by
# Cargo.lock, Cargo.toml, the toolchain and the flags cargo takes from the
# environment. A new target directory starts as a copy of them and cargo
# compiles baton-client alone. (Not one target directory for every checkout:
# cargo judges a path crate such as baton-client by mtimes, so a clone whose
# files are older than another clone's build would take that build for its
# own. Crates from crates.io are judged by version and flags, never by mtime.)
rust_deps_key() {
  {
    rustc -vV && cargo -V && cat "$BATON_ROOT"/clients/rust/Cargo.lock "$BATON_ROOT"/clients/rust/Cargo.toml
    env | grep -E '^(RUSTC|RUSTC_WRAPPER|RUSTFLAGS|CARGO_ENCODED_RUSTFLAGS|CARGO_BUILD_[A-Z_]*|CARGO_PROFILE_[A-Z_]*|CARGO_INCREMENTAL)=' | sort
  } | cache_key
}

# rust_target_seed TARGET: when TARGET does not exist, starts it as a copy of
# the cached dependencies (if there are any for this key).
rust_target_seed() {
  [[ -e $1 ]] && return 0
  local entry
  entry=$(cache_get rust "$(rust_deps_key)") || return 0
  copy_in "$entry/target" "$1" || log "Rust: could not copy $entry; compiling every crate"
}

# rust_target_keep TARGET: after a build in TARGET, stores its compiled
# dependencies (everything but baton-client's own units) when it has units
# the cached ones lack (a new key; `cargo clippy` after `cargo build`).
rust_target_keep() {
  local key
  key=$(rust_deps_key)
  comm -23 <(find "$1/debug/.fingerprint" -mindepth 1 -maxdepth 1 ! -name 'baton-client-*' -printf '%f\n' 2>/dev/null | sort) \
    <(find "$BATON_CACHE/rust/$key/target/debug/.fingerprint" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort) |
    grep -q . || return 0
  BATON_CACHE_KEEP=2 cache_put rust "$key" "$1" -- rust_drop_own "$(basename "$1")"
}
# rust_drop_own NAME ENTRY: in the target directory ENTRY/NAME, renames it
# "target" and removes baton-client's own units, and the incremental state
# (only path crates have any; cargo clean -p leaves its build script's).
rust_drop_own() {
  local t=$2/target
  [[ $1 == target ]] || mv -T "$2/$1" "$t" || return 1
  (cd "$BATON_ROOT/clients/rust" && CARGO_TARGET_DIR=$t cargo clean --quiet --offline -p baton-client) &&
    rm -rf "$t/debug/incremental" &&
    ! find "$t/debug" -name '*baton*client*' -print -quit | grep -q .
}
