import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { dumpYaml } from '@kubernetes/client-node';
import { CRD_DIRECTORY, crdManifests } from './crd-manifests';
import { generateCrdFiles, generateCrds } from './generate';
import { loadKubernetesOpenApi } from './kubernetes-openapi';
import { GENERATED_HEADER } from './render';
import type { CrdDocument } from './build-crds';
import type { CrdSchema } from './crd-schema';

const committedFiles = (): string[] =>
  readdirSync(CRD_DIRECTORY)
    .filter((f) => f.endsWith('.yaml'))
    .sort();

describe('committed CRD manifests', () => {
  let generated: CrdDocument[];
  let generatedFiles: Map<string, string>;

  beforeAll(() => {
    const openApi = loadKubernetesOpenApi();
    generated = generateCrds(openApi);
    generatedFiles = generateCrdFiles(openApi);
  });

  it('are exactly what `npm run generate:crds` produces from the schema description (no drift)', () => {
    expect(committedFiles()).toEqual([...generatedFiles.keys()].sort());
    for (const [name, content] of generatedFiles) {
      const committed = readFileSync(join(CRD_DIRECTORY, name), 'utf8');
      // A plain equality would print two 200 KiB strings; point at the first differing line instead.
      if (committed !== content) {
        const a = committed.split('\n');
        const b = content.split('\n');
        const line = a.findIndex((text, i) => text !== b[i]);
        throw new Error(
          `${name} differs from the generator output at line ${line + 1}:\n` +
            `  committed: ${a[line]}\n  generated: ${b[line]}\nRun npm run generate:crds and commit the result.`,
        );
      }
    }
  });

  it('survive client-node deserialisation without losing a keyword', async () => {
    for (const crd of await crdManifests()) {
      const file = join(CRD_DIRECTORY, `${crd.spec.group}_${crd.spec.names.plural}.yaml`);
      const body = readFileSync(file, 'utf8').slice(GENERATED_HEADER.length + '---\n'.length);
      expect(dumpYaml(crd, { sortKeys: true, lineWidth: -1, noRefs: true })).toBe(body);
    }
  });

  it('define the four upstream kinds in actions.github.com/v1alpha1, namespaced, without short names', async () => {
    const manifests = await crdManifests();
    expect(
      manifests.map((c) => [
        c.metadata?.name,
        c.spec.names.kind,
        c.spec.names.listKind,
        c.spec.names.singular,
      ]),
    ).toEqual(
      expect.arrayContaining([
        [
          'autoscalingrunnersets.actions.github.com',
          'AutoscalingRunnerSet',
          'AutoscalingRunnerSetList',
          'autoscalingrunnerset',
        ],
        [
          'ephemeralrunnersets.actions.github.com',
          'EphemeralRunnerSet',
          'EphemeralRunnerSetList',
          'ephemeralrunnerset',
        ],
        ['ephemeralrunners.actions.github.com', 'EphemeralRunner', 'EphemeralRunnerList', 'ephemeralrunner'],
        [
          'autoscalinglisteners.actions.github.com',
          'AutoscalingListener',
          'AutoscalingListenerList',
          'autoscalinglistener',
        ],
      ]),
    );
    expect(manifests).toHaveLength(4);
    for (const crd of manifests) {
      expect(crd.spec.group).toBe('actions.github.com');
      expect(crd.spec.scope).toBe('Namespaced');
      expect(crd.spec.names.shortNames).toBeUndefined();
      expect(crd.spec.names.categories).toBeUndefined();
      expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([['v1alpha1', true, true]]);
      expect(crd.spec.versions[0].subresources?.status).toEqual({});
    }
  });

  const byKind = (kind: string): CrdDocument => {
    const crd = generated.find((c) => c.spec.names.kind === kind);
    if (!crd) throw new Error(`no CRD for ${kind}`);
    return crd;
  };
  const root = (kind: string): CrdSchema => byKind(kind).spec.versions[0].schema.openAPIV3Schema;
  const at = (schema: CrdSchema, path: string): CrdSchema =>
    path.split('.').reduce<CrdSchema>((node, key) => {
      const next =
        key === '[]' ? node.items : key === '{}' ? node.additionalProperties : node.properties?.[key];
      if (!next) throw new Error(`no ${key} in schema path ${path}`);
      return next;
    }, schema);

  it('keep upstream printer columns, including the ones pointing at status fields that do not exist', () => {
    const columns = (kind: string) =>
      byKind(kind).spec.versions[0].additionalPrinterColumns.map((c) => c.jsonPath);
    expect(columns('EphemeralRunnerSet')).toEqual(
      expect.arrayContaining(['.status.finishedEphemeralRunners', '.status.deletingEphemeralRunners']),
    );
    expect(columns('AutoscalingRunnerSet')).toContain('.status.deletingEphemeralRunners');
    expect(at(root('EphemeralRunnerSet'), 'status').properties).not.toHaveProperty(
      'finishedEphemeralRunners',
    );
    expect(columns('EphemeralRunner')).toEqual([
      '.spec.githubConfigUrl',
      '.status.runnerId',
      '.status.phase',
      '.status.jobRepositoryName',
      '.status.jobWorkflowRef',
      '.status.workflowRunId',
      '.status.jobDisplayName',
      '.status.jobId',
      '.status.message',
      '.metadata.creationTimestamp',
    ]);
    expect(columns('AutoscalingListener')).not.toContain('.metadata.creationTimestamp');
  });

  it('require a spec on every kind: its controller cannot act on an object without one', () => {
    for (const kind of [
      'EphemeralRunner',
      'EphemeralRunnerSet',
      'AutoscalingRunnerSet',
      'AutoscalingListener',
    ]) {
      expect(root(kind).required).toEqual(['spec']);
    }
  });

  it('require what upstream requires', () => {
    expect(at(root('EphemeralRunner'), 'spec').required).toEqual([
      'githubConfigSecret',
      'githubConfigUrl',
      'runnerScaleSetId',
    ]);
    expect(at(root('EphemeralRunner'), 'status').required).toBeUndefined();
    expect(at(root('EphemeralRunnerSet'), 'spec').required).toEqual(['patchID']);
    expect(at(root('EphemeralRunnerSet'), 'status').required).toEqual(['currentReplicas']);
    expect(at(root('AutoscalingRunnerSet'), 'spec').required).toBeUndefined();
    expect(at(root('AutoscalingRunnerSet'), 'spec.minRunners')).toEqual({ type: 'integer', minimum: 0 });
    expect(at(root('AutoscalingListener'), 'spec.maxRunners')).toEqual({ type: 'integer', minimum: 0 });
    // Upstream's listener status is empty; ARO records the pod's restarts and why (issue #10).
    const listenerStatus = at(root('AutoscalingListener'), 'status');
    expect(listenerStatus.required).toBeUndefined();
    expect(Object.keys(listenerStatus.properties ?? {})).toEqual(
      expect.arrayContaining(['conditions', 'reason', 'restarts']),
    );
  });

  it('model status.failures as a map of RFC 3339 times and the pod template inline in EphemeralRunner.spec', () => {
    expect(at(root('EphemeralRunner'), 'status.failures')).toEqual({
      type: 'object',
      additionalProperties: { type: 'string', format: 'date-time' },
    });
    expect(at(root('EphemeralRunner'), 'spec.spec').required).toEqual(['containers']);
    expect(Object.keys(at(root('EphemeralRunner'), 'spec.metadata').properties ?? {})).toEqual([
      'annotations',
      'finalizers',
      'labels',
      'name',
      'namespace',
    ]);
  });

  it('inline a structural pod spec rather than preserving unknown fields', () => {
    const containers = at(root('AutoscalingRunnerSet'), 'spec.template.spec.containers');
    expect(containers['x-kubernetes-list-type']).toBe('map');
    expect(containers['x-kubernetes-list-map-keys']).toEqual(['name']);
    expect(at(containers, '[].ports.[].protocol')).toEqual({ type: 'string', default: 'TCP' });
    expect(at(containers, '[].resources.limits.{}')['x-kubernetes-int-or-string']).toBe(true);
    expect(JSON.stringify(generated)).not.toContain('x-kubernetes-preserve-unknown-fields');
    expect(JSON.stringify(generated)).not.toContain('x-kubernetes-patch');
  });
});
