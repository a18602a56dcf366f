import type {
  V1ConfigMapKeySelector,
  V1LocalObjectReference,
  V1ObjectMeta,
  V1PodSpec,
  V1PodTemplateSpec,
} from '@kubernetes/client-node';

/**
 * A small schema language for our own CRD fields. Every builder carries the TypeScript type it describes
 * as an invariant phantom, and `object<T>()` demands exactly the keys of T, each marked required or
 * optional the way T declares it. So the one description the CRDs are generated from cannot drift from the
 * interfaces the code uses without failing typecheck.
 */

/** Kubernetes core types inlined from Kubernetes' own OpenAPI document, by component name. */
export interface CoreTypes {
  'io.k8s.api.core.v1.PodSpec': V1PodSpec;
  'io.k8s.api.core.v1.PodTemplateSpec': V1PodTemplateSpec;
  'io.k8s.api.core.v1.ConfigMapKeySelector': V1ConfigMapKeySelector;
  'io.k8s.api.core.v1.LocalObjectReference': V1LocalObjectReference;
}
export type CoreTypeName = keyof CoreTypes;

export type SchemaNode =
  | { readonly kind: 'string'; readonly format?: 'date-time' }
  | { readonly kind: 'integer'; readonly format?: 'int32' | 'int64'; readonly minimum?: number }
  | { readonly kind: 'number' }
  | { readonly kind: 'boolean' }
  | { readonly kind: 'array'; readonly items: SchemaNode }
  | { readonly kind: 'map'; readonly values: SchemaNode }
  | {
      readonly kind: 'object';
      readonly description?: string;
      readonly properties: Readonly<Record<string, PropertyNode>>;
      /** CEL rules the apiserver checks (`x-kubernetes-validations`): refusals a field type cannot say. */
      readonly validations?: readonly ValidationRule[];
    }
  /** An object whose schema has no properties: everything in it is pruned (upstream's empty status). */
  | { readonly kind: 'empty-object' }
  /** The ObjectMeta subset controller-gen emits for embedded templates (generateEmbeddedObjectMeta). */
  | { readonly kind: 'embedded-object-meta' }
  | { readonly kind: 'core'; readonly name: CoreTypeName };

/**
 * A CEL rule on an object. `fieldPath` (relative to the object, e.g. `.minRunners`) is the field the
 * apiserver's refusal names, so that `kubectl apply` says which value to change.
 */
export interface ValidationRule {
  readonly rule: string;
  readonly message: string;
  readonly fieldPath?: string;
}

export interface PropertyNode {
  readonly node: SchemaNode;
  readonly required: boolean;
  readonly description?: string;
}

declare const describes: unique symbol;

export interface Schema<T> {
  /** Never set at runtime; a function type makes T invariant, so `Schema<string>` is not a `Schema<'A'>`. */
  readonly [describes]?: (value: T) => T;
  readonly node: SchemaNode;
}

type Requiredness = 'required' | 'optional' | 'optional-in-crd';

export interface Field<T, R extends Requiredness> {
  readonly schema: Schema<T>;
  readonly requiredness: R;
  readonly description?: string;
}

type IsOptionalKey<T, K extends keyof T> = Partial<Pick<T, K>> extends Pick<T, K> ? true : false;

/**
 * Per key of T: an optional TS property must be optional in the CRD; a required TS property is required in
 * the CRD unless the description says, with `optionalInCrd`, that upstream does not enforce it.
 */
export type FieldsOf<T> = {
  [K in keyof T]-?: IsOptionalKey<T, K> extends true
    ? Field<NonNullable<T[K]>, 'optional'>
    : Field<T[K], 'required'> | Field<T[K], 'optional-in-crd'>;
};

function schema<T>(node: SchemaNode): Schema<T> {
  return { node };
}

export function required<T>(s: Schema<T>, description?: string): Field<T, 'required'> {
  return { schema: s, requiredness: 'required', description };
}

export function optional<T>(s: Schema<T>, description?: string): Field<T, 'optional'> {
  return { schema: s, requiredness: 'optional', description };
}

/**
 * For a property the code may rely on (the controllers always write it) that upstream's CRD nevertheless
 * leaves optional, e.g. a Go struct field with omitempty.
 */
export function optionalInCrd<T>(s: Schema<T>, description?: string): Field<T, 'optional-in-crd'> {
  return { schema: s, requiredness: 'optional-in-crd', description };
}

export const t = {
  /** `stringOf<Union>()` for string-literal unions; the CRD (like upstream's) does not enumerate them. */
  string: (): Schema<string> => schema({ kind: 'string' }),
  stringOf: <S extends string>(): Schema<S> => schema({ kind: 'string' }),
  /** An RFC 3339 timestamp (Go's metav1.Time). */
  dateTime: (): Schema<string> => schema({ kind: 'string', format: 'date-time' }),
  /** Go `int`: controller-gen emits no format for it. */
  int: (opts: { minimum?: number } = {}): Schema<number> => schema({ kind: 'integer', ...opts }),
  int64: (): Schema<number> => schema({ kind: 'integer', format: 'int64' }),
  float: (): Schema<number> => schema({ kind: 'number' }),
  boolean: (): Schema<boolean> => schema({ kind: 'boolean' }),
  array: <V>(items: Schema<V>): Schema<V[]> => schema({ kind: 'array', items: items.node }),
  map: <V>(values: Schema<V>): Schema<Record<string, V>> => schema({ kind: 'map', values: values.node }),
  object: <T>(
    fields: FieldsOf<T>,
    description?: string,
    opts: { validations?: readonly ValidationRule[] } = {},
  ): Schema<T> => {
    const properties: Record<string, PropertyNode> = {};
    for (const [name, field] of Object.entries(fields) as [string, Field<unknown, Requiredness>][]) {
      properties[name] = {
        node: field.schema.node,
        required: field.requiredness === 'required',
        description: field.description,
      };
    }
    return schema({
      kind: 'object',
      description,
      properties,
      ...(opts.validations?.length ? { validations: opts.validations } : {}),
    });
  },
  emptyObject: (): Schema<Record<string, never>> => schema({ kind: 'empty-object' }),
  embeddedObjectMeta: (): Schema<V1ObjectMeta> => schema({ kind: 'embedded-object-meta' }),
  core: <N extends CoreTypeName>(name: N): Schema<CoreTypes[N]> => schema({ kind: 'core', name }),
};
