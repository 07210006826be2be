#!/usr/bin/env bash
# Build tripcap's container image (deploy/container/Containerfile) and, with --test, check
# it the way the DaemonSet uses it.
#
#   scripts/build-image.sh [--stand-in-bases] [--test | --test-only]
#
#   --stand-in-bases  for machines that reach Debian's archive but no container registry
#                     (CI): build the two base images locally instead of pulling them,
#                     and build against those (see stand_in_bases below).
#   --test            after the build, run the image's checks (below).
#   --test-only       the checks only, on the image already built.
#
# Environment: TRIPCAP_IMAGE (default ghcr.io/tripcap/tripcap; the tag is the version in
# Cargo.toml), CONTAINER_TOOL (buildah, podman or docker; default: the first found).
# With buildah the image lives in target/container/storage (its own store, vfs driver, so
# it works inside containers and on any file system); podman and docker use theirs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

IMAGE=${TRIPCAP_IMAGE:-ghcr.io/tripcap/tripcap}
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
TAG=$IMAGE:$VERSION
STAND_IN=0
TEST=0
BUILD=1
for a in "$@"; do
  case $a in
    --stand-in-bases) STAND_IN=1 ;;
    --test) TEST=1 ;;
    --test-only) TEST=1; BUILD=0 ;;
    *) echo "usage: scripts/build-image.sh [--stand-in-bases] [--test | --test-only]" >&2; exit 2 ;;
  esac
done
T0=$SECONDS
step() { printf '\n== [%3ds] %s\n' $((SECONDS - T0)) "$*"; }
die() { echo "build-image: FAILED: $*" >&2; exit 1; }

TOOL=${CONTAINER_TOOL:-}
if [ -z "$TOOL" ]; then
  for t in buildah podman docker; do
    if command -v "$t" >/dev/null; then TOOL=$t; break; fi
  done
fi
[ -n "$TOOL" ] || die "no buildah, podman or docker: apt-get install buildah"
STORE=$ROOT/target/container
c() {
  if [ "$TOOL" = buildah ]; then
    buildah --root "$STORE/storage" --runroot "$STORE/run" --storage-driver vfs "$@"
  else
    "$TOOL" "$@"
  fi
}

BUILD_ARGS=(--build-arg "VERSION=$VERSION")

# Stand-ins for docker.io/library/debian:bookworm-slim and docker.io/library/rust:1-bookworm,
# made from what this machine can reach: a minbase Debian from the Debian archive
# (mmdebstrap, with the deb822 sources file the official image has), and for the build
# stage the same plus this machine's Rust toolchain where the official rust image keeps
# it (/usr/local/cargo, /usr/local/rustup). The Containerfile is unchanged: only its
# RUST_IMAGE and BASE_IMAGE arguments point at the stand-ins.
stand_in_bases() {
  [ "$TOOL" = buildah ] || die "--stand-in-bases needs buildah (apt-get install buildah)"
  command -v mmdebstrap >/dev/null || die "--stand-in-bases needs mmdebstrap (apt-get install mmdebstrap)"
  local tar=$STORE/bookworm-minbase.tar sysroot ctr mnt tc
  mkdir -p "$STORE"
  if [ ! -s "$tar" ]; then
    step "mmdebstrap: Debian bookworm minbase from deb.debian.org"
    mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
      --customize-hook='rm -f "$1/etc/apt/sources.list"' \
      --customize-hook='printf "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n" > "$1/etc/apt/sources.list.d/debian.sources"' \
      --customize-hook='rm -rf "$1/var/lib/apt/lists/"*' \
      bookworm "$tar.part" http://deb.debian.org/debian
    mv "$tar.part" "$tar"
  fi
  step "stand-in localhost/tripcap-stand-in/debian:bookworm-slim"
  ctr=$(c from scratch)
  mnt=$(c mount "$ctr")
  tar -C "$mnt" -xf "$tar"
  c umount "$ctr" >/dev/null
  c config --cmd /bin/bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  c commit -q --rm "$ctr" localhost/tripcap-stand-in/debian:bookworm-slim >/dev/null

  step "stand-in localhost/tripcap-stand-in/rust:1-bookworm (toolchain: $(rustc --version))"
  sysroot=$(rustc --print sysroot)
  tc=/usr/local/rustup/toolchains/$(basename "$sysroot")
  ctr=$(c from localhost/tripcap-stand-in/debian:bookworm-slim)
  mnt=$(c mount "$ctr")
  mkdir -p "$mnt$tc" "$mnt/usr/local/cargo/bin"
  # bin/ and lib/ are the compiler and the standard library; share/ (docs) is left out.
  cp -a "$sysroot/bin" "$sysroot/lib" "$mnt$tc/"
  [ ! -d "$sysroot/libexec" ] || cp -a "$sysroot/libexec" "$mnt$tc/"
  for b in cargo rustc rustdoc; do ln -s "$tc/bin/$b" "$mnt/usr/local/cargo/bin/$b"; done
  c umount "$ctr" >/dev/null
  c config --env RUSTUP_HOME=/usr/local/rustup --env CARGO_HOME=/usr/local/cargo \
    --env PATH=/usr/local/cargo/bin:$tc/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  c commit -q --rm "$ctr" localhost/tripcap-stand-in/rust:1-bookworm >/dev/null
  BUILD_ARGS+=(--build-arg RUST_IMAGE=localhost/tripcap-stand-in/rust:1-bookworm
    --build-arg BASE_IMAGE=localhost/tripcap-stand-in/debian:bookworm-slim)
}

