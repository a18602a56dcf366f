import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { nodeUnsupportedReason } from '../../harness/node/prepare';

/**
 * Whether the real-node suite can run here, decided when the suite file loads (jest cannot skip from a
 * hook). `.ci/run` installs the packages beforehand (test/harness/node/install-packages.sh), so on a
 * machine of the project's kind this is undefined and the suite runs; elsewhere it says exactly what is
 * missing, and the suite is skipped with that reason printed, never passed silently.
 */
export function realNodeSkipReason(): string | undefined {
  const unsupported = nodeUnsupportedReason();
  if (unsupported) return unsupported;
  // Set by .ci/run when it could not install or build what the node needs on this machine.
  if (process.env.ARO_REAL_NODE_SKIP) return process.env.ARO_REAL_NODE_SKIP;
  const commands = [
    'containerd',
    'runc',
    'buildah',
    'mmdebstrap',
    'iptables',
    'nsenter',
    'unshare',
    'ip',
    'ctr',
  ];
  const missing = commands.filter((c) => {
    try {
      execFileSync('sh', ['-c', `command -v ${c}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
  if (!existsSync('/usr/lib/cni/bridge')) missing.push('/usr/lib/cni/bridge (containernetworking-plugins)');
  if (missing.length > 0) {
    return `missing ${missing.join(', ')}: run test/harness/node/install-packages.sh as root (.ci/run does)`;
  }
  return undefined;
}

/** `describe`, or `describe.skip` with the reason on stderr in capitals, so a skip cannot go unseen. */
export function describeOnRealNode(name: string, body: () => void): void {
  const reason = realNodeSkipReason();
  if (reason) {
    process.stderr.write(`\n!!! REAL-NODE SUITE SKIPPED: ${reason}\n\n`);
    describe.skip(`${name} [SKIPPED: ${reason}]`, body);
  } else {
    describe(name, body);
  }
}
