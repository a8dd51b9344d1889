package chart_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// certManagerVersion pins the cert-manager release whose CRDs the chart's
// Certificate and Issuers are checked against (read from its Go module).
const certManagerVersion = "v1.21.2"

var (
	certManagerOnce sync.Once
	certManagerErr  error
)

// installCertManagerCRDs creates cert-manager's own CRDs (from its Go
// module's deploy/crds) in the test apiserver, once per process.
func installCertManagerCRDs(t *testing.T) {
	t.Helper()
	certManagerOnce.Do(func() {
		out, err := exec.Command("go", "mod", "download", "-json", "github.com/cert-manager/cert-manager@"+certManagerVersion).Output()
		if err != nil {
			certManagerErr = fmt.Errorf("downloading cert-manager %s for its CRDs: %v", certManagerVersion, err)
			return
		}
		var mod struct{ Dir string }
		if err := json.Unmarshal(out, &mod); err != nil {
			certManagerErr = err
			return
		}
		files, _ := filepath.Glob(filepath.Join(mod.Dir, "deploy/crds/cert-manager.io_*.yaml"))
		if len(files) < 4 {
			certManagerErr = fmt.Errorf("cert-manager %s: only %d CRDs in %s/deploy/crds", certManagerVersion, len(files), mod.Dir)
			return
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				certManagerErr = err
				return
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(b, crd); err != nil {
				certManagerErr = fmt.Errorf("%s: %v", f, err)
				return
			}
			if err := client.IgnoreAlreadyExists(e.Client.Create(context.Background(), crd)); err != nil {
				certManagerErr = fmt.Errorf("creating %s: %v", crd.Name, err)
				return
			}
		}
		certManagerErr = waitEstablished(context.Background(), e.Client, "certificates.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io")
	})
	if certManagerErr != nil {
		t.Fatal(certManagerErr)
	}
}

