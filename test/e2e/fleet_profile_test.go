package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// fleetProfiler takes CPU profiles of every process of the fleet (API server, etcd,
// kube-scheduler, kube-controller-manager and Karpenter; KWOK serves no CPU profile) while a fleet benchmark runs
// (FLEET_PROFILE_DIR): what the fleet makes the control plane do is read from these, not
// guessed. The cluster runs with Profiling (pprof on every component) and Karpenter with
// ENABLE_PROFILING.
type fleetProfiler struct {
	e       *provisioningEnv
	dir     string
	seconds int
	wg      sync.WaitGroup
}

// newFleetProfiler profiles for FLEET_PROFILE_SECONDS (default 30) each time: a longer window
// covers more of a scale-up, where costs that grow with the fleet show.
func newFleetProfiler(e *provisioningEnv, dir string) *fleetProfiler {
	seconds := 30
	if n, err := strconv.Atoi(os.Getenv("FLEET_PROFILE_SECONDS")); err == nil && n > 0 {
		seconds = n
	}
	return &fleetProfiler{e: e, dir: dir, seconds: seconds}
}

// after starts, once delay has passed, one profile of each component (concurrently)
// named <phase>-<component>.pprof; wait collects them.
func (p *fleetProfiler) after(b *testing.B, phase string, delay time.Duration) {
	if p == nil {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		select {
		case <-time.After(delay):
		case <-p.e.ctx.Done():
			return
		}
		var wg sync.WaitGroup
		for component, get := range p.sources() {
			wg.Go(func() {
				body, err := get(p.e.ctx)
				if err == nil {
					err = os.WriteFile(filepath.Join(p.dir, phase+"-"+component+".pprof"), body, 0o644)
				}
				if err != nil {
					fmt.Printf("scale: profile %s %s: %v\n", phase, component, err)
				}
			})
		}
		wg.Wait()
		fmt.Printf("scale: %s profiles written to %s (load %s)\n", phase, p.dir, loadAvg())
	}()
}

func (p *fleetProfiler) wait() {
	if p != nil {
		p.wg.Wait()
	}
}

func (p *fleetProfiler) sources() map[string]func(context.Context) ([]byte, error) {
	q := fmt.Sprintf("/debug/pprof/profile?seconds=%d", p.seconds)
	httpGet := func(url string) func(context.Context) ([]byte, error) {
		return func(ctx context.Context) ([]byte, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return nil, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
			}
			return io.ReadAll(resp.Body)
		}
	}
	out := map[string]func(context.Context) ([]byte, error){
		localcluster.APIServer: func(ctx context.Context) ([]byte, error) {
			return p.e.KubeClient.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", fmt.Sprint(p.seconds)).DoRaw(ctx)
		},
		"karpenter": httpGet(fmt.Sprintf("http://127.0.0.1:%d%s", p.e.current().MetricsPort, q)),
	}
	if url := childFlag(p.e, localcluster.Etcd, "--listen-client-urls"); url != "" {
		out[localcluster.Etcd] = httpGet(strings.Split(url, ",")[0] + q)
	}
	// kube-scheduler and kube-controller-manager serve pprof on their secure ports, with
	// certificates of their own making, to a client the API server authorizes.
	for _, component := range []string{localcluster.Scheduler, localcluster.ControllerManager} {
		if port := childFlag(p.e, component, "--secure-port"); port != "" {
			out[component] = func(ctx context.Context) ([]byte, error) {
				return getSecure(ctx, p.e, fmt.Sprintf("https://127.0.0.1:%s%s", port, q))
			}
		}
	}
	return out
}

// getSecure GETs url from a control-plane component's secure port as the cluster's admin
// (client certificate of the benchmark's kubeconfig), trusting the component's
// self-signed serving certificate.
func getSecure(ctx context.Context, e *provisioningEnv, url string) ([]byte, error) {
	cfg := rest.CopyConfig(e.Config)
	cfg.Insecure, cfg.CAData, cfg.CAFile = true, nil, ""
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: HTTP %d: %.200s", url, resp.StatusCode, body)
	}
	return body, err
}

// childFlag reads the value of a control-plane child's flag from its command line ("" when
// the child or the flag is not there).
func childFlag(e *provisioningEnv, component, flag string) string {
	pids, err := e.ChildPIDs()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[component]))
	if err != nil {
		return ""
	}
	for _, arg := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(arg, flag+"="); ok {
			return v
		}
	}
	return ""
}
