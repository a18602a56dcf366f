import { join } from 'node:path';

/**
 * The real node's configuration files, all under its own folder. Each setting that is not the default
 * says why: most are there because this machine kind has no systemd, cgroup v1, no CAP_SYS_RESOURCE and
 * no route out (docs/testing.md, "The real node"; research: shared/design/research/real-node.md).
 */

/** Addresses inside the node's network namespace; none of them exists on the host. */
export const NODE_NETWORK = {
  /** The node's InternalIP, on the namespace's loopback (the kubelet refuses a 127.x node IP). */
  nodeIp: '10.77.0.1',
  /**
   * The `kubernetes` Service's ClusterIP (first of the harness's 10.0.0.0/24), on the namespace's loopback
   * too: with no kube-proxy, the relay to the apiserver listens right there, so in-cluster clients
   * (KUBERNETES_SERVICE_HOST, injected by the kubelet) reach the apiserver as on any cluster.
   */
  apiserverServiceIp: '10.0.0.1',
  apiserverServicePort: 443,
  /** The pod bridge: pods get 10.244.77.x, default route via the bridge into the node's namespace only. */
  bridge: 'arobr0',
  podSubnet: '10.244.77.0/24',
  podGateway: '10.244.77.1',
} as const;

export const NODE_NAME = 'aro-node';
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10.2';

/** `root`: containerd's content and snapshots, kept between runs when the node owns the shared one. */
export function containerdConfig(dir: string, root: string): string {
  return `version = 2
root = "${root}"
state = "${join(dir, 'containerd', 'state')}"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "${containerdSocket(dir)}"
[ttrpc]
  address = "${containerdSocket(dir)}.ttrpc"
[debug]
  level = "info"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  disable_apparmor = true
  enable_selinux = false
  # No CAP_SYS_RESOURCE: a sandbox's -998 oom_score_adj would be refused; clamp to containerd's own.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/bin/runc"
        Root = "${join(dir, 'containerd', 'runc')}"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${join(dir, 'cni', 'net.d')}"
`;
}

export function containerdSocket(dir: string): string {
  return join(dir, 'containerd', 'containerd.sock');
}

/**
 * The pod network, entirely inside the node's namespace: a bridge, no masquerade, and a default route
 * that ends in the node's namespace, which itself has no route out.
 */
export function cniConfig(dir: string): string {
  return JSON.stringify({
    cniVersion: '0.4.0',
    name: 'aro-node',
    plugins: [
      {
        type: 'bridge',
        bridge: NODE_NETWORK.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: NODE_NETWORK.podSubnet, gateway: NODE_NETWORK.podGateway }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: join(dir, 'cni', 'ipam'),
        },
      },
    ],
  });
}

/** `cgroupRoot`: the node's own (node-cgroups.ts), so two nodes on one host never share `/kubepods`. */
export function kubeletConfig(dir: string, cgroupRoot: string): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 host: refused by default since 1.35.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /${cgroupRoot}
containerRuntimeEndpoint: unix://${containerdSocket(dir)}
imageServiceEndpoint: unix://${containerdSocket(dir)}
failSwapOn: false
address: ${NODE_NETWORK.nodeIp}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
# Only the namespace reaches port 10250; the apiserver never calls the kubelet (no logs/exec in tests).
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
# No DNS for pods: they reach the apiserver and the simulator by address.
resolvConf: ""
# No CAP_SYS_RESOURCE: the default 1000000 cannot be set.
maxOpenFiles: 20000
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
# The images are imported, never pulled: collecting one would leave the node without it.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# The node is the tests' own: pods as fast as the product asks, no eviction of a slow test.
registryPullQPS: 0
serializeImagePulls: false
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
`;
}
