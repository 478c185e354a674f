#!/usr/bin/env bash
# build.sh IMAGE: builds the FROM scratch Redis image used by the integration
# tests from the host's Debian redis-server binary and the libraries ldd lists,
# plus libfaketime (Debian's libfaketime package) and the shim that lets it run
# redis-server (internal/redistest/testdata/libcmalloc.c, built with gcc), for
# the clock faults of cluster.WithFakeClocks.
# Idempotent: does nothing when IMAGE already exists with this layout
# (org.redlockgo.image-layout label; FORCE=1 rebuilds).
set -euo pipefail

image=${1:?usage: build.sh IMAGE}
here=$(cd "$(dirname "$0")" && pwd)

if ! docker version >/dev/null 2>&1; then
  echo "redis-image: no Docker engine answers; the integration tests can run on" >&2
  echo "local redis-server processes instead: REDLOCK_IT_BACKEND=processes make test" >&2
  exit 1
fi

# Bump when the image's contents change: an older image is rebuilt.
layout=2
if [[ "${FORCE:-}" != 1 ]] &&
  [[ $(docker image inspect --format '{{index .Config.Labels "org.redlockgo.image-layout"}}' "$image" 2>/dev/null) == "$layout" ]]; then
  echo "redis-image: $image already exists (FORCE=1 rebuilds)"
  exit 0
fi

# redis-server, libfaketime and gcc: installed, or named, by scripts/deps.sh.
bash "$here/../../scripts/deps.sh" install image
faketime=${REDLOCK_LIBFAKETIME:-$(compgen -G '/usr/lib/*/faketime/libfaketime.so.1' | head -1)}

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

# Fake clocks: libfaketime, and the shim that routes redis-server's
# allocations to glibc (jemalloc deadlocks with libfaketime at start). Both
# need only libraries redis-server already links.
mkdir -p "$root/usr/lib/redlock" "$root/clock"
cp -L "$faketime" "$root/usr/lib/redlock/libfaketime.so.1"
"${CC:-gcc}" -shared -fPIC -O2 -o "$root/usr/lib/redlock/libcmalloc.so" \
  "$here/../../internal/redistest/testdata/libcmalloc.c" -ldl

cp "$here/Dockerfile" "$ctx/Dockerfile"
version=$("$bin" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
echo "redis-image: building $image (redis $version, $(du -sh "$root" | cut -f1))"
# The classic builder needs no pull and no BuildKit; its deprecation notice
# is noise, so its output is shown only when the build fails.
if ! DOCKER_BUILDKIT=0 docker build --label "org.redlockgo.redis-version=$version" --label "org.redlockgo.image-layout=$layout" -t "$image" "$ctx" >"$ctx/build.log" 2>&1; then
  cat "$ctx/build.log" >&2
  exit 1
fi
docker image inspect --format 'redis-image: built {{.RepoTags}} {{.Size}} bytes' "$image"
