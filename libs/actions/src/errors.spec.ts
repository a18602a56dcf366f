import {
  ActionsError,
  errorFromResponse,
  errorKindOf,
  isJobStillRunning,
  isActionsNotFound,
  isRunnerExists,
  isRunnerNotFound,
  redactUrl,
  stripBom,
} from './errors';

function failed(
  statusCode: number,
  body: string,
  extra: Partial<Parameters<typeof errorFromResponse>[0]> = {},
) {
  return errorFromResponse({
    method: 'POST',
    url: 'https://pipelines.example/t/_apis/x',
    statusCode,
    contentType: 'application/json',
    body: Buffer.from(body),
    onMessageQueue: false,
    ...extra,
  });
}

const vss = (typeName: string, message: string) =>
  JSON.stringify({ typeName, message, $id: '1', errorCode: 0 });

describe('errorFromResponse', () => {
  it('maps the VSS exception type by substring, whatever its namespace', () => {
    const e = failed(
      409,
      vss(
        'GitHub.DistributedTask.WebApi.TaskAgentExistsException, GitHub.DistributedTask.WebApi',
        "A runner with name 'x' already exists.",
      ),
    );
    expect(e.kind).toBe('RunnerExists');
    expect(isRunnerExists(e)).toBe(true);
    expect(e.typeName).toContain('TaskAgentExistsException');
    expect(e.message).toContain("A runner with name 'x' already exists.");
  });

  it.each([
    ['AgentExistsException', 409, 'RunnerExists'],
    ['TaskAgentNotFoundException', 404, 'RunnerNotFound'],
    ['TaskAgentJobStillRunningException', 400, 'JobStillRunning'],
    // The Go library's tests answer JobStillRunning with 409; the type decides, not the status.
    ['JobStillRunningException', 409, 'JobStillRunning'],
    ['TaskAgentSessionConflictException', 409, 'SessionConflict'],
    ['SomethingElseException', 400, 'Other'],
    ['SomethingElseException', 404, 'NotFound'],
    ['SomethingElseException', 401, 'Unauthorized'],
  ])('maps %s with status %d to %s', (typeName, status, kind) => {
    expect(failed(status, vss(typeName, 'm')).kind).toBe(kind);
  });

  it('treats any 401 on the message queue as an expired queue token', () => {
    const e = failed(401, '', { onMessageQueue: true });
    expect(e.kind).toBe('MessageQueueTokenExpired');
  });

  it('keeps a text/plain body as the message without parsing it', () => {
    const e = failed(400, '{not json but plain}', { contentType: 'text/plain; charset=utf-8' });
    expect(e.kind).toBe('Other');
    expect(e.message).toContain('{not json but plain}');
  });

  it('says the body was empty rather than failing to parse it', () => {
    const e = failed(500, '');
    expect(e.statusCode).toBe(500);
    expect(e.message).toContain('empty body');
  });

  it('reads a body that starts with a UTF-8 BOM', () => {
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from(vss('AgentNotFoundException', 'gone')),
    ]);
    const e = errorFromResponse({
      method: 'GET',
      url: 'u',
      statusCode: 404,
      body,
      contentType: 'application/json',
      onMessageQueue: false,
    });
    expect(isRunnerNotFound(e)).toBe(true);
  });

  it('carries the status and the correlation ids in fields and message', () => {
    const e = failed(409, vss('AgentExistsException', 'm'), { activityId: 'act-1', requestId: 'req-1' });
    expect(e).toMatchObject({ statusCode: 409, activityId: 'act-1', requestId: 'req-1', method: 'POST' });
    expect(e.message).toContain('activity_id="act-1"');
    expect(e.message).toContain('github_request_id="req-1"');
    expect(e.message).toContain('status=409');
  });

  it('uses the message of a GitHub REST error body', () => {
    const e = failed(401, JSON.stringify({ message: 'Bad credentials', documentation_url: 'x' }));
    expect(e.kind).toBe('Unauthorized');
    expect(e.message).toContain('Bad credentials');
  });
});

describe('error predicates', () => {
  const make = (kind: ActionsError['kind'], statusCode?: number) =>
    new ActionsError({ kind, method: 'GET', url: 'u', statusCode, detail: 'd' });

  it('counts RunnerNotFound and any 404 as not found', () => {
    expect(isActionsNotFound(make('RunnerNotFound', 404))).toBe(true);
    expect(isActionsNotFound(make('NotFound'))).toBe(true);
    expect(isActionsNotFound(make('Other', 404))).toBe(true);
    expect(isActionsNotFound(make('Other', 400))).toBe(false);
    expect(isActionsNotFound(new Error('404'))).toBe(false);
  });

  it('recognises only ActionsErrors of the kind', () => {
    expect(isJobStillRunning(make('JobStillRunning'))).toBe(true);
    expect(isJobStillRunning(make('RunnerExists'))).toBe(false);
    expect(isRunnerExists({ kind: 'RunnerExists' })).toBe(false);
  });

  it('errorKindOf prefers the exception type over the status', () => {
    expect(errorKindOf(404, 'AgentNotFoundException', false)).toBe('RunnerNotFound');
    expect(errorKindOf(404, undefined, false)).toBe('NotFound');
  });
});

describe('redactUrl', () => {
  it('hides user-info and token-like query values', () => {
    const r = redactUrl('https://user:pw@broker.example/message?sessionId=s1&access_token=abc&sig=xyz');
    expect(r).not.toContain('pw');
    expect(r).not.toContain('abc');
    expect(r).not.toContain('xyz');
    expect(r).toContain('sessionId=s1');
  });

  it('strips only a leading BOM', () => {
    expect(stripBom(Buffer.from('\ufeff{}')).toString()).toBe('{}');
    expect(stripBom(Buffer.from('{}')).toString()).toBe('{}');
  });
});
