import { buildCrd, type CrdDocument } from './build-crds';
import { CoreSchemaConverter, type OpenApiDocument } from './core-schemas';
import { crdFileName, renderCrdYaml } from './render';
import { structuralViolations } from './structural';
import { v1alpha1Schemas } from './v1alpha1-schemas';

/** Builds every CRD; refuses to return one the apiserver would reject as non-structural. */
export function generateCrds(kubernetesOpenApi: OpenApiDocument): CrdDocument[] {
  const core = new CoreSchemaConverter(kubernetesOpenApi);
  return v1alpha1Schemas.map((kindSchema) => {
    const crd = buildCrd(kindSchema, core);
    const problems = structuralViolations(crd.spec.versions[0].schema.openAPIV3Schema);
    if (problems.length > 0) {
      throw new Error(`CRD ${crd.metadata.name} is not structural:\n  ${problems.join('\n  ')}`);
    }
    return crd;
  });
}

/** File name -> content of every CRD file under libs/api/crds. */
export function generateCrdFiles(kubernetesOpenApi: OpenApiDocument): Map<string, string> {
  return new Map(generateCrds(kubernetesOpenApi).map((crd) => [crdFileName(crd), renderCrdYaml(crd)]));
}
