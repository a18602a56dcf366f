package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strconv"
	"time"

	"github.com/actions/scaleset"
)

// runState is what later steps need from earlier ones.
type runState struct {
	org, repo, enterprise string
	groupName             string
	groupID               int

	client *scaleset.Client

	scaleSetA, scaleSetB *scaleset.RunnerScaleSet

	// pendingJob was offered to scale set B's first session and never acquired.
	pendingJob simJob
}

var systemInfo = scaleset.SystemInfo{System: "aro-conformance", Version: "0", CommitSHA: "none", Subsystem: "conformance"}

// clientOptions keep upstream's retry policy (it decides which answers are errors) but bound the wait.
func clientOptions() []scaleset.HTTPOption {
	return []scaleset.HTTPOption{scaleset.WithRetryMax(2), scaleset.WithRetryWaitMax(2 * time.Second), scaleset.WithTimeout(90 * time.Second)}
}

func (c *conformance) configURL(path string) string { return c.sim.origin + "/" + path }

func (c *conformance) patClient(configURL, pat string) (*scaleset.Client, error) {
	return scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL:     configURL,
		PersonalAccessToken: pat,
		SystemInfo:          systemInfo,
	}, clientOptions()...)
}

func (c *conformance) appClient(configURL, clientID string, installationID int64, key *rsa.PrivateKey) (*scaleset.Client, error) {
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return scaleset.NewClientWithGitHubApp(scaleset.ClientWithGitHubAppConfig{
		GitHubConfigURL: configURL,
		GitHubAppAuth:   scaleset.GitHubAppAuth{ClientID: clientID, InstallationID: installationID, PrivateKey: string(keyPEM)},
		SystemInfo:      systemInfo,
	}, clientOptions()...)
}

// setUp makes this run's owners and runner group through the admin API, and shortens the long
// poll so that "no message" (202) comes back in about a second.
func (c *conformance) setUp() {
	s := &c.state
	s.enterprise = "conf-ent-" + c.runID
	s.org = "conf-" + c.runID
	s.repo = s.org + "/app"
	s.groupName = "conformance-" + c.runID
	c.step("set up: enterprise, org, repo and runner group through /_sim", func(ctx context.Context) (string, error) {
		if err := c.sim.createEnterprise(ctx, s.enterprise); err != nil {
			return "", err
		}
		if err := c.sim.createOrg(ctx, s.org, s.enterprise); err != nil {
			return "", err
		}
		if err := c.sim.createRepo(ctx, s.repo); err != nil {
			return "", err
		}
		id, err := c.sim.createRunnerGroup(ctx, ownerRef{Org: s.org}, s.groupName)
		if err != nil {
			return "", err
		}
		s.groupID = id
		previous, err := c.sim.timing(ctx)
		if err != nil {
			return "", err
		}
		if err := c.sim.setTiming(ctx, map[string]any{"longPollTimeoutMs": 1000}); err != nil {
			return "", err
		}
		c.cleanups = append(c.cleanups, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = c.sim.setTiming(ctx, map[string]any{"longPollTimeoutMs": previous["longPollTimeoutMs"]})
		})
		return fmt.Sprintf("org %s, repo %s, enterprise %s, runner group %d", s.org, s.repo, s.enterprise, id), nil
	})
}

