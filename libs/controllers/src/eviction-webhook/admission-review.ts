/*
 * The parts of admission.k8s.io/v1 AdmissionReview this webhook reads and writes. The client library
 * has no types for it (it is not an API object one stores), and only these fields matter here.
 */

export interface AdmissionRequest {
  uid: string;
  kind?: { group?: string; version?: string; kind?: string };
  resource?: { group?: string; version?: string; resource?: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation?: string;
  dryRun?: boolean;
  userInfo?: { username?: string };
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  /** For a denial: the HTTP code and message the Eviction API's caller gets. */
  status?: { code: number; reason?: string; message: string };
  /** Shown by kubectl to the user who evicted, for an allowed eviction. */
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

/** The request of a review, or an error naming what is missing. */
export function admissionRequestOf(body: unknown): AdmissionRequest {
  const review = body as Partial<AdmissionReview> | null;
  if (!review || typeof review !== 'object' || review.kind !== 'AdmissionReview') {
    throw new Error('the body is not an AdmissionReview');
  }
  const request = review.request;
  if (!request || typeof request.uid !== 'string' || request.uid === '') {
    throw new Error('the AdmissionReview has no request.uid');
  }
  return request;
}

export function reviewWith(response: AdmissionResponse): AdmissionReview {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

/**
 * Code of a refused eviction: 429 is the answer `kubectl drain` (and Cluster Autoscaler, Karpenter)
 * retries, as it does for a PodDisruptionBudget that allows no disruption; any other code ends the
 * drain with an error.
 */
export const EVICTION_REFUSED_CODE = 429;
