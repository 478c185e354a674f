#!/usr/bin/env bash
# deps.sh: what the make targets need beyond Go, in one place. `make deps`
# (a prerequisite of `make test`), .ci/run, `make model` and `make
# redis-image` all ask it.
#
#   scripts/deps.sh [install|check] [test|model|image]...
#
#   install  (the default) installs the missing Debian packages with apt-get
#            where it is usable (as root, or with passwordless sudo): one
#            apt-get update, then one install. Elsewhere it acts as check.
#   check    installs nothing; exits 1 with one line naming what is missing.
#
#   test     (the default) make; ca-certificates where no CA bundle is (the
#            go command fetches modules over HTTPS); gcc and libc6-dev (the
#            race detector needs cgo, and the fake-clock tests build a shim);
#            redis-server (the real-Redis tests; not needed with
#            REDLOCK_SKIP_REDIS=1 outside CI, as in internal/redistest);
#            libfaketime (fake node clocks). Then, on install, the local
#            Redis image (make redis-image) when the integration suite will
#            use containers: REDLOCK_IT_BACKEND is containers, or empty and a
#            Docker engine answers. Not when REDLOCK_REDIS_IMAGE names an
#            image of your own.
#   model    spin, gcc and libc6-dev (make model).
#   image    redis-server, libfaketime, gcc and libc6-dev: what
#            integration/redis-image/build.sh copies or builds into the image.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

mode=install
case ${1:-} in install | check) mode=$1 && shift ;; esac
groups=("$@")
((${#groups[@]})) || groups=(test)

# need: the missing packages, each once, in the order found.
need=()
add() {
  case " ${need[*]} " in *" $1 "*) ;; *) need+=("$1") ;; esac
}

# skip_redis: the user opted out of the real-Redis tests, and no CI or
# REDLOCK_REQUIRE_REDIS overrides it (the rule of internal/redistest).
skip_redis() {
  case ${REDLOCK_SKIP_REDIS:-} in 1 | t | T | true | TRUE | True) ;; *) return 1 ;; esac
  [[ -z ${CI:-} && -z ${REDLOCK_REQUIRE_REDIS:-} ]]
}

# A C compiler that links a program: without libc6-dev gcc compiles but
# does not link, and `go test -race` fails late with a linker error.
cc_links() {
  printf 'int main(void) { return 0; }\n' | "${CC:-gcc}" -x c -o /dev/null - 2>/dev/null
}

# A CA bundle where Go looks for one (crypto/x509/root_linux.go), or one
# named by SSL_CERT_FILE or SSL_CERT_DIR.
have_ca() {
  local f
  [[ -z ${SSL_CERT_FILE:-}${SSL_CERT_DIR:-} ]] || return 0
  for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt \
    /etc/ssl/ca-bundle.pem /etc/pki/tls/cacert.pem \
    /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem /etc/ssl/cert.pem; do
    [[ ! -e $f ]] || return 0
  done
  return 1
}

find_missing() {
  need=()
  local g
  for g in "${groups[@]}"; do
    case $g in
      test | model | image) ;;
      *) echo "deps.sh: unknown group $g (want test, model or image)" >&2 && exit 2 ;;
    esac
    [[ $g != test ]] || command -v make >/dev/null || add make
    [[ $g != test ]] || have_ca || add ca-certificates
    command -v "${CC:-gcc}" >/dev/null || add gcc
    cc_links || add libc6-dev
    [[ $g != model ]] || command -v spin >/dev/null || add spin
    [[ $g == model ]] && continue
    command -v redis-server >/dev/null || { [[ $g == test ]] && skip_redis; } || add redis-server
    # The fake-clock tests look for Debian's path or REDLOCK_LIBFAKETIME,
    # with or without REDLOCK_SKIP_REDIS.
    [[ -n ${REDLOCK_LIBFAKETIME:-} ]] || compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null ||
      add libfaketime
  done
}

# apt: how to run apt-get here, or empty where it is not usable.
apt=()
if command -v apt-get >/dev/null; then
  if [[ $(id -u) == 0 ]]; then
    apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    apt=(sudo -n env DEBIAN_FRONTEND=noninteractive apt-get)
  fi
fi

# The one line that says what to install, and exit 1.
missing() {
  local what="make ${groups[*]}" pkgs
  what=${what/make image/make redis-image}
  pkgs=$(printf '%s, ' "${need[@]}")
  echo "$what needs ${pkgs%, }: apt-get install ${need[*]}" >&2
  exit 1
}

find_missing
if ((${#need[@]})); then
  [[ $mode == install && ${#apt[@]} -gt 0 ]] || missing
  echo "deps: installing ${need[*]} with apt-get"
  "${apt[@]}" update -qq
  "${apt[@]}" install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  find_missing
  ((${#need[@]} == 0)) || missing
fi

# The local Redis image, for a test run on containers (see the header).
image() {
  [[ $mode == install && " ${groups[*]} " == *" test "* && -z ${REDLOCK_REDIS_IMAGE:-} ]] || return 0
  case ${REDLOCK_IT_BACKEND:-} in
    processes) return 0 ;;
    containers) ;; # a missing engine is the build's error, as it is the tests'
    *) timeout 20 docker version >/dev/null 2>&1 || return 0 ;;
  esac
  if ! command -v redis-server >/dev/null; then
    echo "deps: no redis-server (REDLOCK_SKIP_REDIS), so no local Redis image to build"
    return 0
  fi
  make --no-print-directory -C "$root/integration" redis-image
}
image
