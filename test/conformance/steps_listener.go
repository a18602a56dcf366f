package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/actions/scaleset"
	"github.com/actions/scaleset/listener"
)

// recordingScaler is the listener's Scaler: it records what upstream's listener hands it.
type recordingScaler struct {
	mu        sync.Mutex
	desired   []int
	started   []scaleset.JobStarted
	completed []scaleset.JobCompleted
}

func (r *recordingScaler) HandleJobStarted(_ context.Context, job *scaleset.JobStarted) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, *job)
	return nil
}

func (r *recordingScaler) HandleJobCompleted(_ context.Context, job *scaleset.JobCompleted) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.completed = append(r.completed, *job)
	return nil
}

func (r *recordingScaler) HandleDesiredRunnerCount(_ context.Context, count int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.desired = append(r.desired, count)
	return count, nil
}

func (r *recordingScaler) snapshot() (desired []int, started []scaleset.JobStarted, completed []scaleset.JobCompleted) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.desired...), append([]scaleset.JobStarted(nil), r.started...), append([]scaleset.JobCompleted(nil), r.completed...)
}

// waitUntil polls cond every 100 ms until it holds or ctx ends; what says what was awaited.
func waitUntil(ctx context.Context, what string, cond func() (bool, string)) error {
	last := ""
	for {
		ok, seen := cond()
		if ok {
			return nil
		}
		last = seen
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w; last seen: %s", what, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// listenerSteps run upstream's own listener loop (listener.Run) against the simulator, so the
// calls come in upstream's order: initial statistics, poll, delete, acquire, job events, desired
// count from statistics.totalAssignedJobs.
func (c *conformance) listenerSteps() {
	s := &c.state
	runnerB2 := "conf-b-runner-2-" + c.runID
	scaler := &recordingScaler{}
	var sc *scaleset.MessageSessionClient
	var cancelRun context.CancelFunc
	runDone := make(chan error, 1)

	c.step("listener: a new session is offered the job still available, and the listener starts from its statistics", func(ctx context.Context) (string, error) {
		var err error
		sc, err = s.client.MessageSessionClient(ctx, s.scaleSetB.ID, "conf-listener-2-"+c.runID)
		if err != nil {
			return "", fmt.Errorf("MessageSessionClient: %w", err)
		}
		if st := sc.Session().Statistics; st == nil || st.TotalAvailableJobs != 1 {
			return "", fmt.Errorf("new session statistics: got %+v, want totalAvailableJobs 1", st)
		}
		l, err := listener.New(sc, listener.Config{ScaleSetID: s.scaleSetB.ID, MaxRunners: 3})
		if err != nil {
			return "", fmt.Errorf("listener.New: %w", err)
		}
		var runCtx context.Context
		runCtx, cancelRun = context.WithCancel(context.Background())
		go func() { runDone <- l.Run(runCtx, scaler) }()
		// The listener acquires the offered job, and JobAssigned brings totalAssignedJobs to 1.
		err = waitUntil(ctx, "desired runner count 1", func() (bool, string) {
			desired, _, _ := scaler.snapshot()
			for _, d := range desired {
				if d == 1 {
					return true, ""
				}
			}
			return false, fmt.Sprintf("desired counts %v", desired)
		})
		if err != nil {
			return "", err
		}
		job, err := c.sim.job(ctx, s.pendingJob.JobID)
		if err != nil {
			return "", err
		}
		desired, _, _ := scaler.snapshot()
		return fmt.Sprintf("desired counts %v", desired), first(
			expectEqual("first desired count (initial session statistics)", desired[0], 0),
			expectEqual("job state after the listener acquired it", job.State, "acquired"),
		)
	})

	c.step("listener: JobStarted reaches the scaler with the runner that took the job", func(ctx context.Context) (string, error) {
		jit, err := s.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: runnerB2}, s.scaleSetB.ID)
		if err != nil {
			return "", fmt.Errorf("GenerateJitRunnerConfig: %w", err)
		}
		if err := c.sim.runnerConnected(ctx, runnerB2); err != nil {
			return "", err
		}
		err = waitUntil(ctx, "HandleJobStarted", func() (bool, string) {
			_, started, _ := scaler.snapshot()
			return len(started) > 0, fmt.Sprintf("%d started", len(started))
		})
		if err != nil {
			return "", err
		}
		_, started, _ := scaler.snapshot()
		return "", first(
			expectEqual("runnerRequestId", started[0].RunnerRequestID, s.pendingJob.RunnerRequestID),
			expectEqual("runnerId", started[0].RunnerID, jit.Runner.ID),
			expectEqual("runnerName", started[0].RunnerName, runnerB2),
		)
	})

	c.step("listener: JobCompleted reaches the scaler, desired count falls to 0, the finalizer's RemoveRunner succeeds", func(ctx context.Context) (string, error) {
		if err := c.sim.completeJob(ctx, s.pendingJob.JobID, "failed"); err != nil {
			return "", err
		}
		err := waitUntil(ctx, "HandleJobCompleted and desired count 0", func() (bool, string) {
			desired, _, completed := scaler.snapshot()
			return len(completed) > 0 && desired[len(desired)-1] == 0, fmt.Sprintf("%d completed, desired counts %v", len(completed), desired)
		})
		if err != nil {
			return "", err
		}
		_, _, completed := scaler.snapshot()
		if err := first(
			expectEqual("result", completed[0].Result, "failed"),
			expectEqual("runnerName", completed[0].RunnerName, runnerB2),
		); err != nil {
			return "", err
		}
		r, err := s.client.GetRunnerByName(ctx, runnerB2)
		if err != nil || r == nil {
			return "", fmt.Errorf("GetRunnerByName(%s): got %v, %v", runnerB2, r, err)
		}
		if err := c.sim.runnerExited(ctx, runnerB2, 0); err != nil {
			return "", err
		}
		return "", expectNoError("RemoveRunner after the runner deregistered itself", s.client.RemoveRunner(ctx, int64(r.ID)))
	})

	c.step("listener: stops on cancel, and its session is deleted", func(ctx context.Context) (string, error) {
		cancelRun()
		var runErr error
		select {
		case runErr = <-runDone:
		case <-ctx.Done():
			return "", fmt.Errorf("listener.Run did not return after cancel: %w", ctx.Err())
		}
		if runErr != nil && !errors.Is(runErr, context.Canceled) {
			return "", fmt.Errorf("listener.Run ended with %w, want context.Canceled", runErr)
		}
		if err := sc.Close(ctx); err != nil {
			return "", fmt.Errorf("Close: %w", err)
		}
		live, err := c.sim.sessionCount(ctx, s.scaleSetB.ID)
		if err != nil {
			return "", err
		}
		return "", expectEqual("live sessions", live, 0)
	})
}

