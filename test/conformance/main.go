// Command aro-conformance drives a running ARO simulator through every call upstream's scale-set
// controller and listener make, with upstream's own client (github.com/actions/scaleset), in the
// order they make them, and checks what that client returns: values and typed errors, not only
// status codes. It prints one line per step and exits 1 at the first mismatch, naming it.
//
// Usage: aro-conformance -simulator http://127.0.0.1:8910 [-pat ghp_simulator] [-v]
//
// It works against a fresh or a long-running simulator: every run creates its own org, enterprise,
// runner group and scale sets (named conf-<run id>), and restores the timing it changes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	simulatorURL := flag.String("simulator", os.Getenv("ARO_SIMULATOR_URL"), "origin of the simulator (http://host:port); default $ARO_SIMULATOR_URL")
	pat := flag.String("pat", "ghp_simulator", "a PAT the simulator accepts for every owner (the default seed's)")
	stepTimeout := flag.Duration("step-timeout", 60*time.Second, "deadline of each step")
	flag.Parse()
	if *simulatorURL == "" {
		fmt.Fprintln(os.Stderr, "aro-conformance: -simulator (or ARO_SIMULATOR_URL) is required")
		os.Exit(2)
	}

	run := &conformance{
		sim:         newSimAdmin(strings.TrimRight(*simulatorURL, "/")),
		pat:         *pat,
		runID:       fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff),
		stepTimeout: *stepTimeout,
	}
	started := time.Now()
	run.all()
	fmt.Printf("PASS %d steps against %s in %s\n", run.steps, *simulatorURL, time.Since(started).Round(time.Millisecond))
}

// conformance holds what the steps share: the simulator's admin API, the names of this run's
// owners, and the objects earlier steps created.
type conformance struct {
	sim         *simAdmin
	pat         string
	runID       string
	stepTimeout time.Duration
	steps       int
	cleanups    []func()

	state runState
}

// step runs one check under a deadline; a returned error ends the program with the step's name.
func (c *conformance) step(name string, fn func(ctx context.Context) (string, error)) {
	c.steps++
	ctx, cancel := context.WithTimeout(context.Background(), c.stepTimeout)
	defer cancel()
	detail, err := fn(ctx)
	if err != nil {
		fmt.Printf("FAIL %3d %s\n     %v\n", c.steps, name, err)
		for i := len(c.cleanups) - 1; i >= 0; i-- {
			c.cleanups[i]()
		}
		os.Exit(1)
	}
	if detail != "" {
		fmt.Printf("ok   %3d %s: %s\n", c.steps, name, detail)
	} else {
		fmt.Printf("ok   %3d %s\n", c.steps, name)
	}
}

func (c *conformance) all() {
	c.setUp()
	c.authSteps()
	c.scaleSetSteps()
	c.runnerSteps()
	c.sessionSteps()
	c.listenerSteps()
	c.tearDownSteps()
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
}
