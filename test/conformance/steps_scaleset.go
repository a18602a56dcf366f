package main

import (
	"context"
	"fmt"

	"github.com/actions/scaleset"
)

func zeroStatistics() scaleset.RunnerScaleSetStatistic { return scaleset.RunnerScaleSetStatistic{} }

// scaleSetSteps follow the AutoscalingRunnerSet reconciler: group by name, scale set by group and
// name (absent → create), by id, update of the group or the name, and the refusals around them.
func (c *conformance) scaleSetSteps() {
	s := &c.state
	nameA := "conf-a-" + c.runID
	nameB := "conf-b-" + c.runID

	c.step("runner groups: by name, and the client's error for an unknown name", func(ctx context.Context) (string, error) {
		group, err := s.client.GetRunnerGroupByName(ctx, s.groupName)
		if err != nil {
			return "", fmt.Errorf("GetRunnerGroupByName(%s): %w", s.groupName, err)
		}
		_, missing := s.client.GetRunnerGroupByName(ctx, "no-such-group")
		return fmt.Sprintf("group %d", group.ID), first(
			expectEqual("group", *group, scaleset.RunnerGroup{ID: s.groupID, Name: s.groupName, Size: 0, IsDefault: false}),
			expectErrorContaining("unknown group", missing, `no runner group found with name "no-such-group"`),
		)
	})

	c.step("scale set: absent by group and name is (nil, nil)", func(ctx context.Context) (string, error) {
		got, err := s.client.GetRunnerScaleSet(ctx, s.groupID, nameA)
		if err != nil {
			return "", fmt.Errorf("GetRunnerScaleSet: %w", err)
		}
		if got != nil {
			return "", fmt.Errorf("GetRunnerScaleSet of an absent name: got %+v, want nil", *got)
		}
		return "", nil
	})

	c.step("scale set: create with labels and RunnerSetting, as the controller sends it", func(ctx context.Context) (string, error) {
		created, err := s.client.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{
			Name:          nameA,
			RunnerGroupID: s.groupID,
			Labels:        []scaleset.Label{{Name: nameA}, {Name: "linux"}},
			RunnerSetting: scaleset.RunnerSetting{DisableUpdate: true},
		})
		if err != nil {
			return "", fmt.Errorf("CreateRunnerScaleSet: %w", err)
		}
		if created.Statistics == nil {
			return "", fmt.Errorf("created scale set has no statistics")
		}
		s.scaleSetA = created
		return fmt.Sprintf("id %d", created.ID), first(
			expectEqual("id assigned", created.ID > 0, true),
			expectEqual("name", created.Name, nameA),
			expectEqual("runnerGroupId", created.RunnerGroupID, s.groupID),
			expectEqual("runnerGroupName", created.RunnerGroupName, s.groupName),
			expectEqual("labels (type System filled in)", created.Labels, []scaleset.Label{{Type: "System", Name: nameA}, {Type: "System", Name: "linux"}}),
			expectEqual("RunnerSetting", created.RunnerSetting, scaleset.RunnerSetting{DisableUpdate: true}),
			expectEqual("createdOn set", created.CreatedOn.IsZero(), false),
			expectEqual("runnerJitConfigUrl set", created.RunnerJitConfigURL != "", true),
			expectEqual("statistics", *created.Statistics, zeroStatistics()),
		)
	})

	c.step("scale set: create without labels gets the name as its one System label", func(ctx context.Context) (string, error) {
		created, err := s.client.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: nameB, RunnerGroupID: 1})
		if err != nil {
			return "", fmt.Errorf("CreateRunnerScaleSet: %w", err)
		}
		s.scaleSetB = created
		return fmt.Sprintf("id %d", created.ID), first(
			expectEqual("labels", created.Labels, []scaleset.Label{{Type: "System", Name: nameB}}),
			expectEqual("runnerGroupName", created.RunnerGroupName, "Default"),
		)
	})

	c.step("scale set: a duplicate name in the group is refused (409)", func(ctx context.Context) (string, error) {
		_, err := s.client.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: nameA, RunnerGroupID: s.groupID})
		return "", expectErrorContaining("duplicate CreateRunnerScaleSet", err, "409", "RunnerScaleSetExistsException")
	})

	c.step("scale set: found by group and name, and by id", func(ctx context.Context) (string, error) {
		byName, err := s.client.GetRunnerScaleSet(ctx, s.groupID, nameA)
		if err != nil || byName == nil {
			return "", fmt.Errorf("GetRunnerScaleSet(%d, %s): got %v, %v", s.groupID, nameA, byName, err)
		}
		byID, err := s.client.GetRunnerScaleSetByID(ctx, s.scaleSetA.ID)
		if err != nil || byID == nil {
			return "", fmt.Errorf("GetRunnerScaleSetByID(%d): got %v, %v", s.scaleSetA.ID, byID, err)
		}
		return "", first(
			expectEqual("id by name", byName.ID, s.scaleSetA.ID),
			expectEqual("labels by id", byID.Labels, s.scaleSetA.Labels),
			expectEqual("RunnerSetting by id", byID.RunnerSetting, s.scaleSetA.RunnerSetting),
			expectEqual("createdOn by id", byID.CreatedOn.Equal(s.scaleSetA.CreatedOn), true),
		)
	})

	c.step("scale set: an unknown id is an error (404)", func(ctx context.Context) (string, error) {
		_, err := s.client.GetRunnerScaleSetByID(ctx, 987654321)
		return "", expectErrorContaining("GetRunnerScaleSetByID(unknown)", err, "404")
	})

	c.step("scale set: update of the name alone keeps group, labels and settings", func(ctx context.Context) (string, error) {
		renamed := nameA + "-renamed"
		updated, err := s.client.UpdateRunnerScaleSet(ctx, s.scaleSetA.ID, &scaleset.RunnerScaleSet{Name: renamed})
		if err != nil {
			return "", fmt.Errorf("UpdateRunnerScaleSet(name): %w", err)
		}
		s.scaleSetA = updated
		return "", first(
			expectEqual("name", updated.Name, renamed),
			expectEqual("runnerGroupId", updated.RunnerGroupID, s.groupID),
			expectEqual("labels", updated.Labels, []scaleset.Label{{Type: "System", Name: nameA}, {Type: "System", Name: "linux"}}),
			expectEqual("RunnerSetting", updated.RunnerSetting, scaleset.RunnerSetting{DisableUpdate: true}),
		)
	})

	c.step("scale set: update of the runner group alone", func(ctx context.Context) (string, error) {
		moved, err := s.client.UpdateRunnerScaleSet(ctx, s.scaleSetA.ID, &scaleset.RunnerScaleSet{RunnerGroupID: 1})
		if err != nil {
			return "", fmt.Errorf("UpdateRunnerScaleSet(group 1): %w", err)
		}
		back, err := s.client.UpdateRunnerScaleSet(ctx, s.scaleSetA.ID, &scaleset.RunnerScaleSet{RunnerGroupID: s.groupID})
		if err != nil {
			return "", fmt.Errorf("UpdateRunnerScaleSet(group %d): %w", s.groupID, err)
		}
		s.scaleSetA = back
		return "", first(
			expectEqual("runnerGroupName after the move", moved.RunnerGroupName, "Default"),
			expectEqual("name after the move", moved.Name, nameA+"-renamed"),
			expectEqual("runnerGroupName after the move back", back.RunnerGroupName, s.groupName),
		)
	})

	c.step("scale set: a rename onto a taken name is refused (409)", func(ctx context.Context) (string, error) {
		if _, err := s.client.UpdateRunnerScaleSet(ctx, s.scaleSetB.ID, &scaleset.RunnerScaleSet{RunnerGroupID: s.groupID}); err != nil {
			return "", fmt.Errorf("moving scale set B into the group: %w", err)
		}
		_, err := s.client.UpdateRunnerScaleSet(ctx, s.scaleSetB.ID, &scaleset.RunnerScaleSet{Name: s.scaleSetA.Name})
		return "", expectErrorContaining("rename onto a taken name", err, "409")
	})
}