// tearDownSteps delete the scale sets as the AutoscalingRunnerSet finalizer does.
func (c *conformance) tearDownSteps() {
	s := &c.state
	c.step("scale set delete: 204, then gone by id (404) and by name (nil), a second delete is refused (404)", func(ctx context.Context) (string, error) {
		for _, ss := range []*scaleset.RunnerScaleSet{s.scaleSetA, s.scaleSetB} {
			if err := s.client.DeleteRunnerScaleSet(ctx, ss.ID); err != nil {
				return "", fmt.Errorf("DeleteRunnerScaleSet(%d): %w", ss.ID, err)
			}
		}
		_, byID := s.client.GetRunnerScaleSetByID(ctx, s.scaleSetA.ID)
		byName, err := s.client.GetRunnerScaleSet(ctx, s.groupID, s.scaleSetA.Name)
		if err != nil {
			return "", fmt.Errorf("GetRunnerScaleSet after delete: %w", err)
		}
		again := s.client.DeleteRunnerScaleSet(ctx, s.scaleSetA.ID)
		return "", first(
			expectErrorContaining("GetRunnerScaleSetByID after delete", byID, "404"),
			expectEqual("GetRunnerScaleSet after delete", byName, (*scaleset.RunnerScaleSet)(nil)),
			expectErrorContaining("second DeleteRunnerScaleSet", again, "404"),
		)
	})
}