if [ "$BUILD" = 1 ]; then
[ "$STAND_IN" = 0 ] || stand_in_bases

step "$TOOL build $TAG"
EXTRA=()
if [ "$TOOL" = buildah ]; then
  EXTRA=(--isolation chroot --layers=false --pull=never)
  [ "$STAND_IN" = 1 ] || EXTRA=(--isolation chroot --layers=false)
  # Reuse this machine's crate downloads when there are any (the build still resolves
  # Cargo.lock and checks every crate's checksum).
  REG=${CARGO_HOME:-$HOME/.cargo}/registry
  [ ! -d "$REG" ] || EXTRA+=(--volume "$REG:/usr/local/cargo/registry")
fi
c build "${EXTRA[@]}" "${BUILD_ARGS[@]}" -f deploy/container/Containerfile -t "$TAG" .
echo "image: $TAG"
fi

[ "$TEST" = 1 ] || exit 0

# --- checks, with the image run the way deploy/kubernetes/tripcap-daemonset.yaml runs it.
step "test: the image as the DaemonSet runs it"
run_image() {
  # run_image [buildah-run options…] -- COMMAND…: a container from the image, its
  # entrypoint not applied (COMMAND is explicit), removed afterwards.
  # `--no-caps` first: without the capabilities the DaemonSet adds.
  local opts=() ctr rc caps=(--cap-add CAP_NET_RAW,CAP_NET_ADMIN,CAP_IPC_LOCK)
  if [ "$1" = --no-caps ]; then caps=(--cap-drop CAP_NET_RAW,CAP_NET_ADMIN,CAP_IPC_LOCK); shift; fi
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  if [ "$TOOL" = buildah ]; then
    ctr=$(c from --pull=never "$TAG")
    rc=0
    c run --isolation chroot "${caps[@]}" "${opts[@]}" "$ctr" -- "$@" || rc=$?
    c rm "$ctr" >/dev/null
    return $rc
  else
    if [ "${caps[0]}" = --cap-add ]; then caps=(--cap-add NET_RAW --cap-add NET_ADMIN --cap-add IPC_LOCK)
    else caps=(--cap-drop NET_RAW --cap-drop NET_ADMIN --cap-drop IPC_LOCK); fi
    "$TOOL" run --rm --network host "${caps[@]}" "${opts[@]}" --entrypoint "$1" "$TAG" "${@:2}"
  fi
}
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "$TOOL" = buildah ]; then INSPECT=$(c inspect --type image "$TAG"); else INSPECT=$(c image inspect "$TAG"); fi
python3 - "$INSPECT" <<'PY' || fail "image config"
import json, sys
doc = json.loads(sys.argv[1])
# buildah: {"OCIv1": {"config": {...}}}; podman and docker: [{"Config": {...}}]
cfg = doc["OCIv1"]["config"] if isinstance(doc, dict) else doc[0]["Config"]
user = cfg.get("User")
entry = cfg.get("Entrypoint")
assert user == "10001:10001", f"user is {user!r}, want 10001:10001"
assert entry == ["/usr/local/bin/tripcap"], f"entrypoint is {entry!r}"
print(f"ok: runs as {user}, entrypoint {entry}")
PY

