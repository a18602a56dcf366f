/**
 * What a control plane with a real node needs beyond the harness's defaults (control-plane-flags.ts),
 * as edits of those command lines, so the node-less control plane every other suite uses stays as it is.
 */

function replaceFlag(args: readonly string[], name: string, value: string | undefined): string[] {
  const out = args.filter((a) => !a.startsWith(`${name}=`));
  return value === undefined ? out : [...out, `${name}=${value}`];
}

/**
 * kube-apiserver: the Node authorizer and NodeRestriction, so the kubelet works with exactly a node's
 * rights (its own Node and Lease, the pods bound to it and what they mount) and no binding is made for
 * it; and the ServiceAccount admission plugin, so pods get their service-account token volume as on any
 * cluster (kcm's serviceaccount controller now makes the `default` accounts it insists on).
 */
export function nodeApiserverArgs(args: readonly string[]): string[] {
  let out = replaceFlag(args, '--authorization-mode', 'Node,RBAC');
  out = replaceFlag(out, '--disable-admission-plugins', undefined);
  return replaceFlag(out, '--enable-admission-plugins', 'NodeRestriction');
}

/**
 * kube-controller-manager: what a cluster with a node runs besides GC and namespaces. nodelifecycle lifts
 * the kubelet's node.kubernetes.io/not-ready taint once the node is Ready; deployment and replicaset run
 * the chart's Deployment; endpointslice takes an unready controller out of its Service; serviceaccount
 * and root-ca-cert-publisher give every namespace its `default` account and `kube-root-ca.crt`.
 */
export function nodeControllerManagerArgs(args: readonly string[], servingCaPath: string): string[] {
  const controllers = [
    'garbagecollector',
    'namespace',
    'serviceaccount',
    'root-ca-cert-publisher',
    'nodelifecycle',
    'deployment',
    'replicaset',
    'endpointslice',
  ];
  const out = replaceFlag(args, '--controllers', controllers.join(','));
  return replaceFlag(out, '--root-ca-file', servingCaPath);
}
