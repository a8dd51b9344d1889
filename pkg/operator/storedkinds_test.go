package operator_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/operator"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func overlay(name string) *v1alpha1.NodeOverlay {
	return &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements: []v1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			Price:        ptr.To("0.1"),
		},
	}
}

func buffer(name string) *autoscalingv1beta1.CapacityBuffer {
	return &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "pod"}, Replicas: ptr.To[int32](1)},
	}
}

// storedWarnings returns the log lines of the stored-objects report, by kind.
func storedWarnings(t *testing.T, lines []map[string]any) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, m := range lines {
		msg, _ := m["message"].(string)
		if !strings.Contains(msg, "stored but not acted on") {
			continue
		}
		kind, _ := m["kind"].(string)
		out[kind] = append(out[kind], m)
	}
	return out
}

// With NodeOverlays and CapacityBuffers in the cluster, the operator starts
// and becomes ready as without them, logs one warning per kind naming the
// kind, the count and its feature gate, and records a Warning event on each
// object.
func TestStoredObjectsAreReportedAtStartUp(t *testing.T) {
	e := env.StartT(t)
	ctx, cancel := context.WithCancel(context.Background())
	for i := range 2 {
		if err := e.Client.Create(ctx, overlay(fmt.Sprintf("overlay-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Client.Create(ctx, buffer("buffer")); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "karpenter.log")
	healthPort := freePort(t)
	opts, err := options.Parse([]string{"--metrics-port=0", fmt.Sprintf("--health-probe-port=%d", healthPort),
		"--leader-election-name=stored-objects", "--leader-election-namespace=default",
		"--log-output-paths=" + logPath,
	}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	op, err := operator.New(ctx, opts, e.Config)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- op.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("operator stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("operator did not stop")
		}
	})
	Eventually(t, 30*time.Second, func() error {
		code, body, err := get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
		if err != nil {
			return err
		}
		if code != 200 {
			return fmt.Errorf("readyz: %d %s", code, body)
		}
		return nil
	})
	var found map[string][]map[string]any
	Eventually(t, 30*time.Second, func() error {
		b, err := os.ReadFile(logPath)
		if err != nil {
			return err
		}
		found = storedWarnings(t, logLines(t, bytes.NewBuffer(b)))
		if len(found["NodeOverlay"]) == 0 || len(found["CapacityBuffer"]) == 0 {
			return fmt.Errorf("stored-object warnings so far: %v", found)
		}
		return nil
	})
	want := map[string]struct {
		count float64
		text  string
	}{
		"NodeOverlay":    {2, "2 NodeOverlay object(s) are stored but not acted on: feature gate NodeOverlay is off (NodeOverlay=false; set it to true to act on them)"},
		"CapacityBuffer": {1, "1 CapacityBuffer object(s) are stored but not acted on: feature gate CapacityBuffer is off (CapacityBuffer=false; set it to true to act on them)"},
	}
	for kind, w := range want {
		lines := found[kind]
		if len(lines) != 1 {
			t.Errorf("%s: %d warnings, want 1: %v", kind, len(lines), lines)
			continue
		}
		m := lines[0]
		if m["level"] != "WARN" || m["count"] != w.count || !strings.HasPrefix(m["message"].(string), w.text) {
			t.Errorf("%s: warning %v, want level WARN, count %v, message starting %q", kind, m, w.count, w.text)
		}
	}
	if len(found) != 2 {
		t.Errorf("warnings for kinds %v, want NodeOverlay and CapacityBuffer only", found)
	}
	// A Warning event on each object, naming its kind.
	Eventually(t, 30*time.Second, func() error {
		events := &corev1.EventList{}
		if err := e.Client.List(ctx, events); err != nil {
			return err
		}
		on := map[string]int{}
		for _, ev := range events.Items {
			if ev.Reason != operator.ReasonStoredNotActedOn || ev.Type != corev1.EventTypeWarning ||
				!strings.HasPrefix(ev.Message, ev.InvolvedObject.Kind+" is stored but not acted on") {
				continue
			}
			on[ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name]++
		}
		for _, want := range []string{"NodeOverlay/overlay-0", "NodeOverlay/overlay-1", "CapacityBuffer/buffer"} {
			if on[want] != 1 {
				return fmt.Errorf("events by object %v, want one on %s", on, want)
			}
		}
		return nil
	})
}

// No objects, no warning; a cluster without the CRDs (an older install) is
// not an error and gets no warning either.
func TestStoredObjectsReportIsQuietWithoutObjects(t *testing.T) {
	ctx := context.Background()
	e := env.StartT(t)
	var buf bytes.Buffer
	operator.ReportStoredObjects(ctx, e.Client, operator.NewJSONLogger(&buf, 0), nil, nil)
	if buf.Len() != 0 {
		t.Errorf("logged without objects: %s", buf.String())
	}

	bare := env.StartT(t, env.WithCRDDirectory(t.TempDir()))
	found, err := operator.CountStoredObjects(ctx, bare.Client)
	if err != nil || len(found) != 0 {
		t.Errorf("without the CRDs: %v, %v; want nothing and no error", found, err)
	}
	operator.ReportStoredObjects(ctx, bare.Client, operator.NewJSONLogger(&buf, 0), nil, nil)
	if buf.Len() != 0 {
		t.Errorf("logged without the CRDs: %s", buf.String())
	}
}

// With the NodeOverlay gate on, NodeOverlays are acted on (the overlay
// controller evaluates them) and not reported; CapacityBuffers still are.
func TestStoredObjectsReportSkipsNodeOverlaysWithTheGateOn(t *testing.T) {
	ctx := context.Background()
	e := env.StartT(t)
	ExpectApplied(ctx, t, e.Client, overlay("overlay"), buffer("buffer"))
	for _, on := range []bool{false, true} {
		var buf bytes.Buffer
		operator.ReportStoredObjects(ctx, e.Client, operator.NewJSONLogger(&buf, 0), nil, map[string]bool{options.FeatureNodeOverlay: on})
		found := storedWarnings(t, logLines(t, &buf))
		if len(found["CapacityBuffer"]) != 1 {
			t.Errorf("NodeOverlay=%t: CapacityBuffer warnings %v, want 1", on, found["CapacityBuffer"])
		}
		if want := map[bool]int{false: 1, true: 0}[on]; len(found["NodeOverlay"]) != want {
			t.Errorf("NodeOverlay=%t: %d NodeOverlay warnings, want %d", on, len(found["NodeOverlay"]), want)
		}
	}
}
