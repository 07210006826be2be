#!/usr/bin/env bash
# An RDMA-capable tripcap in one command (issue 10): `-i mlx5_0` captures the RoCE
# traffic that the NIC offloads and the netdev never sees. Debian's libpcap is built
# without rdma-core's sniffer, so this script:
#   1. installs the build dependencies with apt (libibverbs-dev, compiler, flex, bison…);
#   2. fetches the distribution's libpcap source (`apt-get source`, through a temporary
#      deb-src entry for the distribution's own archive, removed again), verifies it,
#      or else the upstream release tarball checked against a pinned SHA-256;
#   3. builds libpcap.a (-fPIC) with `--enable-rdma` under target/rdma-libpcap/, and
#      fails unless configure enabled the RDMA sniffer;
#   4. builds the release tripcap against it, statically, into target/rdma/release/tripcap,
#      with libibverbs linked dynamically (the only extra run-time dependency);
#   5. checks the binary (scripts/check-rdma-build.sh) and prints a summary.
#
#   scripts/build-rdma.sh                       # all of the above
#   scripts/build-rdma.sh --check-only BINARY   # step 5 only, for CI
#
# Environment: CARGO (default `cargo`; e.g. CARGO="flock /tmp/cargo.lock cargo"),
# TRIPCAP_RDMA_NO_APT=1 to skip apt altogether (dependencies present; source from upstream
# or from target/rdma-libpcap/src/libpcap-1.10.3.tar.gz).
# Uses sudo for apt when not root. Needs network access to the Debian archive (or to
# tcpdump.org, or the tarball placed in target/rdma-libpcap/src/ beforehand).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

if [ "${1:-}" = --check-only ]; then
  exec scripts/check-rdma-build.sh "${2:?usage: scripts/build-rdma.sh --check-only BINARY}" "${3:-}"