// TestCertManagerObjects: with webhook.certManager the chart asks cert-manager
// for the webhook's certificate (its own self-signed CA without an issuerRef,
// the user's issuer with one), the controller is told to only read it, its
// Role can no longer write Secrets, and the CRD chart annotates the converting
// CRDs for cert-manager's cainjector. Every object is accepted by the
// apiserver against cert-manager's real CRDs.
func TestCertManagerObjects(t *testing.T) {
	ctx := context.Background()
	installCertManagerCRDs(t)
	if err := client.IgnoreAlreadyExists(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter"}})); err != nil {
		t.Fatal(err)
	}
	on := []string{"--set", "settings.clusterName=dev", "--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true"}

	objs := render(t, "karpenter", on...)
	applyAll(ctx, t, objs, false)
	find(t, objs, "Issuer", "karpenter-selfsigned")
	ca := find(t, objs, "Certificate", "karpenter-ca")
	if nested(t, ca, "spec", "isCA") != true {
		t.Errorf("the chart's CA Certificate is not a CA: %v", ca.Object["spec"])
	}
	find(t, objs, "Issuer", "karpenter-ca")
	cert := find(t, objs, "Certificate", "karpenter-cert")
	if got := nested(t, cert, "spec", "secretName"); got != "karpenter-cert" {
		t.Errorf("secretName %v, want the Secret the controller reads (karpenter-cert)", got)
	}
	wantNames := []any{"karpenter", "karpenter.karpenter", "karpenter.karpenter.svc", "karpenter.karpenter.svc.cluster.local"}
	if got := nested(t, cert, "spec", "dnsNames"); fmt.Sprint(got) != fmt.Sprint(wantNames) {
		t.Errorf("dnsNames %v, want %v", got, wantNames)
	}
	if got := nested(t, cert, "spec", "issuerRef", "name"); got != "karpenter-ca" {
		t.Errorf("issuerRef %v, want the chart's CA Issuer", got)
	}
	if env := containerEnv(t, find(t, objs, "Deployment", "karpenter")); env["WEBHOOK_CERTIFICATE"] != "cert-manager" {
		t.Errorf("WEBHOOK_CERTIFICATE=%q, want cert-manager", env["WEBHOOK_CERTIFICATE"])
	}
	for _, r := range nested(t, find(t, objs, "Role", "karpenter"), "rules").([]any) {
		rule := r.(map[string]any)
		if fmt.Sprint(rule["resources"]) == "[secrets]" && fmt.Sprint(rule["verbs"]) != "[get]" {
			t.Errorf("with cert-manager the controller only reads its Secret; rule %v", rule)
		}
	}

	// A user's ClusterIssuer: no chart CA.
	objs = render(t, "karpenter", append(on, "--set", "webhook.certManager.issuerRef.name=corp", "--set", "webhook.certManager.issuerRef.kind=ClusterIssuer")...)
	applyAll(ctx, t, objs, false)
	for _, o := range objs {
		if o.GetKind() == "Issuer" {
			t.Errorf("Issuer %s rendered although issuerRef names the user's", o.GetName())
		}
	}
	cert = find(t, objs, "Certificate", "karpenter-cert")
	if ref := nested(t, cert, "spec", "issuerRef").(map[string]any); ref["name"] != "corp" || ref["kind"] != "ClusterIssuer" {
		t.Errorf("issuerRef %v, want ClusterIssuer corp", ref)
	}

	// An issuerRef without a name is refused, naming the value.
	if _, err := runHelm(t, append([]string{"template", chartDir("karpenter")}, append(on, "--set", "webhook.certManager.issuerRef.kind=ClusterIssuer")...)...); err == nil ||
		!strings.Contains(err.Error(), "webhook.certManager.issuerRef needs a name") {
		t.Errorf("issuerRef without a name: %v, want a message naming webhook.certManager.issuerRef", err)
	}

	// Off (the default), or without the webhook: nothing of cert-manager.
	for _, args := range [][]string{{"--set", "settings.clusterName=dev"}, {"--set", "settings.clusterName=dev", "--set", "webhook.certManager.enabled=true"}} {
		for _, o := range render(t, "karpenter", args...) {
			if strings.HasSuffix(o.GetAPIVersion(), "cert-manager.io/v1") {
				t.Errorf("%v: %s %s rendered", args, o.GetKind(), o.GetName())
			}
		}
	}

	crdObjs := render(t, "karpenter-crd", "--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true")
	applyAll(ctx, t, crdObjs, false)
	for _, o := range crdObjs {
		want := "karpenter/karpenter-cert"
		if !convertedCRDs[o.GetName()] {
			want = "" // no conversion webhook to trust
		}
		if got := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != want {
			t.Errorf("%s: cert-manager.io/inject-ca-from=%q, want %q", o.GetName(), got, want)
		}
	}
	for _, o := range render(t, "karpenter-crd", "--set", "webhook.enabled=true") {
		if _, ok := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
			t.Errorf("%s: cainjector annotation without webhook.certManager", o.GetName())
		}
	}
}

// issueLikeCertManager plays cert-manager's CA issuer for a rendered
// Certificate: a serving certificate for its dnsNames signed by a fresh CA,
// written into its secretName as cert-manager writes it (kubernetes.io/tls
// with ca.crt). It returns the CA's PEM.
func issueLikeCertManager(ctx context.Context, t *testing.T, c client.Client, cert *unstructured.Unstructured) []byte {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var names []string
	for _, n := range nested(t, cert, "spec", "dnsNames").([]any) {
		names = append(names, n.(string))
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano() + 1), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	data := map[string][]byte{
		"ca.crt":  caPEM,
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cert.GetNamespace(), Name: nested(t, cert, "spec", "secretName").(string)}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err == nil {
		secret.Data = data
		err = c.Update(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		return caPEM
	}
	secret.Type = corev1.SecretTypeTLS
	secret.Data = data
	secret.Annotations = map[string]string{"cert-manager.io/certificate-name": cert.GetName(), "cert-manager.io/issuer-name": "karpenter-ca"}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	return caPEM
}

// servedCA dials the webhook and returns the issuer CommonName of the
// certificate it serves, verified against caPEM.
func servedBy(t *testing.T, addr string, caPEM []byte, serverName string) error {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	return conn.Close()
}

// waitEstablished polls until the CRDs serve their kinds on the API server
// of c.
func waitEstablished(ctx context.Context, c client.Client, names ...string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			established := false
			for _, c := range crd.Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}
