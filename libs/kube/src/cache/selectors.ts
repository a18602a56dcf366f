import type { KubeObject } from '../client/types';

type Requirement =
  { op: 'exists' | 'notExists'; key: string } | { op: 'in' | 'notIn'; key: string; values: Set<string> };

export type LabelMatcher = (labels: Record<string, string> | undefined) => boolean;

const KEY = String.raw`[A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?`;
const VALUE = String.raw`(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?`;
const EXISTS = new RegExp(`^(${KEY})$`);
const NOT_EXISTS = new RegExp(`^!\\s*(${KEY})$`);
const EQUALITY = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`);
const SET = new RegExp(`^(${KEY})\\s+(in|notin)\\s*\\(([^)]*)\\)$`);

/** Splits on the commas between requirements, not the ones inside `in (a,b)`. */
function splitRequirements(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(selector.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

function parseRequirement(text: string, selector: string): Requirement {
  let m = NOT_EXISTS.exec(text);
  if (m) return { op: 'notExists', key: m[1] };
  m = EXISTS.exec(text);
  if (m) return { op: 'exists', key: m[1] };
  m = EQUALITY.exec(text);
  if (m) return { op: m[2] === '!=' ? 'notIn' : 'in', key: m[1], values: new Set([m[3]]) };
  m = SET.exec(text);
  if (m) {
    const values = new Set(m[3].split(',').map((v) => v.trim()));
    return { op: m[2] === 'notin' ? 'notIn' : 'in', key: m[1], values };
  }
  throw new Error(`Label selector "${selector}": cannot parse "${text}"`);
}

/**
 * Compiles a Kubernetes label selector (`a=b,c!=d,e in (x,y),f notin (z),g,!h`) into a predicate with the
 * server's semantics, so that a list from the cache returns what the same list from the API would: in
 * particular `!=` and `notin` also match objects that lack the label.
 */
export function parseLabelSelector(selector: string | undefined): LabelMatcher {
  const requirements = splitRequirements(selector ?? '').map((r) => parseRequirement(r, selector ?? ''));
  return (labels) =>
    requirements.every((r) => {
      const value = labels?.[r.key];
      switch (r.op) {
        case 'exists':
          return value !== undefined;
        case 'notExists':
          return value === undefined;
        case 'in':
          return value !== undefined && r.values.has(value);
        case 'notIn':
          return value === undefined || !r.values.has(value);
      }
    });
}

/**
 * The field selectors every kind supports, `metadata.name` and `metadata.namespace`, with `=`, `==` and
 * `!=`. Others depend on the kind's server-side field labels and are refused rather than answered wrongly.
 */
export function parseFieldSelector(selector: string | undefined): (o: KubeObject) => boolean {
  const tests = splitRequirements(selector ?? '').map((text) => {
    const m = /^(metadata\.name|metadata\.namespace)\s*(==|=|!=)\s*(.*)$/.exec(text);
    if (!m) {
      throw new Error(
        `Field selector "${selector}": the cache answers only metadata.name and metadata.namespace; use the API reader`,
      );
    }
    const [, field, op, expected] = m;
    return (o: KubeObject) => {
      const actual = (field === 'metadata.name' ? o.metadata?.name : o.metadata?.namespace) ?? '';
      return op === '!=' ? actual !== expected : actual === expected;
    };
  });
  return (o) => tests.every((t) => t(o));
}
