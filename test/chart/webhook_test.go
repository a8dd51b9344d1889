package chart_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
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
	h := startWebhookHarness(t)
	done := h.run(conversion.Options{})
	h.applyBeta(t, done)
	// The CRDs kept the chart's Service and got the controller's CA.
	crd := toCRDFromCluster(h.ctx, t, h.c, "nodepools.karpenter.sh")
	cc := crd.Spec.Conversion.Webhook.ClientConfig
	if cc.Service == nil || cc.Service.Name != "karpenter" || cc.Service.Namespace != "karpenter" || *cc.Service.Port != int32(h.port) || len(cc.CABundle) == 0 {
		t.Errorf("nodepools conversion client config %+v", cc)
	}
	h.cancel()
	if err := <-done; err != nil {
		t.Errorf("webhook: %v", err)
	}
}

// TestWebhookWithCertManager: with webhook.certManager the webhook serves the
// certificate cert-manager issues for the chart's Certificate (the test plays
// cert-manager's CA issuer: the binary is not buildable from the module proxy)
// under a Role that can only read the Secret. It waits for the first issue,
// converts v1beta1 with it, and follows a renewal with a new CA without a
// restart: the new certificate is served and the CRDs trust the new CA.
func TestWebhookWithCertManager(t *testing.T) {
	h := startWebhookHarness(t, "--set", "webhook.certManager.enabled=true")
	if h.env["WEBHOOK_CERTIFICATE"] != "cert-manager" {
		t.Fatalf("chart env WEBHOOK_CERTIFICATE=%q", h.env["WEBHOOK_CERTIFICATE"])
	}
	done := h.run(conversion.Options{CertManager: true, ReloadInterval: 200 * time.Millisecond})
	cert := find(t, h.objs, "Certificate", "karpenter-cert")
	// The webhook waits: nothing is served before cert-manager issued.
	select {
	case err := <-done:
		t.Fatalf("the webhook stopped before its certificate was issued: %v", err)
	default:
	}
	if s := (&corev1.Secret{}); h.c.Get(h.ctx, client.ObjectKey{Namespace: "karpenter", Name: "karpenter-cert"}, s) == nil {
		t.Fatal("the webhook wrote the Secret cert-manager owns")
	}
	firstCA := issueLikeCertManager(h.ctx, t, h.c, cert)
	h.applyBeta(t, done)
	crd := toCRDFromCluster(h.ctx, t, h.c, "nodepools.karpenter.sh")
	if !bytes.Equal(crd.Spec.Conversion.Webhook.ClientConfig.CABundle, firstCA) {
		t.Errorf("the CRD's caBundle is not cert-manager's CA")
	}

	// Renewal with a new CA (rotationPolicy Always; a re-created CA Issuer).
	secondCA := issueLikeCertManager(h.ctx, t, h.c, cert)
	addr := fmt.Sprintf("%s:%d", h.host, h.port)
	if err := wait.PollUntilContextTimeout(h.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd := toCRDFromCluster(ctx, t, h.c, "ec2nodeclasses.karpenter.k8s.aws")
		return servedBy(t, addr, secondCA, "karpenter.karpenter.svc") == nil &&
			bytes.Equal(crd.Spec.Conversion.Webhook.ClientConfig.CABundle, secondCA), nil
	}); err != nil {
		t.Fatalf("the renewed certificate was not served / its CA not written into the CRDs: %v", err)
	}
	h.applyBeta(t, done, "renewed-")
	h.cancel()
	if err := <-done; err != nil {
		t.Errorf("webhook: %v", err)
	}
}

// webhookHarness wires the conversion webhook exactly as the charts do with
// webhook.enabled (see TestWebhookThroughTheChart) and runs it with the
// chart's identity.
type webhookHarness struct {
	ctx      context.Context
	cancel   context.CancelFunc
	c        client.Client
	saClient client.Client
	host     string
	port     int
	objs     []*unstructured.Unstructured
	env      map[string]string
}

func startWebhookHarness(t *testing.T, extra ...string) *webhookHarness {
	host := hostIP(t)
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	te := env.StartT(t, env.WithAPIServerArgs("--enable-aggregator-routing=true"))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := te.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter"}}); err != nil {
		t.Fatal(err)
	}
	values := append([]string{"--set", "webhook.enabled=true", "--set", "webhook.port=" + strconv.Itoa(port)}, extra...)
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
		case "Deployment", "PodDisruptionBudget", "Certificate", "Issuer":
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
	return &webhookHarness{ctx: ctx, cancel: cancel, c: c, saClient: saClient, host: host, port: port, objs: objs, env: env}
}

// run starts the webhook with the chart's settings and identity on top of o.
func (h *webhookHarness) run(o conversion.Options) chan error {
	o.Client, o.Namespace, o.ServiceName, o.Port = h.saClient, "karpenter", h.env["KARPENTER_SERVICE"], int32(h.port)
	o.BindAddress = fmt.Sprintf("%s:%d", h.host, h.port)
	done := make(chan error, 1)
	go func() { done <- conversion.Run(h.ctx, o) }()
	return done
}

// applyBeta creates seed 004's v1beta1 NodePool and seed 003's v1beta1
// EC2NodeClass (names prefixed) through the webhook and reads them as v1.
func (h *webhookHarness) applyBeta(t *testing.T, done chan error, prefix ...string) {
	t.Helper()
	beta := func(path string) *unstructured.Unstructured {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetName(strings.Join(prefix, "") + u.GetName())
		return u
	}
	nodePool := beta("../../pkg/apis/karpenter/testdata/v1beta1/seed004-nodepool.yaml")
	nodeClass := beta("../../pkg/apis/aws/testdata/seeds/003-before-v1beta1-ec2nodeclass.yaml")
	for _, o := range []*unstructured.Unstructured{nodeClass, nodePool} {
		var last error
		if err := wait.PollUntilContextTimeout(h.ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			select {
			case err := <-done:
				return false, fmt.Errorf("the webhook stopped: %v", err)
			default:
			}
			last = h.c.Create(ctx, o.DeepCopy())
			return last == nil, nil
		}); err != nil {
			t.Fatalf("applying %s %s (v1beta1) through the chart's webhook wiring: %v (last: %v)", o.GetKind(), o.GetName(), err, last)
		}
	}
	np := &v1.NodePool{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: nodePool.GetName()}, np); err != nil {
		t.Fatal(err)
	}
	if np.Spec.Template.Spec.NodeClassRef == nil || np.Spec.Template.Spec.NodeClassRef.Group != "karpenter.k8s.aws" {
		t.Errorf("NodePool read as v1: nodeClassRef %+v, want group karpenter.k8s.aws", np.Spec.Template.Spec.NodeClassRef)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: nodeClass.GetName()}, nc); err != nil {
		t.Fatal(err)
	}
	if len(nc.Spec.AMISelectorTerms) == 0 || nc.Spec.AMISelectorTerms[0].Alias == "" {
		t.Errorf("EC2NodeClass read as v1: amiSelectorTerms %+v, want the alias v1 requires", nc.Spec.AMISelectorTerms)
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
