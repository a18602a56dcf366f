/** The subset of apiextensions.k8s.io/v1 JSONSchemaProps the generated CRDs use, in wire (JSON) form. */
export interface CrdSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  format?: string;
  description?: string;
  default?: string | number | boolean;
  properties?: Record<string, CrdSchema>;
  additionalProperties?: CrdSchema;
  items?: CrdSchema;
  required?: string[];
  enum?: (string | number)[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  anyOf?: CrdSchema[];
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-validations'?: { rule: string; message: string; fieldPath?: string }[];
}
