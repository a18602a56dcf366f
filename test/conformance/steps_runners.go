package main

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/actions/scaleset"
)

// runnerSteps follow the EphemeralRunner reconciler: JIT config per runner, the name-taken
// recovery (by name, then remove and retry when it is ours), runner by id, and removal of an idle
// runner, a busy one (JobStillRunning: try later), and one that is already gone.
func (c *conformance) runnerSteps() {
	s := &c.state
	runnerA1 := "conf-a-runner-1-" + c.runID
	runnerA2 := "conf-a-runner-2-" + c.runID
	var first1 *scaleset.RunnerReference

	c.step("JIT config: registers a runner of the scale set", func(ctx context.Context) (string, error) {
		jit, err := s.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: runnerA1, WorkFolder: "_work"}, s.scaleSetA.ID)
		if err != nil {
			return "", fmt.Errorf("GenerateJitRunnerConfig: %w", err)
		}
		if jit.Runner == nil {
			return "", fmt.Errorf("GenerateJitRunnerConfig: no runner in the answer")
		}
		first1 = jit.Runner
		_, decodeErr := base64.StdEncoding.DecodeString(jit.EncodedJITConfig)
		registered, err := c.sim.runner(ctx, runnerA1)
		if err != nil {
			return "", err
		}
		if registered == nil {
			return "", fmt.Errorf("the simulator holds no registration named %s", runnerA1)
		}
		return fmt.Sprintf("runner id %d", jit.Runner.ID), first(
			expectEqual("runner name", jit.Runner.Name, runnerA1),
			expectEqual("runner scale set", jit.Runner.RunnerScaleSetID, s.scaleSetA.ID),
			expectEqual("encodedJITConfig is base64", decodeErr, nil),
			expectEqual("registration id", registered.ID, jit.Runner.ID),
			expectEqual("registration status", registered.Status, "offline"),
		)
	})

	c.step("JIT config: a taken name is RunnerExistsError, in this scale set and in another", func(ctx context.Context) (string, error) {
		_, same := s.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: runnerA1}, s.scaleSetA.ID)
		_, other := s.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: runnerA1}, s.scaleSetB.ID)
		return "", first(
			expectErrorIs("same scale set", same, scaleset.RunnerExistsError),
			expectErrorIs("other scale set", other, scaleset.RunnerExistsError),
		)
	})

	c.step("name-taken recovery: by name → ours → RemoveRunner → JIT config again", func(ctx context.Context) (string, error) {
		existing, err := s.client.GetRunnerByName(ctx, runnerA1)
		if err != nil {
			return "", fmt.Errorf("GetRunnerByName: %w", err)
		}
		if existing == nil {
			return "", fmt.Errorf("GetRunnerByName(%s): got nil, want the registered runner", runnerA1)
		}
		if err := first(
			expectEqual("runner by name", *existing, scaleset.RunnerReference{ID: first1.ID, Name: runnerA1, RunnerScaleSetID: s.scaleSetA.ID}),
		); err != nil {
			return "", err
		}
		if err := s.client.RemoveRunner(ctx, int64(existing.ID)); err != nil {
			return "", fmt.Errorf("RemoveRunner(%d): %w", existing.ID, err)
		}
		again, err := s.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: runnerA1}, s.scaleSetA.ID)
		if err != nil {
			return "", fmt.Errorf("GenerateJitRunnerConfig after the removal: %w", err)
		}
		first1 = again.Runner
		return fmt.Sprintf("new runner id %d", again.Runner.ID), expectEqual("a new id", again.Runner.ID != existing.ID, true)
	})

	c.step("runner by id and by name; unknown id is RunnerNotFoundError, unknown name (nil, nil)", func(ctx context.Context) (string, error) {
		byID, err := s.client.GetRunner(ctx, first1.ID)
		if err != nil {
			return "", fmt.Errorf("GetRunner(%d): %w", first1.ID, err)
		}
		_, unknownID := s.client.GetRunner(ctx, 987654321)
		byName, err := s.client.GetRunnerByName(ctx, "no-such-runner")
		if err != nil {
			return "", fmt.Errorf("GetRunnerByName(unknown): %w", err)
		}
		return "", first(
			expectEqual("runner by id", *byID, *first1),
			expectErrorIs("GetRunner(unknown)", unknownID, scaleset.RunnerNotFoundError),
			expectEqual("runner by unknown name", byName, (*scaleset.RunnerReference)(nil)),
		)
	})

	c.step("remove: an idle runner (online, no job) is removed", func(ctx context.Context) (string, error) {
		if err := c.sim.runnerConnected(ctx, runnerA1); err != nil {
			return "", err
		}
		if r, err := c.sim.runner(ctx, runnerA1); err != nil || r == nil || r.Status != "idle" {
			return "", fmt.Errorf("runner %s before removal: got %+v (%v), want idle", runnerA1, r, err)
		}
		if err := s.client.RemoveRunner(ctx, int64(first1.ID)); err != nil {
			return "", fmt.Errorf("RemoveRunner(idle): %w", err)
		}
		left, err := c.sim.runner(ctx, runnerA1)
		if err != nil {
			return "", err
		}
		_, gone := s.client.GetRunner(ctx, first1.ID)
		return "", first(
			expectEqual("registration left", left, (*simRunner)(nil)),
			expectErrorIs("GetRunner after removal", gone, scaleset.RunnerNotFoundError),
		)
	})

	c.step("remove: an already removed runner answers 204 (RemoveRunner returns nil)", func(ctx context.Context) (string, error) {
		return "", expectNoError("RemoveRunner of a removed registration", s.client.RemoveRunner(ctx, int64(first1.ID)))
	})

	c.step("remove: a runner running a job is JobStillRunningError and stays registered", func(ctx context.Context) (string, error) {
		jit, err := s.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: runnerA2}, s.scaleSetA.ID)
		if err != nil {
			return "", fmt.Errorf("GenerateJitRunnerConfig: %w", err)
		}
		if err := c.sim.runnerConnected(ctx, runnerA2); err != nil {
			return "", err
		}
		job, err := c.sim.startJob(ctx, runnerA2)
		if err != nil {
			return "", err
		}
		busyErr := s.client.RemoveRunner(ctx, int64(jit.Runner.ID))
		kept, err := c.sim.runner(ctx, runnerA2)
		if err != nil {
			return "", err
		}
		if err := first(
			expectErrorIs("RemoveRunner(busy)", busyErr, scaleset.JobStillRunningError),
			expectEqual("registration kept", kept != nil && kept.Status == "busy", true),
		); err != nil {
			return "", err
		}

		// The job ends and the ephemeral runner deregisters itself (exit 0); the finalizer's
		// RemoveRunner that follows must succeed, or upstream never finishes the runner.
		if err := c.sim.completeJob(ctx, job.JobID, "succeeded"); err != nil {
			return "", err
		}
		if err := c.sim.runnerExited(ctx, runnerA2, 0); err != nil {
			return "", err
		}
		if r, err := c.sim.runner(ctx, runnerA2); err != nil || r != nil {
			return "", fmt.Errorf("runner %s after exit 0: got %+v (%v), want no registration", runnerA2, r, err)
		}
		return fmt.Sprintf("job %s", job.JobID), expectNoError("RemoveRunner after the runner deregistered itself", s.client.RemoveRunner(ctx, int64(jit.Runner.ID)))
	})
}
