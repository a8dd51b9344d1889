package conversion_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/webhook/conversion"
)

// TestRun: Run alone (certificate Secret, CRD wiring, serving) is enough for
// a v1beta1 client to create a NodePool that is stored as v1.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter-run"}}
	if err := testEnv.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Reserve a loopback port for the webhook.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	done := make(chan error, 1)
	go func() {
		done <- conversion.Run(ctx, conversion.Options{
			Client: testEnv.Client, Namespace: ns.Name, BindAddress: addr,
			ClientConfig: &conversion.ClientConfig{URL: "https://" + addr},
			IPs:          []net.IP{net.ParseIP("127.0.0.1")},
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if err := conversion.DisableConversion(context.Background(), testEnv.Client); err != nil {
			t.Error(err)
		}
	})
	in := manifest(t, "seed004-nodepool.yaml")
	in.SetName("through-run")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("Run returned early: %v", err)
		default:
		}
		c, err := client.New(testEnv.Config, client.Options{Scheme: testEnv.Scheme})
		if err != nil {
			return false, err
		}
		return c.Create(ctx, in.DeepCopy()) == nil, nil
	})
	if err != nil {
		t.Fatalf("v1beta1 create through Run never succeeded: %v", err)
	}
	np := &v1.NodePool{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: "through-run"}, np); err != nil {
		t.Fatal(err)
	}
	if np.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmpty || np.Spec.Template.Spec.NodeClassRef.Group != "karpenter.k8s.aws" {
		t.Errorf("stored v1 NodePool = %+v", np.Spec)
	}
	secret := &corev1.Secret{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "karpenter-cert"}, secret); err != nil {
		t.Fatalf("certificate Secret: %v", err)
	}
	// v1beta1 read works too.
	beta := &unstructured.Unstructured{}
	beta.SetAPIVersion("karpenter.sh/v1beta1")
	beta.SetKind("NodePool")
	c, _ := client.New(testEnv.Config, client.Options{Scheme: testEnv.Scheme})
	if err := c.Get(ctx, client.ObjectKey{Name: "through-run"}, beta); err != nil {
		t.Fatal(err)
	}
}
