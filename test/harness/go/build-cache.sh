# shellcheck shell=bash
# Sourced by the harness's build scripts (test/harness/go/build.sh, test/harness/go/build-helm.sh,
# test/conformance/build.sh): what makes a build an install step that only the first run pays for.
#
#   build_begin LABEL CACHE_ROOT OUT RESULT [LOCK_TAG]
#     LABEL     names the build in progress lines: `[LABEL] 12:00:00 ...` on stderr (see `step`)
#     OUT       the finished build's folder under CACHE_ROOT; RESULT, the path printed for the caller
#     LOCK_TAG  tells apart builds that share a cache root (`-helm`: .build-helm.lock, .build-helm-XXXXXX)
#   Exits the script at once, printing RESULT, when OUT already holds a finished build (`build_complete`,
#   by default a `.complete` marker; a script may define its own after sourcing this file). Otherwise it
#   takes the cache's lock (waiting for another build, then reusing it if that one finished) and sets
#   `build_tmp` to a fresh temporary sibling of OUT, removed on exit unless `build_publish` runs.
#
#   build_publish
#     Renames `build_tmp` into place as OUT, and prints RESULT on the last line of stdout.
#
# The build goes to a temporary sibling folder that is renamed into place only once it is whole, so an
# interrupted or concurrent build never leaves a half-filled folder that looks usable.

build_complete() { [ -f "$build_out/.complete" ]; }

step() { echo "[$build_label] $(date +%H:%M:%S) $*" >&2; }

build_begin() {
  build_label=$1 build_cache_root=$2 build_out=$3 build_result=$4
  local lock_tag=${5:-}
  if build_complete; then
    echo "$build_result"
    exit 0
  fi
  mkdir -p "$build_cache_root"
  # Two test runs that both find no build (say, the unit and integration jobs of one CI run, or two jest
  # workers) would otherwise compile the same packages side by side on two cores; the second waits and
  # then reuses the first's.
  if command -v flock >/dev/null; then
    exec 9>"$build_cache_root/.build$lock_tag.lock"
    if ! flock -n 9; then
      step "another build is running; waiting for it"
      flock 9
    fi
    if build_complete; then
      echo "$build_result"
      exit 0
    fi
  fi
  build_tmp=$(mktemp -d "$build_cache_root/.build$lock_tag-XXXXXX")
  trap 'rm -rf "$build_tmp"' EXIT
}

build_publish() {
  rm -rf "$build_out"
  mv "$build_tmp" "$build_out"
  trap - EXIT
  step "done: $build_result"
  echo "$build_result"
}
