#!/usr/bin/env bash
# build.sh IMAGE: builds the FROM scratch Redis image used by the integration
# tests from the host's Debian redis-server binary and the libraries ldd lists.
# Idempotent: does nothing when IMAGE already exists (FORCE=1 rebuilds).
set -euo pipefail

image=${1:?usage: build.sh IMAGE}
here=$(cd "$(dirname "$0")" && pwd)

if ! docker version >/dev/null 2>&1; then
  echo "redis-image: no Docker engine answers; the integration tests can run on" >&2
  echo "local redis-server processes instead: REDLOCK_IT_BACKEND=processes make test" >&2
  exit 1
fi

if [[ "${FORCE:-}" != 1 ]] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "redis-image: $image already exists (FORCE=1 rebuilds)"
  exit 0
fi

if ! command -v redis-server >/dev/null; then
  if [[ $(id -u) != 0 ]]; then
    echo "redis-image: redis-server is missing; install it (apt-get install redis-server) and retry" >&2
    exit 1
  fi
  echo "redis-image: installing redis-server with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server >/dev/null
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root=$ctx/rootfs
mkdir -p "$root/usr/bin" "$root/data" "$root/tmp"
chmod 1777 "$root/tmp"

# redis-server is a symlink to redis-check-rdb, which picks its mode from
# argv[0]: copy the target under the name redis-server.
bin=$(command -v redis-server)
cp -L "$bin" "$root/usr/bin/redis-server"

# Every library the dynamic loader resolves, and the loader itself, at the
# same absolute path as on the host.
ldd "$bin" | awk '/=> \// {print $3} /^[[:space:]]*\// {print $1}' | sort -u |
  while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done

cp "$here/Dockerfile" "$ctx/Dockerfile"
version=$("$bin" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
echo "redis-image: building $image (redis $version, $(du -sh "$root" | cut -f1))"
# The classic builder needs no pull and no BuildKit; its deprecation notice
# is noise, so its output is shown only when the build fails.
if ! DOCKER_BUILDKIT=0 docker build --label "org.redlockgo.redis-version=$version" -t "$image" "$ctx" >"$ctx/build.log" 2>&1; then
  cat "$ctx/build.log" >&2
  exit 1
fi
docker image inspect --format 'redis-image: built {{.RepoTags}} {{.Size}} bytes' "$image"
