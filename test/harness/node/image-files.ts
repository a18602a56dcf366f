import { execFileSync } from 'node:child_process';

/*
 * The files of an image as the node gets it: the docker-archive build-images.sh writes (what containerd
 * imports). Read with tar alone, no container runtime and nothing mounted: the archive's manifest names
 * the image's layers bottom-up, each an uncompressed tar inside the archive, listed without extracting.
 */

/** The layers of the archive's one image, bottom-up, as the archive names them (by content digest). */
export function archiveLayers(archive: string): string[] {
  const manifest = JSON.parse(tarOut(['-xOf', archive, 'manifest.json'])) as { Layers?: string[] }[];
  if (manifest.length !== 1 || !manifest[0].Layers) {
    throw new Error(`${archive}: expected a docker-archive of one image (manifest.json with its Layers)`);
  }
  return manifest[0].Layers;
}

/**
 * The paths (no leading `/`, folders included, no trailing `/`) that `layers` of the archive make, in
 * order, whiteouts applied: `.wh.<name>` deletes a path of a lower layer, `.wh..wh..opq` empties a folder.
 */
export function layerPaths(archive: string, layers: readonly string[]): Set<string> {
  const paths = new Set<string>();
  const removeUnder = (prefix: string, keepSelf: boolean): void => {
    for (const p of paths) if (p.startsWith(`${prefix}/`) || (!keepSelf && p === prefix)) paths.delete(p);
  };
  for (const layer of layers) {
    const entries = tarOut(['-c', 'tar -xOf "$0" "$1" | tar -t', archive, layer], 'sh')
      .split('\n')
      .map((e) => e.replace(/^\.?\/+/, '').replace(/\/+$/, ''))
      .filter(Boolean);
    // Whiteouts act on the layers below, so they go first; then this layer's own paths.
    for (const entry of entries) {
      const slash = entry.lastIndexOf('/');
      const dir = slash < 0 ? '' : entry.slice(0, slash);
      const name = entry.slice(slash + 1);
      if (name === '.wh..wh..opq') removeUnder(dir, true);
      else if (name.startsWith('.wh.')) removeUnder(dir ? `${dir}/${name.slice(4)}` : name.slice(4), false);
    }
    for (const entry of entries) if (!entry.split('/').pop()?.startsWith('.wh.')) paths.add(entry);
  }
  return paths;
}

/** What an image adds over the image it is built FROM: the paths of its layers the base does not have. */
export function pathsAddedOver(archive: string, baseArchive: string): Set<string> {
  const base = new Set(archiveLayers(baseArchive));
  const own = archiveLayers(archive).filter((layer) => !base.has(layer));
  if (own.length === archiveLayers(archive).length) {
    throw new Error(`${archive} shares no layer with ${baseArchive}: not built FROM it`);
  }
  return layerPaths(archive, own);
}

function tarOut(args: string[], command = 'tar'): string {
  // A layer of the product's node_modules lists ~20,000 paths (~2 MB).
  return execFileSync(command, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
}
