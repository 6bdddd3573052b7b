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
# caches in their default, persistent places.
export GOTOOLCHAIN=local
export GOFLAGS=${GOFLAGS:--mod=mod}

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Debian packages the C++ build and the tests need.
BATON_APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config clang-14 clang-tidy-14 clang-format-14
  libclang-rt-14-dev shellcheck
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libboost1.81-dev libboost-json1.81-dev libssl-dev
  libgtest-dev libgmock-dev libspdlog-dev libyaml-cpp-dev
  wrk python3-venv curl procps
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
