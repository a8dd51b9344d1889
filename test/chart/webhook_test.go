package chart_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	"github.com/karpenter-go/karpenter/pkg/webhook/conversion"
)

// TestWebhookThroughTheChart wires the conversion webhook exactly as the
// charts do with webhook.enabled: the karpenter-crd chart's CRDs (conversion
// through Service karpenter/karpenter), the karpenter chart's Service (its
// https-webhook port), and the webhook started with the chart's settings
// (namespace, KARPENTER_SERVICE, WEBHOOK_PORT) and the chart's ServiceAccount
// (a token: exactly the chart's RBAC) serving the certificate it generates. The apiserver reaches the Service through its endpoints
// (--enable-aggregator-routing; there is no kube-proxy here), which point at
// this process on the host's address. A v1beta1 NodePool and EC2NodeClass
// applied then read back as v1.
func TestWebhookThroughTheChart(t *testing.T) {
	host := hostIP(t)
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	te := env.StartT(t, env.WithAPIServerArgs("--enable-aggregator-routing=true"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := te.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter"}}); err != nil {
		t.Fatal(err)
	}
	values := []string{"--set", "webhook.enabled=true", "--set", "webhook.port=" + strconv.Itoa(port)}
	for _, o := range render(t, "karpenter-crd", values...) {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s: %v", o.GetName(), err)
		}
	}
	objs := render(t, "karpenter", append(values, "--set", "settings.clusterName=webhook")...)
	// The Service and the chart's identity (ServiceAccount, ClusterRoles, Role
	// and their bindings): the webhook runs with a token of that account.
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment", "PodDisruptionBudget":
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := c.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "karpenter", Name: "karpenter"}}, tr); err != nil {
		t.Fatal(err)
	}
	saConfig := rest.AnonymousClientConfig(te.Config)
	saConfig.BearerToken = tr.Status.Token
	saClient, err := client.New(saConfig, client.Options{Scheme: te.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	env := containerEnv(t, find(t, objs, "Deployment", "karpenter"))
	if env["DISABLE_WEBHOOK"] != "false" || env["WEBHOOK_PORT"] != strconv.Itoa(port) {
		t.Fatalf("chart env DISABLE_WEBHOOK=%s WEBHOOK_PORT=%s", env["DISABLE_WEBHOOK"], env["WEBHOOK_PORT"])
	}
	// What the endpoints controller would publish for the pod.
	portName := "https-webhook"
	eps := &corev1.Endpoints{ //nolint:staticcheck // the resolver may read either API
		ObjectMeta: metav1.ObjectMeta{Namespace: "karpenter", Name: "karpenter"},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck
			Addresses: []corev1.EndpointAddress{{IP: host}},
			Ports:     []corev1.EndpointPort{{Name: portName, Port: int32(port)}}, //nolint:staticcheck
		}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "karpenter", Name: "karpenter-1", Labels: map[string]string{discoveryv1.LabelServiceName: "karpenter"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: ptr.To(int32(port))}},
	}
	for _, o := range []client.Object{eps, slice} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T: %v", o, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- conversion.Run(ctx, conversion.Options{
			Client: saClient, Namespace: "karpenter", ServiceName: env["KARPENTER_SERVICE"], Port: int32(port),
			BindAddress: fmt.Sprintf("%s:%d", host, port),
		})
	}()

	beta := func(path string) *unstructured.Unstructured {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	nodePool := beta("../../pkg/apis/karpenter/testdata/v1beta1/seed004-nodepool.yaml")
	nodeClass := beta("../../pkg/apis/aws/testdata/seeds/003-before-v1beta1-ec2nodeclass.yaml")
	for _, o := range []*unstructured.Unstructured{nodeClass, nodePool} {
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			select {
			case err := <-done:
				return false, fmt.Errorf("the webhook stopped: %v", err)
			default:
			}
			last = c.Create(ctx, o.DeepCopy())
			return last == nil, nil
		}); err != nil {
			t.Fatalf("applying %s %s (v1beta1) through the chart's webhook wiring: %v (last: %v)", o.GetKind(), o.GetName(), err, last)
		}
	}
	np := &v1.NodePool{}
	if err := c.Get(ctx, client.ObjectKey{Name: nodePool.GetName()}, np); err != nil {
		t.Fatal(err)
	}
	if np.Spec.Template.Spec.NodeClassRef == nil || np.Spec.Template.Spec.NodeClassRef.Group != "karpenter.k8s.aws" {
		t.Errorf("NodePool read as v1: nodeClassRef %+v, want group karpenter.k8s.aws", np.Spec.Template.Spec.NodeClassRef)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.Get(ctx, client.ObjectKey{Name: nodeClass.GetName()}, nc); err != nil {
		t.Fatal(err)
	}
	if len(nc.Spec.AMISelectorTerms) == 0 || nc.Spec.AMISelectorTerms[0].Alias == "" {
		t.Errorf("EC2NodeClass read as v1: amiSelectorTerms %+v, want the alias v1 requires", nc.Spec.AMISelectorTerms)
	}
	// The CRDs kept the chart's Service and got the controller's CA.
	crd := toCRDFromCluster(ctx, t, c, "nodepools.karpenter.sh")
	cc := crd.Spec.Conversion.Webhook.ClientConfig
	if cc.Service == nil || cc.Service.Name != "karpenter" || cc.Service.Namespace != "karpenter" || *cc.Service.Port != int32(port) || len(cc.CABundle) == 0 {
		t.Errorf("nodepools conversion client config %+v", cc)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("webhook: %v", err)
	}
}

// hostIP is an address of this machine the apiserver may use as an endpoint
// (not loopback: endpoints may not be).
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatal("no non-loopback IPv4 address to publish as the webhook's endpoint")
	return ""
}
