// `npm run control-plane`: the test control plane for a person, with the CRDs installed, until Ctrl-C.
// `npm run control-plane -- --node` adds a real node (test/harness/node): a kubelet, containerd and
// kube-scheduler, with the images built from the Dockerfile.
import { ControlPlane } from './control-plane';
import { CRD_PATHS } from './global-setup';

async function main(): Promise<void> {
  const withNode = process.argv.slice(2).includes('--node');
  const plane = await ControlPlane.start({ crdPaths: CRD_PATHS, handleSignals: true, node: withNode });
  const { kubeconfigPath, server, crds, garbageCollector, node } = plane.info;
  const lines = [
    '',
    `Control plane running at ${server}`,
    `  kubeconfig:   ${kubeconfigPath}`,
    `  CRDs:         ${crds.map((c) => c.name).join(', ') || '(none found in libs/api/crds)'}`,
    `  GC:           ${garbageCollector ? 'kube-controller-manager running' : 'NONE (no kube-controller-manager)'}`,
    `  logs:         ${plane.info.runDir}/{etcd,kube-apiserver,kube-controller-manager}.log`,
    ...(node
      ? [
          `  node:         ${node.name}, Ready in ${node.readySeconds.toFixed(1)} s; logs in ${node.dir}`,
          `  images:       ${Object.values(node.images).join(', ')}`,
          `  inside it:    nsenter -t ${node.namespacePid} -n -m -- ctr -a ${node.containerdSocket} -n k8s.io containers ls`,
        ]
      : []),
    '',
    'Try:',
    `  kubectl --kubeconfig ${kubeconfigPath} get ${node ? 'nodes,pods -A -o wide' : 'ephemeralrunners -A'}`,
    '',
    'Run the integration tests against it (faster starts, and it stays up for kubectl afterwards):',
    `  ARO_TEST_CONTROL_PLANE=${plane.infoPath} npx jest test/integration --selectProjects integration`,
    '',
    'Ctrl-C stops it and removes the run folder.',
    '',
  ];
  process.stdout.write(lines.join('\n'));
  // Every child is unref'd so that it never holds a test runner open; this interval is what keeps the CLI
  // alive until the signal handler tears the control plane down.
  setInterval(() => undefined, 60_000);
}

main().catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
