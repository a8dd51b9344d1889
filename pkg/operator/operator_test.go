package operator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/karpenter-go/karpenter/pkg/operator"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// The operator serves /healthz and /readyz on HEALTH_PROBE_PORT and Prometheus
// metrics on METRICS_PORT, and takes the Lease named LEADER_ELECTION_NAME in
// LEADER_ELECTION_NAMESPACE.
func TestOperatorServesProbesMetricsAndTakesTheLease(t *testing.T) {
	e := env.StartT(t)
	metricsPort, healthPort := freePort(t), freePort(t)
	opts, err := options.Parse([]string{
		fmt.Sprintf("--metrics-port=%d", metricsPort), fmt.Sprintf("--health-probe-port=%d", healthPort),
		"--leader-election-name=test-leader", "--leader-election-namespace=default", "--log-level=error",
	}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(ctx, opts, e.Config)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- op.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("operator did not stop")
		}
	})
	Eventually(t, 30*time.Second, func() error {
		for _, path := range []string{"/healthz", "/readyz"} {
			code, body, err := get(fmt.Sprintf("http://127.0.0.1:%d%s", healthPort, path))
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", path, code, body)
			}
		}
		return nil
	})
	code, body, err := get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	if err != nil || code != http.StatusOK {
		t.Fatalf("metrics endpoint: %d %v", code, err)
	}
	if !strings.Contains(body, "karpenter_build_info") {
		t.Errorf("metrics do not include karpenter_build_info")
	}
	Eventually(t, 30*time.Second, func() error {
		lease := &coordinationv1.Lease{}
		if err := e.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "test-leader"}, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease has no holder")
		}
		return nil
	})
}

// With POD_NAME set the Lease is held under the pod's name, so a restarted
// container of the same pod leads again at once: here the Lease a crashed
// incarnation left is valid for another hour, which would keep any other
// identity waiting that long.
func TestLeaseIdentityIsThePodName(t *testing.T) {
	e := env.StartT(t)
	const pod = "karpenter-7d9f-abcde"
	t.Setenv(operator.PodNameEnv, pod)
	renewed := metav1.NewMicroTime(time.Now().Add(-time.Second))
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-leader"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(pod), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &renewed, RenewTime: &renewed,
		},
	}
	if err := e.Client.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	opts, err := options.Parse([]string{"--metrics-port=0", "--health-probe-port=0",
		"--leader-election-name=pod-leader", "--leader-election-namespace=default", "--log-level=error",
	}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(ctx, opts, e.Config)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- op.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	Eventually(t, 30*time.Second, func() error {
		cur := &coordinationv1.Lease{}
		if err := e.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pod-leader"}, cur); err != nil {
			return err
		}
		if cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != pod {
			return fmt.Errorf("lease holder %v, want %s", cur.Spec.HolderIdentity, pod)
		}
		if cur.Spec.RenewTime == nil || !cur.Spec.RenewTime.After(renewed.Time) {
			return fmt.Errorf("the restarted process has not renewed its own lease")
		}
		return nil
	})
}

func TestLogsAreJSONWithUpstreamFieldNames(t *testing.T) {
	var buf bytes.Buffer
	l := operator.NewJSONLogger(&buf, slog.LevelInfo)
	l.WithName("provisioner").Info("created nodeclaim", "nodeclaim", "default-abc")
	l.V(1).Info("debug detail")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want 1 line at info level, got %d: %q", len(lines), buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if m["message"] != "created nodeclaim" || m["level"] != "INFO" || m["nodeclaim"] != "default-abc" || m["logger"] != "provisioner" || m["time"] == nil {
		t.Fatalf("fields: %v", m)
	}
}

func TestUnknownLogLevelRejected(t *testing.T) {
	if _, err := operator.NewLogger("loud", "stdout", "stderr"); err == nil {
		t.Fatal("accepted log level loud")
	}
}
