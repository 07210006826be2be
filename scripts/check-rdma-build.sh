#!/usr/bin/env bash
# Checks that a tripcap binary is the RDMA-capable build of scripts/build-rdma.sh:
# libpcap linked in statically with rdma-core's sniffer, libibverbs dynamically.
#
#   scripts/check-rdma-build.sh BINARY [LIBPCAP_VERSION]
#
# Checks, each printed with the lines it is based on:
#   1. the binary starts (`BINARY --version`): every shared library it needs resolves;
#   2. it needs libibverbs.so.1 (readelf NEEDED, and ldd resolves it) and not libpcap.so;
#   3. the libpcap inside it reports its version (`pcap_lib_version`'s string), and it
#      is LIBPCAP_VERSION when given;
#   4. libpcap's RDMA sniffer is in it (rdmasniff_create, rdmasniff_findalldevs in the
#      symbol table) and calls into libibverbs (undefined ibv_* symbols).
# Exits non-zero when a check fails. Needs binutils (readelf, nm, strings) and ldd.
set -uo pipefail
BIN=${1:?usage: scripts/check-rdma-build.sh BINARY [LIBPCAP_VERSION]}
WANT_VERSION=${2:-}
FAILED=0
pass() { echo "  ok:   $*"; }
fail() { echo "  FAIL: $*"; FAILED=$((FAILED + 1)); }
for tool in readelf nm strings ldd; do
  command -v "$tool" >/dev/null || { echo "check-rdma-build: $tool not found (apt-get install binutils libc-bin)" >&2; exit 2; }
done
[ -x "$BIN" ] || { echo "check-rdma-build: $BIN is not an executable file" >&2; exit 2; }
echo "== checking $BIN"

# 1. It starts.
if VERSION_OUT=$("$BIN" --version 2>&1); then
  pass "starts: $VERSION_OUT"
else
  fail "does not start: $VERSION_OUT"
fi

# 2. Dynamic dependencies: libibverbs yes, libpcap no.
NEEDED=$(readelf -d "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "  NEEDED: $NEEDED"
LDD=$(ldd "$BIN" 2>&1)
echo "$LDD" | grep -E 'libibverbs|libpcap|not found' | sed 's/^[[:space:]]*/  ldd: /'
if [[ " $NEEDED " == *" libibverbs.so.1 "* ]] && grep -qE '^[[:space:]]*libibverbs\.so\.1 => /' <<<"$LDD"; then
  pass "needs libibverbs.so.1, and it resolves"
else
  fail "libibverbs.so.1 is not needed or does not resolve"
fi
if grep -q 'libpcap\.so' <<<"$LDD" || [[ "$NEEDED" == *libpcap* ]]; then
  fail "links libpcap.so dynamically: the system libpcap (without RDMA sniffing) would be used"
else
  pass "no libpcap.so: libpcap is linked in statically"
fi
if grep -q 'not found' <<<"$LDD"; then
  fail "some shared libraries do not resolve"
fi

# 3. The libpcap inside reports its version.
PCAP_VERSION=$(strings -a "$BIN" | grep -m1 -oE 'libpcap version [0-9]+\.[0-9]+\.[0-9]+[^ ]*( \(with [^)]*\))?')
echo "  strings: ${PCAP_VERSION:-<no libpcap version string>}"
if [ -z "$PCAP_VERSION" ]; then
  fail "no 'libpcap version' string: is libpcap linked in?"
elif [ -n "$WANT_VERSION" ] && ! [[ "$PCAP_VERSION" =~ ^libpcap\ version\ ${WANT_VERSION//./\\.}([^0-9.]|$) ]]; then
  fail "libpcap is not version $WANT_VERSION"
else
  pass "libpcap version string present${WANT_VERSION:+ ($WANT_VERSION)}"
fi

# 4. The RDMA sniffer is in it and uses libibverbs.
SYMS=$(nm -C "$BIN" 2>&1)
RDMA_SYMS=$(echo "$SYMS" | grep -E ' [Tt] rdmasniff_(create|findalldevs)$')
echo "$RDMA_SYMS" | sed '/^$/d; s/^/  nm: /'
if grep -q ' rdmasniff_create$' <<<"$RDMA_SYMS" && grep -q ' rdmasniff_findalldevs$' <<<"$RDMA_SYMS"; then
  pass "libpcap's RDMA sniffer (pcap-rdmasniff.c) is linked in"
else
  fail "no rdmasniff_create/rdmasniff_findalldevs: libpcap was built without RDMA sniffing (or symbols were stripped)"
fi
IBV=$(echo "$SYMS" | grep -E ' U ibv_' | awk '{print $2}' | sed 's/@.*//' | sort -u)
echo "  nm: $(echo "$IBV" | sed '/^$/d' | wc -l) undefined ibv_* symbols: $(echo "$IBV" | head -5 | tr '\n' ' ')"
if [ -n "$IBV" ]; then
  pass "calls into libibverbs"
else
  fail "no ibv_* symbols: the RDMA sniffer is not wired to libibverbs"
fi

# 5. The binary itself says so, decided at run time (`tripcap interfaces`, `check`).
SAYS=$("$BIN" interfaces 2>/dev/null | head -n 1)
echo "  interfaces: $SAYS"
if [ "$SAYS" = "RDMA sniffing: available in this build" ]; then
  pass "tripcap interfaces reports RDMA sniffing available"
else
  fail "tripcap interfaces does not report RDMA sniffing available"
fi

if [ "$FAILED" = 0 ]; then
  echo "== OK: $BIN is RDMA-capable (${PCAP_VERSION:-libpcap}, RDMA sniffer, needs libibverbs.so.1 at run time)"
else
  echo "== FAILED: $FAILED check(s) on $BIN"
  exit 1
fi
