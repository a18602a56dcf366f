import { JobLinkKeys, carriesJobLink, isLabelValue, jobLinkMetadata } from './job-link';

describe('job link', () => {
  it('tells label values from what only an annotation can hold', () => {
    expect(isLabelValue('hello-world')).toBe(true);
    expect(isLabelValue('a'.repeat(63))).toBe(true);
    expect(isLabelValue('a'.repeat(64))).toBe(false);
    expect(isLabelValue('.github')).toBe(false);
    expect(isLabelValue('octo/hello')).toBe(false);
    expect(isLabelValue('')).toBe(false);
  });

  it('labels what a label can hold and annotates the rest, whole; nothing without a job', () => {
    const status = {
      jobId: 'j-1',
      jobRepositoryName: `octo/${'r'.repeat(70)}`,
      jobWorkflowRef: 'octo/x/.github/workflows/release.yaml@refs/tags/v1',
      workflowRunId: 42,
    };
    const link = jobLinkMetadata({ status });
    expect(link).toEqual({
      labels: {
        [JobLinkKeys.organization]: 'octo',
        [JobLinkKeys.workflow]: 'release',
        [JobLinkKeys.workflowRunId]: '42',
        [JobLinkKeys.jobId]: 'j-1',
      },
      annotations: {
        [JobLinkKeys.repository]: 'r'.repeat(70),
        [JobLinkKeys.workflowRef]: status.jobWorkflowRef,
      },
    });
    expect(carriesJobLink({ metadata: { labels: link!.labels } }, link!)).toBe(false);
    expect(carriesJobLink({ metadata: link }, link!)).toBe(true);
    expect(jobLinkMetadata({ status: { ...status, jobId: '' } })).toBeUndefined();
  });
});
