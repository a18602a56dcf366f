#!/usr/bin/env bash
# Installs, from the distribution's own packages, what the real node (test/harness/node) needs and the
# machine lacks: containerd + runc (the runtime), the CNI plugins (the pod network, inside the node's own
# network namespace), buildah (builds the images from the Dockerfile), mmdebstrap (the base image's
# Debian root), iptables (the kubelet's own chains, in the node's namespace). Idempotent: nothing is
# installed when every command is there.
#
# Exits 0 when everything is there afterwards; otherwise 1 with one line on stderr saying what is missing
# and why it could not be installed, which the real-node suite prints as its reason to skip.
set -uo pipefail

# command -> Debian package
declare -A needs=(
  [containerd]=containerd
  [runc]=runc
  [buildah]=buildah
  [mmdebstrap]=mmdebstrap
  [iptables]=iptables
  [nsenter]=util-linux
  [unshare]=util-linux
  [ip]=iproute2
  [/usr/lib/cni/bridge]=containernetworking-plugins
  [/usr/lib/cni/host-local]=containernetworking-plugins
)

missing_packages() {
  local cmd
  for cmd in "${!needs[@]}"; do
    if [[ $cmd == /* ]]; then [ -x "$cmd" ] && continue; else command -v "$cmd" >/dev/null 2>&1 && continue; fi
    echo "${needs[$cmd]}"
  done | sort -u
}

missing=$(missing_packages)
[ -z "$missing" ] && exit 0
# shellcheck disable=SC2086
list=$(echo $missing)
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "real node: missing packages ($list) and no way to install them here (needs root and apt-get)" >&2
  exit 1
fi
echo "[node packages] $(date +%H:%M:%S) installing $list" >&2
began=$(date +%s)
# A machine with stale package lists (or none) needs an update first; the install alone is tried
# first because an update costs a round trip to every source.
# shellcheck disable=SC2086
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $list >&2; then
  apt-get update -qq >&2 || true
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $list >&2
fi
missing=$(missing_packages)
if [ -n "$missing" ]; then
  # shellcheck disable=SC2086
  echo "real node: could not install $(echo $missing) with apt-get" >&2
  exit 1
fi
echo "[node packages] $(date +%H:%M:%S) installed in $(( $(date +%s) - began )) s" >&2
