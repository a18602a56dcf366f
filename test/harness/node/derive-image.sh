#!/usr/bin/env bash
# Derives, from an image build-images.sh made, a second image that differs only in its config (one
# label, e.g. org.opencontainers.image.revision), so that its digest differs: what a `helm upgrade` to a
# release built from another commit looks like to the kubelet and to the controller (a new image
# reference, a new digest, pods replaced), without a second `buildah bud` of the Dockerfile.
#
#   derive-image.sh <source ref> <new ref> <label key=value>
#
# Prints on its last line of stdout the docker-archive holding <new ref>, cached by what it is derived
# from under the same folder as build-images.sh's archives (a second run derives nothing).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 <source ref> <new ref> <label key=value>" >&2; exit 2; }
source_ref=$1 new_ref=$2 label=$3
cache_root=${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}
root=$cache_root/node-images
S=(--root "$root/storage" --runroot "$root/runroot" --storage-driver overlay)
key=$(printf '%s\n%s\n%s\n' "$source_ref" "$new_ref" "$label" | sha256sum | cut -c1-16)
out=$root/derived-$key.tar
if [ -f "$out" ]; then echo "$out"; exit 0; fi

# The same lock as build-images.sh: both write the one containers-storage.
exec 9>"$root/.build.lock"
flock 9
had_var_lib_containers=$([ -e /var/lib/containers ] && echo yes || echo no)
trap '[ "$had_var_lib_containers" = no ] && rm -rf /var/lib/containers' EXIT
if ! buildah "${S[@]}" inspect --type image "$source_ref" >/dev/null 2>&1; then
  # After a wiped storage the source is loaded from its archive (build-images.sh names it by its tag).
  buildah "${S[@]}" pull -q "docker-archive:$root/aro-${source_ref##*:}.tar" >/dev/null
fi
c=$(buildah "${S[@]}" from --pull=never "$source_ref")
buildah "${S[@]}" config --label "$label" "$c"
buildah "${S[@]}" commit -q --rm "$c" "$new_ref" >/dev/null
tmp=$out.tmp.$$
buildah "${S[@]}" push "$new_ref" "docker-archive:$tmp:$new_ref" >&2
mv "$tmp" "$out"
# Older derivations go; the newest few are kept for the next run.
ls -t "$root"/derived-*.tar 2>/dev/null | tail -n +4 | xargs -r rm -f
echo "$out"
