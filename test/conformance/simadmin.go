package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// simAdmin speaks the simulator's admin API (/_sim): it sets up owners and credentials, plays the
// part of GitHub's users and runners (queue a job, a runner connects, a job completes, a runner
// exits), and reads back state and call counters. It is never used for a protocol call.
type simAdmin struct {
	origin string
	http   *http.Client
}

func newSimAdmin(origin string) *simAdmin {
	return &simAdmin{origin: origin, http: &http.Client{Timeout: 30 * time.Second}}
}

func (s *simAdmin) do(ctx context.Context, method, path string, body any, out any) error {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.origin+"/_sim"+path, reader)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("simulator admin %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("simulator admin %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("simulator admin %s %s answered %s: %s", method, path, resp.Status, raw)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("simulator admin %s %s: decoding %q: %w", method, path, raw, err)
		}
	}
	return nil
}

type ownerRef struct {
	Org        string `json:"org,omitempty"`
	Repo       string `json:"repo,omitempty"`
	Enterprise string `json:"enterprise,omitempty"`
}

type simJob struct {
	JobID           string   `json:"jobId"`
	RunnerRequestID int64    `json:"runnerRequestId"`
	State           string   `json:"state"`
	Labels          []string `json:"labels"`
	Repo            string   `json:"repo"`
	ScaleSetID      *int     `json:"scaleSetId"`
	RunnerID        *int     `json:"runnerId"`
	RunnerName      *string  `json:"runnerName"`
	Result          *string  `json:"result"`
}

type simRunner struct {
	ID         int     `json:"id"`
	Name       string  `json:"name"`
	ScaleSetID int     `json:"scaleSetId"`
	Status     string  `json:"status"`
	JobID      *string `json:"jobId"`
}

type simApp struct {
	AppID         int    `json:"appId"`
	ClientID      string `json:"clientId"`
	Installations []struct {
		Owner          ownerRef `json:"owner"`
		InstallationID int64    `json:"installationId"`
	} `json:"installations"`
}

func (s *simAdmin) createEnterprise(ctx context.Context, name string) error {
	return s.do(ctx, http.MethodPost, "/enterprises", map[string]string{"name": name}, nil)
}

func (s *simAdmin) createOrg(ctx context.Context, name, enterprise string) error {
	body := map[string]string{"name": name}
	if enterprise != "" {
		body["enterprise"] = enterprise
	}
	return s.do(ctx, http.MethodPost, "/orgs", body, nil)
}

func (s *simAdmin) createRepo(ctx context.Context, fullName string) error {
	return s.do(ctx, http.MethodPost, "/repos", map[string]string{"fullName": fullName}, nil)
}

func (s *simAdmin) createRunnerGroup(ctx context.Context, owner ownerRef, name string) (int, error) {
	var out struct {
		ID int `json:"id"`
	}
	err := s.do(ctx, http.MethodPost, "/runner-groups", map[string]any{"owner": owner, "name": name}, &out)
	return out.ID, err
}

func (s *simAdmin) registerApp(ctx context.Context, publicKeyPEM string, installations []ownerRef) (simApp, error) {
	var out simApp
	err := s.do(ctx, http.MethodPost, "/apps", map[string]any{"publicKeyPem": publicKeyPEM, "installations": installations}, &out)
	return out, err
}

func (s *simAdmin) timing(ctx context.Context) (map[string]any, error) {
	// PUT with an empty object changes nothing and answers the current timing.
	var out map[string]any
	err := s.do(ctx, http.MethodPut, "/timing", map[string]any{}, &out)
	return out, err
}

func (s *simAdmin) setTiming(ctx context.Context, timing map[string]any) error {
	return s.do(ctx, http.MethodPut, "/timing", timing, nil)
}

func (s *simAdmin) tokenLifetimes(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	err := s.do(ctx, http.MethodPut, "/token-lifetimes", map[string]any{}, &out)
	return out, err
}

func (s *simAdmin) setTokenLifetimes(ctx context.Context, lifetimes map[string]any) error {
	return s.do(ctx, http.MethodPut, "/token-lifetimes", lifetimes, nil)
}

func (s *simAdmin) expireQueueTokens(ctx context.Context) error {
	return s.do(ctx, http.MethodPost, "/tokens/expire", map[string]bool{"admin": false, "queue": true}, nil)
}

func (s *simAdmin) enqueueJob(ctx context.Context, repo string, labels []string) (simJob, error) {
	var out simJob
	err := s.do(ctx, http.MethodPost, "/jobs", map[string]any{"repo": repo, "labels": labels}, &out)
	return out, err
}

func (s *simAdmin) job(ctx context.Context, jobID string) (simJob, error) {
	var out simJob
	err := s.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(jobID), nil, &out)
	return out, err
}

func (s *simAdmin) completeJob(ctx context.Context, jobID, result string) error {
	return s.do(ctx, http.MethodPost, "/jobs/"+url.PathEscape(jobID)+"/complete", map[string]string{"result": result}, nil)
}

func (s *simAdmin) runnerConnected(ctx context.Context, name string) error {
	return s.do(ctx, http.MethodPost, "/runners/"+url.PathEscape(name)+"/connect", map[string]any{}, nil)
}

func (s *simAdmin) startJob(ctx context.Context, name string) (simJob, error) {
	var out simJob
	err := s.do(ctx, http.MethodPost, "/runners/"+url.PathEscape(name)+"/start", map[string]any{}, &out)
	return out, err
}

func (s *simAdmin) runnerExited(ctx context.Context, name string, exitCode int) error {
	return s.do(ctx, http.MethodPost, "/runners/"+url.PathEscape(name)+"/exit", map[string]int{"exitCode": exitCode}, nil)
}

// runner returns the registration named so, or nil when the simulator holds none.
func (s *simAdmin) runner(ctx context.Context, name string) (*simRunner, error) {
	var all []simRunner
	if err := s.do(ctx, http.MethodGet, "/runners", nil, &all); err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].Name == name {
			return &all[i], nil
		}
	}
	return nil, nil
}

func (s *simAdmin) sessionCount(ctx context.Context, scaleSetID int) (int, error) {
	var all []struct {
		ScaleSetID int `json:"scaleSetId"`
	}
	if err := s.do(ctx, http.MethodGet, "/sessions", nil, &all); err != nil {
		return 0, err
	}
	n := 0
	for _, s := range all {
		if s.ScaleSetID == scaleSetID {
			n++
		}
	}
	return n, nil
}

// callCount is how often the simulator saw a protocol route (its counter key, e.g. `DELETE agents/{id}`).
func (s *simAdmin) callCount(ctx context.Context, route string) (int, error) {
	out := map[string]int{}
	err := s.do(ctx, http.MethodGet, "/calls?route="+url.QueryEscape(route), nil, &out)
	return out[route], err
}
