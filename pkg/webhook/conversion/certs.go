package conversion

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// certValidity is how long generated certificates last; certificates are
// regenerated when less than a third of it is left.
const certValidity = 365 * 24 * time.Hour

// Keys of the certificate Secret.
const (
	SecretCAKey   = "ca.crt"
	SecretCertKey = "tls.crt"
	SecretKeyKey  = "tls.key"
)

// Certificate is a serving certificate and the CA that signed it.
type Certificate struct {
	CAPEM   []byte
	CertPEM []byte
	KeyPEM  []byte
}

// TLS returns the serving key pair.
func (c *Certificate) TLS() (tls.Certificate, error) { return tls.X509KeyPair(c.CertPEM, c.KeyPEM) }

// GenerateCertificate creates a new CA and a serving certificate for the
// given DNS names and IPs, signed by it.
func GenerateCertificate(dnsNames []string, ips []net.IP, now time.Time) (*Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "karpenter-conversion-webhook-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cn := "karpenter-conversion-webhook"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Certificate{
		CAPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

// valid reports whether the certificate chains to its CA, covers every name
// and IP asked for, and is not close to expiry.
func (c *Certificate) valid(dnsNames []string, ips []net.IP, now time.Time) bool {
	if c.check(dnsNames, ips, now) != "" {
		return false
	}
	leaf, _ := c.leaf()
	return !now.Add(certValidity / 3).After(leaf.NotAfter)
}

func (c *Certificate) leaf() (*x509.Certificate, error) {
	pair, err := c.TLS()
	if err != nil {
		return nil, err
	}
	if len(pair.Certificate) == 0 {
		return nil, errors.New("no certificate")
	}
	return x509.ParseCertificate(pair.Certificate[0])
}

// check says why the certificate cannot be served for the names and IPs
// ("" when it can): a broken key pair, a CA that does not sign it, expiry, a
// name not covered.
func (c *Certificate) check(dnsNames []string, ips []net.IP, now time.Time) string {
	leaf, err := c.leaf()
	if err != nil {
		return fmt.Sprintf("tls.crt and tls.key are not a key pair: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CAPEM) {
		return "ca.crt holds no PEM certificate"
	}
	names := append([]string{}, dnsNames...)
	for _, ip := range ips {
		names = append(names, ip.String())
	}
	for _, name := range names {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: now}); err != nil {
			return fmt.Sprintf("the certificate does not serve %s: %v", name, err)
		}
	}
	return ""
}

// EnsureCertificateSecret returns the certificate kept in the Secret
// namespace/name, generating and storing a new one when the Secret is missing,
// malformed, close to expiry or does not cover the names. Several replicas
// racing here converge: a losing create/update re-reads the winner's Secret.
func EnsureCertificateSecret(ctx context.Context, c client.Client, namespace, name string, dnsNames []string, ips []net.IP, now time.Time) (*Certificate, error) {
	for attempt := 0; attempt < 3; attempt++ {
		secret := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading certificate secret: %w", err)
		}
		found := err == nil
		if found {
			cert := &Certificate{CAPEM: secret.Data[SecretCAKey], CertPEM: secret.Data[SecretCertKey], KeyPEM: secret.Data[SecretKeyKey]}
			if cert.valid(dnsNames, ips, now) {
				return cert, nil
			}
		}
		cert, err := GenerateCertificate(dnsNames, ips, now)
		if err != nil {
			return nil, err
		}
		data := map[string][]byte{SecretCAKey: cert.CAPEM, SecretCertKey: cert.CertPEM, SecretKeyKey: cert.KeyPEM}
		if found {
			secret.Data = data
			err = c.Update(ctx, secret)
		} else {
			err = c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: corev1.SecretTypeTLS, Data: data})
		}
		if err == nil {
			return cert, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("writing certificate secret: %w", err)
		}
	}
	return nil, errors.New("certificate secret kept changing under us")
}