fi
[ $# = 0 ] || { echo "usage: scripts/build-rdma.sh [--check-only BINARY]" >&2; exit 2; }

# The oldest libpcap accepted (bookworm's) and its upstream tarball: the SHA-256 is the one
# of Debian's libpcap_1.10.3.orig.tar.gz (listed in the archive-signed libpcap_1.10.3-1.dsc),
# which is byte for byte the upstream release (its .asc verifies against the Tcpdump Group's
# signing key shipped in debian/upstream/signing-key.asc).
MIN_VERSION=1.10.3
PIN_VERSION=1.10.3
PIN_SHA256=2a8885c403516cf7b0933ed4b14d6caa30e02052489ebd414dc75ac52e7559e6
UPSTREAM_URL=https://www.tcpdump.org/release/libpcap-$PIN_VERSION.tar.gz

CARGO=${CARGO:-cargo}
OUT=$ROOT/target/rdma-libpcap          # src/, build/, lib/<sha256>/libpcap.a
TARGET_DIR=$ROOT/target/rdma           # cargo's target dir for this build
DEB_SRC=/etc/apt/sources.list.d/tripcap-deb-src.sources
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
T0=$SECONDS
step() { printf '\n== [%3ds] %s\n' $((SECONDS - T0)) "$*"; }
die() { echo "build-rdma: FAILED: $*" >&2; exit 1; }

# --- 1. apt: a deb-src entry for the distribution's own archive, one update, the installs.

# Prints deb822 deb-src stanzas for the enabled `deb` entries of the distribution's own
# archive (suites CODENAME, CODENAME-updates, CODENAME-security; Debian's keyring or a
# .../debian(-security) URI), read from sources.list(.d): same URIs, Suites, Components,
# Signed-By. Third-party repositories (other suites, other keys) are left out: their
# missing Sources indexes would fail `apt-get update`.
deb_src_stanzas() {
  local codename=$1 f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && [ "$f" != "$DEB_SRC" ] || continue
    awk -v codename="$codename" '
      function flush(   n, i, s, keep) {
        if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no" && uris != "") {
          n = split(suites, s, " ")
          for (i = 1; i <= n; i++)
            if (s[i] == codename || s[i] == codename "-updates" || s[i] == codename "-security")
              keep = keep (keep == "" ? "" : " ") s[i]
          if (keep != "" && (signed ~ /debian-archive/ || (signed == "" && uris ~ /\/debian(-security)?\/?( |$)/))) {
            print "Types: deb-src"; print "URIs: " uris; print "Suites: " keep
            print "Components: " comps
            if (signed != "") print "Signed-By: " signed
            print ""
          }
        }
        types = uris = suites = comps = signed = enabled = ""; field = ""
      }
      /^#/ { next }
      /^[[:space:]]*$/ { flush(); next }
      /^[[:space:]]/ { if (field == "signed-by") signed = signed "\n" $0; next }
      {
        field = tolower(substr($0, 1, index($0, ":") - 1)); value = substr($0, index($0, ":") + 1)
        sub(/^[[:space:]]+/, "", value); sub(/[[:space:]]+$/, "", value)
        if (field == "types") types = value
        else if (field == "uris") uris = value
        else if (field == "suites") suites = value
        else if (field == "components") comps = value
        else if (field == "signed-by") signed = value
        else if (field == "enabled") enabled = value
      }
      END { flush() }' "$f"
  done
  # One-line style: deb [options] URI SUITE COMPONENT...
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk -v codename="$codename" '
    $1 == "deb" {
      signed = ""; i = 2
      if ($2 ~ /^\[/) {
        for (; i <= NF; i++) {
          if ($i ~ /^\[?signed-by=/) { signed = $i; sub(/^\[?signed-by=/, "", signed); sub(/\]$/, "", signed) }
          if ($i ~ /\]$/) { i++; break }
        }
      }
      uri = $i; suite = $(i + 1); comps = ""
      for (j = i + 2; j <= NF; j++) comps = comps (comps == "" ? "" : " ") $j
      if (suite != codename && suite != codename "-updates" && suite != codename "-security") next
      if (!(signed ~ /debian-archive/ || (signed == "" && uri ~ /\/debian(-security)?\/?$/))) next
      print "Types: deb-src"; print "URIs: " uri; print "Suites: " suite; print "Components: " comps
      if (signed != "") print "Signed-By: " signed
      print ""
    }'
}

remove_deb_src() { [ ! -e "$DEB_SRC" ] || $SUDO rm -f "$DEB_SRC"; }
trap remove_deb_src EXIT

# shellcheck disable=SC1091
CODENAME=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
HAVE_DEB_SRC=0
if [ "${TRIPCAP_RDMA_NO_APT:-0}" != 1 ]; then
  STANZAS=$( [ -n "$CODENAME" ] && deb_src_stanzas "$CODENAME" || true)
  if [ -n "$STANZAS" ]; then
    step "apt: temporary deb-src entry $DEB_SRC (the distribution's archive, $CODENAME)"
    printf '%s\n' "$STANZAS" | $SUDO tee "$DEB_SRC"
    HAVE_DEB_SRC=1
  else
    step "apt: no entry for the distribution's own archive found: no deb-src (will try upstream)"
  fi
  step "apt-get update"
  if ! $SUDO apt-get update -qq; then
    if [ "$HAVE_DEB_SRC" = 1 ]; then
      echo "build-rdma: apt-get update failed with the deb-src entry; retrying without it"
      remove_deb_src; HAVE_DEB_SRC=0
      $SUDO apt-get update -qq || echo "build-rdma: apt-get update failed; using the package lists as they are"
    fi
  fi
fi
if [ "${TRIPCAP_RDMA_NO_APT:-0}" != 1 ]; then
  step "apt-get install (build dependencies)"
  $SUDO apt-get install -y -qq --no-install-recommends \
    libibverbs-dev build-essential flex bison pkg-config dpkg-dev binutils \
    ca-certificates curl gpgv xz-utils >/dev/null
  dpkg-query -W -f '  ${Package} ${Version}\n' libibverbs-dev libibverbs1 ibverbs-providers 2>/dev/null || true
fi

# --- 2. libpcap's source: the distribution's, else upstream's, verified either way.

mkdir -p "$OUT/src"
TARBALL=""
VERSION=""
if [ "$HAVE_DEB_SRC" = 1 ]; then
  step "apt-get source --download-only libpcap"
  rm -f "$OUT"/src/libpcap_*
  # apt checks every file against the hashes of the Sources index, whose InRelease is
  # signed by the archive key (Signed-By above): a mismatch fails the download.
  (cd "$OUT/src" && apt-get source --download-only -qq libpcap) || echo "build-rdma: apt-get source libpcap failed"
  DSC=""
  for f in "$OUT"/src/libpcap_*.dsc; do [ -f "$f" ] && DSC=$f; done
  if [ -n "$DSC" ]; then
    DEB_VERSION=$(sed -n 's/^Version: //p' "$DSC")
    VERSION=${DEB_VERSION#*:}; VERSION=${VERSION%-*}
    ORIG=$(awk '/^Checksums-Sha256:/ {on = 1; next} /^[^ ]/ {on = 0} on && $3 ~ /\.orig\.tar\.[a-z0-9]+$/ {print $3}' "$DSC")
    WANT=$(awk -v f="$ORIG" '/^Checksums-Sha256:/ {on = 1; next} /^[^ ]/ {on = 0} on && $3 == f {print $1}' "$DSC")
    [ -n "$ORIG" ] && [ -f "$OUT/src/$ORIG" ] || die "$DSC lists no orig tarball that was downloaded"
    GOT=$(sha256sum "$OUT/src/$ORIG" | cut -d' ' -f1)
    echo "  source package: libpcap $DEB_VERSION ($(basename "$DSC"))"
    echo "  $ORIG SHA-256 $GOT"
    [ "$GOT" = "$WANT" ] || die "$ORIG: SHA-256 $GOT, the .dsc says $WANT"
    echo "  matches the .dsc's Checksums-Sha256"
    if [ "$VERSION" = "$PIN_VERSION" ]; then
      [ "$GOT" = "$PIN_SHA256" ] || die "$ORIG: SHA-256 $GOT is not the pinned $PIN_SHA256"
      echo "  matches the SHA-256 pinned in this script for libpcap-$PIN_VERSION.tar.gz"
    fi
    # The orig tarball is upstream's: check upstream's signature when Debian ships it.
    DEBIAN_TAR=""
    for f in "$OUT"/src/libpcap_"${DEB_VERSION#*:}".debian.tar.*; do [ -f "$f" ] && DEBIAN_TAR=$f; done
    if [ -f "$OUT/src/$ORIG.asc" ] && [ -n "$DEBIAN_TAR" ] && command -v gpgv >/dev/null && command -v gpg >/dev/null &&
       tar xf "$DEBIAN_TAR" -O debian/upstream/signing-key.asc >"$OUT/src/upstream-key.asc" 2>/dev/null; then
      gpg --batch --quiet --dearmor <"$OUT/src/upstream-key.asc" >"$OUT/src/upstream-key.gpg"
      if SIG=$(gpgv --keyring "$OUT/src/upstream-key.gpg" "$OUT/src/$ORIG.asc" "$OUT/src/$ORIG" 2>&1); then
        echo "  upstream signature: $(echo "$SIG" | grep -m1 'Good signature')"
      else
        echo "$SIG"; die "$ORIG: the upstream signature does not verify"
      fi
    else
      echo "  upstream signature: not checked (no .asc, signing key or gpg)"
    fi
    TARBALL=$OUT/src/$ORIG
  else
    echo "build-rdma: apt-get source libpcap fetched nothing"
  fi
  remove_deb_src
fi
if [ -z "$TARBALL" ]; then
  # Upstream, or a copy placed here beforehand; only with the pinned checksum.
  LOCAL=$OUT/src/libpcap-$PIN_VERSION.tar.gz
  if [ ! -f "$LOCAL" ]; then
    step "fetching $UPSTREAM_URL"
    if ! curl -fsSL --connect-timeout 15 --max-time 300 -o "$LOCAL.part" "$UPSTREAM_URL"; then
      rm -f "$LOCAL.part"
      die "no libpcap source reachable: enable deb-src for your Debian archive, or put $UPSTREAM_URL (SHA-256 $PIN_SHA256) at $LOCAL"
    fi
    mv "$LOCAL.part" "$LOCAL"
  fi
  GOT=$(sha256sum "$LOCAL" | cut -d' ' -f1)
  echo "  $(basename "$LOCAL") SHA-256 $GOT"
  [ "$GOT" = "$PIN_SHA256" ] || die "$LOCAL: SHA-256 $GOT is not the pinned $PIN_SHA256"
  TARBALL=$LOCAL
  VERSION=$PIN_VERSION
fi
dpkg --compare-versions "$VERSION" ge "$MIN_VERSION" 2>/dev/null ||
  [ "$(printf '%s\n%s\n' "$MIN_VERSION" "$VERSION" | sort -V | head -1)" = "$MIN_VERSION" ] ||
  die "libpcap $VERSION is older than $MIN_VERSION"

# --- 3. libpcap.a with the RDMA sniffer. The pristine upstream tree (Debian's patches are
# packaging: the shared library, man sections, Hurd/kFreeBSD), so both sources build alike.

step "configure libpcap $VERSION --enable-rdma"
BUILD=$OUT/build
rm -rf "${BUILD:?}" "${OUT:?}/lib"
mkdir -p "$BUILD"
tar xf "$TARBALL" -C "$BUILD" --strip-components=1
CONFIGURE_FLAGS=(--enable-rdma --disable-shared --with-pcap=linux
  --disable-dbus --disable-bluetooth --disable-usb --disable-netmap --disable-remote
  --without-libnl --without-dpdk --without-dag --without-septel --without-snf --without-turbocap)
echo "  ./configure ${CONFIGURE_FLAGS[*]}"
CFLAGS_BASE=$(dpkg-buildflags --get CFLAGS 2>/dev/null || echo "-O2 -g")
CPPFLAGS_BASE=$(dpkg-buildflags --get CPPFLAGS 2>/dev/null || true)
(cd "$BUILD" && CFLAGS="$CFLAGS_BASE -fPIC" CPPFLAGS="$CPPFLAGS_BASE" ./configure "${CONFIGURE_FLAGS[@]}") >"$OUT/configure.log" 2>&1 ||
  { tail -20 "$OUT/configure.log"; die "libpcap's configure failed (log: $OUT/configure.log, $BUILD/config.log)"; }
grep -E '^#define PCAP_SUPPORT_' "$BUILD/config.h" | sed 's/^/  config.h: /' || true
grep -qE '^#define PCAP_SUPPORT_RDMASNIFF( |$)' "$BUILD/config.h" ||
  die "configure did not enable RDMA sniffing (no PCAP_SUPPORT_RDMASNIFF in config.h): is libibverbs-dev (rdma-core) installed? See $BUILD/config.log"
# The libraries libpcap.a needs: with the options above, libibverbs only.
PCAP_LIBS=$(sed -n 's/^LIBS[[:space:]]*=[[:space:]]*//p' "$BUILD/Makefile")
echo "  libpcap's LIBS: $PCAP_LIBS"
[[ " $PCAP_LIBS " == *" -libverbs "* ]] || die "libpcap's LIBS ($PCAP_LIBS) lack -libverbs"

step "make libpcap.a"
make -C "$BUILD" -s -j"$(nproc)" libpcap.a >"$OUT/make.log" 2>&1 ||
  { tail -30 "$OUT/make.log"; die "building libpcap.a failed (log: $OUT/make.log)"; }
# A directory holding libpcap.a and nothing else: `-lpcap` can only find the static one
# there. Named after its content: cargo does not watch libpcap.a, but it does watch
# LIBPCAP_LIBDIR (through the pcap crate), so a different libpcap.a relinks tripcap.
PCAP_A_SHA=$(sha256sum "$BUILD/libpcap.a" | cut -d' ' -f1)
LIBDIR=$OUT/lib/${PCAP_A_SHA:0:16}
mkdir -p "$LIBDIR"
cp "$BUILD/libpcap.a" "$LIBDIR/libpcap.a"
grep -q ' T rdmasniff_create$' <<<"$(nm "$LIBDIR/libpcap.a" 2>/dev/null)" || die "libpcap.a has no rdmasniff_create"
echo "  $LIBDIR/libpcap.a ($(du -k "$LIBDIR/libpcap.a" | cut -f1) KiB)"

# --- 4. tripcap against it. The pcap crate's build.rs takes LIBPCAP_LIBDIR as a link search
# path (ahead of the system's) and LIBPCAP_VER as the version (it cannot dlopen a .a to ask).
# libpcap.a's own libraries go at the end of the link line (-C link-arg lands after the
# crates' libraries), only as needed; `cargo rustc` applies them to the binary alone.

step "cargo build --release (tripcap, libpcap $VERSION static, libibverbs dynamic) into $TARGET_DIR"
LINK_ARGS=(-C "link-arg=-Wl,--push-state,--as-needed")
for l in $PCAP_LIBS; do LINK_ARGS+=(-C "link-arg=$l"); done
LINK_ARGS+=(-C "link-arg=-Wl,--pop-state")
echo "  LIBPCAP_LIBDIR=$LIBDIR LIBPCAP_VER=$VERSION $CARGO rustc --release --bin tripcap --target-dir $TARGET_DIR -- ${LINK_ARGS[*]}"
# shellcheck disable=SC2086 # CARGO may be a command with arguments (e.g. flock LOCK cargo)
LIBPCAP_LIBDIR=$LIBDIR LIBPCAP_VER=$VERSION \
  $CARGO rustc --release --bin tripcap --target-dir "$TARGET_DIR" -- "${LINK_ARGS[@]}"
BIN=$TARGET_DIR/release/tripcap

# --- 5. The checks.

step "checks"
scripts/check-rdma-build.sh "$BIN" "$VERSION"
echo
echo "RDMA-capable tripcap: $BIN"
echo "  libpcap $VERSION (static, RDMA sniffer) from $(basename "$TARBALL"), SHA-256 $(sha256sum "$TARBALL" | cut -d' ' -f1)"
echo "  needs at run time: libibverbs1 and ibverbs-providers (the mlx5 provider)"
echo "  took $((SECONDS - T0)) s"
