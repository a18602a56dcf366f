package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// acquirableJobsClient calls GET runnerscalesets/{id}/acquirablejobs, which upstream's current
// client (scaleset v0.4.0) no longer has but ARC's older in-tree client called. It makes the same
// PAT exchange as upstream (registration token, then runner-registration) to get an admin token,
// and decodes the answer into the shape that older client read: 204 = none, 200 = {count, value}.
type acquirableJobsClient struct {
	http       *http.Client
	origin     string
	scope      string // "orgs/<org>"
	configURL  string
	pat        string
	actionsURL string
	adminToken string
}

type acquirableJob struct {
	AcquireJobURL   string   `json:"acquireJobUrl"`
	MessageType     string   `json:"messageType"`
	RunnerRequestID int64    `json:"runnerRequestId"`
	RepositoryName  string   `json:"repositoryName"`
	OwnerName       string   `json:"ownerName"`
	JobWorkflowRef  string   `json:"jobWorkflowRef"`
	EventName       string   `json:"eventName"`
	RequestLabels   []string `json:"requestLabels"`
}

type acquirableJobList struct {
	Count int             `json:"count"`
	Jobs  []acquirableJob `json:"value"`
}

func newAcquirableJobsClient(origin, org, pat string) *acquirableJobsClient {
	return &acquirableJobsClient{
		http:      &http.Client{Timeout: 30 * time.Second},
		origin:    origin,
		scope:     "orgs/" + org,
		configURL: origin + "/" + org,
		pat:       pat,
	}
}

func (a *acquirableJobsClient) post(ctx context.Context, url, auth string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, raw)
	}
	return json.Unmarshal(bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf")), out)
}

func (a *acquirableJobsClient) connect(ctx context.Context) error {
	var registration struct {
		Token string `json:"token"`
	}
	if err := a.post(ctx, a.origin+"/api/v3/"+a.scope+"/actions/runners/registration-token", "Bearer "+a.pat, nil, &registration); err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"url": a.configURL, "runner_event": "register"})
	var admin struct {
		URL   string `json:"url"`
		Token string `json:"token"`
	}
	if err := a.post(ctx, a.origin+"/api/v3/actions/runner-registration", "RemoteAuth "+registration.Token, body, &admin); err != nil {
		return err
	}
	a.actionsURL, a.adminToken = strings.TrimRight(admin.URL, "/"), admin.Token
	return nil
}

func (a *acquirableJobsClient) list(ctx context.Context, scaleSetID int) (*acquirableJobList, error) {
	if a.adminToken == "" {
		if err := a.connect(ctx); err != nil {
			return nil, fmt.Errorf("admin connection: %w", err)
		}
	}
	url := fmt.Sprintf("%s/_apis/runtime/runnerscalesets/%d/acquirablejobs?api-version=6.0-preview", a.actionsURL, scaleSetID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.adminToken)
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	switch resp.StatusCode {
	case http.StatusNoContent:
		return &acquirableJobList{Jobs: []acquirableJob{}}, nil
	case http.StatusOK:
		var list acquirableJobList
		if err := json.Unmarshal(bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf")), &list); err != nil {
			return nil, fmt.Errorf("GET %s: decoding %q: %w", url, raw, err)
		}
		return &list, nil
	default:
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, raw)
	}
}