func (c *conformance) authSteps() {
	s := &c.state
	c.step("config URL: three path segments are refused by the client", func(ctx context.Context) (string, error) {
		_, err := c.patClient(c.configURL(s.repo+"/extra"), c.pat)
		return "", expectErrorIs("NewClientWithPersonalAccessToken", err, scaleset.ErrInvalidGitHubConfigURL)
	})

	c.step("PAT: registration token, runner-registration, then the admin token opens the Actions service", func(ctx context.Context) (string, error) {
		client, err := c.patClient(c.configURL(s.org), c.pat)
		if err != nil {
			return "", err
		}
		regBefore, _ := c.sim.callCount(ctx, "POST orgs/{org}/actions/runners/registration-token")
		adminBefore, _ := c.sim.callCount(ctx, "POST actions/runner-registration")
		group, err := client.GetRunnerGroupByName(ctx, "Default")
		if err != nil {
			return "", fmt.Errorf("GetRunnerGroupByName(Default): %w", err)
		}
		regAfter, _ := c.sim.callCount(ctx, "POST orgs/{org}/actions/runners/registration-token")
		adminAfter, _ := c.sim.callCount(ctx, "POST actions/runner-registration")
		// A second call reuses the cached admin token: the client reads its exp without verifying it.
		if _, err := client.GetRunnerGroupByName(ctx, "Default"); err != nil {
			return "", fmt.Errorf("second GetRunnerGroupByName(Default): %w", err)
		}
		regCached, _ := c.sim.callCount(ctx, "POST orgs/{org}/actions/runners/registration-token")
		s.client = client
		return fmt.Sprintf("default group id %d", group.ID), first(
			expectEqual("default group", *group, scaleset.RunnerGroup{ID: 1, Name: "Default", Size: 0, IsDefault: true}),
			expectEqual("registration-token calls for the first Actions call", regAfter-regBefore, 1),
			expectEqual("runner-registration calls for the first Actions call", adminAfter-adminBefore, 1),
			expectEqual("registration-token calls while the admin token is fresh", regCached-regAfter, 0),
		)
	})

	c.step("PAT: an unknown token is refused with 401 on the registration-token call", func(ctx context.Context) (string, error) {
		client, err := c.patClient(c.configURL(s.org), "ghp_not_a_known_token")
		if err != nil {
			return "", err
		}
		_, err = client.GetRunnerGroupByName(ctx, "Default")
		return "", expectErrorContaining("GetRunnerGroupByName with a bad PAT", err, "failed to get runner registration token", "401")
	})

	c.step("PAT: repository and enterprise config URLs reach their own tenants", func(ctx context.Context) (string, error) {
		for _, path := range []string{s.repo, "enterprises/" + s.enterprise} {
			client, err := c.patClient(c.configURL(path), c.pat)
			if err != nil {
				return "", err
			}
			group, err := client.GetRunnerGroupByName(ctx, "Default")
			if err != nil {
				return "", fmt.Errorf("GetRunnerGroupByName(Default) with config URL %s: %w", path, err)
			}
			if err := expectEqual("default group of "+path, group.ID, 1); err != nil {
				return "", err
			}
			// The org's runner group is not in the repo's or the enterprise's tenant.
			_, err = client.GetRunnerGroupByName(ctx, s.groupName)
			if err := expectErrorContaining("the org's group seen from "+path, err, "no runner group found"); err != nil {
				return "", err
			}
		}
		return "", nil
	})

	c.step("GitHub App: JWT for an installation token, then the PAT-less exchange (client id and app id)", func(ctx context.Context) (string, error) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return "", err
		}
		pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return "", err
		}
		app, err := c.sim.registerApp(ctx, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})), []ownerRef{{Org: s.org}})
		if err != nil {
			return "", err
		}
		if len(app.Installations) != 1 {
			return "", fmt.Errorf("registered app: got %d installations, want 1", len(app.Installations))
		}
		installation := app.Installations[0].InstallationID
		for _, id := range []string{app.ClientID, strconv.Itoa(app.AppID)} {
			client, err := c.appClient(c.configURL(s.org), id, installation, key)
			if err != nil {
				return "", err
			}
			before, _ := c.sim.callCount(ctx, "POST app/installations/{id}/access_tokens")
			group, err := client.GetRunnerGroupByName(ctx, s.groupName)
			if err != nil {
				return "", fmt.Errorf("GetRunnerGroupByName as app %q: %w", id, err)
			}
			after, _ := c.sim.callCount(ctx, "POST app/installations/{id}/access_tokens")
			if err := first(
				expectEqual("group id seen by the app", group.ID, s.groupID),
				expectEqual("installation token calls", after-before, 1),
			); err != nil {
				return "", err
			}
		}

		unknown, err := c.appClient(c.configURL(s.org), app.ClientID, installation+100000, key)
		if err != nil {
			return "", err
		}
		_, err = unknown.GetRunnerGroupByName(ctx, "Default")
		if err := expectErrorContaining("unknown installation", err, "failed to get access token for GitHub App auth", "404"); err != nil {
			return "", err
		}
		otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return "", err
		}
		forged, err := c.appClient(c.configURL(s.org), app.ClientID, installation, otherKey)
		if err != nil {
			return "", err
		}
		_, err = forged.GetRunnerGroupByName(ctx, "Default")
		return fmt.Sprintf("app %d (%s), installation %d", app.AppID, app.ClientID, installation),
			expectErrorContaining("JWT signed with another key", err, "failed to get access token for GitHub App auth", "401")
	})

	c.step("admin token refresh: a token within 60 s of its exp is renewed before the next call", func(ctx context.Context) (string, error) {
		previous, err := c.sim.tokenLifetimes(ctx)
		if err != nil {
			return "", err
		}
		if err := c.sim.setTokenLifetimes(ctx, map[string]any{"adminTokenSeconds": 30}); err != nil {
			return "", err
		}
		defer func() {
			_ = c.sim.setTokenLifetimes(ctx, map[string]any{"adminTokenSeconds": previous["adminTokenSeconds"]})
		}()
		client, err := c.patClient(c.configURL(s.org), c.pat)
		if err != nil {
			return "", err
		}
		before, _ := c.sim.callCount(ctx, "POST actions/runner-registration")
		for i := 0; i < 2; i++ {
			if _, err := client.GetRunnerGroupByName(ctx, "Default"); err != nil {
				return "", fmt.Errorf("GetRunnerGroupByName #%d: %w", i+1, err)
			}
		}
		after, _ := c.sim.callCount(ctx, "POST actions/runner-registration")
		return "", expectEqual("runner-registration calls for two Actions calls with a 30 s admin token", after-before, 2)
	})
}
