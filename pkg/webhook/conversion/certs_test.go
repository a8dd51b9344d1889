package conversion_test

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/webhook/conversion"
)

// TestEnsureCertificateSecret: the certificate is generated once, kept in the
// Secret and reused, and replaced when it no longer covers the service name
// or is close to expiry.
func TestEnsureCertificateSecret(t *testing.T) {
	ctx := context.Background()
	c := testEnv.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karpenter-certs"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	names := []string{"karpenter.karpenter-certs.svc"}
	now := time.Now()
	first, err := conversion.EnsureCertificateSecret(ctx, c, ns.Name, "karpenter-cert", names, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "karpenter-cert"}, secret); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(secret.Data[conversion.SecretCAKey], first.CAPEM) {
		t.Fatal("Secret does not hold the CA that was returned")
	}
	again, err := conversion.EnsureCertificateSecret(ctx, c, ns.Name, "karpenter-cert", names, nil, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.CertPEM, first.CertPEM) {
		t.Error("a valid certificate was regenerated")
	}
	renamed, err := conversion.EnsureCertificateSecret(ctx, c, ns.Name, "karpenter-cert", []string{"other.karpenter-certs.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, now)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(renamed.CAPEM, first.CAPEM) {
		t.Error("certificate not regenerated for a new service name")
	}
	expiring, err := conversion.EnsureCertificateSecret(ctx, c, ns.Name, "karpenter-cert", []string{"other.karpenter-certs.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, now.Add(300*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(expiring.CertPEM, renamed.CertPEM) {
		t.Error("certificate close to expiry not regenerated")
	}
}
