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

	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// fleetProfiler takes CPU profiles of the API server, etcd and Karpenter while a fleet
// benchmark runs (FLEET_PROFILE_DIR): what the fleet makes the control plane do is read
// from these, not guessed. The cluster runs with Profiling (pprof on kube-apiserver and
// etcd) and Karpenter with ENABLE_PROFILING.
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
	if url := etcdClientURL(p.e); url != "" {
		out[localcluster.Etcd] = httpGet(url + q)
	}
	return out
}

// etcdClientURL reads etcd's --listen-client-urls from its command line.
func etcdClientURL(e *provisioningEnv) string {
	pids, err := e.ChildPIDs()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[localcluster.Etcd]))
	if err != nil {
		return ""
	}
	for _, arg := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(arg, "--listen-client-urls="); ok {
			return strings.Split(v, ",")[0]
		}
	}
	return ""
}
