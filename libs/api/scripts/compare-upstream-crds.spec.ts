import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareCrds, crdsIn } from './compare-upstream-crds';

/** One CRD of the scale-set group, with `spec.labels` (a list) and `spec.replicas` given as YAML. */
function crdYaml(labels: string, replicas: string): string {
  return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ephemeralrunnersets.actions.github.com
spec:
  group: actions.github.com
  names: {kind: EphemeralRunnerSet, plural: ephemeralrunnersets}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              labels:
${labels}
              replicas:
${replicas}
`;
}

const LABELS = `                type: array
                items: {type: object, properties: {name: {type: string}}, required: [name]}`;
const REPLICAS = `                type: integer`;

function compare(upstream: string, ours: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'compare-crds-'));
  try {
    writeFileSync(join(dir, 'upstream.yaml'), upstream);
    const upstreamCrds = crdsIn(dir);
    writeFileSync(join(dir, 'upstream.yaml'), ours);
    return compareCrds(upstreamCrds, crdsIn(dir)).lines.filter((l) => l.includes('DIFFERS'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('compare:crds', () => {
  it('finds nothing between a CRD and itself', () => {
    expect(compare(crdYaml(LABELS, REPLICAS), crdYaml(LABELS, REPLICAS))).toEqual([]);
  });

  it('reports a CEL rule (x-kubernetes-validations) that ARO lacks', () => {
    const withRule = `${REPLICAS}
                minimum: 0
                x-kubernetes-validations:
                - {rule: "self <= 100", message: "at most 100"}`;
    const withoutRule = `${REPLICAS}
                minimum: 0`;
    expect(compare(crdYaml(LABELS, withRule), crdYaml(LABELS, withoutRule))).toEqual([
      expect.stringMatching(
        /^ {2}DIFFERS {2}\.spec\.replicas: .*"x-kubernetes-validations":\[\{.*self <= 100/,
      ),
    ]);
  });

  it('reports list-type, list-map-keys and map-type markers that differ', () => {
    const asMap = `${LABELS}
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]`;
    const atomicObject = `${REPLICAS}
                x-kubernetes-map-type: atomic`;
    const differs = compare(crdYaml(asMap, REPLICAS), crdYaml(LABELS, atomicObject));
    expect(differs).toEqual([
      expect.stringMatching(
        /\.spec\.labels: upstream .*"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":\["name"\]/,
      ),
      expect.stringMatching(/\.spec\.replicas: upstream .*, ARO .*"x-kubernetes-map-type":"atomic"/),
    ]);
  });
});