# Without the capabilities the binary still starts (permitted file capabilities, no
# effective bit: the kernel does not refuse it), and says what it cannot do.
VERSION_OUT=$(run_image --no-caps -- /usr/local/bin/tripcap --version) || fail "tripcap --version without capabilities: $VERSION_OUT"
echo "ok: starts without the capabilities: $VERSION_OUT"
OUT=$(run_image -- /usr/local/bin/tripcap interfaces)
echo "$OUT" | head -n1
[ "$(echo "$OUT" | head -n1)" = "RDMA sniffing: available in this build" ] || fail "tripcap interfaces in the image: $OUT"
LDD=$(run_image -- ldd /usr/local/bin/tripcap)
echo "$LDD" | grep -q 'libibverbs.so.1 => /' || fail "libibverbs not resolved in the image: $LDD"
! echo "$LDD" | grep -q 'not found' || fail "unresolved libraries in the image: $LDD"
! echo "$LDD" | grep -q libpcap || fail "libpcap is linked dynamically: $LDD"
echo "ok: libibverbs from the image, libpcap inside the binary"
PROVIDERS=$(run_image -- sh -c 'ls /usr/lib/*/libibverbs/ | tr "\n" " "')
echo "$PROVIDERS" | grep -q 'libmlx5' || fail "no mlx5 provider in the image: $PROVIDERS"
echo "ok: verbs providers: $PROVIDERS"
if [ "$TOOL" = buildah ]; then
  ctr=$(c from --pull=never "$TAG")
  mnt=$(c mount "$ctr")
  CAPS=$(getcap "$mnt/usr/local/bin/tripcap" 2>/dev/null || true)
  c umount "$ctr" >/dev/null; c rm "$ctr" >/dev/null
  # getcap prints `PATH cap_a,cap_b,cap_c=p` in an order of its own: compare as sets.
  GOT=$(echo "${CAPS##* }" | tr ',' '\n' | sed 's/=p$//' | sort | tr '\n' ' ')
  [ "$GOT" = "cap_ipc_lock cap_net_admin cap_net_raw " ] && [ "${CAPS##*=}" = p ] ||
    fail "file capabilities on the binary: '$CAPS', want cap_net_raw,cap_net_admin,cap_ipc_lock=p"
  echo "ok: file capabilities: ${CAPS##* }"
fi

# The DaemonSet's own probe command and ConfigMap, in the image, as uid 10001 with the
# DaemonSet's capabilities: on a node without the configured NICs it must say "not ready"
# (exit 1) naming them; with the interfaces swapped for loopback it must be ready (exit 0).
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
python3 scripts/deploy-manifest.py probe "$W" deploy/kubernetes/tripcap-daemonset.yaml
mkdir -p "$W/out"
chown 10001:10001 "$W/out"
chmod 0700 "$W/out"
mapfile -t PROBE < "$W/probe.argv"
MOUNTS=(--volume "$W/config:$(cat "$W/config.mountpath"):ro" --volume "$W/out:$(cat "$W/out.mountpath")")
rc=0
NOT_READY=$(run_image "${MOUNTS[@]}" -- "${PROBE[@]}") || rc=$?
echo "$NOT_READY"
[ "$rc" = 1 ] || fail "the probe on a node without the configured interfaces exited $rc, want 1"
echo "$NOT_READY" | grep -q "$(head -n1 "$W/interfaces")" || fail "the probe's table does not name the missing interface"
echo "ok: probe says not ready (exit 1) when the configured interfaces are absent"
cp "$W/config-lo/"* "$W/config/"
rc=0
READY=$(run_image "${MOUNTS[@]}" -- "${PROBE[@]}") || rc=$?
echo "$READY"
[ "$rc" = 0 ] || fail "the probe with the interfaces on loopback exited $rc, want 0"
echo "ok: probe says ready (exit 0) with the interfaces present"
step "image $TAG: all checks passed"
