package conversion

import (
	"context"
	"fmt"
	"net"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure Run. The defaults match upstream's chart: Service
// "karpenter" on port 8443 of the controller's namespace.
type Options struct {
	// Client reads and writes the certificate Secret and the CRDs.
	Client client.Client
	// Namespace holds the Service and the certificate Secret.
	Namespace string
	// ServiceName is the Service in front of the webhook; default "karpenter".
	ServiceName string
	// Port is the Service port the apiserver calls; default 8443.
	Port int32
	// BindAddress is where the webhook listens; default ":<Port>".
	BindAddress string
	// SecretName holds the generated CA and serving certificate; default "karpenter-cert".
	SecretName string
	// ClientConfig overrides how the apiserver reaches the webhook (e.g. a
	// URL when it runs outside the cluster); the Service is used when nil.
	ClientConfig *ClientConfig
	// IPs are extra IP SANs of the serving certificate.
	IPs []net.IP
	// CertManager: cert-manager issues the certificate into the Secret (the
	// charts' webhook.certManager.enabled). The webhook waits for it, never
	// writes the Secret, and follows its renewals.
	CertManager bool
	// ReloadInterval is how often a cert-manager Secret is re-read; default 30s.
	ReloadInterval time.Duration
}

func (o *Options) defaults() {
	if o.ServiceName == "" {
		o.ServiceName = "karpenter"
	}
	if o.Port == 0 {
		o.Port = 8443
	}
	if o.BindAddress == "" {
		o.BindAddress = fmt.Sprintf(":%d", o.Port)
	}
	if o.SecretName == "" {
		o.SecretName = "karpenter-cert"
	}
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = 30 * time.Second
	}
}

// Run obtains the certificate (from the Secret, generating it on first use;
// with CertManager waiting for cert-manager to issue it),
// points the CRDs at the webhook and serves conversions until ctx ends. The
// CRDs stay pointed at the webhook afterwards, so that another replica (or the
// restarted controller) keeps serving v1beta1; call DisableConversion to
// return to v1 only.
func Run(ctx context.Context, o Options) error {
	o.defaults()
	svc := o.ServiceName + "." + o.Namespace
	names := []string{o.ServiceName, svc, svc + ".svc", svc + ".svc.cluster.local"}
	var cert *Certificate
	var err error
	if o.CertManager {
		cert, err = waitExternal(ctx, o.Client, o.Namespace, o.SecretName, names, o.IPs, time.Second)
	} else {
		cert, err = EnsureCertificateSecret(ctx, o.Client, o.Namespace, o.SecretName, names, o.IPs, time.Now())
	}
	if err != nil {
		return err
	}
	cc := ClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: o.Namespace, Name: o.ServiceName, Port: &o.Port}}
	if o.ClientConfig != nil {
		cc = *o.ClientConfig
	}
	l, err := net.Listen("tcp", o.BindAddress)
	if err != nil {
		return err
	}
	if err := EnableConversion(ctx, o.Client, cc, cert.CAPEM); err != nil {
		_ = l.Close()
		return err
	}
	srv := &Server{Listener: l, Certificate: cert}
	if o.CertManager {
		go followExternal(ctx, o, srv, cc, cert, names)
	}
	return srv.Serve(ctx)
}
