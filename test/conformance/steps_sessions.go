package main

import (
	"context"
	"fmt"

	"github.com/actions/scaleset"
	"github.com/google/uuid"
)

// nextMessage polls like the listener until a message comes (a 202 is "nothing yet").
func nextMessage(ctx context.Context, sc *scaleset.MessageSessionClient, lastMessageID, maxCapacity int) (*scaleset.RunnerScaleSetMessage, error) {
	for {
		msg, err := sc.GetMessage(ctx, lastMessageID, maxCapacity)
		if err != nil {
			return nil, fmt.Errorf("GetMessage(lastMessageId=%d): %w", lastMessageID, err)
		}
		if msg != nil {
			if msg.Statistics == nil {
				return nil, fmt.Errorf("message %d has no statistics (the listener dereferences them)", msg.MessageID)
			}
			return msg, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("no message after lastMessageId=%d: %w", lastMessageID, err)
		}
	}
}

func count(msg *scaleset.RunnerScaleSetMessage) string {
	return fmt.Sprintf("available %d, assigned %d, started %d, completed %d",
		len(msg.JobAvailableMessages), len(msg.JobAssignedMessages), len(msg.JobStartedMessages), len(msg.JobCompletedMessages))
}

// sessionSteps walk the listener's protocol by hand on scale set B, checking every message and
// its statistics: session, 202, JobAvailable, delete, acquire, JobAssigned, JobStarted,
// JobCompleted, a queue-token refresh, and the session's deletion.
func (c *conformance) sessionSteps() {
	s := &c.state
	owner := "conf-listener-" + c.runID
	runnerB1 := "conf-b-runner-1-" + c.runID
	labels := []string{s.scaleSetB.Name}
	var sc *scaleset.MessageSessionClient
	var job simJob
	var runnerID int
	lastMessageID := 0
	acquirable := newAcquirableJobsClient(c.sim.origin, s.org, c.pat)

	c.step("session: create carries sessionId, owner, scale set, queue URL and token, statistics", func(ctx context.Context) (string, error) {
		var err error
		sc, err = s.client.MessageSessionClient(ctx, s.scaleSetB.ID, owner)
		if err != nil {
			return "", fmt.Errorf("MessageSessionClient: %w", err)
		}
		session := sc.Session()
		if session.RunnerScaleSet == nil || session.Statistics == nil {
			return "", fmt.Errorf("session without runnerScaleSet or statistics: %+v", session)
		}
		return session.SessionID.String(), first(
			expectEqual("sessionId set", session.SessionID != uuid.Nil, true),
			expectEqual("ownerName", session.OwnerName, owner),
			expectEqual("runnerScaleSet.id", session.RunnerScaleSet.ID, s.scaleSetB.ID),
			expectEqual("messageQueueUrl set", session.MessageQueueURL != "", true),
			expectEqual("messageQueueAccessToken set", session.MessageQueueAccessToken != "", true),
			expectEqual("statistics", *session.Statistics, zeroStatistics()),
		)
	})

	c.step("session: a second live session for the scale set is refused (409 conflict)", func(ctx context.Context) (string, error) {
		_, err := s.client.MessageSessionClient(ctx, s.scaleSetB.ID, owner+"-2")
		return "", expectErrorContaining("second MessageSessionClient", err, "409", "TaskAgentSessionConflictException")
	})

	c.step("long poll: nothing to say is 202, which the client returns as (nil, nil)", func(ctx context.Context) (string, error) {
		msg, err := sc.GetMessage(ctx, 0, 2)
		if err != nil {
			return "", fmt.Errorf("GetMessage: %w", err)
		}
		if msg != nil {
			return "", fmt.Errorf("GetMessage on an empty queue: got message %d (%s), want nil", msg.MessageID, count(msg))
		}
		return "", nil
	})

	c.step("message: a queued job is JobAvailable, with statistics", func(ctx context.Context) (string, error) {
		var err error
		job, err = c.sim.enqueueJob(ctx, s.repo, labels)
		if err != nil {
			return "", err
		}
		msg, err := nextMessage(ctx, sc, lastMessageID, 2)
		if err != nil {
			return "", err
		}
		lastMessageID = msg.MessageID
		if len(msg.JobAvailableMessages) != 1 {
			return "", fmt.Errorf("message %d: got %s, want one JobAvailable", msg.MessageID, count(msg))
		}
		a := msg.JobAvailableMessages[0]
		return fmt.Sprintf("message %d, runnerRequestId %d", msg.MessageID, a.RunnerRequestID), first(
			expectEqual("messageType", a.MessageType, scaleset.MessageTypeJobAvailable),
			expectEqual("runnerRequestId", a.RunnerRequestID, job.RunnerRequestID),
			expectEqual("jobId", a.JobID, job.JobID),
			expectEqual("requestLabels", a.RequestLabels, labels),
			expectEqual("ownerName", a.OwnerName, s.org),
			expectEqual("repositoryName", a.RepositoryName, "app"),
			expectEqual("acquireJobUrl set", a.AcquireJobURL != "", true),
			expectEqual("queueTime set", a.QueueTime.IsZero(), false),
			expectEqual("runnerAssignTime unset", a.RunnerAssignTime.IsZero(), true),
			expectEqual("statistics", *msg.Statistics, scaleset.RunnerScaleSetStatistic{TotalAvailableJobs: 1}),
		)
	})

	c.step("acquirable jobs (old ARC client): the available job is listed", func(ctx context.Context) (string, error) {
		list, err := acquirable.list(ctx, s.scaleSetB.ID)
		if err != nil {
			return "", err
		}
		if list.Count != 1 || len(list.Jobs) != 1 {
			return "", fmt.Errorf("acquirable jobs: got count %d with %d jobs, want 1", list.Count, len(list.Jobs))
		}
		return "", first(
			expectEqual("runnerRequestId", list.Jobs[0].RunnerRequestID, job.RunnerRequestID),
			expectEqual("messageType", list.Jobs[0].MessageType, "JobAvailable"),
			expectEqual("requestLabels", list.Jobs[0].RequestLabels, labels),
		)
	})

	c.step("message: deleted (acknowledged) before acting on it, then not redelivered", func(ctx context.Context) (string, error) {
		if err := sc.DeleteMessage(ctx, lastMessageID); err != nil {
			return "", fmt.Errorf("DeleteMessage(%d): %w", lastMessageID, err)
		}
		msg, err := sc.GetMessage(ctx, 0, 2)
		if err != nil {
			return "", fmt.Errorf("GetMessage after the delete: %w", err)
		}
		if msg != nil {
			return "", fmt.Errorf("GetMessage after the delete: got message %d (%s), want nil", msg.MessageID, count(msg))
		}
		return "", nil
	})

	c.step("acquire: the available job is acquired; an unknown request id is not", func(ctx context.Context) (string, error) {
		acquired, err := sc.AcquireJobs(ctx, []int64{job.RunnerRequestID, 987654321})
		if err != nil {
			return "", fmt.Errorf("AcquireJobs: %w", err)
		}
		return "", expectEqual("acquired ids", acquired, []int64{job.RunnerRequestID})
	})

	c.step("message: JobAssigned, with statistics; acquirable jobs now empty (204)", func(ctx context.Context) (string, error) {
		msg, err := nextMessage(ctx, sc, lastMessageID, 2)
		if err != nil {
			return "", err
		}
		lastMessageID = msg.MessageID
		if len(msg.JobAssignedMessages) != 1 {
			return "", fmt.Errorf("message %d: got %s, want one JobAssigned", msg.MessageID, count(msg))
		}
		list, err := acquirable.list(ctx, s.scaleSetB.ID)
		if err != nil {
			return "", err
		}
		a := msg.JobAssignedMessages[0]
		return fmt.Sprintf("message %d", msg.MessageID), first(
			expectEqual("runnerRequestId", a.RunnerRequestID, job.RunnerRequestID),
			expectEqual("scaleSetAssignTime set", a.ScaleSetAssignTime.IsZero(), false),
			expectEqual("statistics", *msg.Statistics, scaleset.RunnerScaleSetStatistic{TotalAcquiredJobs: 1, TotalAssignedJobs: 1}),
			expectEqual("acquirable jobs", list.Count, 0),
		)
	})

	c.step("message: a runner takes the job: JobStarted with runner id and name, with statistics", func(ctx context.Context) (string, error) {
		jit, err := s.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: runnerB1}, s.scaleSetB.ID)
		if err != nil {
			return "", fmt.Errorf("GenerateJitRunnerConfig: %w", err)
		}
		runnerID = jit.Runner.ID
		if err := c.sim.runnerConnected(ctx, runnerB1); err != nil {
			return "", err
		}
		msg, err := nextMessage(ctx, sc, lastMessageID, 2)
		if err != nil {
			return "", err
		}
		lastMessageID = msg.MessageID
		if len(msg.JobStartedMessages) != 1 {
			return "", fmt.Errorf("message %d: got %s, want one JobStarted", msg.MessageID, count(msg))
		}
		started := msg.JobStartedMessages[0]
		return fmt.Sprintf("message %d", msg.MessageID), first(
			expectEqual("runnerRequestId", started.RunnerRequestID, job.RunnerRequestID),
			expectEqual("runnerId", started.RunnerID, runnerID),
			expectEqual("runnerName", started.RunnerName, runnerB1),
			expectEqual("runnerAssignTime set", started.RunnerAssignTime.IsZero(), false),
			expectEqual("statistics", *msg.Statistics, scaleset.RunnerScaleSetStatistic{
				TotalAssignedJobs: 1, TotalRunningJobs: 1, TotalRegisteredRunners: 1, TotalBusyRunners: 1,
			}),
		)
	})

	c.step("remove: the busy runner is JobStillRunningError", func(ctx context.Context) (string, error) {
		return "", expectErrorIs("RemoveRunner(busy)", s.client.RemoveRunner(ctx, int64(runnerID)), scaleset.JobStillRunningError)
	})

	c.step("message: the job ends: JobCompleted with result and runner, with statistics", func(ctx context.Context) (string, error) {
		if err := c.sim.completeJob(ctx, job.JobID, "succeeded"); err != nil {
			return "", err
		}
		msg, err := nextMessage(ctx, sc, lastMessageID, 2)
		if err != nil {
			return "", err
		}
		lastMessageID = msg.MessageID
		if len(msg.JobCompletedMessages) != 1 {
			return "", fmt.Errorf("message %d: got %s, want one JobCompleted", msg.MessageID, count(msg))
		}
		done := msg.JobCompletedMessages[0]
		return fmt.Sprintf("message %d", msg.MessageID), first(
			expectEqual("result", done.Result, "succeeded"),
			expectEqual("runnerId", done.RunnerID, runnerID),
			expectEqual("runnerName", done.RunnerName, runnerB1),
			expectEqual("finishTime set", done.FinishTime.IsZero(), false),
			expectEqual("statistics", *msg.Statistics, scaleset.RunnerScaleSetStatistic{TotalRegisteredRunners: 1, TotalIdleRunners: 1}),
		)
	})

	c.step("remove: after the runner deregistered itself (exit 0) RemoveRunner returns nil (204)", func(ctx context.Context) (string, error) {
		if err := c.sim.runnerExited(ctx, runnerB1, 0); err != nil {
			return "", err
		}
		_, gone := s.client.GetRunner(ctx, runnerID)
		if err := expectErrorIs("GetRunner after exit 0", gone, scaleset.RunnerNotFoundError); err != nil {
			return "", err
		}
		return "", expectNoError("RemoveRunner of a runner that deregistered itself", s.client.RemoveRunner(ctx, int64(runnerID)))
	})

	c.step("session refresh: an expired queue token (401) is refreshed (PATCH) and the poll retried", func(ctx context.Context) (string, error) {
		before := sc.Session().MessageQueueAccessToken
		patches, _ := c.sim.callCount(ctx, "PATCH runnerscalesets/{id}/sessions/{sessionId}")
		if err := c.sim.expireQueueTokens(ctx); err != nil {
			return "", err
		}
		var err error
		job, err = c.sim.enqueueJob(ctx, s.repo, labels)
		if err != nil {
			return "", err
		}
		msg, err := nextMessage(ctx, sc, lastMessageID, 2)
		if err != nil {
			return "", err
		}
		lastMessageID = msg.MessageID
		after, _ := c.sim.callCount(ctx, "PATCH runnerscalesets/{id}/sessions/{sessionId}")
		if len(msg.JobAvailableMessages) != 1 {
			return "", fmt.Errorf("message %d: got %s, want one JobAvailable", msg.MessageID, count(msg))
		}
		if err := sc.DeleteMessage(ctx, msg.MessageID); err != nil {
			return "", fmt.Errorf("DeleteMessage with the refreshed token: %w", err)
		}
		return "", first(
			expectEqual("session refreshes", after-patches, 1),
			expectEqual("queue token rotated", sc.Session().MessageQueueAccessToken != before, true),
			expectEqual("runnerRequestId", msg.JobAvailableMessages[0].RunnerRequestID, job.RunnerRequestID),
			expectEqual("statistics", *msg.Statistics, scaleset.RunnerScaleSetStatistic{TotalAvailableJobs: 1}),
		)
	})

	c.step("session delete: Close answers 204, a second Close is refused, a new session may start", func(ctx context.Context) (string, error) {
		if err := sc.Close(ctx); err != nil {
			return "", fmt.Errorf("Close: %w", err)
		}
		live, err := c.sim.sessionCount(ctx, s.scaleSetB.ID)
		if err != nil {
			return "", err
		}
		again := sc.Close(ctx)
		return "", first(
			expectEqual("live sessions after Close", live, 0),
			expectErrorContaining("second Close", again, "400", "TaskAgentSessionExpiredException"),
		)
	})
	c.state.pendingJob = job
}
