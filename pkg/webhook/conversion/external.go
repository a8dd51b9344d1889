package conversion

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// A certificate issued by cert-manager (the charts' webhook.certManager) lives
// in the same Secret keys the webhook writes itself (tls.crt, tls.key,
// ca.crt), but the webhook never writes it: it waits for the first issue,
// checks that it chains to ca.crt and names the Service, and follows renewals
// (cert-manager renews a third before expiry by default) without a restart.

// readExternal returns the Secret's certificate, or why it cannot be served
// yet (missing, a key absent, not chaining to ca.crt, a Service name missing).
func readExternal(ctx context.Context, c client.Client, namespace, name string, dnsNames []string, ips []net.IP, now time.Time) (*Certificate, string, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return nil, "", fmt.Errorf("reading certificate secret %s/%s: %w", namespace, name, err)
		}
		return nil, fmt.Sprintf("Secret %s/%s does not exist yet (cert-manager creates it when it issues the Certificate)", namespace, name), nil
	}
	for _, k := range []string{SecretCertKey, SecretKeyKey, SecretCAKey} {
		if len(secret.Data[k]) == 0 {
			return nil, fmt.Sprintf("Secret %s/%s has no %s (the issuer must provide the CA: use a CA or self-signed issuer)", namespace, name, k), nil
		}
	}
	cert := &Certificate{CAPEM: secret.Data[SecretCAKey], CertPEM: secret.Data[SecretCertKey], KeyPEM: secret.Data[SecretKeyKey]}
	if why := cert.check(dnsNames, ips, now); why != "" {
		return nil, fmt.Sprintf("Secret %s/%s: %s", namespace, name, why), nil
	}
	return cert, "", nil
}

// waitExternal polls the Secret until it holds a certificate the webhook can
// serve, logging why not every so often; only ctx ends the wait.
func waitExternal(ctx context.Context, c client.Client, namespace, name string, dnsNames []string, ips []net.IP, every time.Duration) (*Certificate, error) {
	var lastLog time.Time
	for {
		cert, why, err := readExternal(ctx, c, namespace, name, dnsNames, ips, time.Now())
		if err != nil {
			return nil, err
		}
		if cert != nil {
			return cert, nil
		}
		if time.Since(lastLog) >= 15*time.Second {
			log.FromContext(ctx).Info("waiting for the webhook certificate from cert-manager", "reason", why)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no webhook certificate to serve: %s", why)
		case <-time.After(every):
		}
	}
}

// followExternal re-reads the Secret every interval; a renewed certificate is
// served from the next handshake on, and a new CA is written into the CRDs
// (cert-manager's cainjector may do the same: both write the same bytes).
func followExternal(ctx context.Context, o Options, srv *Server, cc ClientConfig, cert *Certificate, dnsNames []string) {
	logger := log.FromContext(ctx)
	t := time.NewTicker(o.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, why, err := readExternal(ctx, o.Client, o.Namespace, o.SecretName, dnsNames, o.IPs, time.Now())
		if err != nil || next == nil {
			logger.Info("keeping the current webhook certificate", "error", err, "reason", why)
			continue
		}
		if bytes.Equal(next.CertPEM, cert.CertPEM) && bytes.Equal(next.CAPEM, cert.CAPEM) {
			continue
		}
		if !bytes.Equal(next.CAPEM, cert.CAPEM) {
			if err := EnableConversion(ctx, o.Client, cc, next.CAPEM); err != nil {
				logger.Error(err, "writing the renewed CA into the CRDs; retrying on the next reload")
				continue
			}
		}
		if err := srv.Rotate(next); err != nil {
			logger.Error(err, "serving the renewed webhook certificate")
			continue
		}
		logger.Info("serving the renewed webhook certificate", "secret", o.Namespace+"/"+o.SecretName)
		cert = next
	}
}
